package env

import (
	"math"
	"streamscale/rng"
	"testing"
)

// checkInvariants asserts the physical invariants of a fluid Env: every
// allocation inside its bounds and every server within capacity, no
// negative queue, and conservation of events at every stage and edge:
// received = processed + waiting (+ in flight), and what a stage receives
// is exactly what its upstream stages (or the sources) sent it.
func checkInvariants(t testing.TB, e *Env) {
	t.Helper()
	used := make([]float64, e.m)
	for k, c := range e.alloc {
		if !e.cfg.SharedCPU && (c < e.cfg.MinCPU-1e-9 || c > e.cfg.MaxCPU+1e-9) {
			t.Fatalf("task %d allocation %v outside bounds", k, c)
		}
	}
	for r, rep := range e.topo.replicas {
		used[rep.server] += e.replicaCPU(r)
	}
	for s, u := range used {
		if u > e.cfg.Servers[s].CPU+1e-6 {
			t.Fatalf("server %d over capacity: %v > %v", s, u, e.cfg.Servers[s].CPU)
		}
	}
	f, ok := e.core.(*fluid)
	if !ok {
		return
	}
	emitted, sunk, res := f.balance()
	tol := 1e-7 * (1 + emitted*10)
	for i, r := range res {
		if math.Abs(r) > tol {
			t.Fatalf("stage %d: received − processed − waiting = %v", i, r)
		}
		s := &f.stages[i]
		for j := 0; j < s.queue.len(); j++ {
			if w := s.queue.at(j).w; w < -1e-9 || math.IsNaN(w) {
				t.Fatalf("stage %d: piece of %v events", i, w)
			}
		}
		if s.queue.total < -tol {
			t.Fatalf("stage %d: negative queue %v", i, s.queue.total)
		}
	}
	in := make([]float64, len(f.stages))
	for si, k := range f.sources {
		in[k] += emitted / float64(f.nSources) * f.srcW[si]
	}
	sink := 0.0
	for i := range f.stages {
		s := &f.stages[i]
		for j, o := range s.out {
			in[o] += s.cumDeparted * s.sel * s.outW[j]
		}
		if s.sink {
			sink += s.cumDeparted * s.sel
		}
	}
	for i := range f.stages {
		in[i] += f.stages[i].carried
		if math.Abs(in[i]-f.stages[i].cumPushed) > tol {
			t.Fatalf("stage %d received %v, upstream sent %v", i, f.stages[i].cumPushed, in[i])
		}
	}
	if math.Abs(sink-sunk) > tol {
		t.Fatalf("sink received %v, sink tasks sent %v", sunk, sink)
	}
}

// FuzzStep drives an Env with arbitrary byte-coded actions, valid and
// invalid: invalid ones must be rejected without changing state, and the
// invariants must hold after every step.
func FuzzStep(f *testing.F) {
	f.Add([]byte{2, 2, 2, 2, 2, 2, 2, 2, 2}, uint8(0))
	f.Add([]byte{4, 4, 4, 4, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint8(1))
	f.Add([]byte{9, 200, 1, 3}, uint8(2))
	f.Add([]byte{}, uint8(3))
	w := diurnal(3000)
	f.Fuzz(func(t *testing.T, data []byte, prof uint8) {
		profile := []string{"pred", "etl"}[prof%2]
		e := newTestEnv(t, profile, uint64(prof), w)
		e.Reset(uint64(prof))
		n := e.NumTasks()
		for len(data) > 0 && e.StepIndex() < 200 {
			m := min(len(data), n+int(data[0]%3)-1) // sometimes short, sometimes long
			if m <= 0 {
				m = 1
			}
			act := make([]int, m)
			for k := range act {
				act[k] = int(data[k]%7) - 1 // −1..5: two invalid values
			}
			data = data[m:]
			before := e.Allocation()
			idx := e.StepIndex()
			sr, err := e.Step(Action{Choices: act})
			rew := sr.Reward
			valid := m == n
			for _, c := range act {
				valid = valid && c >= 0 && c < 5
			}
			if valid != (err == nil) {
				t.Fatalf("action %v: err = %v", act, err)
			}
			if err != nil {
				if e.StepIndex() != idx {
					t.Fatal("invalid action advanced the episode")
				}
				for k, c := range e.Allocation() {
					if c != before[k] {
						t.Fatal("invalid action changed an allocation")
					}
				}
				continue
			}
			if math.IsNaN(rew) || rew < -6 || rew > 2.5 {
				t.Fatalf("reward %v", rew)
			}
			checkInvariants(t, e)
		}
	})
}

func TestInvariantsLongRun(t *testing.T) {
	for _, p := range []string{"pred", "etl"} {
		e := newTestEnv(t, p, 11, diurnal(1500))
		e.Reset(0)
		act := make([]int, e.NumTasks())
		for s := 0; s < 1500; s++ {
			for k := range act {
				act[k] = (s/40 + k*s/97) % 5
			}
			if _, err := e.Step(Action{Choices: act}); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, e)
		}
	}
}

