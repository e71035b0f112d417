package paired

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"streamscale/eval/controllers"
	"streamscale/eval/runner"
	"streamscale/traces"
)

type flat float64

func (f flat) Len() int         { return 100 }
func (f flat) Rate(int) float64 { return float64(f) }

// named is a 100-step trace name at rate events/s.
func named(name string, rate float64) *traces.Trace {
	r := make([]float64, 100)
	for i := range r {
		r[i] = rate
	}
	return traces.FromRates(name, r)
}

func specs(t *testing.T, names ...string) []runner.Factory {
	t.Helper()
	reg := controllers.New(controllers.Options{})
	var out []runner.Factory
	for _, n := range names {
		s, err := reg.Parse(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func TestExecuteEmitsInOrder(t *testing.T) {
	ctrls := specs(t, "static:1000")
	var ss []runner.Spec
	// Long runs first, so later runs finish first.
	for i, steps := range []int{300, 250, 5, 5, 5, 200, 5, 5} {
		ss = append(ss, runner.Spec{Profile: "etl", TraceName: "flat", Workload: flat(2000), PlacementSeed: uint64(101 + i), Steps: steps, Controller: ctrls[0]})
	}
	var got []int
	var progress []int
	err := Execute(context.Background(), ss, 3, func(i int, r runner.Result) error {
		if r.PlacementSeed != ss[i].PlacementSeed || r.Summary.Steps != int64(ss[i].Steps) {
			t.Errorf("emit %d got the result of placement %d", i, r.PlacementSeed)
		}
		got = append(got, i)
		return nil
	}, func(done, total int) { progress = append(progress, done) })
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if g != i {
			t.Fatalf("emit order %v", got)
		}
	}
	if len(got) != len(ss) || len(progress) != len(ss) || progress[len(progress)-1] != len(ss) {
		t.Errorf("emitted %d, progress %v", len(got), progress)
	}
}

func TestExecuteErrors(t *testing.T) {
	ctrls := specs(t, "static:1000")
	ss := []runner.Spec{
		{Profile: "etl", Workload: flat(100), PlacementSeed: 101, Steps: 5, Controller: ctrls[0]},
		{Profile: "nope", Workload: flat(100), PlacementSeed: 102, Steps: 5, Controller: ctrls[0]},
		{Profile: "etl", Workload: flat(100), PlacementSeed: 103, Steps: 5, Controller: ctrls[0]},
	}
	err := Execute(context.Background(), ss, 2, func(int, runner.Result) error { return nil }, nil)
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("run error: %v", err)
	}
	ss[1].Profile = "etl"
	boom := errors.New("boom")
	err = Execute(context.Background(), ss, 2, func(i int, _ runner.Result) error {
		if i == 1 {
			return boom
		}
		return nil
	}, nil)
	if !errors.Is(err, boom) {
		t.Errorf("emit error: %v", err)
	}
}

func TestSpecsOrderAndSeeds(t *testing.T) {
	p := Plan{
		Profiles: []string{"pred", "etl"}, Workloads: []*traces.Trace{named("a", 1), named("b", 2)},
		Placements: []uint64{101, 102, 103}, Controllers: specs(t, "static:500", "static:900"), Candidate: "static:900", Seed: 7,
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	ss := p.Specs()
	if len(ss) != 2*2*3*2 {
		t.Fatalf("%d specs", len(ss))
	}
	seen := map[uint64]bool{}
	for i := 0; i < len(ss); i += 2 {
		a, b := ss[i], ss[i+1]
		if a.Seed != b.Seed || a.PlacementSeed != b.PlacementSeed || a.Controller.String() != "static:500" || b.Controller.String() != "static:900" {
			t.Fatalf("cell %d: %+v / %+v", i/2, a, b)
		}
		if seen[a.Seed] {
			t.Errorf("episode seed %d reused", a.Seed)
		}
		seen[a.Seed] = true
	}
	if ss[0].Profile != "pred" || ss[6].TraceName != "b" || ss[12].Profile != "etl" || ss[2].PlacementSeed != 102 {
		t.Error("cells out of order")
	}
	bad := p
	bad.Candidate = "static:1"
	if err := bad.Validate(); err == nil {
		t.Error("candidate outside the controllers accepted")
	}
}

// fake builds the results of a plan from per-controller, per-placement
// summaries.
func fake(p Plan, sum func(prof, trace string, c int, l int) runner.Summary) []runner.Result {
	var out []runner.Result
	for _, s := range p.Specs() {
		c, l := 0, 0
		for i, x := range p.Controllers {
			if x.String() == s.Controller.String() {
				c = i
			}
		}
		for i, x := range p.Placements {
			if x == s.PlacementSeed {
				l = i
			}
		}
		out = append(out, runner.Result{Key: runner.Key{Profile: s.Profile, Trace: s.TraceName, PlacementSeed: s.PlacementSeed,
			Seed: s.Seed, Controller: s.Controller.String()}, SLOMS: 180, ConfigSHA256: "x", Summary: sum(s.Profile, s.TraceName, c, l)})
	}
	return out
}

// TestAnalyzeVerdicts checks the verdicts on constructed results with
// known answers: constant paired differences give degenerate intervals at
// the difference.
func TestAnalyzeVerdicts(t *testing.T) {
	p := Plan{
		Profiles: []string{"pred"}, Workloads: []*traces.Trace{named("taxi", 1)},
		Placements: DefaultPlacements, Controllers: specs(t, "threshold", "static:500", "static:2000", "static:10000"),
		Candidate: "threshold", Seed: 1,
	}
	// Candidate (c=0): violation 0.02, CPU 5000, throughput 990.
	// static:500: violation 0.5 + noise, CPU 3000, throughput 700.
	// static:2000: violation 0.02, CPU 12000, throughput 1000.
	// static:10000: violation 0, CPU 50000, throughput 1000.
	res := fake(p, func(_, _ string, c, l int) runner.Summary {
		x := float64(l)
		switch c {
		case 0:
			return runner.Summary{ViolationRate: 0.02, MeanCPU: 5000, MeanThroughput: 990, MeanP95MS: 50, Steps: 10}
		case 1:
			return runner.Summary{ViolationRate: 0.5 + 0.01*x, MeanCPU: 3000, MeanThroughput: 700, MeanP95MS: 5000, Steps: 10}
		case 2:
			return runner.Summary{ViolationRate: 0.02, MeanCPU: 12000, MeanThroughput: 1000, MeanP95MS: 40, Steps: 10}
		}
		return runner.Summary{ViolationRate: 0, MeanCPU: 50000, MeanThroughput: 1000, MeanP95MS: 40, Steps: 10}
	})
	for i := range res {
		// Reserved CPU as applied; controller c keeps c+1 servers active.
		s := &res[i].Summary
		s.MeanReservedCPU = s.MeanCPU
		for c, x := range p.Controllers {
			if x.String() == res[i].Controller {
				s.MeanActiveServers = float64(c + 1)
			}
		}
	}
	sum, err := Analyze(p, res)
	if err != nil {
		t.Fatal(err)
	}
	c := sum.Combinations[0]
	if len(c.Comparisons) != 3 {
		t.Fatalf("%d comparisons", len(c.Comparisons))
	}
	want := map[string][3]bool{
		"static:500":   {true, false, true},  // far fewer violations; more CPU; +41% throughput
		"static:2000":  {false, true, true},  // same violations (CI [0,0] not below 0); −58% CPU; −1% throughput
		"static:10000": {false, false, true}, // +2 pp violations (CI above 0) so H2 fails despite −90% CPU
	}
	for _, cmp := range c.Comparisons {
		w := want[cmp.Baseline]
		if got := [3]bool{cmp.H1.Holds, cmp.H2.Holds, cmp.H3.Holds}; got != w {
			t.Errorf("%s: verdicts %v, want %v (%+v)", cmp.Baseline, got, w, cmp)
		}
	}
	cpu := c.Comparisons[1].H2.Evidence[0]
	if cpu.Metric != MetricCPU || math.Abs(float64(cpu.Mean)-(5000-12000)/12000.0*100) > 1e-9 || cpu.CILow != cpu.Mean || cpu.CIHigh != cpu.Mean {
		t.Errorf("constant CPU difference: %+v, want a degenerate interval at %v", cpu, (5000-12000)/12000.0*100)
	}
	// The footprint of threshold (5,000 millicores on 1 server) against
	// static:2000 (12,000 on 3): −58.3% reserved CPU, −2 servers, exactly.
	fp := c.Comparisons[1].Footprint
	if len(fp) != 2 || fp[0].Metric != MetricReservedCPU || math.Abs(float64(fp[0].Mean)-(5000-12000)/12000.0*100) > 1e-9 || fp[0].CILow != fp[0].Mean ||
		fp[1].Metric != MetricActiveServers || fp[1].Mean != -2 || fp[1].CIHigh != -2 || fp[1].Unit != "servers" {
		t.Errorf("footprint vs static:2000: %+v", fp)
	}
	if cs := c.Controllers[2]; cs.MeanActiveServers != 3 || cs.MeanReservedCPU != 12000 || cs.PerRun[4].ActiveServers != 3 {
		t.Errorf("static:2000 footprint stats %+v", cs)
	}
	v := c.Comparisons[2].H1.Evidence[0]
	if v.Unit != "percentage points" || math.Abs(float64(v.Mean)-2) > 1e-9 {
		t.Errorf("violation difference vs static:10000: %+v, want 2 pp", v)
	}
	if cs := c.Controllers[1]; math.Abs(float64(cs.ViolationRateMean)-0.545) > 1e-12 || !(cs.ViolationRateCI[0] < cs.ViolationRateMean && cs.ViolationRateMean < cs.ViolationRateCI[1]) {
		t.Errorf("static:500 stats %+v", cs)
	}
	// Analyze is deterministic and the JSON has no NaN.
	again, _ := Analyze(p, res)
	a, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Error("Analyze is not deterministic")
	}
}

func TestAnalyzeOnePlacementHasNoVerdict(t *testing.T) {
	p := Plan{
		Profiles: []string{"etl"}, Workloads: []*traces.Trace{named("w", 1)},
		Placements: []uint64{101}, Controllers: specs(t, "static:600", "static:500"), Candidate: "static:600",
	}
	sum, err := Analyze(p, fake(p, func(_, _ string, c, _ int) runner.Summary {
		return runner.Summary{ViolationRate: 0.5 - 0.5*float64(1-c), MeanCPU: 1000 + float64(c), MeanThroughput: 1, Steps: 1}
	}))
	if err != nil {
		t.Fatal(err)
	}
	cmp := sum.Combinations[0].Comparisons[0]
	if cmp.H1.Holds || cmp.H2.Holds || cmp.H3.Holds {
		t.Errorf("one pair gave a verdict: %+v", cmp)
	}
	js, err := json.Marshal(cmp)
	if err != nil || !strings.Contains(string(js), `"ci_low":null`) {
		t.Errorf("undefined interval encoded as %s (%v)", js, err)
	}
}

func TestAnalyzeChecksOrder(t *testing.T) {
	p := Plan{
		Profiles: []string{"etl"}, Workloads: []*traces.Trace{named("w", 1)},
		Placements: []uint64{101, 102}, Controllers: specs(t, "static:600", "static:500"), Candidate: "static:600",
	}
	res := fake(p, func(string, string, int, int) runner.Summary { return runner.Summary{MeanThroughput: 1, MeanCPU: 1} })
	res[0], res[1] = res[1], res[0]
	if _, err := Analyze(p, res); err == nil {
		t.Error("results out of order accepted")
	}
	if _, err := Analyze(p, res[:2]); err == nil {
		t.Error("too few results accepted")
	}
}

// TestAnalyzeBoundIsNeverBest: the clairvoyant bound, cheaper and with
// fewer violations than the rule, is named neither the best controller
// nor the best rule.
func TestAnalyzeBoundIsNeverBest(t *testing.T) {
	p := Plan{
		Profiles: []string{"pred"}, Workloads: []*traces.Trace{named("w", 1)},
		Placements: []uint64{101, 102}, Controllers: specs(t, "threshold", "oracle:1:threshold"), Candidate: "threshold",
	}
	sum, err := Analyze(p, fake(p, func(_, _ string, c, _ int) runner.Summary {
		return runner.Summary{ViolationRate: 0.01 - 0.005*float64(c), MeanCPU: 1000 - 100*float64(c), MeanThroughput: 1, Steps: 1}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c := sum.Combinations[0]; c.Best != "threshold" || c.BestRule != "threshold" {
		t.Errorf("best %q, best rule %q; want threshold for both", c.Best, c.BestRule)
	}
}
