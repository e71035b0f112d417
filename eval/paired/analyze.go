package paired

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"streamscale/env"
	"streamscale/eval/runner"
	"streamscale/eval/stats"
	"streamscale/internal/command"
	"streamscale/rng"
)

// Num is a float64 that encodes NaN and ±Inf as JSON null.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON implements json.Unmarshaler: null decodes as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// Summary is the judged result of a paired evaluation (summary.json).
type Summary struct {
	Seed          uint64        `json:"seed"`
	ConfigSHA256  string        `json:"config_sha256"`
	command.Build               // commit, go_version
	Protocol      Protocol      `json:"protocol"`
	Combinations  []Combination `json:"combinations"`
}

// TraceInfo names a workload and where it came from.
type TraceInfo struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// Protocol records the settings of a paired evaluation.
type Protocol struct {
	Profiles        []string    `json:"profiles"`
	Traces          []TraceInfo `json:"traces"`
	Scenario        string      `json:"scenario"` // physics preset
	Physics         env.Physics `json:"physics"`  // its options (env.Physics; {} is the deterministic physics)
	PlacementSeeds  []uint64    `json:"placement_seeds"`
	Controllers     []string    `json:"controllers"`
	Candidate       string      `json:"candidate"`
	Steps           int         `json:"steps"`
	RateMult        float64     `json:"rate_mult"`
	Resamples       int         `json:"bootstrap_resamples"`
	Level           float64     `json:"confidence_level"`
	MarginPct       float64     `json:"noninferiority_margin_pct"`
	EpisodeStream   string      `json:"episode_seed_stream"`
	BootstrapStream string      `json:"bootstrap_stream"`
	// Horizontal lists the controllers that re-plan replicas on the
	// horizontal counterpart of the edge scenario (clasp), in controller
	// order; empty when there are none.
	Horizontal []string `json:"horizontal_controllers,omitempty"`
	// Learned lists the learned controllers (trained policies), in
	// controller order; the others are rules. ViolationBudget is the
	// violation rate (a fraction) within which a controller meets its SLO
	// when the best controller and the best rule of a cell are named
	// (Combination.Best, BestRule).
	Learned         []string `json:"learned_controllers,omitempty"`
	ViolationBudget float64  `json:"violation_budget"`
	// Seeded lists the controllers of several seeds with their members,
	// in controller order, and SeedBootstrapStream names the streams of
	// their seed-level intervals; both empty when there are none.
	Seeded              []SeedSet `json:"seeded_controllers,omitempty"`
	SeedBootstrapStream string    `json:"seed_bootstrap_stream,omitempty"`
}

// Protocol returns the plan's settings.
func (p Plan) Protocol() Protocol {
	pr := Protocol{
		Profiles: p.Profiles, Scenario: p.Scenario, Physics: p.Physics, PlacementSeeds: p.Placements, Candidate: p.Candidate,
		Steps: p.Steps, RateMult: p.RateMult, Resamples: Resamples, Level: Level, MarginPct: NonInferiorityMargin,
		ViolationBudget: p.budget(),
		EpisodeStream:   "eval/episode/<profile>/<trace>/<placement>",
		BootstrapStream: "eval/bootstrap/<profile>/<trace>/<candidate>/<baseline>",
	}
	for _, w := range p.Workloads {
		pr.Traces = append(pr.Traces, TraceInfo{Name: w.Name, Source: w.Origin()})
	}
	for _, c := range p.Controllers {
		pr.Controllers = append(pr.Controllers, c.String())
		if c.Horizontal() {
			pr.Horizontal = append(pr.Horizontal, c.String())
		}
		if IsLearned(c) {
			pr.Learned = append(pr.Learned, c.String())
		}
		if isSeeded(c) {
			set := SeedSet{Controller: c.String()}
			for _, m := range members(c) {
				set.Seeds = append(set.Seeds, m.String())
			}
			pr.Seeded = append(pr.Seeded, set)
			pr.SeedBootstrapStream = "eval/seed-bootstrap/<profile>/<trace>/<controller>[/<rule>]"
		}
	}
	return pr
}

