package env

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// lastStep runs cfg for its episode with Hold and returns the last step's
// info.
func lastStep(t *testing.T, cfg Config) Info {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Reset(1); err != nil {
		t.Fatal(err)
	}
	var res StepResult
	for !res.Truncated {
		if res, err = e.Step(Action{Hold: true}); err != nil {
			t.Fatal(err)
		}
	}
	return res.Info
}

// TestWorkerPhysics checks each part of the worker model on the two-worker
// chain a → b (a on worker 0, b on worker 1, one remote hop).
func TestWorkerPhysics(t *testing.T) {
	run := func(rate float64, w WorkerPhysics) Info {
		cfg := cluster(rate, 20)
		cfg.Worker = w
		return lastStep(t, cfg)
	}
	local := func(rate float64, w WorkerPhysics) Info { // a and b on worker 0
		cfg := cluster(rate, 20)
		cfg.Replicas[1] = []Replica{{Server: 0, Share: 1}}
		cfg.Worker = w
		return lastStep(t, cfg)
	}
	exec := WorkerPhysics{On: true, Cores: 8, Slots: 10}
	// At 90% of worker 0's capacity (1 s / (2τ + α) ≈ 1,193 ev/s),
	// processor sharing slows every execution to its replica's share of
	// the core; executor slots run it at full core speed, as on an idle
	// worker (2τ + α).
	idle := local(100, WorkerPhysics{})
	ps, wp := local(1073, WorkerPhysics{}), local(1073, exec)
	if !(ps.MeanMS > idle.MeanMS+0.3) {
		t.Errorf("processor sharing at 90%%: mean %.3f ms, want above the idle %.3f ms", ps.MeanMS, idle.MeanMS)
	}
	if want := 0.8385; math.Abs(wp.MeanMS-want) > 0.01 {
		t.Errorf("executor slots at 90%%: mean %.3f ms, want 2τ + α = %.4f ms", wp.MeanMS, want)
	}
	// The dispatch path keeps the throughput of processor sharing.
	if a, b := local(2000, WorkerPhysics{}).Throughput, local(2000, exec).Throughput; math.Abs(a-b) > 1e-6*a {
		t.Errorf("saturated throughput %v with slots, %v without", b, a)
	}
	wp = run(1265, exec)
	// One remote hop adds HopMS.
	hop := exec
	hop.HopMS = 1
	if d := run(1265, hop).MeanMS - wp.MeanMS; math.Abs(d-1) > 0.02 {
		t.Errorf("a 1 ms hop adds %.3f ms", d)
	}
	// Batching the input and the one remote request adds two waits
	// uniform on [0, 22.5 ms]: 22.5 ms to the mean, and a p95 from their
	// moment-matched sum (width √2·22.5 ms).
	b := exec
	b.BatchIntervalMS, b.BatchCheckMS = 20, 5
	bi := run(1265, b)
	if d := bi.MeanMS - wp.MeanMS; math.Abs(d-22.5) > 0.3 {
		t.Errorf("batching adds %.3f ms to the mean, want 22.5", d)
	}
	if d, want := bi.P95MS-bi.MeanMS, 0.45*math.Sqrt2*22.5; math.Abs(d-want) > 1 {
		t.Errorf("batched p95 − mean %.2f ms, want %.2f", d, want)
	}
}

func TestPieceBatch(t *testing.T) {
	p := piece{w: 10, as: 1, ae: 1.1, os: 0.9, oe: 1}
	p.batch(0.02)
	if lo, hi := p.as-p.os, p.ae-p.oe; math.Abs(lo-0.1) > 1e-12 || math.Abs(hi-0.12) > 1e-12 {
		t.Errorf("one hop: latency [%v, %v], want [0.1, 0.12]", lo, hi)
	}
	p.batch(0.02)
	lo, hi := p.as-p.os, p.ae-p.oe
	if math.Abs((lo+hi)/2-0.12) > 1e-12 || math.Abs(hi-lo-0.02*math.Sqrt2) > 1e-12 {
		t.Errorf("two hops: latency [%v, %v], want mean 0.12 and width %v", lo, hi, 0.02*math.Sqrt2)
	}
	if p.os > p.oe || p.as > p.ae {
		t.Errorf("piece %+v out of order", p)
	}
}

func TestWorkerPhysicsValidate(t *testing.T) {
	for name, mod := range map[string]func(c *Config){
		"not shared":  func(c *Config) { c.SharedCPU = false },
		"per event":   func(c *Config) { c.Mode = PerEvent },
		"no cores":    func(c *Config) { c.Worker.Cores = 0 },
		"no slots":    func(c *Config) { c.Worker.Slots = 0 },
		"negative":    func(c *Config) { c.Worker.HopMS = -1 },
		"infinite":    func(c *Config) { c.Worker.BatchIntervalMS = math.Inf(1) },
		"set, not on": func(c *Config) { c.Worker.On = false },
		"stochastic":  func(c *Config) { c.Physics.ServiceCV = 1 },
		"cap < slots": func(c *Config) { c.Worker.MaxInFlight = 5 },
		"cap < 0":     func(c *Config) { c.Worker.MaxInFlight = -1 },
	} {
		cfg := cluster(100, 5)
		cfg.Worker = PaperWorkers()
		mod(&cfg)
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err %v, want ErrInvalidConfig", name, err)
		}
	}
	cfg := cluster(100, 5)
	cfg.Worker = PaperWorkers()
	if _, err := New(cfg); err != nil {
		t.Errorf("paper workers: %v", err)
	}
}

