package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"streamscale/env"
	"streamscale/eval/paired"
)

// SummaryJSON encodes sum as indented JSON with a trailing newline.
func SummaryJSON(sum paired.Summary) ([]byte, error) {
	return MarshalJSON(sum)
}

// MarshalJSON encodes v as indented JSON with a trailing newline, without
// HTML escaping.
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("eval: encoding JSON: %w", err)
	}
	return b.Bytes(), nil
}

// num formats x with prec decimals, "–" for NaN.
func num(x paired.Num, prec int) string {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	if f == 0 {
		f = 0 // no "-0.00"
	}
	s := strconv.FormatFloat(f, 'f', prec, 64)
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s
}

func interval(lo, hi paired.Num, prec int) string {
	if math.IsNaN(float64(lo)) || math.IsNaN(float64(hi)) {
		return ""
	}
	return " [" + num(lo, prec) + ", " + num(hi, prec) + "]"
}

func estimate(e paired.Estimate, prec int) string {
	return num(e.Mean, prec) + interval(e.CILow, e.CIHigh, prec)
}

func verdict(v paired.Verdict) string {
	if v.Holds {
		return "**holds**"
	}
	return "fails"
}

// footprint formats the comparison's footprint estimate of metric, "–"
// when it has none.
func footprint(cmp paired.Comparison, metric string, prec int) string {
	for _, e := range cmp.Footprint {
		if e.Metric == metric {
			return estimate(e, prec)
		}
	}
	return "–"
}

