package horizontal

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"streamscale/agents"
	"streamscale/clasp"
	"streamscale/env"
)

func TestClaspApp(t *testing.T) {
	got, err := ClaspApp(env.PRED(), 1800)
	if err != nil {
		t.Fatal(err)
	}
	ref := 1800.0
	us := func(h float64) float64 { return h / ref * 1e6 } // at run time, as ClaspApp computes it
	// PRED: h = 0.27, 0.36, 0.18, 0.12, 0.15, 0.21 MI per event at 1,800
	// MIPS per core; every task passes its selectivity to each successor
	// (BlockWindowAverage 0.1); no state; requests sized by OutBytes.
	want := clasp.App{Name: "pred",
		Operators: []clasp.Operator{
			{Name: "SenMLParse", ExecUS: us(0.27), RequestBytes: 600},
			{Name: "DecisionTreeClassify", ExecUS: us(0.36), RequestBytes: 200},
			{Name: "LinearRegression", ExecUS: us(0.18), RequestBytes: 200},
			{Name: "BlockWindowAverage", ExecUS: us(0.12), RequestBytes: 200},
			{Name: "ErrorEstimate", ExecUS: us(0.15), RequestBytes: 200},
			{Name: "MQTTPublish", ExecUS: us(0.21), RequestBytes: 200},
		},
		Edges: []clasp.Edge{{From: 0, To: 1, Ratio: 1}, {From: 0, To: 2, Ratio: 1}, {From: 0, To: 3, Ratio: 1}, {From: 2, To: 4, Ratio: 1}, {From: 3, To: 4, Ratio: 0.1}, {From: 1, To: 5, Ratio: 1}, {From: 4, To: 5, Ratio: 1}},
	}
	if math.Abs(got.Operators[1].ExecUS-200) > 1e-9 {
		t.Errorf("DecisionTreeClassify: τ = %v µs, want 200 (0.36 MI at 1,800 MIPS)", got.Operators[1].ExecUS)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ClaspApp(PRED) =\n%+v\nwant\n%+v", got, want)
	}
	// ETL: the ×10 fan-out and the 10:1 join become edge ratios, and the
	// nominal demand per message matches the simulator's: 10 executions of
	// each field operator, 44 requests.
	etl, err := ClaspApp(env.ETL(), 1800)
	if err != nil {
		t.Fatal(err)
	}
	exec, edge := etl.NominalDemand(1)
	if etl.Edges[0].Ratio != 10 || etl.Edges[4].Ratio != 0.1 || exec[3] != 10 || exec[8] != 1 {
		t.Errorf("ETL edges %+v, executions per message %v", etl.Edges, exec)
	}
	if sum := edge[0] + edge[1] + edge[2] + edge[3] + edge[4] + edge[5] + edge[6] + edge[7]; math.Abs(sum-44) > 1e-9 {
		t.Errorf("ETL sends %v requests per message, want 44", sum)
	}
	// State becomes keyed state in bytes.
	a := env.PRED()
	a.Tasks[1].StateMB = 2
	st, err := ClaspApp(a, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if op := st.Operators[1]; !op.Stateful || op.StateBytes != 2<<20 || math.Abs(op.ExecUS-120) > 1e-9 {
		t.Errorf("stateful operator %+v", op)
	}
}

func TestClaspAppErrors(t *testing.T) {
	srcIn := env.PRED()
	srcIn.Sources = []int{0, 2}
	sinkOut := env.ETL()
	sinkOut.Sinks = []int{5, 7, 8}
	cyc := env.PRED()
	cyc.Edges = append(cyc.Edges, env.Edge{From: 5, To: 0})
	zero := env.PRED()
	zero.Tasks[2].MIPSPerEvent = 0
	for _, tc := range []struct {
		name string
		app  env.App
		ref  float64
		want string
	}{
		{"zero speed", env.PRED(), 0, "reference speed 0"},
		{"NaN speed", env.PRED(), math.NaN(), "reference speed NaN"},
		{"source with an input", srcIn, 1800, "sources [0 2] are not the tasks without predecessors [0]"},
		{"sink with a successor", sinkOut, 1800, "sinks [5 7 8] are not the tasks without successors [7 8]"},
		{"cycle", cyc, 1800, "cycle"},
		{"no demand", zero, 1800, "LinearRegression) has 0 MI per event"},
		{"empty", env.App{Name: "none"}, 1800, "no operators"},
	} {
		_, err := ClaspApp(tc.app, tc.ref)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "horizontal: ") {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestMapping(t *testing.T) {
	_, servers := env.DefaultRegion()
	m, err := NewMapping(servers)
	if err != nil {
		t.Fatal(err)
	}
	// Catalogue round-robin: s0 edge-s (16×1,800), s1 edge-m (24×2,200),
	// s2 edge-l (32×2,600), s3 edge-f (20×3,000), s4 s, s5 m, s6 l. By
	// MIPS: l 83,200 > f 60,000 > m 52,800 > s 28,800, ties by index.
	if want := []int{2, 6, 3, 1, 5, 0, 4}; !reflect.DeepEqual(m.Servers, want) {
		t.Errorf("ranking %v, want %v", m.Servers, want)
	}
	if m.RefMIPSPerCore != 1800 || m.BudgetUS != 16e6 {
		t.Errorf("reference %v MIPS, W %v µs/s", m.RefMIPSPerCore, m.BudgetUS)
	}
	if want := []float64{2600.0 / 1800, 2600.0 / 1800, 3000.0 / 1800, 2200.0 / 1800, 2200.0 / 1800, 1, 1}; !reflect.DeepEqual(m.Speedup, want) {
		t.Errorf("speed-ups %v, want %v", m.Speedup, want)
	}
	// Equal MIPS: more CPU first, then the lower index.
	m, err = NewMapping([]env.Server{{CPU: 2000, MIPS: 4000}, {CPU: 4000, MIPS: 4000}, {CPU: 2000, MIPS: 4000}, {CPU: 1000, MIPS: 5000}})
	if err != nil || !reflect.DeepEqual(m.Servers, []int{3, 1, 0, 2}) || m.BudgetUS != 1e6 || m.RefMIPSPerCore != 1000 {
		t.Errorf("ties: %+v, %v", m, err)
	}
	for _, bad := range [][]env.Server{nil, {{CPU: 0, MIPS: 1}}, {{CPU: 1000, MIPS: math.Inf(1)}}} {
		if _, err := NewMapping(bad); err == nil {
			t.Errorf("servers %+v accepted", bad)
		}
	}
}

// stepRate is a workload of hi events/s for the first `at` steps and lo
// after.
type stepRate struct {
	hi, lo float64
	at, n  int
}

func (s stepRate) Len() int { return s.n }
func (s stepRate) Rate(t int) float64 {
	if t < s.at {
		return s.hi
	}
	return s.lo
}

func edgeScenario(t *testing.T, profile string, w env.Workload) env.Config {
	t.Helper()
	base, err := env.EdgeConfig(profile, 101, w)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Counterpart(base)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestScenario(t *testing.T) {
	w := stepRate{hi: 1000, lo: 1000, at: 0, n: 10}
	base, _ := env.EdgeConfig("etl", 7, w)
	cfg, err := Counterpart(base)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.SharedCPU || cfg.Requests != (env.RequestCosts{AlphaUS: 38.5, BetaUS: 275, GammaUS: 51500}) {
		t.Errorf("shared %v, requests %+v", cfg.SharedCPU, cfg.Requests)
	}
	if !reflect.DeepEqual(cfg.App, base.App) || !reflect.DeepEqual(cfg.Servers, base.Servers) || !reflect.DeepEqual(cfg.Network, base.Network) || !reflect.DeepEqual(cfg.Placement, base.Placement) {
		t.Error("the horizontal scenario changed the application, servers, network or placement")
	}
	for k, rs := range cfg.Replicas {
		if len(rs) != 1 || rs[0] != (env.Replica{Server: base.Placement[k], Share: 1}) {
			t.Errorf("task %d starts on %v, placement says %d", k, rs, base.Placement[k])
		}
	}
	e, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, info, _ := e.Reset(1)
	if info.Workers == nil {
		t.Error("no per-server metrics in the horizontal scenario")
	}
	for _, bad := range []func(*env.Config){
		func(c *env.Config) { c.SharedCPU = true },
		func(c *env.Config) { c.Requests.GammaUS = 1 },
		func(c *env.Config) { c.Replicas = [][]env.Replica{} },
		func(c *env.Config) { c.Placement = c.Placement[:3] },
	} {
		b := base
		bad(&b)
		if _, err := Counterpart(b); err == nil {
			t.Errorf("bad base accepted: %+v", b.Requests)
		}
	}
}

// run plays cfg with a fresh controller and returns it, every action and
// every step's Info summary.
// stepRecord is what run keeps of a step.
type stepRecord struct{ Throughput, P95MS float64 }

func run(t *testing.T, cfg env.Config) (*Adapter, []env.Action, []stepRecord) {
	t.Helper()
	c, err := NewEdge(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var acts []env.Action
	var recs []stepRecord
	err = agents.RunEpisode(context.Background(), e, agents.Horizontal(c), 1, func(s *agents.Step) error {
		acts = append(acts, s.Action)
		recs = append(recs, stepRecord{s.Info.Throughput, s.Info.P95MS})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, acts, recs
}

func servers(plan [][]env.Replica) map[int]bool {
	on := map[int]bool{}
	for _, rs := range plan {
		for _, r := range rs {
			if r.Share > 0 {
				on[r.Server] = true
			}
		}
	}
	return on
}

// TestControllerDeploysOnLargestServer: at the taxi trace's rates the
// whole application fits CLASP's envelope W of one worker, which maps to
// the largest server (s2), and the replicas are ordered for routing.
func TestControllerDeploysOnLargestServer(t *testing.T) {
	cfg := edgeScenario(t, "pred", stepRate{hi: 3000, lo: 3000, n: 30})
	c, acts, recs := run(t, cfg)
	if len(recs) != 30 || acts[0].Replicas == nil {
		t.Fatalf("%d steps; first action %+v", len(recs), acts[0])
	}
	if on := servers(acts[0].Replicas); len(on) != 1 || !on[2] {
		t.Errorf("first plan on servers %v, want only s2", on)
	}
	for i, a := range acts[1:] {
		if !a.Hold {
			t.Errorf("step %d re-planned a constant load: %+v", i+1, a)
		}
	}
	if c.Replans() != 1 || c.OverCapacitySteps() != 0 {
		t.Errorf("%d replans, %d over capacity", c.Replans(), c.OverCapacitySteps())
	}
	last := recs[len(recs)-1]
	if math.Abs(last.Throughput-3000) > 30 {
		t.Errorf("throughput %v of 3,000 offered", last.Throughput)
	}
}

// TestControllerBeyondCluster: ETL at 60,000 msg/s needs more than seven
// workers in CLASP's model (even all-local it costs 2,861 µs of the slowest
// core per message, 1.7·10⁸ µs/s against 7 × 1.6·10⁷). The controller
// spreads it over every server (not a smaller plan) and counts the steps;
// after the rate falls to 2,000 CLASP re-plans from the measured demand,
// with execution times normalized to the reference core, and the demand
// is back within the cluster.
func TestControllerBeyondCluster(t *testing.T) {
	const hiSteps, n = 3, 80
	cfg := edgeScenario(t, "etl", stepRate{hi: 60000, lo: 2000, at: hiSteps, n: n})
	c, err := NewEdge(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, info, _ := e.Reset(1)
	c.Reset(1)
	var acts []env.Action
	var over []bool
	for s := 0; s < n; s++ {
		a, err := c.Act(float64(s), info)
		if err != nil {
			t.Fatalf("step %d: %v", s, err)
		}
		acts, over = append(acts, a), append(over, c.OverCapacity())
		var sr env.StepResult
		if sr, err = e.Step(a); err != nil {
			t.Fatalf("step %d: %v", s, err)
		}
		info = sr.Info
	}
	if on := servers(acts[0].Replicas); len(on) != 7 || !over[0] {
		t.Fatalf("first plan on %d servers (over capacity %v), want all 7", len(on), over[0])
	}
	for s := 1; s < hiSteps; s++ {
		if !over[s] || !acts[s].Hold {
			t.Errorf("step %d: over capacity %v, action %+v; want a counted hold", s, over[s], acts[s])
		}
	}
	if c.OverCapacitySteps() < hiSteps {
		t.Errorf("%d steps over capacity, want ≥ %d", c.OverCapacitySteps(), hiSteps)
	}
	replanned := false
	for s := hiSteps; s < n; s++ {
		replanned = replanned || acts[s].Replicas != nil
	}
	if !replanned || over[n-1] {
		t.Fatalf("no re-plan after the rate fell, or still over capacity at the end (%v)", over[hiSteps:])
	}
	p := c.LastPlan()
	app, _ := ClaspApp(cfg.App, 1800)
	if !p.Explain.Demand.Measured {
		t.Error("the last plan did not use the measured demand")
	}
	for o, tau := range p.Explain.Demand.ExecUS {
		if math.Abs(tau-app.Operators[o].ExecUS) > 1e-9*tau {
			t.Errorf("operator %d: CLASP saw τ = %v µs, want %v at the reference speed", o, tau, app.Operators[o].ExecUS)
		}
	}
}

func TestControllerDeterministic(t *testing.T) {
	w := stepRate{hi: 9000, lo: 3000, at: 15, n: 40}
	_, a, ra := run(t, edgeScenario(t, "etl", w))
	_, b, rb := run(t, edgeScenario(t, "etl", w))
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(ra, rb) {
		t.Error("two runs differ")
	}
	_, c, _ := run(t, edgeScenario(t, "etl", stepRate{hi: 6000, lo: 3000, at: 15, n: 40}))
	if reflect.DeepEqual(a, c) {
		t.Error("another workload gave the same actions")
	}
}

func TestNewErrors(t *testing.T) {
	base, _ := env.EdgeConfig("pred", 101, stepRate{hi: 1, lo: 1, n: 5})
	if _, err := NewEdge(base); err == nil || !strings.Contains(err.Error(), "shared-CPU scenario") {
		t.Errorf("edge scenario: %v", err)
	}
	cfg := edgeScenario(t, "pred", stepRate{hi: 1, lo: 1, n: 5})
	cfg.Servers = nil
	if _, err := NewEdge(cfg); err == nil {
		t.Error("no servers accepted")
	}
	cfg = edgeScenario(t, "pred", stepRate{hi: 1, lo: 1, n: 5})
	c, err := NewEdge(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Act(0, env.Info{Workers: make([]env.WorkerMetrics, 3)}); err == nil || !strings.Contains(err.Error(), "3 servers, want 7") {
		t.Errorf("short Info: %v", err)
	}
}