// TestWorkerSlots checks the executor slots on one worker of 2 cores' worth
// of dispatch (W̄ = 2,000 millicores) running a and b (2τ + α = 0.8385 ms
// of execution per input): below its cores' worth the slots run every
// execution at full core speed; above it the worker executes at most
// min(Slots, Cores) cores' worth, whatever the dispatch path allows.
func TestWorkerSlots(t *testing.T) {
	run := func(rate float64, w WorkerPhysics) Info {
		cfg := cluster(rate, 20)
		cfg.Replicas[1] = []Replica{{Server: 0, Share: 1}}
		for i := range cfg.Servers {
			cfg.Servers[i].CPU, cfg.Servers[i].MIPS = 2000, 2000
		}
		cfg.Worker = w
		return lastStep(t, cfg)
	}
	const exec = 0.8385 // ms per input
	for _, w := range []WorkerPhysics{{On: true, Cores: 8, Slots: 10}, {On: true, Cores: 1, Slots: 1}} {
		if x := run(1000, w); math.Abs(x.MeanMS-exec) > 0.01 || math.Abs(x.Throughput-1000) > 1 {
			t.Errorf("%+v at 1,000 ev/s: mean %.4f ms, throughput %.1f; want %.4f and 1,000", w, x.MeanMS, x.Throughput, exec)
		}
	}
	if x := run(2000, WorkerPhysics{On: true, Cores: 8, Slots: 10}); math.Abs(x.Throughput-2000) > 1 {
		t.Errorf("8 cores at 2,000 ev/s: throughput %.1f, want 2,000 (the dispatch path carries 2,385)", x.Throughput)
	}
	// One core: at most 1 s / 0.8385 ms ≈ 1,193 inputs/s.
	if x := run(2000, WorkerPhysics{On: true, Cores: 1, Slots: 10}); !(x.Throughput <= 1000/exec+1) {
		t.Errorf("1 core at 2,000 ev/s: throughput %.1f, want ≤ %.1f", x.Throughput, 1000/exec)
	}
}

// episode runs cfg with Hold for its episode and returns every step's info
// (deep copies of the slices a test reads) and the env.
func episode(t *testing.T, cfg Config) ([]Info, *Env) {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Reset(1); err != nil {
		t.Fatal(err)
	}
	var out []Info
	for {
		res, err := e.Step(Action{Hold: true})
		if err != nil {
			t.Fatal(err)
		}
		info := res.Info
		info.Queue = append([]float64(nil), info.Queue...)
		info.Workers = append([]WorkerMetrics(nil), info.Workers...)
		out = append(out, info)
		if res.Truncated {
			return out, e
		}
	}
}

// TestWorkerInFlightCap checks the cap on requests in flight
// (WorkerPhysics.MaxInFlight) on the two-worker chain a → b (a alone on
// worker 0, 1,000 millicores: ≈ 1,400 ev/s).
func TestWorkerInFlightCap(t *testing.T) {
	slots := WorkerPhysics{On: true, Cores: 8, Slots: 10, HopMS: 1, BatchIntervalMS: 20, BatchCheckMS: 5}
	capped := slots
	capped.MaxInFlight = 10
	run := func(rate float64, w WorkerPhysics) []Info {
		cfg := cluster(rate, 30)
		cfg.Worker = w
		infos, _ := episode(t, cfg)
		return infos
	}
	// Below the cap nothing changes: every step's info is identical.
	for _, rate := range []float64{300, 1265} {
		a, b := run(rate, slots), run(rate, capped)
		for i := range a {
			if fa, fb := fmt.Sprintf("%+v", a[i]), fmt.Sprintf("%+v", b[i]); fa != fb {
				t.Fatalf("%v ev/s, step %d: with the cap %s, without %s", rate, i, fb, fa)
			}
		}
	}
	// Above it (3,000 ev/s, twice worker 0's capacity) worker 0 holds at
	// most the cap; the rest of a's backlog waits at the ingress. A single
	// FIFO stream departs as without the cap, so throughput and latency
	// (from the original arrival) are the same, and every event is still
	// counted (Info.Queue, PlannerQueue).
	a, b := run(3000, slots), run(3000, capped)
	for i := range a {
		x, y := a[i], b[i]
		if q := y.Workers[0].Queue; q > float64(capped.MaxInFlight)+1e-9 {
			t.Errorf("step %d: worker 0 holds %.3f requests, cap %d", i, q, capped.MaxInFlight)
		}
		same := func(what string, u, v float64) {
			if math.Abs(u-v) > 1e-9*max(1, math.Abs(u)) {
				t.Errorf("step %d: %s %v with the cap, %v without", i, what, v, u)
			}
		}
		same("throughput", x.Throughput, y.Throughput)
		same("p95", x.P95MS, y.P95MS)
		same("mean latency", x.MeanMS, y.MeanMS)
		same("queue of a", x.Queue[0], y.Queue[0])
		same("queue of b", x.Queue[1], y.Queue[1])
		same("planner queue", x.PlannerQueue, y.PlannerQueue)
		same("worker 1's queue", x.Workers[1].Queue, y.Workers[1].Queue)
	}
	last, lastCap := a[len(a)-1], b[len(b)-1]
	if !(last.Workers[0].Queue > 10*float64(capped.MaxInFlight)) {
		t.Errorf("without the cap worker 0 holds only %.1f requests at 3,000 ev/s", last.Workers[0].Queue)
	}
	if up := lastCap.Queue[0] - lastCap.Workers[0].Queue; !(up > 1000) {
		t.Errorf("with the cap %.1f requests wait upstream, want the backlog (%.0f)", up, lastCap.Queue[0])
	}
	if !(lastCap.P95MS > 1000) {
		t.Errorf("p95 %.1f ms: the upstream wait is not in the latency", lastCap.P95MS)
	}
}

