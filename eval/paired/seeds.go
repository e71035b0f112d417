package paired

import (
	"fmt"
	"math"

	"streamscale/eval/runner"
	"streamscale/eval/stats"
	"streamscale/rng"
)

// Seeded is implemented by a controller factory that can stand for
// several policies trained from one recipe with different seeds (`train
// -seeds`): when Seeds returns any, the plan runs each of them, one per
// seed, on every cell, and Analyze judges the controller by the
// seed-level protocol (see package doc).
type Seeded interface {
	runner.Factory
	// Seeds returns the members, one per seed, in seed order, each with a
	// String of its own, distinct from every other controller's; nil for
	// a single controller.
	Seeds() []runner.Factory
}

// members returns the factories f runs as: its seeds, or f itself.
func members(f runner.Factory) []runner.Factory {
	if s, ok := f.(Seeded); ok && len(s.Seeds()) > 0 {
		return s.Seeds()
	}
	return []runner.Factory{f}
}

func isSeeded(f runner.Factory) bool {
	s, ok := f.(Seeded)
	return ok && len(s.Seeds()) > 0
}

// SeedSet names a controller of several seeds and its members' specs, in
// seed order (Protocol.Seeded).
type SeedSet struct {
	Controller string   `json:"controller"`
	Seeds      []string `json:"seeds"`
}

// IQMEstimate is a seed-level figure: the interquartile mean over seeds of
// each seed's mean over the placements, with its bootstrap interval
// (stats.BootstrapSeedIQM).
type IQMEstimate struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	IQM    Num    `json:"iqm"`
	CILow  Num    `json:"ci_low"`
	CIHigh Num    `json:"ci_high"`
}

func (e IQMEstimate) estimate() Estimate {
	return Estimate{Metric: e.Metric, Unit: e.Unit, Mean: e.IQM, CILow: e.CILow, CIHigh: e.CIHigh}
}

// SeedStats are the seed-level figures of a controller of several seeds
// in one cell: the IQM over seeds of its violation rate and mean CPU, and
// each seed's means over the placements.
type SeedStats struct {
	ViolationRate IQMEstimate  `json:"violation_rate"`
	CPU           IQMEstimate  `json:"mean_cpu_millicores"`
	PerSeed       []SeedValues `json:"per_seed"`
}

// SeedValues are one seed's means over the placements of a cell.
type SeedValues struct {
	Controller    string `json:"controller"` // the member's spec
	ViolationRate Num    `json:"violation_rate"`
	MeanCPU       Num    `json:"mean_cpu_millicores"`
}

// SeedVersus is the seed-level comparison of a controller of several
// seeds with a rule: the IQM over seeds of each seed's mean paired
// difference from the rule over the placements, with the interval of
// stats.BootstrapSeedIQM. Versus.Verdict judges these; PlacementVerdict
// is what the placement-level protocol says of the seed-averaged
// controller (Versus.Violation, Versus.CPU).
type SeedVersus struct {
	Seeds            int         `json:"seeds"`
	Violation        IQMEstimate `json:"violation_rate_diff"` // percentage points
	CPU              IQMEstimate `json:"cpu_rel_diff"`        // percent of the rule's mean CPU
	PlacementVerdict string      `json:"placement_verdict"`
}

// MetricViolationRate and MetricCPU name a controller's own seed-level
// figures.
const (
	MetricViolationRate = "violation_rate"
	MetricMeanCPU       = "mean_cpu_millicores"
)

// layout locates a cell's runs: per placement, every controller's members
// side by side, controller c's from column off[c], n[c] of them.
type layout struct {
	width int
	off   []int
	n     []int
}

func newLayout(ctrls []runner.Factory) layout {
	l := layout{off: make([]int, len(ctrls)), n: make([]int, len(ctrls))}
	for c, f := range ctrls {
		l.off[c], l.n[c] = l.width, len(members(f))
		l.width += l.n[c]
	}
	return l
}

// cellData reads one cell's results.
type cellData struct {
	lay   layout
	nP    int
	block []runner.Result
}

// seedCol returns member k of controller c over the placements.
func (d cellData) seedCol(c, k int, f func(runner.Summary) float64) []float64 {
	out := make([]float64, d.nP)
	for l := range d.nP {
		out[l] = f(d.block[l*d.lay.width+d.lay.off[c]+k].Summary)
	}
	return out
}

// col returns controller c over the placements: its value, or for a
// controller of several seeds the mean over its seeds (in seed order).
func (d cellData) col(c int, f func(runner.Summary) float64) []float64 {
	if d.lay.n[c] == 1 {
		return d.seedCol(c, 0, f)
	}
	out := make([]float64, d.nP)
	v := make([]float64, d.lay.n[c])
	for l := range d.nP {
		for k := range v {
			v[k] = f(d.block[l*d.lay.width+d.lay.off[c]+k].Summary)
		}
		out[l] = stats.Mean(v)
	}
	return out
}

// seedMatrix returns controller c's seeds × placements values of f.
func (d cellData) seedMatrix(c int, f func(runner.Summary) float64) [][]float64 {
	x := make([][]float64, d.lay.n[c])
	for k := range x {
		x[k] = d.seedCol(c, k, f)
	}
	return x
}

