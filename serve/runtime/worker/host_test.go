package worker

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/cfs"
	"streamscale/serve/runtime/kcfs"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// fakeHost runs the operator in the test process, as a task host would in
// its own, and records what it was asked.
type fakeHost struct {
	op   ops.Operator
	mu   sync.Mutex
	recs int
	mc   int
	fail bool
	cur  int
	res  *kcfs.Result
}

func (f *fakeHost) Emit(to int, key uint64, p []byte) {
	f.res.Emits = append(f.res.Emits, kcfs.Emit{Parent: f.cur, To: to, Key: key, Payload: slices.Clone(p)})
}

func (f *fakeHost) Exec(recs []ops.Record, r *kcfs.Result) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("host gone")
	}
	f.recs += len(recs)
	f.res = r
	r.Failed, r.Emits = r.Failed[:0], r.Emits[:0]
	for i, rec := range recs {
		f.cur = i
		r.Failed = append(r.Failed, f.op.Process(rec, nil, f) != nil)
	}
	return nil
}

func (f *fakeHost) Set(mc int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mc = mc
	return nil
}

func (f *fakeHost) Millicores() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mc
}

func (f *fakeHost) Stats() cfs.Stats { return cfs.Stats{} }

func TestHostsRefuseStatefulOperator(t *testing.T) {
	made := 0
	_, err := New(Config{App: runtime.WordCount(), Hosts: func(op, mc int) (TaskHost, error) {
		made++
		return &fakeHost{mc: mc}, nil
	}})
	if err == nil || !strings.Contains(err.Error(), "operator count keeps keyed state") {
		t.Fatalf("New with task hosts for word count: %v, want a refusal naming the stateful operator count", err)
	}
	if made != 0 {
		t.Errorf("%d task hosts started before the refusal, want none", made)
	}
}

// TestHostsExecute checks that with Config.Hosts every record runs in its
// task's host, outputs are routed on, allocation changes reach the host,
// and a failing host drops its batch (counted) without stopping the
// worker.
func TestHostsExecute(t *testing.T) {
	app := runtime.Chain("chain", 3, 0)
	hosts := make([]*fakeHost, len(app.Operators))
	w, stop := local(t, app, Config{Interval: 2 * time.Millisecond, Check: time.Millisecond, Millicores: 300,
		Hosts: func(op, mc int) (TaskHost, error) {
			hosts[op] = &fakeHost{op: app.Operators[op].New(), mc: mc}
			return hosts[op], nil
		}})
	defer stop()
	const n = 200
	src := app.NewSource(1)
	var recs []wire.Record
	for i := range n {
		key, p := src.Next(nil)
		recs = append(recs, wire.Record{Op: 0, Key: key, Input: uint64(i + 1), Payload: p})
	}
	if err := w.Inject(recs); err != nil {
		t.Fatal(err)
	}
	waitExecuted(t, w, 3*n)
	for op, h := range hosts {
		h.mu.Lock()
		got := h.recs
		h.mu.Unlock()
		if got != n {
			t.Errorf("host of operator %d ran %d records, want %d", op, got, n)
		}
	}
	w.mu.Lock()
	w.tasks[1].quota.Set(700)
	w.mu.Unlock()
	if mc := hosts[1].Millicores(); mc != 700 {
		t.Errorf("host of operator 1 has %d millicores after Set(700), want 700", mc)
	}
	if st := w.Stats(); st.Dropped != 0 {
		t.Errorf("dropped %d records", st.Dropped)
	}
	hosts[0].mu.Lock()
	hosts[0].fail = true
	hosts[0].mu.Unlock()
	if err := w.Inject(recs[:10]); err != nil {
		t.Fatal(err)
	}
	waitExecuted(t, w, 3*n+10)
	if st := w.Stats(); st.Dropped != 10 {
		t.Errorf("a failing host: dropped %d records, want 10", st.Dropped)
	}
}
