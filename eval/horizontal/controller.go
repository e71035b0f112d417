package horizontal

import (
	"errors"
	"fmt"
	"math"

	"streamscale/clasp"
	"streamscale/env"
	"streamscale/eval/claspexp"
)

// Controller runs the CLASP planner on a horizontal edge scenario (see
// Scenario) through the step's env.Info. It implements
// claspexp.HorizontalController.
type Controller struct {
	planner   *clasp.CLASP
	model     clasp.CostModel
	headroom  float64
	app       clasp.App
	mapping   Mapping
	bandwidth float64 // bytes/s, the narrowest link's

	perm     []env.WorkerMetrics // info.Workers in plan-worker order
	active   []int               // plan-worker IDs of the current plan, ascending
	shares   [][]float64         // their quantized shares
	par      []int
	over     bool // the last decision found the demand beyond the cluster
	replans  int
	overCnt  int
	lastPlan clasp.Plan
}

// New builds the controller for a horizontal edge scenario: CLASP with
// clasp.DefaultConfig, MaxWorkers set to the number of servers, and the
// scenario's request costs with the mapped budget W as its fixed capacity
// model (estimation off; see the package documentation).
func New(scenario env.Config) (*Controller, error) {
	if !scenario.SharedCPU {
		return nil, errors.New("horizontal: CLASP needs a shared-CPU scenario (build it with horizontal.Scenario)")
	}
	mp, err := NewMapping(scenario.Servers)
	if err != nil {
		return nil, err
	}
	app, err := ClaspApp(scenario.App, mp.RefMIPSPerCore)
	if err != nil {
		return nil, err
	}
	rc := scenario.Requests
	model := clasp.CostModel{Alpha: rc.AlphaUS, Beta: rc.BetaUS, Gamma: rc.GammaUS, Budget: mp.BudgetUS}
	cfg := clasp.DefaultConfig()
	cfg.MaxWorkers = len(scenario.Servers)
	cfg.Estimator.Fallback = model
	cfg.Estimator.Initial.Budget = mp.BudgetUS
	cfg.Estimator.MinSamples = math.MaxInt
	p, err := clasp.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("horizontal: %w", err)
	}
	bw := math.Inf(1)
	for _, l := range scenario.Network.Links {
		bw = min(bw, l.BandwidthBps/8)
	}
	if math.IsInf(bw, 1) {
		bw = claspexp.BandwidthBytes // no links: every replica shares one switch
	}
	return &Controller{
		planner: p, model: model, headroom: cfg.Headroom, app: app, mapping: mp, bandwidth: bw,
		perm: make([]env.WorkerMetrics, len(scenario.Servers)),
	}, nil
}

// Mapping returns the controller's server mapping.
func (c *Controller) Mapping() Mapping { return c.mapping }

// Reset implements claspexp.HorizontalController.
func (c *Controller) Reset(uint64) error {
	c.planner.Reset()
	c.active, c.shares, c.par = nil, nil, nil
	c.over = false
	c.replans, c.overCnt, c.lastPlan = 0, 0, clasp.Plan{}
	return nil
}

// OverCapacity reports whether the last decision found the demand beyond
// what all servers hold under the model: CLASP's plan spans every server
// and still loads one beyond W (CLASP spreads a demand beyond the cluster
// over all its workers), or CLASP could not place it at all (the plan is
// then kept).
func (c *Controller) OverCapacity() bool { return c.over }

// OverCapacitySteps counts the decisions since Reset that found the demand
// beyond the cluster.
func (c *Controller) OverCapacitySteps() int { return c.overCnt }

// Replans counts the replica plans applied since Reset.
func (c *Controller) Replans() int { return c.replans }

// LastPlan is CLASP's last changed plan (zero before the first).
func (c *Controller) LastPlan() clasp.Plan { return c.lastPlan }

// Act implements claspexp.HorizontalController: it presents the servers to
// CLASP in plan-worker order with execution times at the reference speed,
// asks for a plan and returns it as a replica plan on the mapped servers,
// or Hold.
func (c *Controller) Act(now float64, info env.Info) (env.Action, error) {
	c.over = false
	ob, err := c.observation(info)
	if err != nil {
		return env.Action{}, err
	}
	p, err := c.planner.Plan(now, ob)
	switch {
	case errors.Is(err, clasp.ErrCapacity):
		c.over = true
		c.overCnt++
		return env.Action{Hold: true}, nil
	case err != nil:
		return env.Action{}, fmt.Errorf("horizontal: %w", err)
	}
	if c.overloaded(&p) {
		c.over = true
		c.overCnt++
	}
	if !p.Changed {
		return env.Action{Hold: true}, nil
	}
	ids := make([]int, len(p.Workers))
	for i, w := range p.Workers {
		ids[i] = w.ID
	}
	a, err := c.apply(ids, p.Shares(), p.Parallelism)
	if err == nil {
		c.lastPlan = p
	}
	return a, err
}

// overloaded reports whether a plan (changed or held) spans every server
// and still loads one beyond the budget under the model: the demand is
// beyond the cluster, and CLASP spread it over all workers.
func (c *Controller) overloaded(p *clasp.Plan) bool {
	if len(p.Workers) < len(c.mapping.Servers) {
		return false
	}
	limit := c.headroom * c.model.Budget * (1 + 1e-9)
	for _, w := range p.Workers {
		if w.Load.Total() > limit {
			return true
		}
	}
	return false
}

// observation converts info into CLASP's observation in plan-worker order.
func (c *Controller) observation(info env.Info) (clasp.Observation, error) {
	if info.Workers != nil {
		if len(info.Workers) != len(c.perm) {
			return clasp.Observation{}, fmt.Errorf("horizontal: info reports %d servers, want %d", len(info.Workers), len(c.perm))
		}
		for i, s := range c.mapping.Servers {
			c.perm[i] = info.Workers[s]
		}
		info.Workers = c.perm
	}
	ob, err := claspexp.ObservationFromInfo(c.app, info, c.active, c.shares, c.par, c.bandwidth)
	if err != nil {
		return clasp.Observation{}, fmt.Errorf("horizontal: %w", err)
	}
	for i := range ob.Workers {
		w := &ob.Workers[i]
		for o := range w.ExecUS {
			w.ExecUS[o] *= c.mapping.Speedup[w.ID]
		}
	}
	return ob, nil
}

// apply converts a plan over plan-worker IDs into a replica plan on the
// mapped servers (each task's replicas listed in plan-worker order) and
// makes it current.
func (c *Controller) apply(ids []int, shares [][]float64, par []int) (env.Action, error) {
	n := len(c.mapping.Servers)
	plan, err := claspexp.ReplicasFromShares(ids, shares, n)
	if err != nil {
		return env.Action{}, fmt.Errorf("horizontal: %w", err)
	}
	for _, rs := range plan {
		for j := range rs {
			rs[j].Server = c.mapping.Servers[rs[j].Server]
		}
	}
	c.active = append(c.active[:0], ids...)
	c.shares = claspexp.QuantizeShares(shares)
	c.par = append(c.par[:0], par...)
	c.replans++
	return env.Action{Replicas: plan}, nil
}
