package agents

import (
	"math"
	"strings"
	"testing"

	"streamscale/env"
)

// chain is a three-task chain a → b → c with selectivity 2 at a.
func chain() env.App {
	return env.App{Name: "chain", SLOMS: 100, Sources: []int{0}, Sinks: []int{2},
		Tasks: []env.Task{{Name: "a", Selectivity: 2, MIPSPerEvent: 1}, {Name: "b", Selectivity: 1, MIPSPerEvent: 1}, {Name: "c", Selectivity: 1, MIPSPerEvent: 1}},
		Edges: []env.Edge{{From: 0, To: 1}, {From: 1, To: 2}}}
}

// taskObs builds an observation of n tasks from per-task (cpu mc, input/s,
// processed/s, queue, service s, io ratio).
func taskObs(rows [][6]float64) env.Observation {
	o := env.Observation{App: make([]float64, env.AppFeatures), Server: make([]float64, env.ServerFeatures)}
	for _, r := range rows {
		t := make([]float64, env.TaskFeatures)
		t[env.TaskCPU] = r[0] / 10000
		t[env.TaskInputRate] = math.Log1p(r[1])
		t[env.TaskThroughput] = math.Log1p(r[2])
		t[env.TaskQueue] = math.Log1p(r[3])
		t[env.TaskProcLatency] = r[4] / 0.1
		t[env.TaskIORatio] = r[5]
		t[env.TaskThroughputRatio] = 1
		o.Task = append(o.Task, t...)
	}
	return o
}

// TestRateRuleSizesFromTheSources: a bottleneck at a starves b and c of
// input, but the rule sizes b and c for the rate the source offers times
// a's selectivity, in one step; a is sized for its arrivals plus the
// catch-up of its backlog.
func TestRateRuleSizesFromTheSources(t *testing.T) {
	cfg := DefaultRateConfig()
	r, err := NewRateRule(cfg, chain())
	if err != nil {
		t.Fatal(err)
	}
	// a: 1000 mc, 100 arrivals/s, processes 50/s (saturated: s̄ 0.02 s at
	// 1000 mc → 20 mc·s per event), 500 queued; emits 100/s (io ratio
	// 100/(100+100)). b, c: 1000 mc, 100/s in, s̄ 0.005 s.
	obs := taskObs([][6]float64{
		{1000, 100, 50, 500, 0.02, 0.5},
		{1000, 100, 100, 0, 0.005, 0.5},
		{1000, 100, 100, 0, 0.005, 0.5},
	})
	a, err := r.Act(obs)
	if err != nil {
		t.Fatal(err)
	}
	// a: (100 + 500/10)·0.02·1000/0.7 = 4285.7 → 4300. b: target rate
	// 100·2 = 200 (not its 100), 200·0.005·1000/0.7 = 1428.6 → 1450.
	want := []float64{4300, 1450, 1450}
	for k, w := range want {
		if a.Targets[k] != w {
			t.Errorf("task %d target %v, want %v (all %v)", k, a.Targets[k], w, a.Targets)
		}
	}
}

// TestRateRuleStabilizesScaleDown: a scale-down waits for the window; a
// scale-up does not.
func TestRateRuleStabilizesScaleDown(t *testing.T) {
	cfg := DefaultRateConfig()
	cfg.ScaleDownWindow = 3
	r, _ := NewRateRule(cfg, chain())
	high := taskObs([][6]float64{{1000, 100, 100, 0, 0.01, 0.667}, {1000, 200, 200, 0, 0.004, 0.5}, {1000, 200, 200, 0, 0.004, 0.5}})
	low := taskObs([][6]float64{{1000, 20, 20, 0, 0.01, 0.667}, {1000, 40, 40, 0, 0.004, 0.5}, {1000, 40, 40, 0, 0.004, 0.5}})
	first, _ := r.Act(high)
	up := append([]float64(nil), first.Targets...)
	if !(up[0] > 1000) {
		t.Fatalf("no scale-up at once: %v", up)
	}
	for i := range 2 {
		a, _ := r.Act(low)
		if a.Targets[0] != 1000 && a.Targets[0] < up[0] {
			t.Fatalf("step %d: scaled down to %v inside the window", i, a.Targets[0])
		}
	}
	a, _ := r.Act(low)
	if !(a.Targets[0] < 1000) {
		t.Errorf("no scale-down after the window: %v", a.Targets)
	}
}

func TestRateRuleRejects(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*RateConfig)
		want string
	}{
		{func(c *RateConfig) { c.Target = 0 }, "target"},
		{func(c *RateConfig) { c.Tolerance = 0.8 }, "tolerance"},
		{func(c *RateConfig) { c.ScaleDownWindow = 0 }, "window"},
		{func(c *RateConfig) { c.CatchUpSeconds = math.NaN() }, "catch-up"},
		{func(c *RateConfig) { c.Quantum = -1 }, "quantum"},
	} {
		cfg := DefaultRateConfig()
		tc.mod(&cfg)
		if _, err := NewRateRule(cfg, chain()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %+v: %v, want an error naming %s", cfg, err, tc.want)
		}
	}
	cyc := chain()
	cyc.Edges = append(cyc.Edges, env.Edge{From: 2, To: 0})
	if _, err := NewRateRule(DefaultRateConfig(), cyc); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
	r, _ := NewRateRule(DefaultRateConfig(), chain())
	bad := taskObs([][6]float64{{1000, 100, 100, 0, 0.01, 0.5}, {1000, 100, 100, 0, 0.01, 0.5}, {1000, 100, 100, 0, 0.01, 0.5}})
	bad.Task[env.TaskQueue] = math.NaN()
	if _, err := r.Act(bad); err == nil {
		t.Error("a NaN queue accepted")
	}
	if _, err := r.Act(taskObs([][6]float64{{1000, 1, 1, 0, 0.01, 0.5}})); err == nil {
		t.Error("an observation of 1 task accepted for 3")
	}
}
