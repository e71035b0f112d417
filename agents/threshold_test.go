package agents_test

import (
	"fmt"
	"math"
	"testing"

	"streamscale/agents"
	"streamscale/agents/controllertest"
)

func TestThresholdConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*agents.ThresholdConfig)
		ok   bool
	}{
		{"default", func(*agents.ThresholdConfig) {}, true},
		{"target zero", func(c *agents.ThresholdConfig) { c.Target = 0 }, false},
		{"target at clip", func(c *agents.ThresholdConfig) { c.Target = 10 }, false},
		{"target NaN", func(c *agents.ThresholdConfig) { c.Target = math.NaN() }, false},
		{"tolerance negative", func(c *agents.ThresholdConfig) { c.Tolerance = -0.1 }, false},
		{"tolerance covers zero", func(c *agents.ThresholdConfig) { c.Tolerance = 0.7 }, false},
		{"tolerance zero", func(c *agents.ThresholdConfig) { c.Tolerance = 0 }, true},
		{"unknown utilization", func(c *agents.ThresholdConfig) { c.Utilization = 7 }, false},
		{"window zero", func(c *agents.ThresholdConfig) { c.ScaleDownWindow = 0 }, false},
		{"window one", func(c *agents.ThresholdConfig) { c.ScaleDownWindow = 1 }, true},
		{"quantum zero", func(c *agents.ThresholdConfig) { c.Quantum = 0 }, false},
		{"quantum Inf", func(c *agents.ThresholdConfig) { c.Quantum = math.Inf(1) }, false},
		{"min zero", func(c *agents.ThresholdConfig) { c.MinCPU = 0 }, false},
		{"max below min", func(c *agents.ThresholdConfig) { c.MaxCPU = 400 }, false},
		{"lag negative", func(c *agents.ThresholdConfig) { c.MetricLagSteps = -1 }, false},
		{"lag two", func(c *agents.ThresholdConfig) { c.MetricLagSteps = 2 }, true},
		{"start below min", func(c *agents.ThresholdConfig) { c.StartCPU = 100 }, false},
		{"start above max", func(c *agents.ThresholdConfig) { c.StartCPU = 20000 }, false},
		{"start NaN", func(c *agents.ThresholdConfig) { c.StartCPU = math.NaN() }, false},
		{"start at max", func(c *agents.ThresholdConfig) { c.StartCPU = 10000 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := agents.DefaultThresholdConfig()
			tc.edit(&cfg)
			_, err := agents.NewThreshold(cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("NewThreshold error = %v, want ok = %v", err, tc.ok)
			}
		})
	}
}

