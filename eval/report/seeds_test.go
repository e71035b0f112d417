package report

import (
	"math"
	"strings"
	"testing"

	"streamscale/eval/paired"
)

// seedSummary is a one-cell summary with a controller of three seeds.
func seedSummary() paired.Summary {
	nan := paired.Num(math.NaN())
	iqm := func(m, lo, hi paired.Num) paired.IQMEstimate {
		return paired.IQMEstimate{IQM: m, CILow: lo, CIHigh: hi}
	}
	seed := &paired.SeedVersus{Seeds: 3, Violation: iqm(-0.5, -0.9, -0.1), CPU: iqm(1.25, -0.5, 1.9), PlacementVerdict: paired.Neither}
	return paired.Summary{
		Protocol: paired.Protocol{Controllers: []string{"ppo:x", "threshold", "flink"}, Learned: []string{"ppo:x"},
			Seeded: []paired.SeedSet{{Controller: "ppo:x", Seeds: []string{"ppo:x/seed-1", "ppo:x/seed-2", "ppo:x/seed-3"}}}},
		Combinations: []paired.Combination{{Profile: "pred", Trace: "taxi", BestRule: "threshold",
			Controllers: []paired.ControllerStats{
				{Controller: "ppo:x", Seeds: 3, SeedLevel: &paired.SeedStats{ViolationRate: iqm(0.0123, 0.01, 0.015), CPU: iqm(4000.4, 3900, 4100)}},
				{Controller: "threshold"}, {Controller: "flink"}},
			VsBestRule: []paired.Versus{{Controller: "ppo:x", Verdict: paired.Dominates, SeedLevel: seed},
				{Controller: "flink", Verdict: paired.Neither}},
			SeedVsRules: []paired.Versus{{Controller: "ppo:x", Rule: "threshold", Verdict: paired.Dominates, SeedLevel: seed},
				{Controller: "ppo:x", Rule: "flink", Verdict: paired.Dominated,
					SeedLevel: &paired.SeedVersus{Seeds: 3, Violation: iqm(1, nan, nan), CPU: iqm(1, nan, nan)}}},
		}},
	}
}

func TestSeedsTable(t *testing.T) {
	got := string(SeedsTable(seedSummary()))
	want := "| profile / trace | controller | seeds | violations (IQM) | mean CPU (mc, IQM) | best rule | Δ violations (IQM) | Δ CPU (IQM) | verdict | over placements |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n" +
		"| pred / taxi | `ppo:x` | 3 | 1.23% [1.00, 1.50] | 4000 [3900, 4100] | `threshold` | −0.50 pp [−0.90, −0.10] | +1.2% [−0.5, +1.9] | dominates | neither |\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	got = string(SeedVerdictsTable(seedSummary()))
	want = "| controller | seeds | against | cells | dominates | dominated | neither |\n|---|---|---|---|---|---|---|\n" +
		"| `ppo:x` | 3 | the best rule | 1 | 1 | 0 | 0 |\n" +
		"| `ppo:x` | 3 | `threshold` | 1 | 1 | 0 | 0 |\n" +
		"| `ppo:x` | 3 | `flink` | 1 | 0 | 1 | 0 |\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Through a marker; a summary without seeds says so.
	doc := "<!-- table paired-seeds x.json -->\n<!-- end table -->\n"
	sum, _ := summary()
	js, err := SummaryJSON(sum)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render([]byte(doc), func(string) ([]byte, error) { return js, nil })
	if err != nil || !strings.Contains(string(out), "No controller of several seeds") {
		t.Errorf("summary without seeds rendered %q, %v", out, err)
	}
}