// Combination holds one profile × workload.
type Combination struct {
	Profile     string            `json:"profile"`
	Trace       string            `json:"trace"`
	SLOMS       float64           `json:"slo_ms"`
	Steps       int               `json:"steps"`
	Controllers []ControllerStats `json:"controllers"`
	Comparisons []Comparison      `json:"comparisons"`
	// Best is the cell's best controller: the least mean CPU among the
	// controllers whose mean violation rate is within the protocol's
	// budget, else the fewest violations. BestRule is the best of the
	// rules (the controllers that are not learned) by the same criterion,
	// and VsBestRule every other controller against it, paired over the
	// placements. Empty when the cell has no rule.
	Best       string   `json:"best"`
	BestRule   string   `json:"best_rule"`
	VsBestRule []Versus `json:"vs_best_rule"`
	// SeedVsRules holds every controller of several seeds against every
	// rule of the cell (Versus.Rule), judged by the seed-level protocol,
	// in controller then rule order; omitted when there is none.
	SeedVsRules []Versus `json:"seed_vs_rules,omitempty"`
}

// ControllerStats are one controller's means over the placements of a
// combination, with 95% bootstrap intervals of the mean.
type ControllerStats struct {
	Controller        string `json:"controller"`
	Runs              int    `json:"runs"`
	ViolationRateMean Num    `json:"violation_rate_mean"`
	ViolationRateCI   [2]Num `json:"violation_rate_ci"`
	MeanP95MS         Num    `json:"mean_p95_ms"`
	P95CI             [2]Num `json:"mean_p95_ms_ci"`
	MeanCPU           Num    `json:"mean_cpu_millicores"`
	CPUCI             [2]Num `json:"mean_cpu_millicores_ci"`
	MeanThroughput    Num    `json:"mean_throughput"`
	ThroughputCI      [2]Num `json:"mean_throughput_ci"`
	MeanOffered       Num    `json:"mean_offered"`
	MeanReward        Num    `json:"mean_reward"`
	// MeanReservedCPU is the mean over runs of the mean reserved CPU
	// (runner.Footprint), millicores; MeanActiveServers likewise for the
	// active servers.
	MeanReservedCPU   Num    `json:"mean_reserved_cpu_millicores"`
	ReservedCPUCI     [2]Num `json:"mean_reserved_cpu_millicores_ci"`
	MeanActiveServers Num    `json:"mean_active_servers"`
	ActiveServersCI   [2]Num `json:"mean_active_servers_ci"`
	// MeanReplans and MeanOverCapacity are the mean numbers per run of
	// intervals with a replica plan and of intervals whose demand the
	// controller found beyond the cluster.
	MeanReplans      Num `json:"mean_replans"`
	MeanOverCapacity Num `json:"mean_over_capacity_steps"`
	// PerRun holds the per-placement values, in placement order (for a
	// controller of several seeds, the means over its seeds).
	PerRun []RunValues `json:"per_run"`
	// Seeds is the number of seeds of a controller of several (Seeded),
	// whose figures above are those of the mean over its seeds on each
	// placement; SeedLevel holds its seed-level figures. Both are omitted
	// for a single policy or a rule.
	Seeds     int        `json:"seeds,omitempty"`
	SeedLevel *SeedStats `json:"seed_level,omitempty"`
}

// RunValues are one run's summary values.
type RunValues struct {
	PlacementSeed uint64 `json:"placement_seed"`
	ViolationRate Num    `json:"violation_rate"`
	MeanP95MS     Num    `json:"mean_p95_ms"`
	MeanCPU       Num    `json:"mean_cpu_millicores"`
	MeanThrough   Num    `json:"mean_throughput"`
	ReservedCPU   Num    `json:"mean_reserved_cpu_millicores"`
	ActiveServers Num    `json:"mean_active_servers"`
}

// Estimate is the mean of a paired difference with its bootstrap interval.
type Estimate struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Mean   Num    `json:"mean"`
	CILow  Num    `json:"ci_low"`
	CIHigh Num    `json:"ci_high"`
}

