package env

import (
	"errors"
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
