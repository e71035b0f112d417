package live

import (
	"math"
	"slices"
	"testing"

	"streamscale/env"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner"
	"streamscale/traces"
)

func observer(t testing.TB, profile string) (*Observer, env.Config) {
	t.Helper()
	tr := &traces.Trace{Name: "const", Counts: []float64{1000}, Scale: 1}
	sc, err := env.EdgeConfig(profile, 101, tr)
	if err != nil {
		t.Fatal(err)
	}
	sc.Steps = 10
	app, err := ops.AppByName(profile)
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewObserver(sc, app)
	if err != nil {
		t.Fatal(err)
	}
	return o, o.Scenario()
}

// inBoxes checks obs against the scenario's spaces: shapes and bounds.
func inBoxes(t testing.TB, sc env.Config, obs env.Observation) {
	t.Helper()
	sp := sc.Spaces()
	for k, x := range map[string][]float64{"app": obs.App, "server": obs.Server, "task": obs.Task} {
		if err := sp.Observation[k].Contains(x); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
}

func allocOf(sc env.Config, mc float64) []float64 {
	a := make([]float64, len(sc.App.Tasks))
	for k := range a {
		a[k] = mc
	}
	return a
}

// TestObservationMeasured: measured features follow the reports (summed
// over two workers) and stay in their boxes under overload.
func TestObservationMeasured(t *testing.T) {
	o, sc := observer(t, "pred")
	alloc := allocOf(sc, 500)
	var tasks []planner.TaskObs
	for w := range 2 {
		for op := range 6 {
			tasks = append(tasks, planner.TaskObs{Worker: uint32(w), Op: op, InputRate: 1000, Throughput: 400, Queue: 5000, LatencyMS: 900, CPUCores: 0.004, Millicores: 3})
		}
	}
	o.Observe(Measured{Tasks: tasks, P95MS: 100, MeanMS: 50, Throughput: 700}, alloc)
	obs := o.Observe(Measured{Tasks: tasks, P95MS: 5000, MeanMS: 3000, Throughput: 800}, alloc)
	inBoxes(t, sc, obs)
	slo := sc.App.SLOMS / 1000
	row := obs.Task[:env.TaskFeatures]
	if got, want := row[env.TaskInputRate], math.Log1p(2000); math.Abs(got-want) > 1e-12 {
		t.Errorf("input rate feature %v, want log1p(2000) = %v", got, want)
	}
	if got, want := row[env.TaskThroughputRatio], 0.4; math.Abs(got-want) > 1e-12 {
		t.Errorf("throughput ratio %v, want %v", got, want)
	}
	// s̄ = 0.004 cores / 400 per s / 0.003 cores = 3.33 ms; ρ = 1000 × s̄.
	s := 0.004 / 400 / 0.003
	if got := row[env.TaskProcLatency]; math.Abs(got-s/slo) > 1e-12 {
		t.Errorf("service time feature %v, want %v", got, s/slo)
	}
	if got := row[env.TaskDemandPerCPU]; math.Abs(got-math.Log1p(1000*s)) > 1e-12 {
		t.Errorf("ρ feature %v, want %v", got, math.Log1p(1000*s))
	}
	if obs.App[env.AppP95Latency] != 10 || obs.App[env.AppViolationHistory] != 0.1 {
		t.Errorf("p95 feature %v (want clipped to 10), violation history %v (want 0.1)", obs.App[env.AppP95Latency], obs.App[env.AppViolationHistory])
	}
}

// TestApply: deltas and targets are clipped to [MinCPU, MaxCPU] and
// projected onto the servers' capacity as env.Step does: the same
// actions on the simulator give the same applied allocations.
func TestApply(t *testing.T) {
	o, sc := observer(t, "pred")
	n := len(sc.App.Tasks)
	e, err := env.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Reset(1); err != nil {
		t.Fatal(err)
	}
	cur := allocOf(sc, sc.InitialCPU)
	actions := []env.Action{
		{Choices: []int{4, 4, 4, 4, 4, 4}},
		{Targets: []float64{1e6, 1e6, 1e6, 1e6, 1e6, 1e6}},
		{Choices: []int{0, 1, 2, 3, 4, 0}},
		{Targets: []float64{100, 2000, 9000, 500, 7000, 3000}},
		{Hold: true},
	}
	for i, a := range actions {
		next, err := o.Apply(cur, a)
		if err != nil {
			t.Fatal(err)
		}
		sa := a
		if a.Hold {
			sa = env.Action{Choices: []int{2, 2, 2, 2, 2, 2}}
		}
		res, err := e.Step(sa)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(next, res.Info.Applied) {
			t.Fatalf("action %d: live %v, sim %v", i, next, res.Info.Applied)
		}
		cur = next
	}
	for _, bad := range []env.Action{{}, {Choices: make([]int, n-1)}, {Choices: []int{0, 0, 0, 0, 0, 5}}, {Targets: []float64{math.NaN(), 0, 0, 0, 0, 0}}, {Replicas: [][]env.Replica{}}} {
		before := slices.Clone(cur)
		if _, err := o.Apply(cur, bad); err == nil {
			t.Errorf("action %+v accepted", bad)
		}
		if !slices.Equal(before, cur) {
			t.Fatal("a refused action changed the allocation")
		}
	}
}

// FuzzObserve: whatever the workers report, the observation has the
// simulator's shapes and every feature inside its box.
func FuzzObserve(f *testing.F) {
	f.Add(1000.0, 400.0, 5000.0, 900.0, 0.004, 3, 5000.0, 3000.0, 800.0, 700.0)
	f.Add(0.0, 0.0, 0.0, 0.0, 0.0, 0, 0.0, 0.0, 0.0, 500.0)
	f.Add(1e300, 1e-300, -1.0, math.Inf(1), math.NaN(), 1<<20, -5.0, math.NaN(), math.Inf(-1), 1e9)
	o, sc := observer(f, "etl")
	f.Fuzz(func(t *testing.T, in, thr, q, lat, cpu float64, mc int, p95, mean, tput, alloc float64) {
		var tasks []planner.TaskObs
		for op := range 10 {
			tasks = append(tasks, planner.TaskObs{Op: op, InputRate: in, Throughput: thr, Queue: q, LatencyMS: lat, CPUCores: cpu, Millicores: mc})
		}
		a := allocOf(sc, min(max(alloc, sc.MinCPU), sc.MaxCPU))
		if alloc != alloc {
			a = allocOf(sc, sc.MinCPU)
		}
		obs := o.Observe(Measured{Tasks: tasks, P95MS: p95, MeanMS: mean, Throughput: tput}, a)
		inBoxes(t, sc, obs)
	})
}

// TestApplyUtilization: with a target-utilization action set a choice sizes
// each task as env.Step does, from the allocation in force and the offered
// load the last observation showed; an entry 0 holds.
func TestApplyUtilization(t *testing.T) {
	tr := &traces.Trace{Name: "const", Counts: []float64{1000}, Scale: 1}
	sc, err := env.EdgeConfig("pred", 101, tr)
	if err != nil {
		t.Fatal(err)
	}
	set := [5]float64{0, 0.9, 0.7, 0.5, 0.3}
	sc.ActionUtilization = set
	app, err := ops.AppByName("pred")
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewObserver(sc, app)
	if err != nil {
		t.Fatal(err)
	}
	sc = o.Scenario()
	cur := allocOf(sc, 800)
	var tasks []planner.TaskObs
	for op := range 6 {
		// ρ = rate × (CPU cores / throughput / quota cores) differs by task.
		tasks = append(tasks, planner.TaskObs{Op: op, InputRate: 1000, Throughput: 1000, CPUCores: 0.001 * float64(op+1), Millicores: 8})
	}
	obs := o.Observe(Measured{Tasks: tasks, P95MS: 50, MeanMS: 20, Throughput: 1000}, cur)
	choices := []int{0, 1, 2, 3, 4, 2}
	next, err := o.Apply(cur, env.Action{Choices: choices})
	if err != nil {
		t.Fatal(err)
	}
	req := make([]float64, len(cur))
	for k, c := range choices {
		req[k] = cur[k]
		if set[c] != 0 {
			rho := math.Expm1(obs.Task[k*env.TaskFeatures+env.TaskDemandPerCPU])
			req[k] = min(max(env.UtilizationTarget(cur[k], rho, set[c]), sc.MinCPU), sc.MaxCPU)
		}
	}
	want, err := o.Apply(cur, env.Action{Targets: req})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(next, want) {
		t.Fatalf("choices %v: applied %v, want %v (the targets %v)", choices, next, want, req)
	}
	if next[0] != cur[0] || slices.Equal(next, cur) {
		t.Fatalf("applied %v from %v: want task 0 held and others sized", next, cur)
	}
}

// Only a catch-up window that holds nothing is an empty catch-up (not an
// interval of the load).
func TestEmptyCatchUp(t *testing.T) {
	for _, c := range []struct {
		w    planner.Window
		want bool
	}{
		{planner.Window{CatchUp: true}, true},
		{planner.Window{}, false}, // a round during the load that saw nothing
		{planner.Window{CatchUp: true, Offered: 1}, false},
		{planner.Window{CatchUp: true, LatencyMS: []float64{3}}, false},
		{planner.Window{CatchUp: true, OpenAgeMS: []float64{900}}, false},
	} {
		if got := emptyCatchUp(c.w); got != c.want {
			t.Errorf("%+v: %v, want %v", c.w, got, c.want)
		}
	}
}