// Verdict is the outcome of one hypothesis.
type Verdict struct {
	Holds    bool       `json:"holds"`
	Rule     string     `json:"rule"`
	Evidence []Estimate `json:"evidence"`
}

// Comparison is the candidate against one baseline.
type Comparison struct {
	Candidate string  `json:"candidate"`
	Baseline  string  `json:"baseline"`
	Pairs     int     `json:"pairs"`
	H1        Verdict `json:"h1"`
	H2        Verdict `json:"h2"`
	H3        Verdict `json:"h3"`
	// Footprint compares what the two hold of the cluster, without a
	// verdict: the relative reserved-CPU difference (MetricReservedCPU) and
	// the active-server difference (MetricActiveServers).
	Footprint []Estimate `json:"footprint"`
}

// Metric names of the paired differences.
const (
	MetricViolation  = "violation_rate_diff"
	MetricCPU        = "cpu_rel_diff"
	MetricThroughput = "throughput_rel_diff"
	// MetricReservedCPU is (A − B)/B × 100 of the mean reserved CPU.
	MetricReservedCPU = "reserved_cpu_rel_diff"
	// MetricActiveServers is A − B of the mean number of active servers.
	MetricActiveServers = "active_servers_diff"
)

// Analyze judges the results of p's runs, given in the order of p.Specs().
func Analyze(p Plan, results []runner.Result) (Summary, error) {
	specs := p.Specs()
	if len(results) != len(specs) {
		return Summary{}, fmt.Errorf("eval: %d results for %d runs", len(results), len(specs))
	}
	for i, s := range specs {
		r := results[i]
		if r.Profile != s.Profile || r.Trace != s.TraceName || r.PlacementSeed != s.PlacementSeed || r.Controller != s.Controller.String() {
			return Summary{}, fmt.Errorf("eval: result %d is %s/%s/%d/%s, want %s/%s/%d/%s", i,
				r.Profile, r.Trace, r.PlacementSeed, r.Controller, s.Profile, s.TraceName, s.PlacementSeed, s.Controller)
		}
	}
	hashes := make([]string, len(results))
	for i, r := range results {
		hashes[i] = r.ConfigSHA256
	}
	ch, err := ConfigHash(p, hashes)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Seed: p.Seed, ConfigSHA256: ch, Protocol: p.Protocol()}
	lay, nP := newLayout(p.Controllers), len(p.Placements)
	cand := -1
	for ci, c := range p.Controllers {
		if c.String() == p.Candidate {
			cand = ci
		}
	}
	idx := 0
	for _, prof := range p.Profiles {
		for _, w := range p.Workloads {
			d := cellData{lay: lay, nP: nP, block: results[idx : idx+lay.width*nP]}
			idx += lay.width * nP
			col := d.col
			comb := Combination{Profile: prof, Trace: w.Name, SLOMS: d.block[0].SLOMS, Steps: int(d.block[0].Summary.Steps)}
			for c, spec := range p.Controllers {
				cs := controllerStats(p.Seed, prof, w.Name, spec.String(), p.Placements, col, c)
				if isSeeded(spec) {
					cs.Seeds, cs.SeedLevel = lay.n[c], d.seedStats(p.Seed, prof, w.Name, p.Controllers, c)
				}
				comb.Controllers = append(comb.Controllers, cs)
			}
			if cand >= 0 {
				for b, spec := range p.Controllers {
					if b == cand {
						continue
					}
					comb.Comparisons = append(comb.Comparisons, compare(p.Seed, prof, w.Name, p.Candidate, spec.String(), col, cand, b))
				}
			}
			judgeBest(&comb, p, d)
			sum.Combinations = append(sum.Combinations, comb)
		}
	}
	return sum, nil
}

func violation(s runner.Summary) float64  { return s.ViolationRate }
func p95(s runner.Summary) float64        { return s.MeanP95MS }
func cpu(s runner.Summary) float64        { return s.MeanCPU }
func throughput(s runner.Summary) float64 { return s.MeanThroughput }
func reserved(s runner.Summary) float64   { return s.MeanReservedCPU }
func active(s runner.Summary) float64     { return s.MeanActiveServers }

