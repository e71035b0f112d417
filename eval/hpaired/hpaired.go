package hpaired

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"streamscale/eval/paired"
	"streamscale/eval/stats"
	"streamscale/rng"
)

// Run is one controller's live run on one seed: the run-level figures a
// comparison pairs.
type Run struct {
	Controller string
	Seed       uint64
	// MeanWorkers is the workers in use, mean over the run's intervals.
	MeanWorkers float64
	// ViolationShare is the share of intervals whose p95 exceeded the
	// latency rule, in [0, 1].
	ViolationShare float64
	// P95MS is the p95 over every input of the run, ms.
	P95MS float64
	// Delivered is completed ÷ offered inputs, in [0, 1].
	Delivered float64
}

// Metric names of the paired differences, candidate − baseline.
const (
	MetricWorkers   = "workers_diff"         // mean workers, workers
	MetricViolation = "violation_share_diff" // percentage points
	MetricP95       = "p95_rel_diff"         // (A − B)/B × 100, percent
	MetricDelivered = "delivered_diff"       // percentage points
)

// Verdict names, in the order of Comparison.Verdicts.
const (
	VerdictWorkers    = "fewer_workers"
	VerdictViolations = "fewer_violations"
	VerdictNoMore     = "no_more_violations"
	VerdictP95        = "lower_p95"
	VerdictDelivered  = "delivered_noninferior"
)

// Verdict is the outcome of one hypothesis about candidate and baseline.
type Verdict struct {
	Name     string            `json:"name"`
	Claim    string            `json:"claim"` // the hypothesis, in words
	Holds    bool              `json:"holds"`
	Rule     string            `json:"rule"`
	Evidence []paired.Estimate `json:"evidence"`
}

// Comparison is the candidate against one baseline over the seeds.
type Comparison struct {
	Candidate string `json:"candidate"`
	Baseline  string `json:"baseline"`
	Pairs     int    `json:"pairs"`
	// Estimates are the four paired differences: workers, violation
	// share, p95, delivered (the Metric constants, in that order).
	Estimates []paired.Estimate `json:"estimates"`
	Verdicts  []Verdict         `json:"verdicts"`
}

// Summary is the judged paired live runs of one application and trace.
type Summary struct {
	Candidate       string       `json:"candidate"`
	Pair            string       `json:"pair"` // what a pair is: "seed"
	Seeds           []uint64     `json:"seeds"`
	RuleMS          float64      `json:"latency_rule_ms"`
	Resamples       int          `json:"bootstrap_resamples"`
	Level           float64      `json:"confidence_level"`
	MarginPoints    float64      `json:"delivered_margin_points"`
	BootstrapStream string       `json:"bootstrap_stream"`
	Comparisons     []Comparison `json:"comparisons"`
}

// Stream is the bootstrap stream of one comparison.
func Stream(app, trace, candidate, baseline string) string {
	return rng.EvalBootstrap + "horizontal/" + app + "/" + trace + "/" + candidate + "/" + baseline
}