// TestThresholdDecisions feeds hand-built observations of one task and
// checks the target and the reason at every step.
func TestThresholdDecisions(t *testing.T) {
	type step struct {
		in     controllertest.TaskRow
		target float64
		reason agents.ScaleReason
	}
	const slo = 180
	for _, tc := range []struct {
		name   string
		edit   func(*agents.ThresholdConfig)
		steps  []step
		window int
	}{
		{name: "inside the band", steps: []step{
			{controllertest.TaskRow{CPU: 1000, Rho: 0.75, Ratio: 1}, 1000, agents.Hold},
			{controllertest.TaskRow{CPU: 1000, Rho: 0.6, Ratio: 1}, 1000, agents.Hold}, // lower edge
			{controllertest.TaskRow{CPU: 1000, Rho: 0.8, Ratio: 1}, 1000, agents.Hold}, // upper edge
			{controllertest.TaskRow{CPU: 1234, Rho: 0.7, Ratio: 1}, 1234, agents.Hold}, // off-grid allocation kept as is
		}},
		{name: "scale up by the HPA rule", steps: []step{
			{controllertest.TaskRow{CPU: 1000, Rho: 1.4, Ratio: 1}, 2000, agents.ScaleUp},  // 1000·1.4/0.7
			{controllertest.TaskRow{CPU: 1000, Rho: 0.81, Ratio: 1}, 1200, agents.ScaleUp}, // 1157.1 rounded up to 50
			{controllertest.TaskRow{CPU: 8000, Rho: 5, Ratio: 1}, 10000, agents.ScaleUp},   // clipped to MaxCPU
		}},
		{name: "first scale-down is immediate (empty window)", steps: []step{
			{controllertest.TaskRow{CPU: 2000, Rho: 0.35, Ratio: 1}, 1000, agents.ScaleDown},
		}},
		{name: "scale-down clipped to MinCPU", steps: []step{
			{controllertest.TaskRow{CPU: 600, Rho: 0.1, Ratio: 1}, 500, agents.ScaleDown},
		}},
		{name: "stabilized for the window, then down", window: 3, steps: []step{
			{controllertest.TaskRow{CPU: 2000, Rho: 0.7, Ratio: 1}, 2000, agents.Hold},        // rec 2000
			{controllertest.TaskRow{CPU: 2000, Rho: 0.5, Ratio: 1}, 2000, agents.Stabilized},  // rec 1450
			{controllertest.TaskRow{CPU: 2000, Rho: 0.35, Ratio: 1}, 2000, agents.Stabilized}, // rec 1000, window max 2000
			{controllertest.TaskRow{CPU: 2000, Rho: 0.35, Ratio: 1}, 1450, agents.ScaleDown},  // window {CPU: 1450, Rho: 1000, Ratio: 1000}
			{controllertest.TaskRow{CPU: 1450, Rho: 0.3, Ratio: 1}, 1000, agents.ScaleDown},   // rec 650, window {CPU: 1000, Rho: 1000, Ratio: 650}
		}},
		{name: "scale-up not delayed by the window", steps: []step{
			{controllertest.TaskRow{CPU: 2000, Rho: 0.7, Ratio: 1}, 2000, agents.Hold},
			{controllertest.TaskRow{CPU: 2000, Rho: 0.35, Ratio: 1}, 2000, agents.Stabilized},
			{controllertest.TaskRow{CPU: 2000, Rho: 1.4, Ratio: 1}, 4000, agents.ScaleUp},
		}},
		{name: "idle task falls to the minimum after the window", window: 2, steps: []step{
			{controllertest.TaskRow{CPU: 2000, Rho: 0.7, Ratio: 1}, 2000, agents.Hold},
			{controllertest.TaskRow{CPU: 2000, Rho: 0, Ratio: 1}, 2000, agents.Stabilized},
			{controllertest.TaskRow{CPU: 2000, Rho: 0, Ratio: 1}, 500, agents.ScaleDown},
		}},
		{name: "processed load saturates", edit: func(c *agents.ThresholdConfig) { c.Utilization = agents.ProcessedLoad }, steps: []step{
			{controllertest.TaskRow{CPU: 1000, Rho: 3, Ratio: 0.33}, 1450, agents.ScaleUp}, // u = 0.99 → 1414.3 → 1450
			{controllertest.TaskRow{CPU: 1000, Rho: 0.75, Ratio: 1}, 1000, agents.Hold},
		}},
		{name: "offered load sizes in one step", steps: []step{
			{controllertest.TaskRow{CPU: 1000, Rho: 3, Ratio: 0.33}, 4300, agents.ScaleUp}, // u = 3 → 4285.7 → 4300
		}},
		// ρ reported one observation late (metric lag 1) after a scale-up:
		// the lag-blind rule multiplies the stale ρ by the new allocation
		// and doubles again; the lag-aware one sizes on the allocation ρ
		// was measured at.
		{name: "lag-blind rule over-sizes after a scale-up", window: 1, steps: []step{
			{controllertest.TaskRow{CPU: 1000, Rho: 1.4, Ratio: 1}, 2000, agents.ScaleUp},
			{controllertest.TaskRow{CPU: 2000, Rho: 1.4, Ratio: 1}, 4000, agents.ScaleUp}, // ρ measured at 1000
		}},
		{name: "lag-aware rule sizes on the measured allocation", window: 1, edit: func(c *agents.ThresholdConfig) { c.MetricLagSteps = 1 }, steps: []step{
			{controllertest.TaskRow{CPU: 1000, Rho: 1.4, Ratio: 1}, 2000, agents.ScaleUp},
			{controllertest.TaskRow{CPU: 2000, Rho: 1.4, Ratio: 1}, 2000, agents.Hold},     // 1.4·1000/2000 = 0.7
			{controllertest.TaskRow{CPU: 2000, Rho: 0.7, Ratio: 1}, 2000, agents.Hold},     // measured at 2000
			{controllertest.TaskRow{CPU: 2000, Rho: 1.05, Ratio: 1}, 3000, agents.ScaleUp}, // 1.05·2000/0.7
			{controllertest.TaskRow{CPU: 3000, Rho: 1.05, Ratio: 1}, 3000, agents.Hold},    // measured at 2000: 0.7
		}},
		{name: "lag 2", window: 1, edit: func(c *agents.ThresholdConfig) { c.MetricLagSteps = 2 }, steps: []step{
			{controllertest.TaskRow{CPU: 1000, Rho: 1.4, Ratio: 1}, 2000, agents.ScaleUp},
			{controllertest.TaskRow{CPU: 1000, Rho: 1.4, Ratio: 1}, 2000, agents.ScaleUp}, // actuation pending: still 1000 shown
			{controllertest.TaskRow{CPU: 2000, Rho: 1.4, Ratio: 1}, 2000, agents.Hold},    // measured at 1000 (two back)
			{controllertest.TaskRow{CPU: 2000, Rho: 1.4, Ratio: 1}, 2000, agents.Hold},    // measured at 1000
			{controllertest.TaskRow{CPU: 2000, Rho: 0.7, Ratio: 1}, 2000, agents.Hold},    // measured at 2000
		}},
		// Cold-start headroom: the first step shows no load and asks the
		// start; the next, measured at it, scales down at once (the start
		// is not in the window, whose first entry is MinCPU).
		{name: "cold start", edit: func(c *agents.ThresholdConfig) { c.StartCPU = 3000 }, steps: []step{
			{controllertest.TaskRow{CPU: 500, Rho: 0, Ratio: 1}, 3000, agents.ColdStart},
			{controllertest.TaskRow{CPU: 3000, Rho: 0.2, Ratio: 1}, 900, agents.ScaleDown}, // 3000·0.2/0.7 = 857.1
		}},
		{name: "no cold start by default", steps: []step{
			{controllertest.TaskRow{CPU: 500, Rho: 0, Ratio: 1}, 500, agents.Hold},
		}},
		{name: "zero tolerance", edit: func(c *agents.ThresholdConfig) { c.Tolerance = 0 }, steps: []step{
			{controllertest.TaskRow{CPU: 1000, Rho: 0.77, Ratio: 1}, 1100, agents.ScaleUp},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := agents.DefaultThresholdConfig()
			if tc.window > 0 {
				cfg.ScaleDownWindow = tc.window
			}
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			c, err := agents.NewThreshold(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Reset(1); err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				a, err := c.Act(controllertest.Obs([]controllertest.TaskRow{s.in}, 100, slo, 1000))
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				d := c.Decisions()[0]
				if len(a.Targets) != 1 || math.Abs(a.Targets[0]-s.target) > 1e-9 || d.Reason != s.reason {
					t.Fatalf("step %d (cpu %v, ρ %v): target %v (%v), want %v (%v); decision %+v", i, s.in.CPU, s.in.Rho, a.Targets, d.Reason, s.target, s.reason, d)
				}
			}
		})
	}
}