// bootstrap returns the interval of x's mean from a fresh copy of the named
// stream, or NaNs when it is undefined.
func bootstrap(x []float64, ok bool, seed uint64, stream string) stats.CI {
	if ok {
		if ci, ok := stats.BootstrapMean(x, Resamples, Level, rng.Source(seed, stream)); ok {
			return ci
		}
	}
	m := math.NaN()
	if ok && len(x) > 0 {
		m = stats.Mean(x)
	}
	return stats.CI{Mean: m, Lo: math.NaN(), Hi: math.NaN(), Level: Level}
}

func controllerStats(seed uint64, prof, trace, ctrl string, placements []uint64, col func(int, func(runner.Summary) float64) []float64, c int) ControllerStats {
	stream := rng.EvalBootstrap + prof + "/" + trace + "/" + ctrl
	v, l, u, t := col(c, violation), col(c, p95), col(c, cpu), col(c, throughput)
	off, rew := col(c, func(s runner.Summary) float64 { return s.MeanOffered }), col(c, func(s runner.Summary) float64 { return s.MeanReward })
	vc, lc, uc, tc := bootstrap(v, true, seed, stream), bootstrap(l, true, seed, stream), bootstrap(u, true, seed, stream), bootstrap(t, true, seed, stream)
	r, a := col(c, reserved), col(c, active)
	rc, ac := bootstrap(r, true, seed, stream), bootstrap(a, true, seed, stream)
	replans := col(c, func(s runner.Summary) float64 { return float64(s.Replans) })
	over := col(c, func(s runner.Summary) float64 { return float64(s.OverCapacitySteps) })
	cs := ControllerStats{
		Controller: ctrl, Runs: len(v),
		ViolationRateMean: Num(vc.Mean), ViolationRateCI: [2]Num{Num(vc.Lo), Num(vc.Hi)},
		MeanP95MS: Num(lc.Mean), P95CI: [2]Num{Num(lc.Lo), Num(lc.Hi)},
		MeanCPU: Num(uc.Mean), CPUCI: [2]Num{Num(uc.Lo), Num(uc.Hi)},
		MeanThroughput: Num(tc.Mean), ThroughputCI: [2]Num{Num(tc.Lo), Num(tc.Hi)},
		MeanOffered: Num(stats.Mean(off)), MeanReward: Num(stats.Mean(rew)),
		MeanReservedCPU: Num(rc.Mean), ReservedCPUCI: [2]Num{Num(rc.Lo), Num(rc.Hi)},
		MeanActiveServers: Num(ac.Mean), ActiveServersCI: [2]Num{Num(ac.Lo), Num(ac.Hi)},
		MeanReplans: Num(stats.Mean(replans)), MeanOverCapacity: Num(stats.Mean(over)),
	}
	for i, pl := range placements {
		cs.PerRun = append(cs.PerRun, RunValues{PlacementSeed: pl, ViolationRate: Num(v[i]), MeanP95MS: Num(l[i]), MeanCPU: Num(u[i]), MeanThrough: Num(t[i]),
			ReservedCPU: Num(r[i]), ActiveServers: Num(a[i])})
	}
	return cs
}

func estimate(metric, unit string, ci stats.CI) Estimate {
	return Estimate{Metric: metric, Unit: unit, Mean: Num(ci.Mean), CILow: Num(ci.Lo), CIHigh: Num(ci.Hi)}
}

func defined(ci stats.CI) bool { return !math.IsNaN(ci.Lo) && !math.IsNaN(ci.Hi) }

