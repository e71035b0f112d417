package vrebalance_test

import (
	"math"
	"slices"
	"testing"

	"streamscale/agents"
	"streamscale/agents/controllertest"
	"streamscale/agents/vrebalance"
	"streamscale/env"
)

func predScenario(t testing.TB, w env.Workload) env.Config {
	t.Helper()
	cfg, err := env.EdgeConfig("pred", 7, w)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestVRebalanceConfigValidation(t *testing.T) {
	sc := predScenario(t, controllertest.Diurnal(600))
	for _, tc := range []struct {
		name string
		edit func(*vrebalance.Config)
		ok   bool
	}{
		{"default", func(*vrebalance.Config) {}, true},
		{"interval zero", func(c *vrebalance.Config) { c.Interval = 0 }, false},
		{"budget zero", func(c *vrebalance.Config) { c.ExplorationEvals = 0 }, false},
		{"band negative", func(c *vrebalance.Config) { c.HoldBandMS = -1 }, false},
		{"weight NaN", func(c *vrebalance.Config) { c.CPUWeight = math.NaN() }, false},
		{"quantum zero", func(c *vrebalance.Config) { c.Quantum = 0 }, false},
		{"initial off grid", func(c *vrebalance.Config) { c.InitialCPU = 520 }, false},
		{"initial below min", func(c *vrebalance.Config) { c.InitialCPU = 450 }, false},
		{"initial on grid", func(c *vrebalance.Config) { c.InitialCPU = 1000 }, true},
		{"bounds descending", func(c *vrebalance.Config) { c.TierBounds = []float64{3000, 1000} }, false},
		{"bounds ascending", func(c *vrebalance.Config) { c.TierBounds = []float64{1000, 3000} }, true},
		{"quantile 1", func(c *vrebalance.Config) { c.TierQuantiles = []float64{0.5, 1} }, false},
		{"no quantiles", func(c *vrebalance.Config) { c.TierQuantiles = nil }, true},
		{"bad BO config", func(c *vrebalance.Config) { c.BO.NInitialPoints = 0 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := vrebalance.DefaultConfig()
			tc.edit(&cfg)
			_, err := vrebalance.New(cfg, sc)
			if (err == nil) != tc.ok {
				t.Fatalf("New error = %v, want ok = %v", err, tc.ok)
			}
		})
	}
	bad := sc
	bad.Placement = bad.Placement[:2]
	if _, err := vrebalance.New(vrebalance.DefaultConfig(), bad); err == nil {
		t.Error("invalid scenario accepted")
	}
}

// TestVRebalanceSchedule runs VRebalance on a PRED scenario (one tier, so
// that the GP runs after 5 random points) and checks the schedule and every
// allocation.
func TestVRebalanceSchedule(t *testing.T) {
	const steps = 600
	sc := predScenario(t, controllertest.Diurnal(steps))
	cfg := vrebalance.DefaultConfig()
	cfg.TierQuantiles = nil
	cfg.ExplorationEvals = 16 // long enough for GP suggestions after the random points
	v, err := vrebalance.New(cfg, sc)
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	full := e.Config()
	if err := v.Reset(3); err != nil {
		t.Fatal(err)
	}
	obs, _, err := e.Reset(3)
	if err != nil {
		t.Fatal(err)
	}
	prev := []float64(nil)
	changes := 0
	for k := 0; k < steps; k++ {
		a, err := v.Act(obs)
		if err != nil {
			t.Fatal(err)
		}
		x := slices.Clone(a.Targets)
		if k < cfg.Interval {
			for _, c := range x {
				if c != 500 {
					t.Fatalf("step %d: allocation %v during the first %d steps, want every task at 500", k, x, cfg.Interval)
				}
			}
		}
		if prev != nil && !slices.Equal(prev, x) {
			changes++
			if k%cfg.Interval != 0 {
				t.Fatalf("step %d: allocation changed off a %d-step boundary: %v → %v", k, cfg.Interval, prev, x)
			}
		}
		load := make([]float64, len(full.Servers))
		for i, c := range x {
			if c < 500 || c > 10000 || math.Mod(c-500, 50) != 0 {
				t.Fatalf("step %d: task %d allocation %v not on the grid 500 + k·50 ≤ 10000", k, i, c)
			}
			load[full.Placement[i]] += c
		}
		for s, l := range load {
			if l > full.Servers[s].CPU {
				t.Fatalf("step %d: server %d over-committed: %v > %v", k, s, l, full.Servers[s].CPU)
			}
		}
		var info env.Info
		var sr env.StepResult
		sr, err = e.Step(a)
		obs = sr.Obs
		info = sr.Info
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(info.Applied, x) {
			t.Fatalf("step %d: the environment applied %v, not the feasible targets %v", k, info.Applied, x)
		}
		prev = x
	}
	ds := v.Decisions()
	if len(ds) != steps/cfg.Interval-1 {
		t.Fatalf("%d decisions, want %d (one per %d-step boundary after the first)", len(ds), steps/cfg.Interval-1, cfg.Interval)
	}
	for i, d := range ds {
		if d.Step != (i+1)*cfg.Interval || d.Score.Steps != cfg.Interval {
			t.Fatalf("decision %d at step %d over %d steps, want step %d over %d", i, d.Step, d.Score.Steps, (i+1)*cfg.Interval, cfg.Interval)
		}
	}
	tiers := v.Tiers()
	// The initial allocation is the first observation, so 4 random points
	// complete BO's 5 initial points; the GP suggests the rest.
	if len(tiers) != 1 || tiers[0].Evaluations < 6 || tiers[0].RandomPoints != cfg.BO.NInitialPoints-1 || tiers[0].Explores-tiers[0].RandomPoints < 2 {
		t.Fatalf("tier stats %+v, want one tier with ≥ 6 evaluations, 4 random points and ≥ 2 GP suggestions", tiers)
	}

	if changes < 5 {
		t.Fatalf("allocation changed %d times, want ≥ 5", changes)
	}
	t.Logf("decisions: %d, changes %d, tier %+v", len(ds), changes, tiers[0])
}

// drive feeds VRebalance one window per entry of windows (Interval steps of
// the same hand-built observation: p95 in ms, throughput in msg/s) and
// returns its decisions. The observed CPU is the allocation in force.
func drive(t *testing.T, v *vrebalance.Controller, n int, windows [][2]float64) []vrebalance.Decision {
	t.Helper()
	if err := v.Reset(5); err != nil {
		t.Fatal(err)
	}
	const slo = 180
	interval := v.Config().Interval
	alloc := make([]float64, n)
	for k := range alloc {
		alloc[k] = 500
	}
	mk := func(p95, thr float64) env.Observation {
		rows := make([]controllertest.TaskRow, n)
		for k := range rows {
			rows[k] = controllertest.TaskRow{CPU: alloc[k], Rho: 1, Ratio: 1}
		}
		return controllertest.Obs(rows, p95, slo, thr)
	}
	a, err := v.Act(mk(0, 0)) // observation after Reset
	if err != nil {
		t.Fatal(err)
	}
	copy(alloc, a.Targets)
	for _, w := range windows {
		for range interval {
			a, err := v.Act(mk(w[0], w[1]))
			if err != nil {
				t.Fatal(err)
			}
			copy(alloc, a.Targets)
		}
	}
	return v.Decisions()
}

func TestVRebalanceHoldBand(t *testing.T) {
	sc := predScenario(t, controllertest.Diurnal(600)) // SLO 180 ms: band [130, 180]
	cfg := vrebalance.DefaultConfig()
	cfg.Interval = 5
	for _, tc := range []struct {
		p95  float64
		kind vrebalance.DecisionKind
	}{
		{100, vrebalance.Explore},
		{129, vrebalance.Explore},
		{131, vrebalance.Keep},
		{155, vrebalance.Keep},
		{179.5, vrebalance.Keep},
		{181, vrebalance.Explore},
		{1000, vrebalance.Explore},
	} {
		v, err := vrebalance.New(cfg, sc)
		if err != nil {
			t.Fatal(err)
		}
		ds := drive(t, v, 6, [][2]float64{{tc.p95, 2000}})
		if len(ds) != 1 {
			t.Fatalf("p95 %v: %d decisions, want 1", tc.p95, len(ds))
		}
		d := ds[0]
		tier := v.Tiers()[d.Tier]
		unchanged := !slices.ContainsFunc(d.Allocation, func(c float64) bool { return c != 500 })
		switch {
		case d.Kind != tc.kind:
			t.Errorf("p95 %v ms: decision %v, want %v", tc.p95, d.Kind, tc.kind)
		case tc.kind == vrebalance.Keep && (!unchanged || tier.Evaluations != 0 || tier.Keeps != 1):
			t.Errorf("p95 %v ms: kept, but allocation %v and tier %+v (want unchanged, nothing told)", tc.p95, d.Allocation, tier)
		case tc.kind == vrebalance.Explore && (unchanged || tier.Evaluations != 1):
			t.Errorf("p95 %v ms: explored, but allocation %v and tier %+v (want a new point, one evaluation)", tc.p95, d.Allocation, tier)
		}
		if want := math.Pow((tc.p95-180)/180, 2); math.Abs(d.Score.Latency-want) > 1e-9 || math.Abs(d.Score.CPUCost) > 1e-12 || d.Score.Objective != d.Score.Latency+d.Score.CPUCost {
			t.Errorf("p95 %v ms: score %+v, want latency term %v and no CPU cost at 500", tc.p95, d.Score, want)
		}
	}
}

func TestVRebalanceTiers(t *testing.T) {
	sc := predScenario(t, controllertest.Diurnal(600))
	cfg := vrebalance.DefaultConfig()
	cfg.Interval = 4
	cfg.TierBounds = []float64{1000, 3000}
	v, err := vrebalance.New(cfg, sc)
	if err != nil {
		t.Fatal(err)
	}
	// Throughput passes through log1p and expm1, so values are kept a
	// little off the boundaries.
	thr := []float64{500, 2000, 5000, 999.99, 1000.01, 3000.01, 2999.99, 0}
	want := []int{0, 1, 2, 0, 1, 2, 1, 0}
	var ws [][2]float64
	for _, x := range thr {
		ws = append(ws, [2]float64{400, x})
	}
	ds := drive(t, v, 6, ws)
	if len(ds) != len(want) {
		t.Fatalf("%d decisions, want %d", len(ds), len(want))
	}
	for i, d := range ds {
		if d.Tier != want[i] || math.Abs(d.Score.Throughput-thr[i]) > 1e-6 {
			t.Errorf("window %d (throughput %v): tier %d (measured %v), want %d", i, thr[i], d.Tier, d.Score.Throughput, want[i])
		}
	}
	evals := []int{}
	for _, ts := range v.Tiers() {
		evals = append(evals, ts.Evaluations)
	}
	if !slices.Equal(evals, []int{3, 3, 2}) {
		t.Errorf("evaluations per tier %v, want [3 3 2]", evals)
	}
	if got := v.TierBounds(); !slices.Equal(got, cfg.TierBounds) {
		t.Errorf("tier bounds %v, want %v", got, cfg.TierBounds)
	}

	// Default: running tertiles of the windows measured so far, never the
	// workload itself: before any window, no bounds.
	ramp := make(controllertest.Rates, 301)
	for i := range ramp {
		ramp[i] = float64(i) * 10
	}
	d, err := vrebalance.New(vrebalance.DefaultConfig(), predScenario(t, ramp))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Reset(1); err != nil {
		t.Fatal(err)
	}
	if got := d.TierBounds(); len(got) != 0 {
		t.Errorf("tier bounds %v before any window, want none (no foresight)", got)
	}
}

// TestVRebalanceExploitsBest: after the exploration budget a tier applies
// its best-so-far allocation. With p95 fixed, the objective is the CPU
// term, so the best point is the initial all-500 allocation.
func TestVRebalanceExploitsBest(t *testing.T) {
	sc := predScenario(t, controllertest.Diurnal(600))
	cfg := vrebalance.DefaultConfig()
	cfg.Interval = 3
	cfg.ExplorationEvals = 3
	cfg.TierQuantiles = nil
	v, err := vrebalance.New(cfg, sc)
	if err != nil {
		t.Fatal(err)
	}
	ds := drive(t, v, 6, [][2]float64{{400, 2000}, {400, 2000}, {400, 2000}, {400, 2000}})
	kinds := []vrebalance.DecisionKind{}
	for _, d := range ds {
		kinds = append(kinds, d.Kind)
	}
	if !slices.Equal(kinds, []vrebalance.DecisionKind{vrebalance.Explore, vrebalance.Explore, vrebalance.Exploit, vrebalance.Exploit}) {
		t.Fatalf("decision kinds %v, want [explore explore exploit exploit]", kinds)
	}
	tier := v.Tiers()[0]
	all500 := []float64{500, 500, 500, 500, 500, 500}
	for _, d := range ds[2:] {
		if !slices.Equal(d.Allocation, all500) {
			t.Errorf("exploit allocation %v, want the best-so-far %v", d.Allocation, all500)
		}
	}
	wantBest := math.Pow((400.0-180)/180, 2)
	if !slices.Equal(tier.BestAllocation, all500) || math.Abs(tier.BestObjective-wantBest) > 1e-9 || tier.Evaluations != 4 || tier.Exploits != 2 {
		t.Errorf("tier %+v, want best %v at objective %v, 4 evaluations, 2 exploits", tier, all500, wantBest)
	}
	for i, d := range ds[:2] {
		if d.Score.CPUCost < 0 || (i > 0 && d.Score.CPUCost == 0) {
			t.Errorf("decision %d: CPU cost %v, want > 0 for a random point", i, d.Score.CPUCost)
		}
	}
}

func TestVRebalanceRejectsBadObservation(t *testing.T) {
	v, err := vrebalance.New(vrebalance.DefaultConfig(), predScenario(t, controllertest.Diurnal(600)))
	if err != nil {
		t.Fatal(err)
	}
	good := controllertest.Obs(make([]controllertest.TaskRow, 6), 100, 180, 1000)
	if _, err := v.Act(good); err == nil {
		t.Error("Act before Reset accepted")
	}
	v.Reset(1)
	if _, err := v.Act(controllertest.Obs(make([]controllertest.TaskRow, 5), 100, 180, 1000)); err == nil {
		t.Error("5 tasks accepted for a 6-task scenario")
	}
	nan := controllertest.Obs(make([]controllertest.TaskRow, 6), math.NaN(), 180, 1000)
	if _, err := v.Act(nan); err == nil {
		t.Error("NaN p95 accepted")
	}
}

// TestVRebalanceBeatsStatic is the end-to-end check: on PRED with a diurnal
// workload VRebalance violates the SLO less often than static:500.
func TestVRebalanceBeatsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end episode")
	}
	const steps = 1800
	sc := predScenario(t, controllertest.Diurnal(steps))
	v, err := vrebalance.New(vrebalance.DefaultConfig(), sc)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := agents.NewStatic(500)
	th, _ := agents.NewThreshold(agents.DefaultThresholdConfig())
	vv, vc := controllertest.Episode(t, sc, v, 1)
	sv, scpu := controllertest.Episode(t, sc, s, 1)
	tv, tc := controllertest.Episode(t, sc, th, 1)
	t.Logf("violation rate / mean total CPU over %d steps: vrebalance %.3f / %.0f, static:500 %.3f / %.0f, threshold %.3f / %.0f", steps, vv, vc, sv, scpu, tv, tc)
	for i, ts := range v.Tiers() {
		t.Logf("tier %d [%.0f, %.0f): %d evals, %d explore, %d exploit, %d keep, best %.3f", i, ts.Low, ts.High, ts.Evaluations, ts.Explores, ts.Exploits, ts.Keeps, ts.BestObjective)
	}
	if !(tv < sv) {
		t.Errorf("threshold violates in %.3f of the steps, static:500 in %.3f; want fewer", tv, sv)
	}
	if !(vv < sv) {
		t.Errorf("vrebalance violates in %.3f of the steps, static:500 in %.3f; want fewer", vv, sv)
	}
}