// TestThresholdTasksIndependent checks that each task has its own window.
func TestThresholdTasksIndependent(t *testing.T) {
	c, err := agents.NewThreshold(agents.DefaultThresholdConfig())
	if err != nil {
		t.Fatal(err)
	}
	c.Reset(0)
	seq := [][]controllertest.TaskRow{
		{{CPU: 2000, Rho: 0.7, Ratio: 1}, {CPU: 1000, Rho: 0.7, Ratio: 1}},
		{{CPU: 2000, Rho: 0.35, Ratio: 1}, {CPU: 1000, Rho: 1.4, Ratio: 1}},
	}
	var a []float64
	for _, rows := range seq {
		act, err := c.Act(controllertest.Obs(rows, 100, 180, 1000))
		if err != nil {
			t.Fatal(err)
		}
		a = act.Targets
	}
	if a[0] != 2000 || a[1] != 2000 {
		t.Fatalf("targets %v, want [2000 2000] (task 0 stabilized, task 1 scaled up)", a)
	}
}

func TestThresholdRejectsBadObservation(t *testing.T) {
	c, err := agents.NewThreshold(agents.DefaultThresholdConfig())
	if err != nil {
		t.Fatal(err)
	}
	c.Reset(0)
	good := controllertest.Obs([]controllertest.TaskRow{{CPU: 2000, Rho: 0.7, Ratio: 1}}, 100, 180, 1000)
	if _, err := c.Act(good); err != nil {
		t.Fatal(err)
	}
	nan := controllertest.Obs([]controllertest.TaskRow{{CPU: 2000, Rho: math.NaN(), Ratio: 1}}, 100, 180, 1000)
	if _, err := c.Act(nan); err == nil {
		t.Error("NaN offered load accepted")
	}
	two := controllertest.Obs([]controllertest.TaskRow{{CPU: 2000, Rho: 0.7, Ratio: 1}, {CPU: 2000, Rho: 0.7, Ratio: 1}}, 100, 180, 1000)
	if _, err := c.Act(two); err == nil {
		t.Error("task count changed mid-episode and was accepted")
	}
	// The rejected calls left no trace: with window 30 the first
	// recommendation (2000) still holds the allocation.
	a, err := c.Act(controllertest.Obs([]controllertest.TaskRow{{CPU: 2000, Rho: 0.35, Ratio: 1}}, 100, 180, 1000))
	if err != nil {
		t.Fatal(err)
	}
	if a.Targets[0] != 2000 {
		t.Errorf("target %v after rejected inputs, want 2000 (stabilized)", a.Targets[0])
	}
	if c.Reset(0); len(c.Decisions()) != 0 {
		t.Error("decisions survive Reset")
	}
	if _, err := c.Act(two); err != nil {
		t.Errorf("after Reset a new task count is accepted, got %v", err)
	}
}

// ExampleThreshold sizes one overloaded task and explains the decision.
func ExampleThreshold() {
	c, _ := agents.NewThreshold(agents.DefaultThresholdConfig())
	c.Reset(0)
	a, _ := c.Act(controllertest.Obs([]controllertest.TaskRow{{CPU: 1000, Rho: 1.4, Ratio: 0.7}}, 250, 180, 2000))
	d := c.Decisions()[0]
	fmt.Printf("u=%.2f current=%.0f → target %.0f (%v)\n", d.Utilization, d.Current, a.Targets[0], d.Reason)
	// Output:
	// u=1.40 current=1000 → target 2000 (scale-up)
}