func compare(seed uint64, prof, trace, cand, base string, col func(int, func(runner.Summary) float64) []float64, a, b int) Comparison {
	stream := rng.EvalBootstrap + prof + "/" + trace + "/" + cand + "/" + base
	dv, okv := stats.Diff(col(a, violation), col(b, violation))
	for i := range dv {
		dv[i] *= 100 // percentage points
	}
	du, oku := stats.RelDiff(col(a, cpu), col(b, cpu))
	dt, okt := stats.RelDiff(col(a, throughput), col(b, throughput))
	vci, uci, tci := bootstrap(dv, okv, seed, stream), bootstrap(du, oku, seed, stream), bootstrap(dt, okt, seed, stream)
	ev := estimate(MetricViolation, "percentage points", vci)
	eu := estimate(MetricCPU, "percent", uci)
	et := estimate(MetricThroughput, "percent", tci)
	// Footprint: each interval comes from a fresh copy of the comparison's
	// stream, so it resamples the same pairs and shifts nothing above.
	dr, okr := stats.RelDiff(col(a, reserved), col(b, reserved))
	da, oka := stats.Diff(col(a, active), col(b, active))
	rci, aci := bootstrap(dr, okr, seed, stream), bootstrap(da, oka, seed, stream)
	return Comparison{
		Candidate: cand, Baseline: base, Pairs: len(col(a, violation)),
		H1: Verdict{
			Holds:    defined(vci) && vci.Below(),
			Rule:     "violation-rate difference CI entirely below 0",
			Evidence: []Estimate{ev},
		},
		H2: Verdict{
			Holds:    defined(uci) && defined(vci) && uci.Below() && !vci.Above(),
			Rule:     "CPU difference CI entirely below 0 and violation-rate difference CI not entirely above 0",
			Evidence: []Estimate{eu, ev},
		},
		H3: Verdict{
			Holds:    defined(tci) && tci.NonInferior(NonInferiorityMargin),
			Rule:     "throughput difference CI lower bound above -" + strconv.FormatFloat(NonInferiorityMargin, 'f', -1, 64) + "%",
			Evidence: []Estimate{et},
		},
		Footprint: []Estimate{estimate(MetricReservedCPU, "percent", rci), estimate(MetricActiveServers, "servers", aci)},
	}
}

// judgeBest names the cell's best controller and best rule and compares
// every other controller with the best rule.
func judgeBest(comb *Combination, p Plan, d cellData) {
	learned, bound := make([]bool, len(p.Controllers)), make([]bool, len(p.Controllers))
	for i, c := range p.Controllers {
		learned[i], bound[i] = IsLearned(c), IsBound(c)
	}
	b := pickBest(comb.Controllers, p.budget(), func(i int) bool { return !bound[i] })
	r := pickBest(comb.Controllers, p.budget(), func(i int) bool { return !learned[i] && !bound[i] })
	if b >= 0 {
		comb.Best = comb.Controllers[b].Controller
	}
	if r < 0 {
		return
	}
	comb.BestRule = comb.Controllers[r].Controller
	for i := range comb.Controllers {
		if i == r {
			continue
		}
		comb.VsBestRule = append(comb.VsBestRule, versusRule(comb, p, d, i, r))
	}
	for i := range comb.Controllers {
		if !isSeeded(p.Controllers[i]) {
			continue
		}
		for j := range comb.Controllers {
			if !learned[j] && !bound[j] {
				vs := versusRule(comb, p, d, i, j)
				vs.Rule = comb.Controllers[j].Controller
				comb.SeedVsRules = append(comb.SeedVsRules, vs)
			}
		}
	}
}

// versusRule compares controller i with rule r in the cell: over the
// placements, and for a controller of several seeds by the seed-level
// protocol, which then gives the verdict.
func versusRule(comb *Combination, p Plan, d cellData, i, r int) Versus {
	name, rule := comb.Controllers[i].Controller, comb.Controllers[r].Controller
	cmp := compare(p.Seed, comb.Profile, comb.Trace, name, rule, d.col, i, r)
	v, u := cmp.H1.Evidence[0], cmp.H2.Evidence[0]
	vs := Versus{Controller: name, Violation: v, CPU: u, Verdict: dominance(v, u)}
	if isSeeded(p.Controllers[i]) {
		sv := d.seedVersus(p.Seed, comb.Profile, comb.Trace, p.Controllers, i, r)
		sv.PlacementVerdict = vs.Verdict
		vs.Verdict, vs.SeedLevel = dominance(sv.Violation.estimate(), sv.CPU.estimate()), sv
	}
	return vs
}
