package calibrate

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"streamscale/clasp"
)

// LinePoint is one measurement of a line fit: X, Y, and the group (a
// worker, an input rate) whose intercept it shares; groups are 0, 1, ….
type LinePoint struct {
	Group int     `json:"group"`
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
}

// LineFit is a least-squares line with one slope common to every group and
// one intercept per group (the within-group estimator: x and y centred on
// their group means). R2 is the share of the within-group variance of Y
// the slope explains; SlopeSE the slope's standard error and SlopeCI95 the
// half-width of its 95% confidence interval (Student's t with N − Groups −
// 1 degrees of freedom).
type LineFit struct {
	Slope      float64   `json:"slope"`
	Intercepts []float64 `json:"intercepts"`
	R2         float64   `json:"r2"`
	SlopeSE    float64   `json:"slope_se"`
	SlopeCI95  float64   `json:"slope_ci95"`
	N          int       `json:"n"`
	Groups     int       `json:"groups"`
}

// FitLine fits pts; ok is false when the line is not identified: fewer
// than Groups + 2 points, a group label out of 0..len(pts)−1 or unused, a
// non-finite value, or X constant within every group.
func FitLine(pts []LinePoint) (LineFit, bool) {
	g := 0
	for _, p := range pts {
		if p.Group < 0 || p.Group >= len(pts) || math.IsNaN(p.X+p.Y) || math.IsInf(p.X+p.Y, 0) {
			return LineFit{}, false
		}
		g = max(g, p.Group+1)
	}
	n := len(pts)
	if n < g+2 {
		return LineFit{}, false
	}
	cnt := make([]float64, g)
	mx, my := make([]float64, g), make([]float64, g)
	for _, p := range pts {
		cnt[p.Group]++
		mx[p.Group] += p.X
		my[p.Group] += p.Y
	}
	for k := range g {
		if cnt[k] == 0 {
			return LineFit{}, false
		}
		mx[k] /= cnt[k]
		my[k] /= cnt[k]
	}
	var sxx, sxy, syy float64
	for _, p := range pts {
		dx, dy := p.X-mx[p.Group], p.Y-my[p.Group]
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if !(sxx > 0) {
		return LineFit{}, false
	}
	f := LineFit{Slope: sxy / sxx, N: n, Groups: g, Intercepts: make([]float64, g)}
	for k := range g {
		f.Intercepts[k] = my[k] - f.Slope*mx[k]
	}
	sse := max(0, syy-f.Slope*sxy)
	if syy > 0 {
		f.R2 = 1 - sse/syy
	}
	dof := float64(n - g - 1)
	f.SlopeSE = math.Sqrt(sse / dof / sxx)
	f.SlopeCI95 = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: dof}.Quantile(0.975) * f.SlopeSE
	return f, true
}

// CostTerm is one term of CLASP's Eq. 1 as the probe measured it.
type CostTerm struct {
	// Name is alpha, beta, gamma or budget; Unit says the value's unit.
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Value is the estimate and CI95 the half-width of its 95% interval.
	Value float64 `json:"value"`
	CI95  float64 `json:"ci95"`
	// Fit is the line the value comes from (nil for the budget, a mean).
	Fit *LineFit `json:"fit,omitempty"`
	// Samples counts the saturated intervals of the budget.
	Samples int `json:"samples,omitempty"`
	// Accepted says whether the term may be written; Reason names why not.
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
}