// TestRewardTermRanges checks every term against its Table 2 range over
// random inputs, with per-branch ranges: risk, resource and progress are 0
// while violating, reconf is 0 while compliant.
func TestRewardTermRanges(t *testing.T) {
	r := DefaultReward()
	r2 := rng.New(1, "test/reward")
	n := 6
	for i := 0; i < 20000; i++ {
		in := rewardInput{
			p95: r2.Float64() * 3 * 0.18, prevP95: r2.Float64() * 3 * 0.18, slo: 0.18, hasPrev: r2.IntN(8) != 0,
			prevViolated: r2.IntN(2) == 0, totalCPU: 500*float64(n) + r2.Float64()*9500*float64(n),
			prevCPU: 500*float64(n) + r2.Float64()*9500*float64(n),
			n:       n, minCPU: 500, changed: make([]float64, n), pressure: make([]taskPressure, n),
		}
		in.violated = in.p95 > in.slo
		for k := 0; k < n; k++ {
			in.changed[k] = float64(r2.IntN(3)-1) * 50
			in.pressure[k] = taskPressure{deficit: r2.Float64()*2 - 0.5, queueS: r2.Float64() * 0.4, delayS: r2.Float64() * 0.4}
			if r2.IntN(3) == 0 {
				in.pressure[k] = taskPressure{}
			}
		}
		tm := r.compute(in)
		type bound struct{ lo, hi float64 }
		want := map[string]bound{"slo": {0.5, 0.5}, "risk": {-0.5, 0}, "resource": {0, 1.5}, "progress": {-0.25, 0.25},
			"churn": {-0.05, 0}, "recovery": {0, 0.5}, "reconf": {0, 0}, "total": {-6, 2.5}}
		if in.violated {
			want = map[string]bound{"slo": {-5, -1}, "risk": {0, 0}, "resource": {0, 0}, "progress": {0, 0},
				"churn": {-0.025, 0}, "recovery": {-1, 1}, "reconf": {-0.5, 0.5}, "total": {-6, 2.5}}
		}
		for _, c := range []struct {
			name string
			v    float64
		}{{"slo", tm.SLO}, {"risk", tm.Risk}, {"resource", tm.Resource}, {"progress", tm.Progress},
			{"churn", tm.Churn}, {"recovery", tm.Recovery}, {"reconf", tm.Reconf}, {"total", tm.Total}} {
			w := want[c.name]
			if c.v < w.lo || c.v > w.hi || math.IsNaN(c.v) {
				t.Fatalf("%s = %v outside [%v, %v] (violated %v) for %+v", c.name, c.v, w.lo, w.hi, in.violated, in)
			}
		}
		sum := tm.SLO + tm.Risk + tm.Resource + tm.Progress + tm.Churn + tm.Recovery + tm.Reconf
		if math.Abs(tm.Total-min(max(sum, -6), 2.5)) > 1e-12 {
			t.Fatalf("total %v is not the clipped sum %v", tm.Total, sum)
		}
	}
}
