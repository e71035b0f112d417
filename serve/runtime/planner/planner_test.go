package planner

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner/core"
	"streamscale/serve/runtime/provider"
	"streamscale/serve/runtime/provider/local"
	"streamscale/serve/runtime/worker"
	"streamscale/traces"
)

// inproc is a provider running workers in this process on loopback.
type inproc struct {
	t       testing.TB
	planner string
	app     ops.App
	cfg     worker.Config
	mu      sync.Mutex
	ws      []*inprocWorker
	// fault, if set, may replace worker i's planner address and listener
	// (a partition's proxy and gate: partition_test.go).
	fault func(i int, planner string, ln net.Listener) (string, net.Listener)
}

type inprocWorker struct {
	w      *worker.Worker
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
}

func (p *inproc) Scale(_ context.Context, n int) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.ws) > n {
		last := p.ws[len(p.ws)-1]
		p.ws = p.ws[:len(p.ws)-1]
		last.cancel()
		<-last.done
	}
	for i := range p.ws {
		select {
		case <-p.ws[i].done:
			p.ws[i] = p.start(i)
		default:
		}
	}
	for len(p.ws) < n {
		p.ws = append(p.ws, p.start(len(p.ws)))
	}
	return p.Workers(context.Background())
}

func (p *inproc) start(i int) *inprocWorker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.t.Fatal(err)
	}
	cfg := p.cfg
	cfg.ID, cfg.App, cfg.Planner = uint32(i), p.app, p.planner
	if p.fault != nil {
		cfg.Planner, ln = p.fault(i, p.planner, ln)
	}
	w, err := worker.New(cfg)
	if err != nil {
		p.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	iw := &inprocWorker{w: w, addr: ln.Addr().String(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(iw.done)
		if err := w.Serve(ctx, ln, nil); err != nil && ctx.Err() == nil {
			p.t.Logf("worker %d: %v", i, err)
		}
	}()
	return iw
}

func (p *inproc) Workers(context.Context) ([]string, error) {
	var out []string
	for _, w := range p.ws {
		out = append(out, w.addr)
	}
	return out, nil
}

func (p *inproc) Close() error {
	p.Scale(context.Background(), 0) //nolint:errcheck
	return nil
}

func (p *inproc) kill(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ws[i].cancel()
	<-p.ws[i].done
}

// current returns the workers of the current scale (stopped or not: the
// planner's exit ends them, their state stays readable).
func (p *inproc) current() []*worker.Worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*worker.Worker
	for _, w := range p.ws {
		out = append(out, w.w)
	}
	return out
}

// checkedWC is word count whose first operator is keyed by the input key
// and checks each key's sequence numbers (Flink's semantic check):
// violations counts every record whose Seq is not the key's next.
func checkedWC(violations, dupes *atomic.Int64) ops.App {
	app := runtime.WordCount()
	split := app.Operators[0].New
	app.Operators[0] = ops.Spec{Name: "check-split", Stateful: true, New: func() ops.Operator {
		return checkOp{split: split(), violations: violations, dupes: dupes}
	}}
	return app
}

type checkOp struct {
	split             ops.Operator
	violations, dupes *atomic.Int64
}

func (c checkOp) Process(in ops.Record, st ops.State, out ops.Emitter) error {
	var next uint64
	if v, ok := st.Get(in.Key); ok {
		next = binary.LittleEndian.Uint64(v)
	}
	switch {
	case in.Seq < next:
		c.dupes.Add(1)
		return nil
	case in.Seq > next:
		c.violations.Add(1)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], in.Seq+1)
	st.Put(in.Key, b[:])
	return c.split.Process(in, st, out)
}

// oracle returns the exact word counts of the first n inputs.
func oracle(app ops.App, seed uint64, n int) map[uint64]uint64 {
	src := app.NewSource(seed)
	want := map[uint64]uint64{}
	var buf []byte
	for range n {
		_, buf = src.Next(buf)
		for _, w := range bytes.Fields(buf) {
			want[runtime.WordKey(w)]++
		}
	}
	return want
}

func runPlanner(t *testing.T, cfg Config, wcfg worker.Config) (Result, *inproc) {
	t.Helper()
	return runPlannerHooked(t, cfg, wcfg, nil, nil)
}