// CostPoint is one probe run's per-worker measurement over its window.
type CostPoint struct {
	// Layout names the run's placement; Term the term it measures
	// (alpha-beta, gamma, budget).
	Layout string `json:"layout"`
	Term   string `json:"term"`
	// Rate is the offered input rate, inputs/s.
	Rate float64 `json:"rate"`
	// Worker is the worker's ID; Reference marks the run's reference
	// worker, which owns nothing (its CPU is a worker's cost of idling at
	// that moment on the host, subtracted from the others').
	Worker    int  `json:"worker"`
	Reference bool `json:"reference,omitempty"`
	// CPUUS is the worker process's CPU time per second (its process CPU
	// clock over the window of WindowS s), µs/s.
	CPUUS   float64 `json:"cpu_us_per_s"`
	WindowS float64 `json:"window_s"`
	// ExecUS is the operators' execution time per second, µs/s: the
	// layout's executions times the operators' in-process execution time
	// (the budget run: Σ N·τ̄ from the workers' reports, their mean
	// weighted by each report's interval).
	ExecUS float64 `json:"exec_us_per_s"`
	// LocalRate, RemoteRate are R^l_w and R^r_w, requests/s, and Dests
	// δ_w, of the layout at Rate (the chain runs); the budget run's are in
	// Sat.
	LocalRate  float64 `json:"local_rate"`
	RemoteRate float64 `json:"remote_rate"`
	Dests      float64 `json:"dests"`
	// Throughput is the mean inputs completed per second the planner
	// reported over the window's intervals (whether the run kept up).
	Throughput float64 `json:"throughput"`
	// Saturated counts the window's reports in which the worker was
	// saturated (its queue and the planner's over CostSaturationS of its
	// execution rate); Intervals the worker's reports in the window, each
	// counted once however many control ticks it stayed the latest.
	Saturated int `json:"saturated"`
	Intervals int `json:"intervals"`
	// Sat are the budget run's saturated intervals (only the budget run).
	Sat []SatInterval `json:"saturated_intervals,omitempty"`
}

// SatInterval is one saturated interval of a worker: Σ_o N_{w,o}·τ̄_{w,o}
// (µs/s), R^l_w, R^r_w (requests/s) and δ_w.
type SatInterval struct {
	ExecUS     float64 `json:"exec_us_per_s"`
	LocalRate  float64 `json:"local_rate"`
	RemoteRate float64 `json:"remote_rate"`
	Dests      float64 `json:"dests"`
}

// CostFitConfig says when a term is accepted.
type CostFitConfig struct {
	// MinR2 is the least R² of a term's line, in [0, 1]. Default 0.5.
	MinR2 float64
	// ZeroUnresolved writes as 0 a term of α, β, γ that would be refused
	// for a negative estimate or a poor fit but whose 95% CI includes 0
	// (a cost below the probe's resolution: a flat line has R² ≈ 0 however
	// well measured). Default false: refused.
	ZeroUnresolved bool
}

// DefaultCostFitConfig returns MinR2 0.5.
func DefaultCostFitConfig() CostFitConfig { return CostFitConfig{MinR2: 0.5} }

// ErrCostTerm is wrapped by FitCostModel's error when a term is refused.
var ErrCostTerm = errors.New("cost term refused")