// horizontalSection renders the comparisons of the candidate with the
// horizontal controllers: violations, reserved CPU and active servers of
// both, and their paired differences. It writes nothing without
// horizontal controllers.
func horizontalSection(pf func(string, ...any), sum paired.Summary) {
	p := sum.Protocol
	type row struct {
		c   paired.Combination
		cmp paired.Comparison
	}
	var rows []row
	for _, c := range sum.Combinations {
		for _, cmp := range c.Comparisons {
			if slices.Contains(p.Horizontal, cmp.Baseline) || slices.Contains(p.Horizontal, cmp.Candidate) {
				rows = append(rows, row{c, cmp})
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	pf("## Vertical against horizontal scaling\n\n")
	pf("`%s` against the horizontal controllers (%s): means over the placements of each side, and the paired differences `%s` − baseline, mean [95%% CI] (no hypothesis is judged on the footprint).\n\n",
		p.Candidate, "`"+strings.Join(p.Horizontal, "`, `")+"`", p.Candidate)
	pf("| profile | trace | baseline | violation rate | reserved CPU (millicores) | active servers | Δ violation (pp) | Δ reserved CPU (%%) | Δ active servers |\n")
	pf("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		cmp, c := r.cmp, r.c
		var a, b paired.ControllerStats
		for _, cs := range c.Controllers {
			if cs.Controller == cmp.Candidate {
				a = cs
			}
			if cs.Controller == cmp.Baseline {
				b = cs
			}
		}
		pf("| %s | %s | `%s` | %s vs %s | %s vs %s | %s vs %s | %s | %s | %s |\n", c.Profile, c.Trace, cmp.Baseline,
			pct(a.ViolationRateMean, 2), pct(b.ViolationRateMean, 2),
			num(a.MeanReservedCPU, 0), num(b.MeanReservedCPU, 0),
			num(a.MeanActiveServers, 2), num(b.MeanActiveServers, 2),
			estimate(cmp.H1.Evidence[0], 2), footprint(cmp, paired.MetricReservedCPU, 2), footprint(cmp, paired.MetricActiveServers, 2))
	}
	pf("\n")
}

// Markdown renders report.md: the protocol, the verdict table, the
// seed-level tables when a controller has several seeds, one table per
// profile × workload, and the figures.
func Markdown(sum paired.Summary, figures []string) []byte {
	var b bytes.Buffer
	p := sum.Protocol
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("# Paired evaluation\n\n")
	pf("## Best controller per cell\n\n")
	b.Write(HeadlineTable(sum))
	pf("\n%s\n", headlineNote(sum))
	b.Write(ControllersTable(sum))
	if len(p.Seeded) > 0 {
		pf("\n## Seeds\n\n")
		pf("Interquartile mean over seeds of each seed's mean over the placements [%g%% CI: placements and whole seeds resampled]; "+
			"the verdicts of a controller of several seeds above are these.\n\n", 100*p.Level)
		b.Write(SeedsTable(sum))
		pf("\n")
		b.Write(SeedVerdictsTable(sum))
	}
	pf("\n## Protocol\n\n")
	var traces []string
	for _, t := range p.Traces {
		traces = append(traces, fmt.Sprintf("%s (%s)", t.Name, t.Source))
	}
	var seeds []string
	for _, s := range p.PlacementSeeds {
		seeds = append(seeds, strconv.FormatUint(s, 10))
	}
	steps := "the full trace"
	if p.Steps > 0 {
		steps = strconv.Itoa(p.Steps)
	}
	pf("- Candidate: `%s`; controllers: %s.\n", p.Candidate, "`"+strings.Join(p.Controllers, "`, `")+"`")
	pf("- Profiles: %s. Workloads: %s, rate ×%g.\n", strings.Join(p.Profiles, ", "), strings.Join(traces, ", "), p.RateMult)
	if p.Scenario == "live" { // eval live and simgap: the runtime, not a physics preset
		pf("- Scenario: `live` (the real planner and worker processes on this host, in real time; not the simulator, not reproducible).\n")
	} else {
		pf("- Scenario: %s (simulator physics %s).\n", scenarioName(p.Scenario), physicsText(p.Physics))
	}
	pf("- Placements (seeds): %s. Intervals per run: %s. Every controller of a placement runs on the same episode seed (stream `%s`).\n",
		strings.Join(seeds, ", "), steps, p.EpisodeStream)
	pf("- Paired differences are candidate − baseline per placement; intervals are %g%% percentile-bootstrap CIs of their mean from %d resamples (stream `%s` of seed %d).\n",
		100*p.Level, p.Resamples, p.BootstrapStream, sum.Seed)
	pf("- H1: violation-rate difference CI entirely below 0. H2: CPU difference CI entirely below 0 and the violation-rate difference CI not entirely above 0. H3: throughput difference CI lower bound above −%g%%.\n", p.MarginPct)
	pf("- Reserved CPU: for controllers that set per-task CPU, the sum of the applied allocations; for horizontal controllers on shared-CPU servers, the whole CPU of every server they keep active. Active servers: servers hosting at least one task replica with CPU > 0.\n")
	if len(p.Horizontal) > 0 {
		pf("- Horizontal scaling (%s): runs on the horizontal counterpart of each cell's scenario — the same servers, network, application, workload and placement seed, but the servers share their CPU among the replicas they host, every chained request costs its sender CPU (CLASP's α = 38.5 µs local, β = 275 µs remote, γ = 51,500 µs per remote destination per second; zero in the other controllers' scenario), and the seed's random placement (one replica per task) is only the starting point, which CLASP's first plan replaces. CLASP's plan workers map onto the servers ranked by processing capacity, largest first; it plans as if every server had the smallest server's CPU and the slowest server's per-core speed (a conservative envelope, so a plan fits whichever server it lands on), with the true α, β, γ and no online estimation (package `eval/horizontal`). When its packing needs more workers than there are servers, the demand is spread over all servers and the interval counted (over capacity).\n", "`"+strings.Join(p.Horizontal, "`, `")+"`")
	}
	pf("- Seed %d, config sha256 `%s`, commit `%s`, %s.\n\n", sum.Seed, sum.ConfigSHA256, sum.Commit, sum.GoVersion)

	pf("## Verdicts\n\n")
	anyCmp := false
	for _, c := range sum.Combinations {
		anyCmp = anyCmp || len(c.Comparisons) > 0
	}
	if !anyCmp {
		pf("No comparisons: the candidate is the only controller.\n\n")
	} else {
		pf("Differences `%s` − baseline: violation rate in percentage points, CPU and throughput in percent of the baseline; mean [95%% CI].\n\n", p.Candidate)
		pf("| profile | trace | baseline | H1 fewer violations | Δ violation (pp) | H2 less CPU | Δ CPU (%%) | H3 throughput non-inferior | Δ throughput (%%) |\n")
		pf("|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range sum.Combinations {
			for _, cmp := range c.Comparisons {
				pf("| %s | %s | `%s` | %s | %s | %s | %s | %s | %s |\n", c.Profile, c.Trace, cmp.Baseline,
					verdict(cmp.H1), estimate(cmp.H1.Evidence[0], 2),
					verdict(cmp.H2), estimate(cmp.H2.Evidence[0], 2),
					verdict(cmp.H3), estimate(cmp.H3.Evidence[0], 2))
			}
		}
		pf("\n")
	}
	horizontalSection(pf, sum)

	for _, c := range sum.Combinations {
		pf("## %s / %s (SLO %g ms, %d intervals)\n\n", c.Profile, c.Trace, c.SLOMS, c.Steps)
		pf("Means over %d placements [95%% bootstrap CI].\n\n", len(p.PlacementSeeds))
		pf("| controller | violation rate | mean p95 (ms) | mean CPU (millicores) | reserved CPU (millicores) | active servers | throughput (msg/s) | offered (msg/s) | mean reward |\n")
		pf("|---|---|---|---|---|---|---|---|---|\n")
		for _, cs := range c.Controllers {
			pf("| `%s` | %s%s | %s%s | %s%s | %s%s | %s%s | %s%s | %s | %s |\n", cs.Controller,
				pct(cs.ViolationRateMean, 2), pctInterval(cs.ViolationRateCI),
				num(cs.MeanP95MS, 1), interval(cs.P95CI[0], cs.P95CI[1], 1),
				num(cs.MeanCPU, 0), interval(cs.CPUCI[0], cs.CPUCI[1], 0),
				num(cs.MeanReservedCPU, 0), interval(cs.ReservedCPUCI[0], cs.ReservedCPUCI[1], 0),
				num(cs.MeanActiveServers, 2), interval(cs.ActiveServersCI[0], cs.ActiveServersCI[1], 2),
				num(cs.MeanThroughput, 1), interval(cs.ThroughputCI[0], cs.ThroughputCI[1], 1),
				num(cs.MeanOffered, 1), num(cs.MeanReward, 3))
		}
		pf("\n")
		if len(c.Comparisons) > 0 {
			pf("| `%s` − baseline | pairs | Δ violation (pp) | Δ CPU (%%) | Δ throughput (%%) | Δ reserved CPU (%%) | Δ active servers | H1 | H2 | H3 |\n", p.Candidate)
			pf("|---|---|---|---|---|---|---|---|---|---|\n")
			for _, cmp := range c.Comparisons {
				pf("| `%s` | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", cmp.Baseline, cmp.Pairs,
					estimate(cmp.H1.Evidence[0], 2), estimate(cmp.H2.Evidence[0], 2), estimate(cmp.H3.Evidence[0], 2),
					footprint(cmp, paired.MetricReservedCPU, 2), footprint(cmp, paired.MetricActiveServers, 2),
					verdict(cmp.H1), verdict(cmp.H2), verdict(cmp.H3))
			}
			pf("\n")
		}
	}

	if len(figures) > 0 {
		pf("## Figures\n\n")
		captions := map[string]string{
			FigP95Time:   "p95 latency over time, pointwise mean over placements, with the SLO",
			FigP95Paired: "Per-run mean p95 latency; grey lines join the runs of one placement",
			FigViolation: "Violation rate: mean (bar), placements (points), 95% bootstrap CI (whiskers)",
			FigCPU:       "Distribution of the total CPU allocation over all intervals and placements",
			FigThroughpt: "Offered load and achieved throughput, pointwise mean over placements",
			FigPareto:    "Reserved CPU against violation rate for every controller: lower left dominates",
		}
		for _, f := range figures {
			pf("![%s](%s)\n\n*%s.*\n\n", captions[f], f, captions[f])
		}
	}
	return b.Bytes()
}

// scenarioName quotes a physics preset name ("custom" when unnamed).
func scenarioName(name string) string {
	if name == "" {
		return "custom"
	}
	return "`" + name + "`"
}

// physicsText lists the options of p that are on, in env.Physics's field
// order, or "deterministic" when none is.
func physicsText(p env.Physics) string {
	var on []string
	if p.Arrivals != "" && p.Arrivals != env.ArrivalsUniform {
		a := p.Arrivals + " arrivals"
		if p.Arrivals == env.ArrivalsGamma {
			a += fmt.Sprintf(" (CV %g)", p.ArrivalCV)
		}
		on = append(on, a)
	}
	if p.ServiceCV > 0 {
		on = append(on, fmt.Sprintf("log-normal service times (CV %g)", p.ServiceCV))
	}
	if p.CFSPeriodMS > 0 {
		on = append(on, fmt.Sprintf("CFS bandwidth control (%g ms period)", p.CFSPeriodMS))
	}
	if p.ActuationDelaySteps > 0 {
		on = append(on, fmt.Sprintf("actuation delay %d s", p.ActuationDelaySteps))
	}
	if p.MetricNoise > 0 {
		on = append(on, fmt.Sprintf("metric noise %g", p.MetricNoise))
	}
	if p.MetricLagSteps > 0 {
		on = append(on, fmt.Sprintf("metric lag %d s", p.MetricLagSteps))
	}
	if p.CapacityJitter > 0 {
		on = append(on, fmt.Sprintf("capacity jitter %g", p.CapacityJitter))
	}
	if len(on) == 0 {
		return "deterministic"
	}
	return strings.Join(on, ", ")
}
