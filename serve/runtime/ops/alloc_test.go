package ops

import "testing"

// allocsPerRecord replays an operator's recorded inputs over the state a
// first pass left, and returns the mean allocations per record.
func allocsPerRecord(t *testing.T, r *run, i int) float64 {
	op := r.app.Operators[i].New()
	st := memState{}
	in := r.inputs[i]
	for _, rec := range in {
		_ = op.Process(rec, st, discard{})
	}
	j := 0
	return testing.AllocsPerRun(len(in), func() {
		_ = op.Process(in[j%len(in)], st, discard{})
		j++
	})
}

// TestNoAllocation: in the steady state (keys seen before) no operator
// allocates per record. testing.AllocsPerRun rounds the mean down, so
// ETL's Join, which allocates one state buffer per message (one record in
// ten), passes; anything allocating on every record fails.
func TestNoAllocation(t *testing.T) {
	if raceEnabled {
		t.Skip("race detector: sync.Pool drops items")
	}
	for _, name := range AppNames() {
		a := appFor(t, name)
		r := newRun(a)
		r.keep = 500
		r.feed(t, 1, 500)
		for i, s := range a.Operators {
			if n := allocsPerRecord(t, r, i); n != 0 {
				t.Errorf("%s/%s: %.2f allocations per record", name, s.Name, n)
			}
		}
	}
}