func seedEstimate(metric, unit string, x [][]float64, ok bool, seed uint64, stream string) IQMEstimate {
	e := IQMEstimate{Metric: metric, Unit: unit, IQM: Num(math.NaN()), CILow: Num(math.NaN()), CIHigh: Num(math.NaN())}
	if !ok {
		return e
	}
	if theta, ok := stats.SeedIQM(x); ok {
		e.IQM = Num(theta)
	}
	if ci, ok := stats.BootstrapSeedIQM(x, Resamples, Level, rng.Source(seed, stream)); ok {
		e.CILow, e.CIHigh = Num(ci.Lo), Num(ci.Hi)
	}
	return e
}

// seedStats are controller c's seed-level figures in the cell.
func (d cellData) seedStats(seed uint64, prof, trace string, ctrls []runner.Factory, c int) *SeedStats {
	stream := rng.EvalSeedBootstrap + prof + "/" + trace + "/" + ctrls[c].String()
	v, u := d.seedMatrix(c, violation), d.seedMatrix(c, cpu)
	st := &SeedStats{
		ViolationRate: seedEstimate(MetricViolationRate, "fraction", v, true, seed, stream),
		CPU:           seedEstimate(MetricMeanCPU, "millicores", u, true, seed, stream),
	}
	for k, m := range members(ctrls[c]) {
		st.PerSeed = append(st.PerSeed, SeedValues{Controller: m.String(), ViolationRate: Num(stats.Mean(v[k])), MeanCPU: Num(stats.Mean(u[k]))})
	}
	return st
}

// seedVersus compares controller a's seeds with controller b (its mean
// over seeds, if it has several) in the cell.
func (d cellData) seedVersus(seed uint64, prof, trace string, ctrls []runner.Factory, a, b int) *SeedVersus {
	stream := rng.EvalSeedBootstrap + prof + "/" + trace + "/" + ctrls[a].String() + "/" + ctrls[b].String()
	bv, bu := d.col(b, violation), d.col(b, cpu)
	dv, du := make([][]float64, d.lay.n[a]), make([][]float64, d.lay.n[a])
	okv, oku := true, true
	for k := range d.lay.n[a] {
		var ok bool
		dv[k], ok = stats.Diff(d.seedCol(a, k, violation), bv)
		okv = okv && ok
		for i := range dv[k] {
			dv[k][i] *= 100 // percentage points
		}
		du[k], ok = stats.RelDiff(d.seedCol(a, k, cpu), bu)
		oku = oku && ok
	}
	return &SeedVersus{
		Seeds:     d.lay.n[a],
		Violation: seedEstimate(MetricViolation, "percentage points", dv, okv, seed, stream),
		CPU:       seedEstimate(MetricCPU, "percent", du, oku, seed, stream),
	}
}

// Tally counts one controller's verdicts against the best rule (Rule
// empty) or one named rule over the cells of a summary: the cells it
// dominates, those where the rule dominates it (lost), those with
// neither, and those where it is the best rule itself. Seeds is its number
// of seeds (1 for a single policy).
type Tally struct {
	Controller string `json:"controller"`
	Rule       string `json:"rule,omitempty"`
	Seeds      int    `json:"seeds"`
	Cells      int    `json:"cells"`
	Dominates  int    `json:"dominates"`
	Dominated  int    `json:"dominated"`
	Neither    int    `json:"neither"`
	BestRule   int    `json:"best_rule"`
}

// Tallies returns every controller's Tally, in the protocol's controller
// order; a multi-seed controller's verdicts are the seed-level ones.
func Tallies(sum Summary) []Tally {
	seeds := map[string]int{}
	for _, s := range sum.Protocol.Seeded {
		seeds[s.Controller] = len(s.Seeds)
	}
	var out []Tally
	for _, name := range sum.Protocol.Controllers {
		t := Tally{Controller: name, Seeds: max(1, seeds[name])}
		for _, c := range sum.Combinations {
			if c.BestRule == name {
				t.Cells++
				t.BestRule++
				continue
			}
			for _, v := range c.VsBestRule {
				if v.Controller != name {
					continue
				}
				t.count(v.Verdict)
			}
		}
		out = append(out, t)
	}
	return out
}

// count adds one cell's verdict.
func (t *Tally) count(verdict string) {
	t.Cells++
	switch verdict {
	case Dominates:
		t.Dominates++
	case Dominated:
		t.Dominated++
	default:
		t.Neither++
	}
}

// RuleTallies returns, for every controller of several seeds, its Tally
// against each rule (Combination.SeedVsRules), in controller then rule
// order (the protocol's).
func RuleTallies(sum Summary) []Tally {
	var out []Tally
	for _, s := range sum.Protocol.Seeded {
		for _, rule := range sum.Protocol.Controllers {
			t := Tally{Controller: s.Controller, Rule: rule, Seeds: len(s.Seeds)}
			for _, c := range sum.Combinations {
				for _, v := range c.SeedVsRules {
					if v.Controller != s.Controller || v.Rule != rule {
						continue
					}
					t.count(v.Verdict)
				}
			}
			if t.Cells > 0 {
				out = append(out, t)
			}
		}
	}
	return out
}

// validateSeeds checks that no spec appears twice among the plan's
// controllers and their members.
func (p Plan) validateSeeds() error {
	seen := map[string]bool{}
	for _, c := range p.Controllers {
		seen[c.String()] = true
	}
	for _, c := range p.Controllers {
		if !isSeeded(c) {
			continue
		}
		for _, m := range members(c) {
			if seen[m.String()] {
				return fmt.Errorf("eval: controller %s: seed %s listed twice", c, m)
			}
			seen[m.String()] = true
		}
	}
	return nil
}
