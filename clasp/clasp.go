package clasp

import (
	"errors"
	"fmt"
	"math"
)

// Config configures the CLASP planner. Start from DefaultConfig; New checks
// every field and substitutes no defaults for zero values.
type Config struct {
	// Estimator configures the online capacity model (Eq. 1).
	Estimator EstimatorConfig
	// Trigger says when to re-plan.
	Trigger TriggerConfig
	// Headroom scales the packing budget: L_w ≤ Headroom·W̄, in (0, 1].
	// Default 1 (the paper's L_w ≤ W̄).
	Headroom float64
	// MaxWorkers bounds the worker count, ≥ 1. Default 512.
	MaxWorkers int
	// ComputeS is the planning time added to the planner duration, seconds
	// ≥ 0. Default 0.05.
	ComputeS float64
	// Propagate projects the demand with DerivePropagated (measured edge
	// ratios propagated from λ_p) instead of the paper's single factor
	// s = λ_p/Λ (Derive). Default true: with s, a plan made while a
	// backlog drains (Λ > λ_p) under-sizes the cluster and the next one
	// over-sizes it. (Our addition.)
	Propagate bool
	// DrainS sizes a re-plan for the backlog too: the projected demand is
	// scaled by (λ_p + Q/DrainS)/λ_p, where Q is the requests queued at
	// the planner and the workers (Observation.backlog), so the backlog drains in about DrainS
	// seconds instead of never at L_w = W̄. Seconds ≥ 0; 0 disables it.
	// Default 10. (Our addition: the paper sizes for λ_p alone.)
	DrainS float64
}

// DefaultConfig returns the defaults documented on the fields.
func DefaultConfig() Config {
	return Config{
		Estimator:  DefaultEstimatorConfig(),
		Trigger:    DefaultTriggerConfig(),
		Headroom:   1,
		MaxWorkers: 512,
		ComputeS:   0.05,
		Propagate:  true,
		DrainS:     10,
	}
}

func (c Config) validate() error {
	if err := c.Estimator.validate(); err != nil {
		return err
	}
	if err := c.Trigger.validate(); err != nil {
		return err
	}
	if !(c.Headroom > 0 && c.Headroom <= 1) || c.MaxWorkers < 1 || !nonNegative(c.ComputeS) || !nonNegative(c.DrainS) {
		return invalidf("config: headroom %v (want (0, 1]), max workers %d (want ≥ 1), compute %v s, drain %v s (want ≥ 0)", c.Headroom, c.MaxWorkers, c.ComputeS, c.DrainS)
	}
	return nil
}

// workerCounter supplies a baseline's worker count to a CLASP planner (the
// -SP variants): observe sees every observation, workers returns the count
// and the scores behind it.
type workerCounter interface {
	observe(now float64, ob *Observation)
	workers(ob *Observation, d Demand) (int, []Score)
}

// CLASP is the CLASP planner (paper §4): it estimates the capacity model
// online, re-plans when a trigger fires, projects the demand to the input
// rate, derives the parallelism, packs operators onto workers in reverse
// topological order by next-fit with splittable demand, and derives the
// migration. Between triggers it holds the current configuration.
type CLASP struct {
	cfg   Config
	name  string
	est   *Estimator
	trig  *Trigger
	count workerCounter // nil: CLASP's own worker count
}

// New returns a CLASP planner or an error for a bad configuration.
func New(cfg Config) (*CLASP, error) {
	return newCLASP(cfg, "clasp", nil)
}

// NewNamed is New with another Name, for comparing configurations side by
// side (e.g. ablations).
func NewNamed(cfg Config, name string) (*CLASP, error) {
	if name == "" {
		return nil, invalidf("empty planner name")
	}
	return newCLASP(cfg, name, nil)
}

func newCLASP(cfg Config, name string, wc workerCounter) (*CLASP, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	est, _ := NewEstimator(cfg.Estimator)
	trig, _ := NewTrigger(cfg.Trigger)
	return &CLASP{cfg: cfg, name: name, est: est, trig: trig, count: wc}, nil
}

// Name implements Planner.
func (c *CLASP) Name() string { return c.name }

// Reset implements Planner.
func (c *CLASP) Reset() {
	c.est.Reset()
	c.trig.Reset()
	if r, ok := c.count.(interface{ Reset() }); ok {
		r.Reset()
	}
}

// Estimator exposes the capacity estimator (read-only use).
func (c *CLASP) Estimator() *Estimator { return c.est }