// Analyze judges runs of app on trace, given seed-major: for every seed,
// each controller once, in the same controller order on every seed. The
// first controller is the candidate, every other a baseline. seed roots
// the bootstrap streams; ruleMS is the latency rule the violation shares
// were counted against (recorded only).
func Analyze(seed uint64, app, trace string, ruleMS float64, runs []Run) (Summary, error) {
	if len(runs) == 0 {
		return Summary{}, fmt.Errorf("hpaired: no runs")
	}
	nC := 0
	for nC < len(runs) && runs[nC].Seed == runs[0].Seed {
		nC++
	}
	if len(runs)%nC != 0 {
		return Summary{}, fmt.Errorf("hpaired: %d runs for %d controllers per seed", len(runs), nC)
	}
	nS := len(runs) / nC
	s := Summary{Candidate: runs[0].Controller, Pair: "seed", RuleMS: ruleMS, Resamples: paired.Resamples, Level: paired.Level,
		MarginPoints: paired.NonInferiorityMargin, BootstrapStream: Stream("<app>", "<trace>", "<candidate>", "<baseline>")}
	seen := map[uint64]bool{}
	for k := range nS {
		sd := runs[k*nC].Seed
		if seen[sd] {
			return Summary{}, fmt.Errorf("hpaired: seed %d appears twice", sd)
		}
		seen[sd] = true
		s.Seeds = append(s.Seeds, sd)
		for c := range nC {
			r := runs[k*nC+c]
			if r.Seed != sd || r.Controller != runs[c].Controller {
				return Summary{}, fmt.Errorf("hpaired: run %d is %s on seed %d, want %s on seed %d", k*nC+c, r.Controller, r.Seed, runs[c].Controller, sd)
			}
		}
		for c := range nC {
			for d := range c {
				if runs[c].Controller == runs[d].Controller {
					return Summary{}, fmt.Errorf("hpaired: controller %s runs twice on seed %d", runs[c].Controller, sd)
				}
			}
		}
	}
	col := func(c int, f func(Run) float64) []float64 {
		out := make([]float64, nS)
		for k := range nS {
			out[k] = f(runs[k*nC+c])
		}
		return out
	}
	for b := 1; b < nC; b++ {
		s.Comparisons = append(s.Comparisons, compare(seed, app, trace, runs[0].Controller, runs[b].Controller, col, b))
	}
	return s, nil
}

func workers(r Run) float64   { return r.MeanWorkers }
func violation(r Run) float64 { return r.ViolationShare }
func p95(r Run) float64       { return r.P95MS }
func delivered(r Run) float64 { return r.Delivered }

// points is 100 × the paired differences (shares to percentage points).
func points(a, b []float64) ([]float64, bool) {
	d, ok := stats.Diff(a, b)
	for i := range d {
		d[i] *= 100
	}
	return d, ok
}

// bootstrap is the interval of x's mean from a fresh copy of the stream,
// NaN bounds when it is undefined (fewer than two pairs) and a NaN mean
// when x is.
func bootstrap(x []float64, ok bool, seed uint64, stream string) stats.CI {
	if ok {
		if ci, ok := stats.BootstrapMean(x, paired.Resamples, paired.Level, rng.Source(seed, stream)); ok {
			return ci
		}
	}
	m := math.NaN()
	if ok && len(x) > 0 {
		m = stats.Mean(x)
	}
	return stats.CI{Mean: m, Lo: math.NaN(), Hi: math.NaN(), Level: paired.Level}
}

func estimate(metric, unit string, ci stats.CI) paired.Estimate {
	return paired.Estimate{Metric: metric, Unit: unit, Mean: paired.Num(ci.Mean), CILow: paired.Num(ci.Lo), CIHigh: paired.Num(ci.Hi)}
}

func defined(ci stats.CI) bool { return !math.IsNaN(ci.Lo) && !math.IsNaN(ci.Hi) }

