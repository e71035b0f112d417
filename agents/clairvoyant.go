package agents

import (
	"fmt"
	"math"

	"streamscale/env"
)

// Clairvoyant is an analysis bound, not a controller an operator could
// deploy: it reads the episode's workload ahead of time. It runs a base
// rule and raises every target the base rule asks by the largest ratio
// of the offered rate over the next Horizon+1 steps to the rate at the
// step the observation's metrics were measured in:
//
//	f(t) = max(1, max_{0≤h≤Horizon} λ(t+h) / λ(t − 1 − MetricLagSteps))
//	target_k = min(⌈f(t) · base_k⌉_Quantum, MaxCPU)
//
// with λ the workload's rate (env.Config.Workload from StartOffset) and t
// the step the action is applied at (the count of Acts since Reset). It
// never lowers a target, so the bound it draws is the room a perfect
// forecast of the load leaves over the base rule at its own settings: a
// predictive rule or a learned policy whose cell lies beyond it has
// found something other than the load's future.
type Clairvoyant struct {
	base    Controller
	wl      env.Workload
	offset  int
	lag     int
	horizon int
	quantum float64
	maxCPU  float64

	t       int
	targets []float64
}

// NewClairvoyant wraps base for the scenario sc (its workload, start
// offset, metric lag and CPU bound) with a look-ahead of horizon ≥ 0
// steps; quantum is the allocation grid, millicores > 0.
func NewClairvoyant(base Controller, sc env.Config, horizon int, quantum float64) (*Clairvoyant, error) {
	switch {
	case base == nil:
		return nil, fmt.Errorf("agents: clairvoyant bound needs a base rule")
	case sc.Workload == nil || sc.Workload.Len() <= 0:
		return nil, fmt.Errorf("agents: clairvoyant bound needs the scenario's workload")
	case horizon < 0 || horizon > 3600:
		return nil, fmt.Errorf("agents: clairvoyant horizon %d steps outside [0, 3600]", horizon)
	case !(quantum > 0) || math.IsInf(quantum, 0):
		return nil, fmt.Errorf("agents: clairvoyant quantum %v millicores, want a positive number", quantum)
	}
	maxCPU := sc.MaxCPU
	if !(maxCPU > 0) {
		maxCPU = DefaultThresholdConfig().MaxCPU
	}
	return &Clairvoyant{base: base, wl: sc.Workload, offset: sc.StartOffset, lag: sc.Physics.MetricLagSteps,
		horizon: horizon, quantum: quantum, maxCPU: maxCPU}, nil
}

// Reset implements Controller.
func (c *Clairvoyant) Reset(seed uint64) error {
	c.t = 0
	return c.base.Reset(seed)
}

// rate is the workload's rate at episode step t (clamped at 0 from
// below), 0 where the workload's value is negative or not finite.
func (c *Clairvoyant) rate(t int) float64 {
	n := c.wl.Len()
	r := c.wl.Rate(((c.offset+max(t, 0))%n + n) % n)
	if !(r >= 0) || math.IsInf(r, 0) {
		return 0
	}
	return r
}

// Act implements Controller.
func (c *Clairvoyant) Act(obs env.Observation) (env.Action, error) {
	a, err := c.base.Act(obs)
	if err != nil {
		return a, err
	}
	t := c.t
	c.t++
	if a.Targets == nil {
		return a, nil
	}
	f := 1.0
	if now := c.rate(t - 1 - c.lag); now > 0 {
		for h := range c.horizon + 1 {
			f = max(f, c.rate(t+h)/now)
		}
	}
	if f == 1 {
		return a, nil
	}
	c.targets = grow(c.targets, len(a.Targets))
	for k, v := range a.Targets {
		c.targets[k] = min(ceilToGrid(f*v, c.quantum), max(c.maxCPU, v))
	}
	a.Targets = c.targets[:len(a.Targets)]
	return a, nil
}