// TestVRebalanceSeeds: the same seed gives the same decisions, another
// seed other ones.
func TestVRebalanceSeeds(t *testing.T) {
	sc := predScenario(t, controllertest.Diurnal(400))
	cfg := vrebalance.DefaultConfig()
	cfg.Interval = 20
	run := func(seed uint64) [][]float64 {
		v, err := vrebalance.New(cfg, sc)
		if err != nil {
			t.Fatal(err)
		}
		controllertest.Episode(t, sc, v, seed)
		var out [][]float64
		for _, d := range v.Decisions() {
			out = append(out, d.Allocation)
		}
		return out
	}
	a, b, c := run(1), run(1), run(2)
	eq := func(x, y [][]float64) bool { return slices.EqualFunc(x, y, slices.Equal[[]float64]) }
	if !eq(a, b) {
		t.Error("same seed, different decisions")
	}
	if eq(a, c) {
		t.Error("seeds 1 and 2 gave identical decisions")
	}
}

// TestVRebalanceObjectiveForms: under the squared objective a window
// slightly above the SLO scores better than a compliant one at the
// network floor; under the violation objective never.
func TestVRebalanceObjectiveForms(t *testing.T) {
	sc := predScenario(t, controllertest.Diurnal(300))
	for _, form := range []string{vrebalance.ObjectiveSquared, vrebalance.ObjectiveViolation} {
		cfg := vrebalance.DefaultConfig()
		cfg.Objective = form
		cfg.TierQuantiles = nil
		v, err := vrebalance.New(cfg, sc)
		if err != nil {
			t.Fatal(err)
		}
		score := func(p95 float64) float64 {
			if err := v.Reset(1); err != nil {
				t.Fatal(err)
			}
			rows := make([]controllertest.TaskRow, 6)
			for k := range rows {
				rows[k] = controllertest.TaskRow{CPU: 500, Rho: 0.5, Ratio: 1}
			}
			obs := controllertest.Obs(rows, p95, 180, 2000)
			for k := 0; k <= cfg.Interval; k++ {
				if _, err := v.Act(obs); err != nil {
					t.Fatal(err)
				}
			}
			return v.Decisions()[0].Score.Objective
		}
		floor, over := score(40), score(190)
		if form == vrebalance.ObjectiveSquared && !(over < floor) {
			t.Errorf("squared: a window at 190 ms scores %v, not below the floor's %v", over, floor)
		}
		if form == vrebalance.ObjectiveViolation && !(over > floor) {
			t.Errorf("violation: a window at 190 ms scores %v, not above the floor's %v", over, floor)
		}
	}
	cfg := vrebalance.DefaultConfig()
	cfg.Objective = "cubic"
	if _, err := vrebalance.New(cfg, sc); err == nil {
		t.Error("unknown objective accepted")
	}
}
