package paired

import (
	"math"
	"strings"

	"streamscale/eval/runner"
)

// DefaultViolationBudget is the violation rate (a fraction of intervals)
// within which a controller counts as meeting its SLO when the best
// controller of a cell is named: 2% of intervals, 72 s of a one-hour run.
// The paper sets no budget; this one is the project's choice, recorded in
// every summary (Protocol.ViolationBudget) and set by `eval paired
// -violation-budget`.
const DefaultViolationBudget = 0.02

// Dominance margins (the learned-controller goal's definition): a
// controller dominates another when its violation-rate difference has a CI
// entirely below 0 and its CPU difference a CI upper bound of at most
// CPUMarginPct percent, or when its CPU difference has a CI entirely below
// 0 and its violation-rate difference a CI upper bound of at most
// ViolationMarginPP percentage points.
const (
	CPUMarginPct      = 2.0
	ViolationMarginPP = 0.1
)

// Verdicts of a controller against the best rule of its cell.
const (
	Dominates = "dominates" // fewer violations or less CPU, and no worse in the other (margins above)
	Dominated = "dominated" // the best rule dominates it
	Neither   = "neither"   // a trade-off, or no difference the CIs can tell
	IsBest    = "best rule" // the best rule itself
)

// Versus is one controller against the best rule of its cell: the paired
// differences controller − best rule over the placements, mean [CI], and
// the dominance verdict.
type Versus struct {
	Controller string `json:"controller"`
	// Rule is the rule compared with, in Combination.SeedVsRules (empty
	// in VsBestRule, where it is the cell's best rule).
	Rule      string   `json:"rule,omitempty"`
	Violation Estimate `json:"violation_rate_diff"` // percentage points
	CPU       Estimate `json:"cpu_rel_diff"`        // percent of the best rule's mean CPU
	Verdict   string   `json:"verdict"`
	// SeedLevel, for a controller of several seeds, is its seed-level
	// comparison, which Verdict judges (Violation and CPU are then the
	// seed-averaged controller's differences over the placements).
	SeedLevel *SeedVersus `json:"seed_level,omitempty"`
}

// learner is implemented by controller factories that can say whether they
// are learned (a trained policy) rather than a rule.
type learner interface{ Learned() bool }

// IsLearned reports whether the factory is a learned controller. A factory
// that does not say is taken as learned when its spec is "ppo" or
// "ppo:DIR".
func IsLearned(f runner.Factory) bool {
	if l, ok := f.(learner); ok {
		return l.Learned()
	}
	s := f.String()
	return s == "ppo" || strings.HasPrefix(s, "ppo:")
}

// IsBound reports whether the factory is an analysis bound that reads
// the workload ahead ("oracle:…", agents.Clairvoyant): it is neither a
// rule nor a controller one could deploy, so it is never a cell's best
// controller or best rule, and learned controllers are not judged
// against it.
func IsBound(f runner.Factory) bool { return strings.HasPrefix(f.String(), "oracle:") }

// pickBest returns the index in cs of the controller with the least mean
// CPU among those whose mean violation rate is within budget, considering
// only the indices for which use is true; when none is within budget, the
// one with the fewest violations (then the least CPU). Ties keep the
// earlier controller. It returns −1 when use allows none.
func pickBest(cs []ControllerStats, budget float64, use func(int) bool) int {
	best, within := -1, false
	for i, c := range cs {
		if !use(i) {
			continue
		}
		v, u := float64(c.ViolationRateMean), float64(c.MeanCPU)
		if math.IsNaN(v) || math.IsNaN(u) {
			continue
		}
		in := v <= budget
		switch {
		case best < 0:
			best, within = i, in
		case in && !within:
			best, within = i, true
		case in && within:
			if u < float64(cs[best].MeanCPU) {
				best = i
			}
		case !in && !within:
			bv, bu := float64(cs[best].ViolationRateMean), float64(cs[best].MeanCPU)
			if v < bv || (v == bv && u < bu) {
				best = i
			}
		}
	}
	return best
}

// dominance judges a controller's differences from the best rule
// (violation rate in pp, CPU in percent) with the margins above.
func dominance(v, u Estimate) string {
	lo := func(e Estimate) float64 { return float64(e.CILow) }
	hi := func(e Estimate) float64 { return float64(e.CIHigh) }
	for _, e := range []Estimate{v, u} {
		if math.IsNaN(lo(e)) || math.IsNaN(hi(e)) {
			return Neither
		}
	}
	switch {
	case hi(v) < 0 && hi(u) <= CPUMarginPct, hi(u) < 0 && hi(v) <= ViolationMarginPP:
		return Dominates
	case lo(v) > 0 && lo(u) >= -CPUMarginPct, lo(u) > 0 && lo(v) >= -ViolationMarginPP:
		return Dominated
	}
	return Neither
}

// Dominance judges differences v (violation rate, pp) and u (CPU,
// percent) of one controller from another with the margins above:
// Dominates, Dominated or Neither.
func Dominance(v, u Estimate) string { return dominance(v, u) }