// Plan implements Planner.
func (c *CLASP) Plan(now float64, ob Observation) (Plan, error) {
	if !finite(now) {
		return Plan{}, invalidf("time %v", now)
	}
	if err := ob.Validate(); err != nil {
		return Plan{}, err
	}
	c.est.Observe(now, &ob)
	if c.count != nil {
		c.count.observe(now, &ob)
	}
	fire, reason := c.trig.Observe(now, ob.InputRate, ob.Throughput)
	d := Derive(&ob)
	if c.cfg.Propagate {
		d = DerivePropagated(&ob)
	}
	if q := ob.backlog(d); c.cfg.DrainS > 0 && q > 0 && ob.InputRate > 0 {
		d = d.scaled((ob.InputRate + q/c.cfg.DrainS) / ob.InputRate)
	}
	m := c.est.Model()
	if !ob.placed() {
		fire, reason = true, "initial placement"
	}
	if !fire {
		return hold(c.name, now, &ob, d, m, "no trigger"), nil
	}
	budget := c.cfg.Headroom * m.Budget
	var (
		pl     Placement
		err    error
		scores []Score
	)
	if c.count != nil {
		var n int
		n, scores = c.count.workers(&ob, d)
		var mult float64
		pl, mult, err = PlaceN(&ob.App, d, m, budget, n, c.cfg.MaxWorkers)
		scores = append(scores, Score{Name: "budget-multiplier", Op: -1, Worker: -1, Value: mult})
	} else {
		pl, err = Place(&ob.App, d, m, budget, c.cfg.MaxWorkers)
		if errors.Is(err, ErrCapacity) {
			// The demand exceeds the cluster: spread it over every
			// worker (overloaded by the multiplier) rather than keep a
			// smaller plan.
			var mult float64
			if pl, mult, err = PlaceN(&ob.App, d, m, budget, c.cfg.MaxWorkers, c.cfg.MaxWorkers); err == nil {
				reason += fmt.Sprintf("; demand exceeds %d workers: packed onto all at %.2f× the budget", c.cfg.MaxWorkers, mult)
				scores = append(scores, Score{Name: "budget-multiplier", Op: -1, Worker: -1, Value: mult})
			}
		}
	}
	if err != nil {
		return Plan{}, err
	}
	par := Parallelism(d, ob.Parallelism)
	p := build(c.name, now, &ob, d, m, pl.Shares, par, c.cfg.ComputeS)
	p.Reason = reason
	if sameConfig(&ob, par, pl.Shares) {
		p.Changed = false
		p.Reason += " (configuration unchanged)"
	}
	p.Explain.Budget = budget
	p.Explain.Order, p.Explain.Postponed, p.Explain.Steps = pl.Order, pl.Postponed, pl.Steps
	raw := c.est.Raw()
	p.Explain.Scores = append([]Score{
		{Name: "scale", Op: -1, Worker: -1, Value: d.Scale},
		{Name: "samples", Op: -1, Worker: -1, Value: float64(c.est.Samples())},
		{Name: "rls-alpha", Op: -1, Worker: -1, Value: raw.Alpha},
		{Name: "rls-beta", Op: -1, Worker: -1, Value: raw.Beta},
		{Name: "rls-gamma", Op: -1, Worker: -1, Value: raw.Gamma},
		{Name: "rls-budget", Op: -1, Worker: -1, Value: raw.Budget},
	}, scores...)
	c.trig.Rebase(now, ob.InputRate, now+p.DurationS)
	return p, nil
}

// PlaceN packs the demand onto exactly n workers with CLASP's placement: it
// finds (by bisection on a log scale over [10⁻³, 10³]) the smallest budget
// multiplier c for which Place(c·budget) needs at most n workers, and pads
// the result with empty workers if it needs fewer. Loads then exceed budget
// when c > 1 (n is too small for the demand). It returns the placement and c.
func PlaceN(app *App, d Demand, m CostModel, budget float64, n, maxWorkers int) (Placement, float64, error) {
	if n < 1 || n > maxWorkers {
		return Placement{}, 0, invalidf("worker count %d, want 1…%d", n, maxWorkers)
	}
	try := func(c float64) (Placement, bool, error) {
		pl, err := Place(app, d, m, c*budget, n)
		if err != nil {
			if errors.Is(err, ErrInvalid) {
				return Placement{}, false, err
			}
			return Placement{}, false, nil
		}
		return pl, true, nil
	}
	lo, hi := 1e-3, 1e3
	best, ok, err := try(hi)
	if err != nil {
		return Placement{}, 0, err
	}
	if !ok {
		return Placement{}, 0, fmt.Errorf("clasp: demand does not fit %d workers even at %g× the budget", n, hi)
	}
	if pl, ok, _ := try(lo); ok {
		best, hi = pl, lo
	} else {
		for range 60 {
			mid := math.Sqrt(lo * hi)
			pl, ok, err := try(mid)
			if err != nil {
				return Placement{}, 0, err
			}
			if ok {
				best, hi = pl, mid
			} else {
				lo = mid
			}
		}
	}
	for len(best.Shares) < n {
		best.Shares = append(best.Shares, make([]float64, len(app.Operators)))
	}
	best.Loads = m.Loads(app, d, best.Shares)
	return best, hi, nil
}
