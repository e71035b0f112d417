package report

import (
	"strings"
	"testing"

	"streamscale/eval/paired"
)

// TestComparisonsTable: each comparison is a row whose verdict follows
// the dominance margins on its H1 and H2 evidence.
func TestComparisonsTable(t *testing.T) {
	est := func(m, lo, hi float64) paired.Estimate {
		return paired.Estimate{Mean: paired.Num(m), CILow: paired.Num(lo), CIHigh: paired.Num(hi)}
	}
	cmp := func(base string, v, u paired.Estimate) paired.Comparison {
		return paired.Comparison{Candidate: "c", Baseline: base, H1: paired.Verdict{Evidence: []paired.Estimate{v}},
			H2: paired.Verdict{Evidence: []paired.Estimate{u, v}}}
	}
	sum := paired.Summary{Combinations: []paired.Combination{{Profile: "pred", Trace: "taxi", Comparisons: []paired.Comparison{
		cmp("a", est(-0.3, -0.4, -0.2), est(1, 0.5, 1.5)),
		cmp("b", est(0.3, 0.2, 0.4), est(-1, -1.5, -0.5)),
	}}}}
	got := string(ComparisonsTable(sum))
	for _, want := range []string{"| pred / taxi | `c` | `a` | −0.30 pp [−0.40, −0.20] | +1.0% [+0.5, +1.5] | dominates |",
		"| pred / taxi | `c` | `b` | +0.30 pp [+0.20, +0.40] | −1.0% [−1.5, −0.5] | dominated |"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