// FitCostModel identifies each term of CLASP's Eq. 1 (W_w = Σ_o
// N_{w,o}·τ̄_{w,o} + α·R^l_w + β·R^r_w + γ·δ_w ≤ W) from differential
// measurements of the workers' CPU time (CostPoint.CPUUS) less the time
// inside the operators (ExecUS), one term at a time, as the CLASP paper's
// microbenchmarks did (§4.1). Every chain run has a reference worker that
// owns nothing; its CPU, r, is what a worker costs idling on the host at
// that moment, and is subtracted from the others' (the host's load drifts
// between runs by as much as the terms measured):
//
//   - α: the alpha-beta layouts that cut the chain once ("split-K":
//     operators before K on one worker, the rest on another, one input
//     rate): per run, the downstream worker's CPU − exec less the
//     upstream one's, y, against the difference of their local request
//     rates, x. Both workers of a run share the host's load of the moment,
//     which the difference cancels; the ingress and the one remote send
//     (upstream) and receive (downstream) stay constant while K moves
//     work between local requests, in the intercept: slope α.
//   - β: every alpha-beta layout (the splits and "cut-M": M of the nine
//     edges cut between two workers):
//     the two workers' Σ (CPU − exec − r) − γ̂·Σ δ against Σ R^r; with R^l = R −
//     R^r per input the slope is β − α, so β = slope + α̂ (charged to the
//     sender as Eq. 1 does, it includes the receiver's decoding). Its CI
//     adds α̂'s in quadrature.
//   - γ: the gamma layouts (the chain's first half on one worker sending
//     the same remote rate to the second half spread over d = 1, 2, 3
//     workers, at two input rates): the sender's CPU − exec − r against δ,
//     one intercept per rate: slope γ, µs per destination per second.
//   - W: the budget run (one worker saturated): the mean over its
//     saturated intervals of Σ N·τ̄ + α̂·R^l + β̂·R^r + γ̂·δ, the budget
//     the worker completed (Eq. 3 with the measured α̂, β̂, γ̂).
//
// A term is refused (Accepted false, Reason naming why) when its line is
// not identified, its estimate is negative, or R² < MinR2 (with
// ZeroUnresolved, such a term whose CI includes 0 is written as 0 and the
// Reason says so); W when fewer than two reports saturated. The model is returned only when every term is
// accepted; otherwise the error wraps ErrCostTerm and names the refused
// terms, and the terms are returned all the same.
func FitCostModel(pts []CostPoint, cfg CostFitConfig) (clasp.CostModel, []CostTerm, error) {
	if !(cfg.MinR2 >= 0 && cfg.MinR2 <= 1) {
		return clasp.CostModel{}, nil, fmt.Errorf("calibrate: cost fit min R² %v, want [0, 1]", cfg.MinR2)
	}
	for _, p := range pts {
		for _, v := range []float64{p.Rate, p.CPUUS, p.ExecUS, p.LocalRate, p.RemoteRate, p.Dests} {
			if !(v >= 0) || math.IsInf(v, 0) {
				return clasp.CostModel{}, nil, fmt.Errorf("calibrate: cost point %s worker %d: a negative or non-finite value (%+v)", p.Layout, p.Worker, p)
			}
		}
	}
	judge := func(t *CostTerm, f LineFit, ok bool) {
		switch {
		case !ok:
			t.Reason = "not identified (too few points, or x constant within every group)"
			return
		case f.R2 < cfg.MinR2:
			t.Reason = fmt.Sprintf("poor fit: R² %.3f < %.2f", f.R2, cfg.MinR2)
		case t.Value < 0:
			t.Reason = fmt.Sprintf("negative estimate %.4g %s (95%% CI ± %.3g)", t.Value, t.Unit, t.CI95)
		default:
			t.Accepted = true
			return
		}
		if cfg.ZeroUnresolved && math.Abs(t.Value) <= t.CI95 {
			t.Reason = fmt.Sprintf("unresolved (%s; the 95%% CI %.4g ± %.3g includes 0): written as 0", t.Reason, t.Value, t.CI95)
			t.Value, t.Accepted = 0, true
		}
	}
	// term is a fitted term, judged: fitted says whether f is a fit to
	// report, identified whether the term's estimate rests on fits.
	term := func(name, unit string, value, ci95 float64, f LineFit, fitted, identified bool) CostTerm {
		t := CostTerm{Name: name, Unit: unit, Value: value, CI95: ci95}
		if fitted {
			t.Fit = &f
		}
		judge(&t, f, identified)
		return t
	}
	// α: the two workers' difference in every single-cut layout.
	ab := byTerm(pts, "alpha-beta")
	var aPts []LinePoint
	for _, run := range runsOf(ab) {
		_, w := reference(run)
		if len(w) != 2 || !strings.HasPrefix(w[0].Layout, "split-") {
			continue
		}
		a, b := w[0], w[1]
		aPts = append(aPts, LinePoint{X: b.LocalRate - a.LocalRate, Y: (b.CPUUS - b.ExecUS) - (a.CPUUS - a.ExecUS)})
	}
	af, aok := FitLine(aPts)
	alpha := term("alpha", "µs", af.Slope, af.SlopeCI95, af, aok, aok)

	// γ: the sender (the worker with the most remote requests) of every
	// gamma layout less the reference, one group per rate.
	var gPts []LinePoint
	rates := map[float64]int{} // only indexed
	for _, run := range runsOf(byTerm(pts, "gamma")) {
		r, w := reference(run)
		if len(w) == 0 {
			continue
		}
		s := w[0]
		for _, p := range w[1:] {
			if p.RemoteRate > s.RemoteRate {
				s = p
			}
		}
		g, ok := rates[s.Rate]
		if !ok {
			g = len(rates)
			rates[s.Rate] = g
		}
		gPts = append(gPts, LinePoint{Group: g, X: s.Dests, Y: s.CPUUS - s.ExecUS - r})
	}
	gf, gok := FitLine(gPts)
	gamma := term("gamma", "µs per destination per second", gf.Slope, gf.SlopeCI95, gf, gok, gok)

	// β: both workers of every alpha-beta layout, less the reference,
	// summed.
	var bPts []LinePoint
	for _, run := range runsOf(ab) {
		r, w := reference(run)
		var y, x float64
		for _, p := range w {
			y += p.CPUUS - p.ExecUS - r - gf.Slope*p.Dests
			x += p.RemoteRate
		}
		bPts = append(bPts, LinePoint{X: x, Y: y})
	}
	bf, bok := FitLine(bPts)
	beta := term("beta", "µs", bf.Slope+af.Slope, math.Hypot(bf.SlopeCI95, af.SlopeCI95), bf, bok, bok && aok)

	// W: the saturated intervals of the budget run.
	budget := CostTerm{Name: "budget", Unit: "µs/s"}
	var loads []float64
	for _, p := range byTerm(pts, "budget") {
		for _, s := range p.Sat {
			loads = append(loads, s.ExecUS+alpha.Value*s.LocalRate+beta.Value*s.RemoteRate+gamma.Value*s.Dests)
		}
	}
	budget.Samples = len(loads)
	if len(loads) > 0 {
		m, sd := meanSD(loads)
		budget.Value = m
		if len(loads) > 1 {
			budget.CI95 = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(loads) - 1)}.Quantile(0.975) * sd / math.Sqrt(float64(len(loads)))
		}
	}
	switch {
	case len(loads) == 0:
		budget.Reason = "no saturated interval in the budget run"
	case len(loads) == 1:
		budget.Reason = fmt.Sprintf("one saturated report in the budget run (%.4g µs/s): no confidence interval", budget.Value)
	case !(budget.Value > 0):
		budget.Reason = fmt.Sprintf("non-positive budget %.4g µs/s", budget.Value)
	default:
		budget.Accepted = true
	}
	terms := []CostTerm{alpha, beta, gamma, budget}
	var refused []string
	for _, t := range terms {
		if !t.Accepted {
			refused = append(refused, t.Name+": "+t.Reason)
		}
	}
	if len(refused) > 0 {
		return clasp.CostModel{}, terms, fmt.Errorf("calibrate: %w: %v", ErrCostTerm, refused)
	}
	return clasp.CostModel{Alpha: alpha.Value, Beta: beta.Value, Gamma: gamma.Value, Budget: budget.Value}, terms, nil
}

// reference returns the CPU of a run's reference worker (0 without one)
// and the run's other points.
func reference(run []CostPoint) (float64, []CostPoint) {
	var r float64
	var out []CostPoint
	for _, p := range run {
		if p.Reference {
			r = p.CPUUS
			continue
		}
		out = append(out, p)
	}
	return r, out
}

// byTerm returns the points of one term, in order.
func byTerm(pts []CostPoint, term string) []CostPoint {
	var out []CostPoint
	for _, p := range pts {
		if p.Term == term {
			out = append(out, p)
		}
	}
	return out
}

// runsOf splits points into runs: consecutive points of one layout and
// rate.
func runsOf(pts []CostPoint) [][]CostPoint {
	var out [][]CostPoint
	for i, p := range pts {
		if i == 0 || p.Layout != pts[i-1].Layout || p.Rate != pts[i-1].Rate {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], p)
	}
	return out
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}
