package report

import (
	"bytes"
	"fmt"

	"streamscale/eval/paired"
)

// ComparisonsTable renders, per cell, the candidate against each other
// controller: its paired violation and CPU differences (the H1 and H2
// evidence) and the dominance verdict on them (paired.Dominance).
func ComparisonsTable(sum paired.Summary) []byte {
	var b bytes.Buffer
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("| profile / trace | candidate | against | Δ violations | Δ CPU | verdict |\n")
	pf("|---|---|---|---|---|---|\n")
	for _, c := range sum.Combinations {
		for _, cmp := range c.Comparisons {
			if len(cmp.H1.Evidence) == 0 || len(cmp.H2.Evidence) == 0 {
				continue
			}
			v, u := cmp.H1.Evidence[0], cmp.H2.Evidence[0]
			pf("| %s / %s | `%s` | `%s` | %s | %s | %s |\n", c.Profile, c.Trace, cmp.Candidate, cmp.Baseline,
				diff(v, " pp", 2), diff(u, "%", 1), paired.Dominance(v, u))
		}
	}
	return b.Bytes()
}