// TestWorkerInFlightCapShared checks the cap on one worker running a and b
// (b fed only by a's local requests, which pass in memory: not counted)
// in overload: the worker never holds more than the cap of inputs, the
// excess waits at the ingress, and nothing is lost.
func TestWorkerInFlightCapShared(t *testing.T) {
	w := WorkerPhysics{On: true, Cores: 8, Slots: 10, MaxInFlight: 25}
	cfg := cluster(3000, 20)
	cfg.Replicas[1] = []Replica{{Server: 0, Share: 1}}
	cfg.Worker = w
	infos, e := episode(t, cfg)
	for i, info := range infos {
		if q := info.Workers[0].Queue - info.Queue[1]; q > float64(w.MaxInFlight)+1e-9 {
			t.Errorf("step %d: worker 0 holds %.3f inputs, cap %d", i, q, w.MaxInFlight)
		}
	}
	last := infos[len(infos)-1]
	all := last.InFlight + last.Queue[0] + last.Queue[1]
	if tot := total(e); math.Abs(all-tot) > 1e-6*tot {
		t.Errorf("info counts %.3f events in the system, the core %.3f", all, tot)
	}
	if up := all - last.Workers[0].Queue - last.InFlight; !(up > 1000) {
		t.Errorf("%.1f events wait upstream, want the backlog", up)
	}
	emitted, sunk, res := e.core.balance()
	for i, r := range res {
		if math.Abs(r) > 1e-6*emitted {
			t.Errorf("stage %d: residual %v", i, r)
		}
	}
	if !(sunk < emitted) {
		t.Errorf("sunk %v of %v", sunk, emitted)
	}
}

// TestWorkerInFlightCapReplan checks that a re-plan transfers only the
// requests at the worker: those its cap holds upstream are re-routed to the
// new replicas, not sent from the old worker, and nothing is lost.
func TestWorkerInFlightCapReplan(t *testing.T) {
	plan := [][]Replica{{{Server: 0, Share: 0.5}, {Server: 2, Share: 0.5}}, {{Server: 1, Share: 1}}}
	move := func(maxInFlight int) (held float64, m Migration) {
		cfg := cluster(3000, 30)
		cfg.Worker = WorkerPhysics{On: true, Cores: 8, Slots: 10, MaxInFlight: maxInFlight}
		e, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(0)
		var info Info
		for range 10 {
			sr, err := e.Step(Action{Hold: true})
			if err != nil {
				t.Fatal(err)
			}
			info = sr.Info
		}
		held = info.Queue[0] - info.Workers[0].Queue
		before := total(e)
		sr, err := e.Step(Action{Replicas: plan})
		if err != nil {
			t.Fatal(err)
		}
		if diff := before + sr.Info.OfferedRate - sr.Info.SinkEvents - total(e); math.Abs(diff) > 1e-6*before {
			t.Errorf("cap %d: the re-plan lost %v events", maxInFlight, diff)
		}
		return held, sr.Info.Migration
	}
	held0, free := move(0)
	held, capped := move(10)
	if held0 != 0 || !(held > 1000) {
		t.Fatalf("held upstream: %v without the cap, %v with it", held0, held)
	}
	// Half of a's queue moves to server 2: the held half is not sent.
	want := 0.5 * held * cluster(3000, 30).App.Tasks[0].OutBytes / (1 << 20)
	if d := free.MovedMB - capped.MovedMB; math.Abs(d-want) > 1e-6*want {
		t.Errorf("the cap moved %v MB less, want %v (half of %v held events)", d, want, held)
	}
	if !(capped.MaxPauseS < free.MaxPauseS) {
		t.Errorf("pause %v s with the cap, %v without", capped.MaxPauseS, free.MaxPauseS)
	}
}
