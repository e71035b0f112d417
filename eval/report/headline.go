package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"streamscale/eval/paired"
)

// pct formats a fraction as a percentage with a % sign ("1.51%").
func pct(x paired.Num, prec int) string {
	if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
		return "–"
	}
	return num(100*x, prec) + "%"
}

// signed formats x with an explicit sign ("+0.25", "−1.10"; "0.00" for
// zero), "–" for NaN.
func signed(x paired.Num, prec int) string {
	s := num(x, prec)
	switch {
	case s == "–" || strings.Trim(s, "0.") == "":
		return s
	case strings.HasPrefix(s, "-"):
		return "−" + s[1:]
	}
	return "+" + s
}

// diff formats a paired difference as "+0.25 pp [−0.10, +0.61]".
func diff(e paired.Estimate, unit string, prec int) string {
	s := signed(e.Mean, prec) + unit
	if !math.IsNaN(float64(e.CILow)) && !math.IsNaN(float64(e.CIHigh)) {
		s += " [" + signed(e.CILow, prec) + ", " + signed(e.CIHigh, prec) + "]"
	}
	return s
}

func statsOf(c paired.Combination, name string) (paired.ControllerStats, bool) {
	for _, cs := range c.Controllers {
		if cs.Controller == name {
			return cs, true
		}
	}
	return paired.ControllerStats{}, false
}

func versus(c paired.Combination, name string) (paired.Versus, bool) {
	for _, v := range c.VsBestRule {
		if v.Controller == name {
			return v, true
		}
	}
	return paired.Versus{}, false
}

// HeadlineTable renders the headline of a paired summary: per cell, the
// best controller, the best rule with its violation rate and mean CPU, and
// each learned controller's paired difference from the best rule with its
// CI and dominance verdict (paired.Dominates); for a controller of several
// seeds, its seed-level figures (the IQM over seeds and its CI, which the
// verdict judges). Without a learned
// controller a cell has one row naming its best controller and best rule.
func HeadlineTable(sum paired.Summary) []byte {
	var b bytes.Buffer
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("| profile / trace | best controller | best rule (violations, CPU) | learned controller | Δ violations vs best rule | Δ CPU vs best rule | verdict |\n")
	pf("|---|---|---|---|---|---|---|\n")
	for _, c := range sum.Combinations {
		rule := "–"
		if r, ok := statsOf(c, c.BestRule); ok {
			rule = fmt.Sprintf("`%s` (%s, %s mc)", c.BestRule, pct(r.ViolationRateMean, 2), num(r.MeanCPU, 0))
		}
		best := "–"
		if c.Best != "" {
			best = "`" + c.Best + "`"
		}
		rows := 0
		for _, name := range sum.Protocol.Learned {
			v, ok := versus(c, name)
			if !ok {
				continue
			}
			rows++
			label, vv, vu := "`"+name+"`", v.Violation, v.CPU
			if sl := v.SeedLevel; sl != nil {
				// Several seeds: the seed-level figures the verdict judges.
				label = fmt.Sprintf("`%s` (IQM of %d seeds)", name, sl.Seeds)
				vv = paired.Estimate{Mean: sl.Violation.IQM, CILow: sl.Violation.CILow, CIHigh: sl.Violation.CIHigh}
				vu = paired.Estimate{Mean: sl.CPU.IQM, CILow: sl.CPU.CILow, CIHigh: sl.CPU.CIHigh}
			}
			pf("| %s / %s | %s | %s | %s | %s | %s | %s |\n", c.Profile, c.Trace, best, rule, label,
				diff(vv, " pp", 2), diff(vu, "%", 1), v.Verdict)
		}
		if rows == 0 {
			pf("| %s / %s | %s | %s | – | – | – | – |\n", c.Profile, c.Trace, best, rule)
		}
	}
	return b.Bytes()
}

// ControllersTable renders every controller of every cell of a paired
// summary: its violation rate and mean CPU (means over the placements
// [95% CI]) and its paired difference from the cell's best rule with the
// dominance verdict, the best controller first and the others in the
// protocol's order.
func ControllersTable(sum paired.Summary) []byte {
	var b bytes.Buffer
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("| profile / trace | controller | violations | mean CPU (mc) | Δ violations vs best rule | Δ CPU vs best rule | verdict |\n")
	pf("|---|---|---|---|---|---|---|\n")
	for _, c := range sum.Combinations {
		order := slices.Clone(c.Controllers)
		slices.SortStableFunc(order, func(x, y paired.ControllerStats) int {
			switch {
			case x.Controller == c.Best && y.Controller != c.Best:
				return -1
			case y.Controller == c.Best && x.Controller != c.Best:
				return 1
			}
			return 0
		})
		for _, cs := range order {
			name := "`" + cs.Controller + "`"
			if cs.Controller == c.Best {
				name = "**" + name + "** (best)"
			}
			dv, du, verdict := "–", "–", "–"
			if cs.Controller == c.BestRule {
				verdict = paired.IsBest
			} else if v, ok := versus(c, cs.Controller); ok {
				dv, du, verdict = diff(v.Violation, " pp", 2), diff(v.CPU, "%", 1), v.Verdict
			}
			pf("| %s / %s | %s | %s%s | %s%s | %s | %s | %s |\n", c.Profile, c.Trace, name,
				pct(cs.ViolationRateMean, 2), pctInterval(cs.ViolationRateCI), num(cs.MeanCPU, 0), interval(cs.CPUCI[0], cs.CPUCI[1], 0),
				dv, du, verdict)
		}
	}
	return b.Bytes()
}

func pctInterval(ci [2]paired.Num) string {
	if math.IsNaN(float64(ci[0])) || math.IsNaN(float64(ci[1])) {
		return ""
	}
	return " [" + num(100*ci[0], 2) + ", " + num(100*ci[1], 2) + "]"
}

// headlineNote is the sentence under the headline table saying how the
// best controller and the verdicts are defined.
func headlineNote(sum paired.Summary) string {
	seeds := ""
	if len(sum.Protocol.Seeded) > 0 {
		seeds = " (a controller of several seeds: the interquartile mean over seeds of each seed's mean, its CI a bootstrap over seeds and placements)"
	}
	return fmt.Sprintf("Best: the least mean CPU among the controllers within a %s violation budget (else the fewest violations); "+
		"the best rule is the best controller that is not learned. Δ: controller − best rule, paired over %d placements, mean [%g%% CI]"+seeds+". "+
		"Dominates: violations lower (CI below 0) with CPU at most +%s%%, or CPU lower (CI below 0) with violations at most +%s pp; dominated: the mirror.\n",
		pct(paired.Num(sum.Protocol.ViolationBudget), 1), len(sum.Protocol.PlacementSeeds), 100*sum.Protocol.Level,
		strconv.FormatFloat(paired.CPUMarginPct, 'f', -1, 64), strconv.FormatFloat(paired.ViolationMarginPP, 'f', -1, 64))
}
