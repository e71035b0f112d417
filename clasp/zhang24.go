package clasp

import "math"

// Zhang24Config configures the Zhang24 baseline.
type Zhang24Config struct {
	SlotConfig
	// RMax caps r(p), in (0, 1). Default 0.95.
	RMax float64
	// Util is the target utilization of an instance, in (0, 1]. Default 0.9.
	Util float64
	// Provision is the share of a worker's slots the instances fill, in
	// (0, 1]: N = ⌈Σ_o P_o/(Provision·Slots)⌉. Default 0.5, the
	// over-provisioning the CLASP paper reports for Zhang24 (every worker
	// at about 50%, the count saturating past 60% load).
	Provision float64
	// MaxSamples is the number of recent samples kept per operator, ≥ 1.
	// Default 64.
	MaxSamples int
	// MaxParallelism caps P_o, ≥ 1. Default 1,000.
	MaxParallelism int
	// Saturation says when an operator is measured at capacity (every
	// worker hosting it saturated).
	Saturation SaturationConfig
	// AffinityWeight weighs data affinity against load balance in the
	// placement score, in [0, 1]. Default 0.5 (the paper's 0.5/0.5).
	AffinityWeight float64
}

// DefaultZhang24Config returns the defaults documented on the fields.
func DefaultZhang24Config() Zhang24Config {
	return Zhang24Config{
		SlotConfig: DefaultSlotConfig(), RMax: 0.95, Util: 0.9, Provision: 0.5,
		MaxSamples: 64, MaxParallelism: 1000,
		Saturation: DefaultSaturationConfig(), AffinityWeight: 0.5,
	}
}

func (c Zhang24Config) validate() error {
	if !(c.RMax > 0 && c.RMax < 1) || !(c.Util > 0 && c.Util <= 1) || !(c.Provision > 0 && c.Provision <= 1) ||
		c.MaxSamples < 1 || c.MaxParallelism < 1 || !(c.AffinityWeight >= 0 && c.AffinityWeight <= 1) {
		return invalidf("zhang24: configuration %+v out of range", c)
	}
	if err := c.Saturation.validate(); err != nil {
		return err
	}
	return c.SlotConfig.validate()
}

// Overhead is a fitted scheduling-overhead model r(p) = min(RMax,
// B·(1 − e^{−K·p})): the share of p instances' time lost to scheduling.
type Overhead struct{ K, B, RMax float64 }

// R evaluates r(p).
func (h Overhead) R(p int) float64 {
	return math.Min(h.RMax, h.B*(1-math.Exp(-h.K*float64(p))))
}

type zSample struct{ p, r float64 }

// Zhang24 is the baseline of Zhang et al. (2024) as the CLASP paper evaluates
// it:
//
//   - per operator, an overhead model r(p) = b·(1 − e^{−k·p}), r ≤ RMax,
//     fitted by least squares to the overheads observed when the operator
//     is at capacity (every worker hosting it saturated), r = 1 −
//     N_o·τ̄_o/(P_o·S) with S = W/Slots the CPU of one executor slot; the
//     fit is a grid search over k (log-spaced, 0.005–2) with b in closed
//     form. There is no prior: without samples r ≡ 0;
//   - parallelism P_o, the smallest p with p·(S/τ̄_o)·(1 − r(p))·Util ≥
//     D_o (the operator's projected input rate): an instance is one slot,
//     not a full core;
//   - the over-provisioning model: N = ⌈Σ P_o/(Provision·Slots)⌉ workers,
//     so the instances fill only Provision of the slots;
//   - placement instance by instance (operators in topological order):
//     feasible workers have a free slot; among them the highest score
//     AffinityWeight·affinity + (1−AffinityWeight)·balance wins (0.5/0.5;
//     lowest index on ties), where affinity is the share of the operator's
//     edge traffic whose other end already sits on the worker and balance is
//     the worker's free share of slots.
type Zhang24 struct {
	cfg     Zhang24Config
	sat     *saturation
	samples map[string][]zSample // by operator name (lookups only)
}

// NewZhang24 returns the baseline or an error for a bad configuration.
func NewZhang24(cfg Zhang24Config) (*Zhang24, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	z := &Zhang24{cfg: cfg}
	z.Reset()
	return z, nil
}

// Name implements Planner.
func (z *Zhang24) Name() string { return "zhang24" }

// Reset implements Planner.
func (z *Zhang24) Reset() {
	z.sat = newSaturation(z.cfg.Saturation)
	z.samples = map[string][]zSample{}
}

// observe records an overhead sample for every operator at capacity.
func (z *Zhang24) observe(now float64, ob *Observation) {
	sat := z.sat.observe(now, ob.Workers)
	if ob.Parallelism == nil {
		return
	}
	for o, op := range ob.App.Operators {
		p := ob.Parallelism[o]
		if p <= 0 {
			continue
		}
		all, hosted := true, false
		var work float64
		for i, w := range ob.Workers {
			if at(w.Share, o) > 0 {
				hosted = true
				all = all && sat[i]
			}
			work += at(w.Exec, o) * at(w.ExecUS, o)
		}
		if !hosted || !all || work <= 0 {
			continue
		}
		r := math.Min(z.cfg.RMax, math.Max(0, 1-work/(float64(p)*z.cfg.slotUS())))
		z.AddSample(op.Name, p, r)
	}
}

// AddSample records an observed overhead r at parallelism p for the named
// operator (kept: the last MaxSamples).
func (z *Zhang24) AddSample(op string, p int, r float64) {
	s := append(z.samples[op], zSample{float64(p), r})
	if len(s) > z.cfg.MaxSamples {
		s = s[len(s)-z.cfg.MaxSamples:]
	}
	z.samples[op] = s
}

