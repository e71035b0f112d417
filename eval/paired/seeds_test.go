package paired

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"streamscale/eval/runner"
	"streamscale/traces"
)

// renamed is a factory under another spec string.
type renamed struct {
	runner.Factory
	name string
}

func (r renamed) String() string { return r.name }

// group is a controller of several seeds made of renamed static specs.
type group struct {
	renamed
	ms []runner.Factory
}

func (g group) Seeds() []runner.Factory { return g.ms }

func newGroup(t *testing.T, name string, n int) group {
	base := specs(t, "static:1000")[0]
	g := group{renamed: renamed{base, name}}
	for k := range n {
		g.ms = append(g.ms, renamed{base, name + "/seed-" + strconv.Itoa(k+1)})
	}
	return g
}

// fakeSeeds builds the results of a plan whose members are named
// <controller>/seed-<k+1>: sum gets the controller's index, the seed's
// (0 for a single controller) and the placement's.
func fakeSeeds(p Plan, sum func(trace string, c, k, l int) runner.Summary) []runner.Result {
	var out []runner.Result
	for _, s := range p.Specs() {
		c, k, l := 0, 0, 0
		for i, x := range p.Controllers {
			for j, m := range members(x) {
				if m.String() == s.Controller.String() {
					c, k = i, j
				}
			}
		}
		for i, x := range p.Placements {
			if x == s.PlacementSeed {
				l = i
			}
		}
		out = append(out, runner.Result{Key: runner.Key{Profile: s.Profile, Trace: s.TraceName, PlacementSeed: s.PlacementSeed,
			Seed: s.Seed, Controller: s.Controller.String()}, SLOMS: 180, ConfigSHA256: "x", Summary: sum(s.TraceName, c, k, l)})
	}
	return out
}

func TestSpecsExpandSeeds(t *testing.T) {
	p := Plan{Profiles: []string{"etl"}, Workloads: []*traces.Trace{named("w", 1)}, Placements: []uint64{101, 102},
		Controllers: []runner.Factory{specs(t, "threshold")[0], newGroup(t, "ppo:x", 3)}, Candidate: "threshold"}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range p.Specs() {
		got = append(got, strconv.FormatUint(s.PlacementSeed, 10)+" "+s.Controller.String())
	}
	want := "101 threshold,101 ppo:x/seed-1,101 ppo:x/seed-2,101 ppo:x/seed-3,102 threshold,102 ppo:x/seed-1,102 ppo:x/seed-2,102 ppo:x/seed-3"
	if strings.Join(got, ",") != want {
		t.Errorf("specs %s\nwant  %s", strings.Join(got, ","), want)
	}
	pr := p.Protocol()
	if len(pr.Seeded) != 1 || pr.Seeded[0].Controller != "ppo:x" || len(pr.Seeded[0].Seeds) != 3 || pr.Learned[0] != "ppo:x" {
		t.Errorf("protocol %+v", pr)
	}
	if one := newGroup(t, "ppo:y", 0); isSeeded(one) || len(members(one)) != 1 {
		t.Error("a factory without seeds is not a single controller")
	}
	bad := p
	g := newGroup(t, "ppo:x", 2)
	bad.Controllers = []runner.Factory{renamed{p.Controllers[0], "ppo:x/seed-1"}, g}
	bad.Candidate = "ppo:x"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a seed named like another controller: %v", err)
	}
}

