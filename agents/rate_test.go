package agents

import (
	"bytes"
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
		{func(c *RateConfig) { c.TrendWindow = 2 }, "trend window"},
		{func(c *RateConfig) { c.TrendAhead = 3 }, "without a trend window"},
		{func(c *RateConfig) { c.TrendWindow, c.TrendAhead = 10, math.Inf(1) }, "trend horizon"},
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

// rampObs is chain()'s observation with the source offered rate in/s
// and a service time of 5 mc·s per event at a (1000 mc), so the reactive
// rule asks 1000 mc for 140/s.
func rampObs(in float64) env.Observation {
	return taskObs([][6]float64{{1000, in, in, 0, 0.005, 0.667}, {1000, 2 * in, 2 * in, 0, 0.002, 0.5}, {1000, 2 * in, 2 * in, 0, 0.002, 0.5}})
}

// TestRateRuleTrend: on a ramp of +10/s per step the predictive rule
// sizes for the rate the fitted line projects TrendAhead steps on; on a
// flat or falling load it asks exactly what the reactive rule asks.
func TestRateRuleTrend(t *testing.T) {
	pcfg := DefaultRateConfig()
	pcfg.TrendWindow, pcfg.TrendAhead = 5, 4
	for _, tc := range []struct {
		name  string
		rates []float64
		want  float64 // a's last target from the predictive rule; 0: the reactive one's
	}{
		// Fit 100…140: slope 10, present 140, g = 1 + 40/140, λ* = 180,
		// 180·5/0.7 = 1285.7 → 1300 (the reactive rule: u = 0.7, in band).
		{"rising", []float64{100, 110, 120, 130, 140}, 1300},
		{"flat", []float64{140, 140, 140, 140, 140}, 0},
		{"falling", []float64{180, 170, 160, 150, 140}, 0},
		{"too few points", []float64{130, 140}, 0},
	} {
		p, err := NewRateRule(pcfg, chain())
		if err != nil {
			t.Fatal(err)
		}
		r, _ := NewRateRule(DefaultRateConfig(), chain())
		var pa, ra env.Action
		for _, in := range tc.rates {
			if pa, err = p.Act(rampObs(in)); err != nil {
				t.Fatal(err)
			}
			ra, _ = r.Act(rampObs(in))
		}
		want := tc.want
		if want == 0 {
			want = ra.Targets[0]
		}
		if pa.Targets[0] != want {
			t.Errorf("%s: predictive target %v, want %v (reactive %v)", tc.name, pa.Targets[0], want, ra.Targets[0])
		}
	}
	// A burst cannot ask more than MaxTrendGrowth times the measured rate.
	p, _ := NewRateRule(pcfg, chain())
	for _, in := range []float64{1, 1, 1, 1, 140} {
		pa, _ := p.Act(rampObs(in))
		if in == 140 && pa.Targets[0] != 2000 { // 2·140·5/0.7
			t.Errorf("burst: target %v, want the bound 2000", pa.Targets[0])
		}
	}
}

// TestRateRuleTrendState: a predictive rule saved mid-episode resumes
// bitwise; a state without its trend block is refused and changes nothing.
func TestRateRuleTrendState(t *testing.T) {
	cfg := DefaultRateConfig()
	cfg.TrendWindow, cfg.TrendAhead = 4, 3
	a, _ := NewRateRule(cfg, chain())
	for _, in := range []float64{100, 120, 150} {
		if _, err := a.Act(rampObs(in)); err != nil {
			t.Fatal(err)
		}
	}
	saved, _ := a.MarshalBinary()
	b, _ := NewRateRule(cfg, chain())
	if err := b.UnmarshalBinary(saved); err != nil {
		t.Fatal(err)
	}
	for _, in := range []float64{170, 200, 160} {
		x, _ := a.Act(rampObs(in))
		y, _ := b.Act(rampObs(in))
		for k := range x.Targets {
			if x.Targets[k] != y.Targets[k] {
				t.Fatalf("resumed rule differs at %v/s: %v against %v", in, y.Targets, x.Targets)
			}
		}
	}
	reactive, _ := NewRateRule(DefaultRateConfig(), chain())
	plain, _ := reactive.MarshalBinary()
	before, _ := b.MarshalBinary()
	if err := b.UnmarshalBinary(plain); err == nil || !strings.Contains(err.Error(), "TRND") {
		t.Errorf("a state without the trend block: %v", err)
	}
	if after, _ := b.MarshalBinary(); !bytes.Equal(after, before) {
		t.Error("a refused state changed the rule")
	}
}

// TestRateRuleColdStart: with StartCPU the first step, which shows no
// load, asks the start allocation for every task; the next measured step
// sizes at once (the start is not in the scale-down window), and after a
// Reset the start is asked again. Without it the first step keeps the
// Reset allocation.
func TestRateRuleColdStart(t *testing.T) {
	blank := taskObs([][6]float64{{500, 0, 0, 0, 0, 0}, {500, 0, 0, 0, 0, 0}, {500, 0, 0, 0, 0, 0}})
	// The second step shows the allocation asked, a light load measured
	// at it: 100/s at a, 200/s at b and c, service times 0.002 and 0.001 s.
	measured := func(cpu float64) env.Observation {
		return taskObs([][6]float64{{cpu, 100, 100, 0, 0.002, 0.667}, {cpu, 200, 200, 0, 0.001, 0.5}, {cpu, 200, 200, 0, 0.001, 0.5}})
	}
	for _, start := range []float64{0, 3000} {
		cfg := DefaultRateConfig()
		cfg.StartCPU = start
		r, err := NewRateRule(cfg, chain())
		if err != nil {
			t.Fatal(err)
		}
		for ep := range 2 {
			if err := r.Reset(uint64(ep)); err != nil {
				t.Fatal(err)
			}
			a, _ := r.Act(blank)
			want := max(start, 500)
			for k, x := range a.Targets {
				if x != want {
					t.Errorf("start %v, episode %d: task %d asked %v at the first step, want %v", start, ep, k, x, want)
				}
			}
			// After the start: 100 · 0.002 · 3000 / 0.7 = 857.1 → 900 at
			// every task, a scale-down applied at once. Without it the
			// tasks stay at the minimum.
			a, _ = r.Act(measured(want))
			w2 := []float64{500, 500, 500}
			if start > 0 {
				w2 = []float64{900, 900, 900}
			}
			if !equalFloats(a.Targets, w2) {
				t.Errorf("start %v, episode %d: second step %v, want %v", start, ep, a.Targets, w2)
			}
		}
	}
	cfg := DefaultRateConfig()
	cfg.StartCPU = 200
	if _, err := NewRateRule(cfg, chain()); err == nil || !strings.Contains(err.Error(), "start allocation") {
		t.Errorf("a start below MinCPU: %v", err)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
