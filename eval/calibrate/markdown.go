package calibrate

import (
	"fmt"
	"strconv"
	"strings"
)

// calibrationMarkdown is calibration.md of a vertical probe.
func calibrationMarkdown(c Calibration) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Live calibration: %s at %g inputs/s\n\n", c.Profile, c.Rate)
	fmt.Fprintf(&b, "%d intervals of %.3g s; every task at %g scenario mc (cpu scale %g) until interval %d, then %g mc. Costs and delays from intervals 2..%d (the high phase).\n\n",
		c.Intervals, c.TimeScaleS, c.HighMC, c.CPUScale, c.Intervals/2, c.LowMC, c.Intervals/2-1)
	b.WriteString("| operator | CPU µs per event | CV (between intervals) | delay ms (enqueue → done) | intervals | hop after it ms (simulator) | hop from |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, oc := range c.Operators {
		hop, from := "–", ""
		for _, h := range c.HopsAfter {
			if h.Task == oc.Operator {
				hop, from = fmt.Sprintf("%.2f", h.MS), strings.Join(h.From, " + ")
			}
		}
		fmt.Fprintf(&b, "| %s | %.3f | %.2f | %.2f | %d | %s | %s |\n", oc.Operator, oc.CPUUSPerEvent, oc.CV, oc.DelayMS, oc.Intervals, hop, from)
	}
	if len(c.LowPhase) > 0 {
		fmt.Fprintf(&b, "\nAt %g mc (the low phase, from the interval after the actuation):\n\n| operator | CPU µs per event | share of the quota used | intervals |\n|---|---:|---:|---:|\n", c.LowMC)
		for _, lc := range c.LowPhase {
			fmt.Fprintf(&b, "| %s | %.3f | %.2f | %d |\n", lc.Operator, lc.CPUUSPerEvent, lc.QuotaUsed, lc.Intervals)
		}
	}
	fmt.Fprintf(&b, "\nActuation: the workers reported the new quota %d interval(s) after the decision (≤ %.0f ms). Mean p95: %.1f ms at %g mc, %.1f ms at %g mc.\n",
		c.ActuationIntervals, c.ActuationMaxMS, c.P95HighMS, c.HighMC, c.P95LowMS, c.LowMC)
	if len(c.ServiceTimes) > 0 {
		fmt.Fprintf(&b, "\nPer-execution CPU time in process (%d inputs):\n\n| operator | executions | mean µs | CV | p50 µs | p99 µs | outliers (> %d× median) |\n|---|---:|---:|---:|---:|---:|---:|\n", c.ServiceInputs, OutlierFactor)
		for _, d := range c.ServiceTimes {
			fmt.Fprintf(&b, "| %s | %d | %.3f | %.2f | %.3f | %.3f | %d |\n", d.Operator, d.N, d.MeanUS, d.CV, d.P50US, d.P99US, d.Outliers)
		}
		fmt.Fprintf(&b, "\nService CV (work-weighted) %.2f; capacity jitter %.3f; offered-rate CV between intervals %.4f; quota enforcement (used/allotted, low phase, %d intervals) %.2f; mean per-hop delay %.2f ms; CFS period %g ms.\n",
			c.ServiceCV, c.CapacityJitter, c.OfferedCV, c.EnforcementIntervals, c.Enforcement, c.HopMS, c.CFSPeriodMS)
	}
	if len(c.HopSpreadFit) > 0 {
		fmt.Fprintf(&b, "\nHops end to end (no simulated propagation on top); hop spread %.2f, fitted to the high phase's mean p95 %.1f ms (%s):\n\n| hop_spread | simulated p95 ms |\n|---:|---:|\n",
			c.HopSpread, c.P95HighMS, c.HopSpreadNote)
		for _, p := range c.HopSpreadFit {
			fmt.Fprintf(&b, "| %.2f | %.1f |\n", p.Spread, p.P95MS)
		}
	}
	if ce := c.CostModel; ce != nil {
		fmt.Fprintf(&b, "\nCost model (CLASP Eq. 1, clasp.Estimator over %v saturated samples per mix): α %.3g µs, β %.3g µs, γ %.4g µs, W %.4g µs/s, W̄ %.4g µs/s.\n\n| mix | samples | R^l /s | R^r /s | δ | Σ N·τ̄ µs/s |\n|---|---:|---:|---:|---:|---:|\n",
			ce.Samples, ce.Model.Alpha, ce.Model.Beta, ce.Model.Gamma, ce.Model.Budget, ce.Smoothed)
		for i, m := range ce.Mixes {
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.2f | %.0f |\n", m.Name, ce.Samples[i], m.LocalRate, m.RemoteRate, m.RemoteDests, m.ExecWorkUS)
		}
	}
	if len(c.HopCurve) > 0 {
		hopCurveMarkdown(&b, c)
	}
	if c.CostProbe != nil {
		costProbeMarkdown(&b, *c.CostProbe)
	}
	for _, u := range c.Uptime {
		fmt.Fprintf(&b, "\nuptime %s", u)
	}
	if c.Rederived != "" {
		fmt.Fprintf(&b, "\n\nDerived values recomputed %s.", c.Rederived)
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// hopCurveMarkdown writes the operators' delays at every probed rate
// (the scenario's hop_curve).
func hopCurveMarkdown(b *strings.Builder, c Calibration) {
	cols := c.hopPoints()
	fmt.Fprintf(b, "\nDelay enqueue → execution finished by input rate, ms (every task at %g mc; the scenario's hop_curve):\n\n| operator |", c.HighMC)
	for _, k := range cols {
		fmt.Fprintf(b, " %g/s |", k.Rate)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(cols)) + "\n")
	for o, oc := range c.Operators {
		fmt.Fprintf(b, "| %s |", oc.Operator)
		for _, k := range cols {
			fmt.Fprintf(b, " %.2f |", k.Operators[o].DelayMS)
		}
		b.WriteString("\n")
	}
	b.WriteString("| mean p95 |")
	for _, k := range cols {
		fmt.Fprintf(b, " %.1f |", k.P95MS)
	}
	b.WriteString("\n| hop spread (fitted to the p95) |")
	for _, k := range cols {
		fmt.Fprintf(b, " %.2f |", k.HopSpread)
	}
	b.WriteString("\n")
}