// TestAnalyzeSeeds judges five seeds against a rule on constructed
// results whose bootstrap distributions are known. Rule: violations 2%,
// CPU 1000 mc on every placement. On trace "good" the seeds use
// 880…920 mc (−12…−8%) at the rule's violations: IQM −10%, every resample
// inside (−12, −8), so the seeds dominate. On trace "bad" four seeds use 900 mc
// (−10%) and violate 1.9% (−0.1 pp) and one uses 2000 mc (+100%) and
// violates 5% (+3 pp): the IQM (the middle three of five) is −10% and
// −0.1 pp, but a resample with two bad draws or more (p = 0.263) has the
// bad seed among its middle three: the CPU interval is [−10, +63.3]
// (three bad draws or more: p = 0.058 > 2.5%), so neither. The mean over
// seeds (+12% CPU, +0.52 pp on every placement) is dominated by the rule.
func TestAnalyzeSeeds(t *testing.T) {
	p := Plan{Profiles: []string{"pred"}, Workloads: []*traces.Trace{named("good", 1), named("bad", 1)}, Placements: DefaultPlacements,
		Controllers: []runner.Factory{specs(t, "threshold")[0], newGroup(t, "ppo:x", 5)}, Candidate: "ppo:x", Seed: 3}
	res := fakeSeeds(p, func(trace string, c, k, _ int) runner.Summary {
		s := runner.Summary{ViolationRate: 0.02, MeanCPU: 1000, MeanThroughput: 100, Steps: 10}
		switch {
		case c == 0:
		case trace == "good":
			s.MeanCPU = 880 + 10*float64(k)
		case k == 4:
			s.ViolationRate, s.MeanCPU = 0.05, 2000
		default:
			s.ViolationRate, s.MeanCPU = 0.019, 900
		}
		return s
	})
	sum, err := Analyze(p, res)
	if err != nil {
		t.Fatal(err)
	}
	near := func(x Num, want float64) bool { return math.Abs(float64(x)-want) < 1e-9 }
	good, bad := sum.Combinations[0], sum.Combinations[1]
	if good.BestRule != "threshold" || len(good.VsBestRule) != 1 {
		t.Fatalf("good cell: %+v", good)
	}
	g := good.VsBestRule[0]
	if g.SeedLevel == nil || g.SeedLevel.Seeds != 5 || !near(g.SeedLevel.CPU.IQM, -10) || !(g.SeedLevel.CPU.CILow > -12 && g.SeedLevel.CPU.CIHigh < -8) ||
		!near(g.SeedLevel.Violation.IQM, 0) || g.Verdict != Dominates {
		t.Errorf("good cell: %+v %+v", g, g.SeedLevel)
	}
	b := bad.VsBestRule[0]
	if b.SeedLevel == nil || !near(b.SeedLevel.CPU.IQM, -10) || !near(b.SeedLevel.CPU.CILow, -10) || !near(b.SeedLevel.CPU.CIHigh, 190.0/3) ||
		!near(b.SeedLevel.Violation.IQM, -0.1) || b.Verdict != Neither || b.SeedLevel.PlacementVerdict != Dominated || !near(b.CPU.Mean, 12) {
		t.Errorf("bad cell: %+v %+v", b, b.SeedLevel)
	}
	cs := bad.Controllers[1]
	if cs.Seeds != 5 || cs.SeedLevel == nil || len(cs.SeedLevel.PerSeed) != 5 || cs.SeedLevel.PerSeed[4].Controller != "ppo:x/seed-5" ||
		!near(cs.SeedLevel.PerSeed[4].MeanCPU, 2000) || !near(cs.SeedLevel.CPU.IQM, 900) || !near(cs.MeanCPU, 1120) || !near(cs.PerRun[0].MeanCPU, 1120) {
		t.Errorf("seed stats %+v %+v", cs, cs.SeedLevel)
	}
	if th := bad.Controllers[0]; th.Seeds != 0 || th.SeedLevel != nil {
		t.Errorf("a rule got seed figures: %+v", th)
	}
	tal := Tallies(sum)
	want := []Tally{{Controller: "threshold", Seeds: 1, Cells: 2, BestRule: 2}, {Controller: "ppo:x", Seeds: 5, Cells: 2, Dominates: 1, Neither: 1}}
	if len(tal) != 2 || tal[0] != want[0] || tal[1] != want[1] {
		t.Errorf("tallies %+v, want %+v", tal, want)
	}
	for _, c := range sum.Combinations {
		if len(c.SeedVsRules) != 1 || c.SeedVsRules[0].Rule != "threshold" || c.SeedVsRules[0].Verdict != c.VsBestRule[0].Verdict {
			t.Errorf("%s: seed verdicts against the rules %+v", c.Trace, c.SeedVsRules)
		}
	}
	rt := RuleTallies(sum)
	if w := (Tally{Controller: "ppo:x", Rule: "threshold", Seeds: 5, Cells: 2, Dominates: 1, Neither: 1}); len(rt) != 1 || rt[0] != w {
		t.Errorf("rule tallies %+v, want %+v", rt, w)
	}
	a, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Analyze(p, res)
	if b, _ := json.Marshal(again); string(a) != string(b) {
		t.Error("Analyze of seeds is not deterministic")
	}
}

// TestAnalyzeWithoutSeedsOmitsSeedFields: a plan without a controller of
// several seeds writes none of the seed-level keys (summary.json keeps its
// bytes).
func TestAnalyzeWithoutSeedsOmitsSeedFields(t *testing.T) {
	p := Plan{Profiles: []string{"etl"}, Workloads: []*traces.Trace{named("w", 1)}, Placements: []uint64{101, 102},
		Controllers: specs(t, "threshold", "static:500"), Candidate: "threshold"}
	sum, err := Analyze(p, fake(p, func(string, string, int, int) runner.Summary {
		return runner.Summary{ViolationRate: 0.1, MeanCPU: 1, MeanThroughput: 1}
	}))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(sum)
	for _, key := range []string{`"seeds"`, `"seed_level"`, `"seeded_controllers"`, `"seed_bootstrap_stream"`} {
		if strings.Contains(string(js), key) {
			t.Errorf("summary without seeds has %s", key)
		}
	}
}
