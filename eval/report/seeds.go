package report

import (
	"bytes"
	"fmt"

	"streamscale/eval/paired"
)

func iqmEstimate(e paired.IQMEstimate) paired.Estimate {
	return paired.Estimate{Metric: e.Metric, Unit: e.Unit, Mean: e.IQM, CILow: e.CILow, CIHigh: e.CIHigh}
}

// SeedsTable renders the seed-level figures of a paired summary's
// controllers of several seeds, one row per controller × cell: the seeds,
// the IQM over seeds of the violation rate and mean CPU [95% CI], the IQM
// of the paired differences from the cell's best rule [CI] with the
// seed-level verdict, and the verdict of the placement-level protocol on
// the mean over seeds. A summary without such a controller renders one
// line saying so.
func SeedsTable(sum paired.Summary) []byte {
	var b bytes.Buffer
	if len(sum.Protocol.Seeded) == 0 {
		b.WriteString("No controller of several seeds in this summary.\n")
		return b.Bytes()
	}
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("| profile / trace | controller | seeds | violations (IQM) | mean CPU (mc, IQM) | best rule | Δ violations (IQM) | Δ CPU (IQM) | verdict | over placements |\n")
	pf("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range sum.Combinations {
		for _, s := range sum.Protocol.Seeded {
			cs, ok := statsOf(c, s.Controller)
			if !ok || cs.SeedLevel == nil {
				continue
			}
			v, u := cs.SeedLevel.ViolationRate, cs.SeedLevel.CPU
			dv, du, verdict, placed := "–", "–", "–", "–"
			if vs, ok := versus(c, s.Controller); ok && vs.SeedLevel != nil {
				dv, du = diff(iqmEstimate(vs.SeedLevel.Violation), " pp", 2), diff(iqmEstimate(vs.SeedLevel.CPU), "%", 1)
				verdict, placed = vs.Verdict, vs.SeedLevel.PlacementVerdict
			}
			rule := "–"
			if c.BestRule != "" {
				rule = "`" + c.BestRule + "`"
			}
			pf("| %s / %s | `%s` | %d | %s%s | %s%s | %s | %s | %s | %s | %s |\n", c.Profile, c.Trace, s.Controller, cs.Seeds,
				pct(v.IQM, 2), pctInterval([2]paired.Num{v.CILow, v.CIHigh}), num(u.IQM, 0), interval(u.CILow, u.CIHigh, 0),
				rule, dv, du, verdict, placed)
		}
	}
	return b.Bytes()
}

// SeedVerdictsTable renders the count of cells in which each controller
// of several seeds dominates, is dominated by, or neither, the best rule
// and each rule, by the seed-level protocol (paired.Tallies,
// paired.RuleTallies).
func SeedVerdictsTable(sum paired.Summary) []byte {
	var b bytes.Buffer
	if len(sum.Protocol.Seeded) == 0 {
		b.WriteString("No controller of several seeds in this summary.\n")
		return b.Bytes()
	}
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("| controller | seeds | against | cells | dominates | dominated | neither |\n")
	pf("|---|---|---|---|---|---|---|\n")
	row := func(t paired.Tally, against string) {
		pf("| `%s` | %d | %s | %d | %d | %d | %d |\n", t.Controller, t.Seeds, against, t.Cells, t.Dominates, t.Dominated, t.Neither)
	}
	seeded := map[string]bool{}
	for _, s := range sum.Protocol.Seeded {
		seeded[s.Controller] = true
	}
	rules := paired.RuleTallies(sum)
	for _, t := range paired.Tallies(sum) {
		if !seeded[t.Controller] {
			continue
		}
		row(t, "the best rule")
		for _, r := range rules {
			if r.Controller == t.Controller {
				row(r, "`"+r.Rule+"`")
			}
		}
	}
	return b.Bytes()
}