// costProbeMarkdown is the cost-model probe's section of calibration.md.
func costProbeMarkdown(b *strings.Builder, cp CostProbeResult) {
	fmt.Fprintf(b, "\nCost model (CLASP Eq. 1) by microbenchmarks (live.ProbeCosts, %.1f s):\n\n| term | value | 95%% CI ± | unit | fit: slope, R², points (groups) | accepted |\n|---|---:|---:|---|---|---|\n", cp.WallS)
	for _, t := range cp.Terms {
		fit := fmt.Sprintf("mean of %d saturated intervals", t.Samples)
		if t.Fit != nil {
			fit = fmt.Sprintf("%.4g, %.3f, %d (%d)", t.Fit.Slope, t.Fit.R2, t.Fit.N, t.Fit.Groups)
		}
		acc := "yes"
		switch {
		case !t.Accepted:
			acc = "no: " + t.Reason
		case t.Reason != "":
			acc = "yes, " + t.Reason
		}
		fmt.Fprintf(b, "| %s | %.4g | %.3g | %s | %s | %s |\n", t.Name, t.Value, t.CI95, t.Unit, fit, acc)
	}
	if m := cp.Model; m != nil {
		fmt.Fprintf(b, "\nWritten: α %.4g µs, β %.4g µs, γ %.4g µs, W %.4g µs/s (the paper's: 38.5, 275, 51,500, 850,000).\n", m.AlphaUS, m.BetaUS, m.GammaUS, m.BudgetUSPerS)
	} else {
		fmt.Fprintf(b, "\nNo cost model written: %s\n", cp.Refused)
	}
	b.WriteString("\n| run | rate /s | worker | CPU µs/s | window s | exec µs/s | R^l /s | R^r /s | δ | completed /s | saturated |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range cp.Points {
		w := strconv.Itoa(p.Worker)
		if p.Reference {
			w += " (reference)"
		}
		fmt.Fprintf(b, "| %s | %g | %s | %.0f | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f | %d/%d |\n", p.Layout, p.Rate, w, p.CPUUS, p.WindowS, p.ExecUS, p.LocalRate, p.RemoteRate, p.Dests, p.Throughput, p.Saturated, p.Intervals)
	}
}

// costMarkdown is calibration.md of a CLASP application.
func costMarkdown(c Calibration) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Cost-model calibration for %s\n", c.Profile)
	if c.CostProbe != nil {
		costProbeMarkdown(&b, *c.CostProbe)
	}
	fmt.Fprintf(&b, "\nPer-execution CPU time of %s in process (%d inputs):\n\n| operator | executions | mean µs | CV | p50 µs | p99 µs |\n|---|---:|---:|---:|---:|---:|\n", c.Profile, c.ServiceInputs)
	for _, d := range c.ServiceTimes {
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.2f | %.3f | %.3f |\n", d.Operator, d.N, d.MeanUS, d.CV, d.P50US, d.P99US)
	}
	for _, u := range c.Uptime {
		fmt.Fprintf(&b, "\nuptime %s", u)
	}
	b.WriteString("\n")
	return []byte(b.String())
}