func compare(seed uint64, app, trace, cand, base string, col func(int, func(Run) float64) []float64, b int) Comparison {
	stream := Stream(app, trace, cand, base)
	dw, okw := stats.Diff(col(0, workers), col(b, workers))
	dv, okv := points(col(0, violation), col(b, violation))
	dl, okl := stats.RelDiff(col(0, p95), col(b, p95))
	dd, okd := points(col(0, delivered), col(b, delivered))
	wci, vci := bootstrap(dw, okw, seed, stream), bootstrap(dv, okv, seed, stream)
	lci, dci := bootstrap(dl, okl, seed, stream), bootstrap(dd, okd, seed, stream)
	ew, ev := estimate(MetricWorkers, "workers", wci), estimate(MetricViolation, "percentage points", vci)
	el, ed := estimate(MetricP95, "percent", lci), estimate(MetricDelivered, "percentage points", dci)
	margin := strconv.FormatFloat(paired.NonInferiorityMargin, 'f', -1, 64)
	return Comparison{
		Candidate: cand, Baseline: base, Pairs: len(dw),
		Estimates: []paired.Estimate{ew, ev, el, ed},
		Verdicts: []Verdict{
			{Name: VerdictWorkers, Claim: cand + " uses fewer workers than " + base + " at no more violations",
				Holds: defined(wci) && defined(vci) && wci.Below() && !vci.Above(),
				Rule:  "mean-workers difference CI entirely below 0 and violation-share difference CI not entirely above 0", Evidence: []paired.Estimate{ew, ev}},
			{Name: VerdictViolations, Claim: cand + " violates the latency rule in fewer intervals than " + base,
				Holds: defined(vci) && vci.Below(), Rule: "violation-share difference CI entirely below 0", Evidence: []paired.Estimate{ev}},
			{Name: VerdictNoMore, Claim: cand + " violates the latency rule in no more intervals than " + base,
				Holds: defined(vci) && vci.Hi < paired.NonInferiorityMargin, Rule: "violation-share difference CI upper bound below +" + margin + " points",
				Evidence: []paired.Estimate{ev}},
			{Name: VerdictP95, Claim: cand + " has a lower p95 than " + base,
				Holds: defined(lci) && lci.Below(), Rule: "relative p95 difference CI entirely below 0", Evidence: []paired.Estimate{el}},
			{Name: VerdictDelivered, Claim: cand + " delivers no less than " + base,
				Holds: defined(dci) && dci.NonInferior(paired.NonInferiorityMargin), Rule: "delivered-share difference CI lower bound above -" + margin + " points",
				Evidence: []paired.Estimate{ed}},
		},
	}
}

// Markdown is the comparisons as a table: per baseline the four paired
// differences with their CIs and whether each verdict holds.
func Markdown(s Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Paired by %s (%d: %s), candidate `%s`, latency rule p95 ≤ %g ms; mean of candidate − baseline [%g%% bootstrap CI, %d resamples].",
		s.Pair, len(s.Seeds), joinSeeds(s.Seeds), s.Candidate, s.RuleMS, s.Level*100, s.Resamples)
	if len(s.Seeds) < 2 {
		b.WriteString(" One pair: differences without intervals, no verdict (run with -seeds ≥ 2).")
	}
	b.WriteString("\n\n| baseline | pairs | workers | violation share, pp | p95, % | delivered, pp | fewer workers | fewer violations | no more violations | lower p95 | delivers no less |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|---|---|---|---|\n")
	for _, c := range s.Comparisons {
		fmt.Fprintf(&b, "| %s | %d |", c.Baseline, c.Pairs)
		for _, e := range c.Estimates {
			fmt.Fprintf(&b, " %s |", estimateText(e))
		}
		for _, v := range c.Verdicts {
			if v.Holds {
				b.WriteString(" **holds** |")
			} else {
				b.WriteString(" no |")
			}
		}
		b.WriteString("\n")
	}
	if len(s.Comparisons) > 0 {
		b.WriteString("\nRules: ")
		for i, v := range s.Comparisons[0].Verdicts {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s: %s", v.Name, v.Rule)
		}
		b.WriteString(".\n")
	}
	return b.String()
}

func estimateText(e paired.Estimate) string {
	f := func(x paired.Num) string {
		if v := float64(x); !math.IsNaN(v) && !math.IsInf(v, 0) {
			return strconv.FormatFloat(v, 'f', 2, 64)
		}
		return "–"
	}
	if math.IsNaN(float64(e.CILow)) {
		return f(e.Mean)
	}
	return f(e.Mean) + " [" + f(e.CILow) + ", " + f(e.CIHigh) + "]"
}

func joinSeeds(s []uint64) string {
	p := make([]string, len(s))
	for i, x := range s {
		p[i] = strconv.FormatUint(x, 10)
	}
	return strings.Join(p, ", ")
}
