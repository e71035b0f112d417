package worker

import (
	"context"
	"encoding/binary"
	"strings"
	"sync"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// local starts a worker's executors without a planner and installs a
// placement giving it every key group.
func local(tb testing.TB, app ops.App, cfg Config) (*Worker, func()) {
	tb.Helper()
	cfg.App = app
	cfg.ID = 0
	w, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.checkAges(ctx) })
	for range w.cfg.Slots {
		wg.Go(w.runSlot)
	}
	pl := wire.Placement{Epoch: 1, Members: []wire.Member{{ID: 0, Addr: "local"}}, Owners: make([][ops.KeyGroups]uint32, len(app.Operators))}
	if err := w.checkPlacement(&pl); err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	w.migrate(ctx, nil, placeReq{pl: pl, installed: done})
	<-done
	return w, func() {
		cancel()
		w.mu.Lock()
		w.closing = true
		w.work.Broadcast()
		w.space.Broadcast()
		w.mu.Unlock()
		wg.Wait()
	}
}

// waitExecuted waits until the worker executed n records.
func waitExecuted(tb testing.TB, w *Worker, n uint64) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for w.Stats().Executed < n {
		if time.Now().After(deadline) {
			tb.Fatalf("executed %d of %d records", w.Stats().Executed, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLocalWordCount(t *testing.T) {
	app := runtime.WordCount()
	w, stop := local(t, app, Config{Interval: 2 * time.Millisecond, Check: time.Millisecond})
	defer stop()
	src := app.NewSource(1)
	want := map[uint64]uint64{}
	var recs []wire.Record
	for i := range 500 {
		key, p := src.Next(nil)
		recs = append(recs, wire.Record{Op: 0, Key: key, Input: uint64(i + 1), Payload: p})
		for _, word := range splitWords(p) {
			want[runtime.WordKey(word)]++
		}
	}
	if err := w.Inject(recs); err != nil {
		t.Fatal(err)
	}
	waitExecuted(t, w, 500*(1+runtime.WordsPerLine))
	got := w.StateOf(1)
	if len(got) != len(want) {
		t.Fatalf("%d words counted, want %d", len(got), len(want))
	}
	for k, n := range want {
		if c := binary.LittleEndian.Uint64(got[k]); c != n {
			t.Fatalf("word %d counted %d, want %d", k, c, n)
		}
	}
	// Every input's weight came back whole.
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.done) != 500 {
		t.Fatalf("%d inputs returned weight, want 500", len(w.done))
	}
	for in, wt := range w.done {
		if wt != wire.Total {
			t.Fatalf("input %d returned %v, want %v", in, wt, wire.Total)
		}
	}
}

func splitWords(p []byte) (out [][]byte) {
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == ' ' {
			if i > start {
				out = append(out, p[start:i])
			}
			start = i + 1
		}
	}
	return out
}

func TestInjectRefusesBadOperator(t *testing.T) {
	w, stop := local(t, runtime.WordCount(), Config{})
	defer stop()
	err := w.Inject([]wire.Record{{Op: 0, Key: 1}, {Op: 9, Key: 2}})
	if err == nil {
		t.Fatal("record for operator 9 of 2 accepted")
	}
	time.Sleep(30 * time.Millisecond)
	if s := w.Stats(); s.Executed != 0 {
		t.Fatalf("a refused batch executed %d records", s.Executed)
	}
}

// BenchmarkLocalDispatch measures chained requests dispatched and executed
// per second on one worker: a chain of 10 no-op operators, one executor
// slot (one core), dispatch at once. Reports requests/s.
func BenchmarkLocalDispatch(b *testing.B) {
	app := runtime.Chain("chain", 10, 0)
	w, stop := local(b, app, Config{Slots: 1, Batch: 256, Interval: -1, MaxInFlight: 1 << 20})
	defer stop()
	const per = 1000
	recs := make([]wire.Record, per)
	for i := range recs {
		recs[i] = wire.Record{Key: uint64(i), Input: uint64(i), Payload: []byte("event")}
	}
	b.ResetTimer()
	start := time.Now()
	n := uint64(0)
	for b.Loop() {
		if err := w.Inject(recs); err != nil {
			b.Fatal(err)
		}
		n += per * 10
	}
	waitExecuted(b, w, n)
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "requests/s")
}

// TestInitialAlloc: Config.Alloc sets each task's initial quota; a wrong
// length or an entry out of range is refused.
func TestInitialAlloc(t *testing.T) {
	app := runtime.WordCount()
	w, err := New(Config{App: app, Alloc: []int{7, 900}})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := w.tasks[0].quota.Millicores(), w.tasks[1].quota.Millicores(); a != 7 || b != 900 {
		t.Fatalf("initial quotas %d and %d, want 7 and 900", a, b)
	}
	for _, bad := range [][]int{{7}, {0, 5}, {5, wire.MaxMillicores + 1}} {
		if _, err := New(Config{App: app, Alloc: bad}); err == nil {
			t.Errorf("initial allocation %v accepted", bad)
		}
	}
}

// TestBudget: with Config.Budget every execution of every task is also
// charged to the worker's shared budget; a bad budget is refused.
func TestBudget(t *testing.T) {
	app := runtime.WordCount()
	w, stop := local(t, app, Config{Interval: 2 * time.Millisecond, Check: time.Millisecond, Budget: 1500})
	defer stop()
	src := app.NewSource(1)
	var recs []wire.Record
	for i := range 200 {
		key, p := src.Next(nil)
		recs = append(recs, wire.Record{Op: 0, Key: key, Input: uint64(i + 1), Payload: p})
	}
	if err := w.Inject(recs); err != nil {
		t.Fatal(err)
	}
	waitExecuted(t, w, 200*(1+runtime.WordsPerLine))
	var tasks time.Duration
	for _, tk := range w.tasks {
		tasks += tk.quota.Stats().Used
	}
	if b := w.budget.Stats().Used; b != tasks || b <= 0 || w.budget.Millicores() != 1500 {
		t.Fatalf("budget charged %v (%d mc), the tasks %v", b, w.budget.Millicores(), tasks)
	}
	for _, bad := range []Config{{App: app, Budget: -1}, {App: app, Budget: wire.MaxMillicores + 1},
		{App: app, Budget: 500, Hosts: func(op, mc int) (TaskHost, error) { return nil, nil }}} {
		if _, err := New(bad); err == nil || !strings.Contains(err.Error(), "budget") {
			t.Errorf("budget %d (hosts %v): error %v", bad.Budget, bad.Hosts != nil, err)
		}
	}
}

// TestAgeCheckSleepsWhenIdle: with nothing queued the age check stops its
// ticker, and a record that then arrives alone (below the batch size, so
// only its age makes it ready) still runs after about the batching
// interval: the enqueue restarts the check.
func TestAgeCheckSleepsWhenIdle(t *testing.T) {
	app := runtime.WordCount()
	const interval = 20 * time.Millisecond
	w, stop := local(t, app, Config{Interval: interval, Check: time.Millisecond})
	defer stop()
	src := app.NewSource(1)
	for round := range 3 {
		deadline := time.Now().Add(10 * time.Second)
		for {
			w.mu.Lock()
			idle := w.ageIdle
			w.mu.Unlock()
			if idle {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the age check never went idle", round)
			}
			time.Sleep(time.Millisecond)
		}
		before := w.Stats().Executed
		key, p := src.Next(nil)
		if err := w.Inject([]wire.Record{{Op: 0, Key: key, Input: uint64(round + 1), Payload: p}}); err != nil {
			t.Fatal(err)
		}
		waitExecuted(t, w, before+1)
	}
}