// runPlannerHooked is runPlanner with the in-process provider wrapped by
// wrap (nil: as is) and the planner handed to made before it serves (nil:
// none), for callbacks of cfg that need it.
func runPlannerHooked(t *testing.T, cfg Config, wcfg worker.Config, wrap func(*inproc) provider.Provider, made func(*Planner)) (Result, *inproc) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	prov := &inproc{t: t, planner: ln.Addr().String(), app: cfg.App, cfg: wcfg}
	cfg.Provider = prov
	if wrap != nil {
		cfg.Provider = wrap(prov)
	}
	if testing.Verbose() {
		cfg.Log = os.Stderr
		prov.cfg.Log = os.Stderr
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if made != nil {
		made(p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := p.Serve(ctx, ln, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res, prov
}

func wordCounts(ws []*worker.Worker) map[uint64]uint64 {
	got := map[uint64]uint64{}
	for _, w := range ws {
		for k, v := range w.StateOf(1) {
			got[k] += binary.LittleEndian.Uint64(v)
		}
	}
	return got
}

// awaitFailover waits until the planner has failed over n times and the
// last failover is done (the core is idle), or ctx ends: a worker
// restarted then rejoins and is placed by a rejoin (a fixed delay may fall
// before the failure was noticed, or leave the restarted process too
// little of the load to join on a busy host).
func awaitFailover(ctx context.Context, p *Planner, n int) {
	p.waitFor(ctx, nil, func() bool { return p.core.Failures() >= n && p.core.Idle() })
}

// TestScaleUnderLoad: word count under constant load while the cluster goes
// 1 → 3 → 2 → 4 workers. Every input completes exactly once, every key's
// sequence arrives in order without gaps or repeats, and the word counts
// equal the oracle's.
func TestScaleUnderLoad(t *testing.T) {
	var violations, dupes atomic.Int64
	app := checkedWC(&violations, &dupes)
	cfg := Config{App: app, Seed: 7, Rate: 2000, Duration: 4 * time.Second, Workers: 1, Miss: 50,
		Steps: []Step{{At: 1 * time.Second, Workers: 3}, {At: 2 * time.Second, Workers: 2}, {At: 3 * time.Second, Workers: 4}}}
	res, prov := runPlanner(t, cfg, worker.Config{Interval: 5 * time.Millisecond, Check: time.Millisecond, Slots: 4})
	defer prov.Close()
	t.Logf("inputs %d completed %d dup %d p95 %.1f ms; migrations:", res.Inputs, res.Completed, res.Duplicated, res.P95MS)
	for _, m := range res.Migrations {
		t.Logf("  %+v", m)
	}
	if res.Inputs != 8000 || res.Completed != res.Inputs || res.Duplicated != 0 || res.Lost != 0 {
		t.Fatalf("inputs %d, completed %d, duplicated %d, lost %d", res.Inputs, res.Completed, res.Duplicated, res.Lost)
	}
	if len(res.Migrations) != 3 {
		t.Fatalf("%d migrations, want 3", len(res.Migrations))
	}
	for _, m := range res.Migrations {
		if !m.Complete || m.Moves == 0 {
			t.Errorf("migration %+v incomplete or moved nothing", m)
		}
	}
	if v, d := violations.Load(), dupes.Load(); v != 0 || d != 0 {
		t.Fatalf("sequence check: %d gaps or reorderings, %d repeats", v, d)
	}
	want := oracle(app, cfg.Seed, int(res.Inputs))
	got := wordCounts(prov.current())
	if len(got) != len(want) {
		t.Fatalf("%d words counted, oracle %d", len(got), len(want))
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("word %d: %d, oracle %d", k, got[k], n)
		}
	}
}

// gatedStart is an inproc provider whose scale-ups (after the first)
// wait until the planner's load and drain are over: a slow process start,
// or a starved host, made certain.
type gatedStart struct {
	*inproc
	pl **Planner
}

func (p gatedStart) Scale(ctx context.Context, n int) ([]string, error) {
	p.mu.Lock()
	up := n > len(p.ws) && len(p.ws) > 0
	p.mu.Unlock()
	if pl := *p.pl; up {
		pl.waitFor(ctx, nil, func() bool { return pl.loadEnded })
	}
	return p.inproc.Scale(ctx, n)
}

// A scale step due during the load whose migration is still in progress
// when the load and its drain end is carried out to the end, not cut off:
// the run ends with the step's workers and its migration complete.
func TestStepNotCutOffByRunEnd(t *testing.T) {
	// The step at 200 ms waits for its worker until the load (500 ms) and
	// its drain are over.
	var pl *Planner
	cfg := Config{App: runtime.WordCount(), Seed: 1, Rate: 200, Duration: 500 * time.Millisecond, Workers: 1, Miss: 50,
		Steps: []Step{{At: 200 * time.Millisecond, Workers: 2}}}
	res, prov := runPlannerHooked(t, cfg, worker.Config{Interval: 5 * time.Millisecond, Check: time.Millisecond, Slots: 4},
		func(p *inproc) provider.Provider { return gatedStart{p, &pl} }, func(p *Planner) { pl = p })
	defer prov.Close()
	if res.Completed != res.Inputs || len(res.Migrations) != 1 || !res.Migrations[0].Complete || res.WorkersEnded != 2 {
		t.Fatalf("completed %d of %d, migrations %+v, workers at the end %d; want the step's migration complete and 2 workers", res.Completed, res.Inputs, res.Migrations, res.WorkersEnded)
	}
}

func TestConfigErrors(t *testing.T) {
	app := runtime.WordCount()
	for _, c := range []Config{
		{App: app, Workers: 0, Provider: &inproc{}},
		{App: app, Workers: 1},
		{App: app, Workers: 1, Provider: &inproc{}, Rate: -1},
		{App: app, Workers: 1, Provider: &inproc{}, Controller: "hpa"},
		{App: app, Workers: 1, Provider: &inproc{}, Steps: []Step{{At: time.Second, Workers: 0}}},
		{App: ops.App{Name: "empty"}, Workers: 1, Provider: &inproc{}},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("config %+v accepted", c)
		}
	}
}

// TestWorkerFailure: a worker stops abruptly under load (its context is
// cancelled: streams cut, queues and state gone). The planner notices by
// heartbeat, gives its key groups to the live workers, replays every input
// not yet complete, and places the worker again when it comes back. State
// is not restored: the failed worker's key groups restart empty and are
// rebuilt only by the replayed inputs (at-least-once). The checker then
// allows: every input completes; word counts of key groups that never
// lived on the failed worker are at least the oracle's (replays may add);
// those of its groups may be lower (lost with it).
func TestWorkerFailure(t *testing.T) {
	var violations, dupes atomic.Int64
	app := checkedWC(&violations, &dupes)
	cfg := Config{App: app, Seed: 11, Rate: 1500, Duration: 4 * time.Second, Workers: 3, Miss: 10}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	prov := &inproc{t: t, planner: ln.Addr().String(), app: app, cfg: worker.Config{Interval: 5 * time.Millisecond, Check: time.Millisecond, Slots: 4}}
	defer prov.Close()
	cfg.Provider = prov
	if testing.Verbose() {
		cfg.Log = os.Stderr
		prov.cfg.Log = os.Stderr
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Kill worker 1 when the load's first second ends (a fixed delay may
	// fall before the workers joined), restart it once the failover is
	// done.
	var once sync.Once
	p.cfg.Rows = func(Row) {
		once.Do(func() {
			go func() {
				prov.kill(1)
				awaitFailover(ctx, p, 1)
				prov.Scale(ctx, 3) //nolint:errcheck // restarts worker 1
			}()
		})
	}
	res, err := p.Serve(ctx, ln, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inputs %d completed %d dup %d failures %d workers %d; seq gaps %d repeats %d", res.Inputs, res.Completed, res.Duplicated, res.Failures, res.WorkersEnded, violations.Load(), dupes.Load())
	rejoined := false
	for _, m := range res.Migrations {
		t.Logf("  %+v", m)
		rejoined = rejoined || (m.Reason == "rejoin" && m.Complete && m.To == 3)
	}
	if res.Failures != 1 || res.Completed != res.Inputs || res.Lost != 0 || res.Inputs != 6000 {
		t.Fatalf("failures %d, inputs %d, completed %d, lost %d", res.Failures, res.Inputs, res.Completed, res.Lost)
	}
	if !rejoined || res.WorkersEnded != 3 {
		t.Fatalf("worker 1 did not rejoin (workers at the end %d)", res.WorkersEnded)
	}
	initial := core.Assign(nil, len(app.Operators), []uint32{0, 1, 2}, nil)
	want := oracle(app, cfg.Seed, int(res.Inputs))
	got := wordCounts(prov.current())
	checked := 0
	for k, n := range want {
		if initial[1][ops.KeyGroup(k)] == 1 {
			continue // lived on the failed worker
		}
		checked++
		if got[k] < n {
			t.Fatalf("word %d (never on the failed worker): %d, oracle %d", k, got[k], n)
		}
	}
	if checked < len(want)/2 {
		t.Fatalf("only %d of %d words checked", checked, len(want))
	}
}

// TestSIGKILL: a worker process killed with SIGKILL under load. The planner
// notices by heartbeat (its stream is cut), gives its key groups to the
// live workers and replays the inputs not yet complete; the restarted
// process rejoins and is placed again. Every input completes.
func TestSIGKILL(t *testing.T) {
	app, _ := runtime.Apps("wc")
	// Kill when the load's first second ends: the workers start as
	// processes, and a fixed delay may fall before they joined.
	start := make(chan struct{})
	var once sync.Once
	res := runProcesses(t, "wc", func(lp *local.Provider, p *Planner) {
		<-start
		if err := lp.Kill(1); err != nil {
			t.Error(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		awaitFailover(ctx, p, 1)
		if _, err := lp.Scale(context.Background(), 3); err != nil { // restart it
			t.Error(err)
		}
	}, Config{App: app, Seed: 3, Rate: 1000, Duration: 4 * time.Second, Workers: 3, Miss: 10, Rows: func(Row) { once.Do(func() { close(start) }) }})
	t.Logf("inputs %d completed %d dup %d failures %d workers %d", res.Inputs, res.Completed, res.Duplicated, res.Failures, res.WorkersEnded)
	rejoined := false
	for _, m := range res.Migrations {
		t.Logf("  %+v", m)
		rejoined = rejoined || (m.Reason == "rejoin" && m.Complete)
	}
	if res.Failures != 1 || res.Inputs != 4000 || res.Completed != res.Inputs || !rejoined || res.WorkersEnded != 3 {
		t.Fatalf("failures %d, inputs %d, completed %d, rejoined %v, workers %d", res.Failures, res.Inputs, res.Completed, rejoined, res.WorkersEnded)
	}
	// The beats were timed: the p99 gap is about one beat interval
	// (200 ms) or more, and the killed worker's silence is not counted
	// (its stream ended; the restarted process is a new member).
	if res.BeatGapMSP99 < 150 || res.BeatGapMSMax < res.BeatGapMSP99 || res.BeatGapMSMax > 30_000 {
		t.Fatalf("beat gaps: p99 %.1f ms, max %.1f ms", res.BeatGapMSP99, res.BeatGapMSMax)
	}
}

// TestTraceAllocAndMetrics: a compressed trace drives the load (one point
// per 500 ms: 400/s, 0/s, 800/s → 200 + 0 + 400 inputs), the allocation
// hook's decision reaches every task, and the workers' reports make a
// valid CLASP observation (Table 2) with the placement's shares.
func TestTraceAllocAndMetrics(t *testing.T) {
	app := runtime.WordCount()
	tr := &traces.Trace{Counts: []float64{400, 0, 800}, Scale: 1}
	var calls atomic.Int64
	var pl *Planner
	var offered, latencies int // the windows taken in the hook
	cfg := Config{App: app, Seed: 5, Trace: tr, TraceStep: 500 * time.Millisecond, Duration: 1500 * time.Millisecond, Drain: 3 * time.Second, Workers: 2, Miss: 25,
		Control: 300 * time.Millisecond,
		Allocate: func(_ float64, tasks []TaskObs) map[uint32][]int {
			calls.Add(1)
			w := pl.TakeWindow()
			offered += w.Offered
			latencies += len(w.LatencyMS)
			if !sort.Float64sAreSorted(w.LatencyMS) {
				t.Errorf("window latencies not ascending: %v", w.LatencyMS)
			}
			out := map[uint32][]int{}
			for _, tk := range tasks {
				out[tk.Worker] = append(out[tk.Worker], 321)
			}
			return out
		}}
	p, prov, ln := inprocPlanner(t, cfg)
	pl = p
	res, err := p.Serve(context.Background(), ln, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inputs != 600 || res.Completed != 600 {
		t.Fatalf("inputs %d completed %d, want 600", res.Inputs, res.Completed)
	}
	// Every input is offered in exactly one window and its latency lands
	// in exactly one: the hook's windows and the rest add up.
	last := p.TakeWindow()
	if offered+last.Offered != 600 || latencies+len(last.LatencyMS) != 600 {
		t.Fatalf("windows offered %d+%d and completed %d+%d, want 600 each", offered, last.Offered, latencies, len(last.LatencyMS))
	}
	if len(last.OpenAgeMS) != 0 {
		t.Fatalf("%d inputs open after every input completed", len(last.OpenAgeMS))
	}
	if calls.Load() == 0 {
		t.Fatal("the allocation hook never ran")
	}
	// The hook's decision reached every task. Checked on the workers: a
	// report sent after it may not exist when a busy host delays the
	// first round; the allocation frame does reach them before the run
	// ends, ahead of later inputs on the same stream.
	for _, w := range prov.current() {
		for o, mc := range w.Millicores() {
			if mc != 321 {
				t.Errorf("worker %d task %d has %d millicores, want 321", w.ID(), o, mc)
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, m := range p.byID {
		for o, tk := range m.metrics.Tasks {
			if tk.Millicores != 321 && tk.Millicores != 1000 {
				t.Errorf("worker %d task %d reports %d millicores, want 321 (or the default 1000 before the hook's first round)", id, o, tk.Millicores)
			}
		}
	}
	ob, ok := p.observation()
	if !ok {
		t.Fatal("no observation")
	}
	if err := ob.Validate(); err != nil {
		t.Fatalf("observation: %v", err)
	}
	if len(ob.Workers) != 2 || ob.Workers[0].Share[1] != 0.5 || ob.Parallelism[1] != 2 {
		t.Fatalf("observation workers %+v, parallelism %v", ob.Workers, ob.Parallelism)
	}
	// The reports just observed are marked Repeated in the next
	// observation, until a worker reports again; ReportS is the report's
	// interval.
	again, _ := p.observation()
	for _, w := range again.Workers {
		if !w.Repeated || w.ReportS != p.byID[uint32(w.ID)].metrics.IntervalS || !(w.ReportS > 0) {
			t.Errorf("worker %d seen twice: repeated %v, report %v s", w.ID, w.Repeated, w.ReportS)
		}
	}
	for _, m := range p.byID {
		m.fresh = true // as a new report does
	}
	if again, _ = p.observation(); again.Workers[0].Repeated || again.Workers[1].Repeated {
		t.Errorf("new reports marked repeated: %+v", again.Workers)
	}
	// τ̄ is the wall time per execution, or with ExecCPU the CPU time:
	// four executions of 1,000 µs of wall time and 400 µs of CPU each.
	for _, m := range p.byID {
		for o := range m.metrics.Tasks {
			tk := &m.metrics.Tasks[o]
			tk.Execs, tk.ExecNS, tk.CPUNS = 4, 4_000_000, 1_600_000
		}
	}
	for _, c := range []struct {
		cpu  bool
		want float64
	}{{false, 1000}, {true, 400}} {
		p.cfg.ExecCPU = c.cpu
		ob, _ := p.observation()
		for _, w := range ob.Workers {
			for o, us := range w.ExecUS {
				if us != c.want {
					t.Errorf("ExecCPU %v: worker %d op %d τ̄ %v µs, want %v", c.cpu, w.ID, o, us, c.want)
				}
			}
		}
	}
}

// TestAllocateEveryInterval: the Allocator runs once for every Control
// boundary of the load even when ticks are lost — here its first round
// holds the loop until the load and its drain are over (as a busy host
// may), so every later boundary's tick but one is lost.
func TestAllocateEveryInterval(t *testing.T) {
	app := runtime.WordCount()
	var pl *Planner
	var rounds []float64
	cfg := Config{App: app, Seed: 1, Rate: 200, Duration: 600 * time.Millisecond, Control: 100 * time.Millisecond, Workers: 1,
		Allocate: func(now float64, _ []TaskObs) map[uint32][]int {
			if rounds = append(rounds, now); len(rounds) == 1 {
				pl.waitFor(context.Background(), nil, func() bool { return pl.loadEnded })
			}
			return nil
		}}
	res, prov := runPlannerHooked(t, cfg, worker.Config{Report: 50 * time.Millisecond}, nil, func(p *Planner) { pl = p })
	defer prov.Close()
	if res.Inputs != 120 || res.Completed != res.Inputs {
		t.Fatalf("inputs %d completed %d, want 120", res.Inputs, res.Completed)
	}
	if len(rounds) != 6 {
		t.Fatalf("%d allocation rounds (at %v s) for a load of 6 control intervals, want 6", len(rounds), rounds)
	}
}

// TestCatchUpWindowsMarked: as TestAllocateEveryInterval, with the
// Allocator taking the windows. Its first round holds the loop until the
// load and its drain are over, so at most one more round (a tick the
// ticker kept) runs before the loop sees the run's end: the rounds after
// it, for the boundaries the held loop missed, get windows marked
// CatchUp, the rounds during the load unmarked ones; every catch-up
// window after the first holds nothing (no input offered, completed or
// open), which unmarked would count as an interval that met any latency
// objective.
func TestCatchUpWindowsMarked(t *testing.T) {
	app := runtime.WordCount()
	var pl *Planner
	var ws []Window
	cfg := Config{App: app, Seed: 1, Rate: 200, Duration: 600 * time.Millisecond, Control: 100 * time.Millisecond, Workers: 1,
		Allocate: func(float64, []TaskObs) map[uint32][]int {
			if ws = append(ws, pl.TakeWindow()); len(ws) == 1 {
				pl.waitFor(context.Background(), nil, func() bool { return pl.loadEnded })
			}
			return nil
		}}
	res, prov := runPlannerHooked(t, cfg, worker.Config{Report: 50 * time.Millisecond}, nil, func(p *Planner) { pl = p })
	defer prov.Close()
	if res.Completed != res.Inputs || len(ws) != 6 {
		t.Fatalf("completed %d of %d, %d rounds; want all and 6", res.Completed, res.Inputs, len(ws))
	}
	first := slices.IndexFunc(ws, func(w Window) bool { return w.CatchUp })
	if first < 1 || first > 2 {
		t.Fatalf("first catch-up round %d, want 1 or 2 (after the held round and at most one kept tick)", first)
	}
	for i, w := range ws {
		switch {
		case i >= first && !w.CatchUp:
			t.Errorf("round %d after the first catch-up round %d is not marked", i, first)
		case i > first && (w.Offered != 0 || len(w.LatencyMS) != 0 || len(w.OpenAgeMS) != 0):
			t.Errorf("catch-up round %d: window %+v, want empty", i, w)
		}
	}
}

func TestThreshold(t *testing.T) {
	rule := Threshold(0.5, 0.9, 100, 100)
	got := rule(0, []TaskObs{
		{Worker: 0, Op: 0, CPUCores: 0.95, Millicores: 1000}, // hot: +100
		{Worker: 0, Op: 1, CPUCores: 0.3, Millicores: 1000},  // cold: −100
		{Worker: 1, Op: 0, CPUCores: 0.7, Millicores: 1000},  // fine
		{Worker: 1, Op: 1, CPUCores: 0.7, Millicores: 1000},  // fine
	})
	if len(got) != 1 || got[0][0] != 1100 || got[0][1] != 900 {
		t.Fatalf("threshold rule: %v", got)
	}
}

// TestInputLogSizedOnce: the generator's input log is sized for every
// input the run sends, so it is never copied inside the generator's lock.
// A trace of 100 segments of 10 ms at 1,550 inputs/s sends ⌈15.5⌉ = 16
// inputs per segment, 1,600 in all, where the rate × time of the whole run
// is 1,550: an estimate rounded once fell 50 short and the log grew near
// the load's end (on a ten-minute live replay a 70–300 ms stall of the
// planner that inflated the last interval's p95).
func TestInputLogSizedOnce(t *testing.T) {
	app := runtime.WordCount()
	counts := make([]float64, 100)
	for i := range counts {
		counts[i] = 1550
	}
	cfg := Config{App: app, Seed: 3, Trace: &traces.Trace{Counts: counts, Scale: 1}, TraceStep: 10 * time.Millisecond,
		Duration: time.Second, Drain: 3 * time.Second, Workers: 1, Miss: 25}
	p, _, ln := inprocPlanner(t, cfg)
	res, err := p.Serve(context.Background(), ln, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inputs != 1600 {
		t.Fatalf("inputs %d, want 1600 (16 per 10 ms segment)", res.Inputs)
	}
	if b := p.inputBound(); b < int(res.Inputs) {
		t.Fatalf("input bound %d below the %d inputs sent: the log grows under the generator's lock", b, res.Inputs)
	}
}

// inprocPlanner is a planner for cfg on a fresh loopback listener whose
// workers run in this process and report every 200 ms; they are closed
// when the test ends.
func inprocPlanner(t *testing.T, cfg Config) (*Planner, *inproc, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	prov := &inproc{t: t, planner: ln.Addr().String(), app: cfg.App, cfg: worker.Config{Report: 200 * time.Millisecond}}
	t.Cleanup(func() { prov.Close() })
	cfg.Provider = prov
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, prov, ln
}