// Fit returns the overhead model fitted for the named operator by least
// squares (r ≡ 0 without samples). Where the samples do not identify k
// (one parallelism only), the smallest k of the grid that fits best wins.
func (z *Zhang24) Fit(op string) Overhead {
	c := z.cfg
	ss := z.samples[op]
	best := Overhead{K: 1, B: 0, RMax: c.RMax}
	if len(ss) == 0 {
		return best
	}
	bestJ := math.Inf(1)
	const grid = 200
	lo, hi := math.Log(0.005), math.Log(2)
	for i := range grid + 1 {
		k := math.Exp(lo + (hi-lo)*float64(i)/grid)
		var sf, sff float64
		for _, s := range ss {
			f := 1 - math.Exp(-k*s.p)
			sf += s.r * f
			sff += f * f
		}
		b := 0.0
		if sff > 0 {
			b = math.Min(c.RMax, math.Max(0, sf/sff))
		}
		var j float64
		for _, s := range ss {
			e := s.r - math.Min(c.RMax, b*(1-math.Exp(-k*s.p)))
			j += e * e
		}
		if j < bestJ-1e-15 {
			best, bestJ = Overhead{K: k, B: b, RMax: c.RMax}, j
		}
	}
	return best
}

// parallelism returns P_o and the fitted models.
func (z *Zhang24) parallelism(ob *Observation, d Demand) ([]int, []Overhead) {
	par := make([]int, len(d.Exec))
	fits := make([]Overhead, len(d.Exec))
	for o, op := range ob.App.Operators {
		h := z.Fit(op.Name)
		fits[o] = h
		rate := z.cfg.slotUS() / d.ExecUS[o]
		par[o] = z.cfg.MaxParallelism
		for p := 1; p <= z.cfg.MaxParallelism; p++ {
			if float64(p)*rate*(1-h.R(p))*z.cfg.Util >= d.Exec[o] {
				par[o] = p
				break
			}
		}
	}
	return par, fits
}

// workers implements workerCounter (Zhang24-SP).
func (z *Zhang24) workers(ob *Observation, d Demand) (int, []Score) {
	par, _ := z.parallelism(ob, d)
	n := z.provisioned(par)
	return n, []Score{score("workers", -1, -1, float64(n))}
}

// provisioned is the over-provisioned worker count ⌈Σ P_o/(Provision·Slots)⌉,
// at most MaxWorkers.
func (z *Zhang24) provisioned(par []int) int {
	var tot int
	for _, p := range par {
		tot += p
	}
	n := int(math.Ceil(float64(tot)/(z.cfg.Provision*float64(z.cfg.Slots)) - 1e-9))
	return min(max(1, n, z.cfg.slotWorkers(par)), z.cfg.MaxWorkers)
}

// Plan implements Planner.
func (z *Zhang24) Plan(now float64, ob Observation) (Plan, error) {
	if !finite(now) {
		return Plan{}, invalidf("time %v", now)
	}
	if err := ob.Validate(); err != nil {
		return Plan{}, err
	}
	z.observe(now, &ob)
	d := Derive(&ob)
	par, fits := z.parallelism(&ob, d)
	n := z.provisioned(par)
	var scores []Score
	for o, h := range fits {
		scores = append(scores, score("k", o, -1, h.K), score("b", o, -1, h.B), score("r(p)", o, -1, h.R(par[o])))
	}
	counts, placeScores := z.place(&ob.App, d, par, n)
	scores = append(scores, placeScores...)
	return slotPlan(z.Name(), now, &ob, d, z.cfg.SlotConfig, countShares(counts, par), par, scores), nil
}

// place assigns instances one at a time: feasibility (a free slot), then
// ranking by the weighted affinity and balance scores. It returns the counts
// and, per operator, the scores of its first instance's worker.
func (z *Zhang24) place(app *App, d Demand, par []int, n int) ([][]int, []Score) {
	nOps := len(app.Operators)
	counts := make([][]int, n)
	free := make([]int, n)
	for w := range counts {
		counts[w] = make([]int, nOps)
		free[w] = z.cfg.Slots
	}
	var scores []Score
	wa := z.cfg.AffinityWeight
	for _, o := range app.TopoOrder() {
		var traffic float64
		var inc []int
		for e, ed := range app.Edges {
			if ed.From == o || ed.To == o {
				traffic += d.Edge[e]
				inc = append(inc, e)
			}
		}
		for k := range par[o] {
			best, bestS, bestA, bestB := -1, math.Inf(-1), 0.0, 0.0
			for w := range n {
				if free[w] <= 0 { // feasibility
					continue
				}
				var aff float64
				if traffic > 0 {
					for _, e := range inc {
						q := app.Edges[e].From
						if q == o {
							q = app.Edges[e].To
						}
						if par[q] > 0 {
							aff += d.Edge[e] * float64(counts[w][q]) / float64(par[q])
						}
					}
					aff /= traffic
				}
				bal := float64(free[w]) / float64(z.cfg.Slots)
				if s := wa*aff + (1-wa)*bal; s > bestS { // ranking
					best, bestS, bestA, bestB = w, s, aff, bal
				}
			}
			if best < 0 { // no feasible worker: overcommit the least loaded
				best = firstFree(free, nil)
			}
			counts[best][o]++
			free[best]--
			if k == 0 {
				scores = append(scores, score("affinity", o, best, bestA), score("balance", o, best, bestB))
			}
		}
	}
	return counts, scores
}
