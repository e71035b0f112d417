package policy

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/rng"
)

// Controller runs a Policy as an agents.Controller: it flattens the Dict
// observation in the layout's key order (app, server, task) and returns
// the MultiDiscrete choices. It acts deterministically (per-dimension
// argmax) unless SetDeterministic(false), in which case Reset(seed) seeds
// the sampling stream rng.PPOAction. Not safe for concurrent use.
type Controller struct {
	p             *Policy
	spaces        env.Spaces
	deterministic bool
	rng           *rand.Rand
	flat          []float64
	act           []int
	value         float64
}

var _ agents.Controller = (*Controller)(nil)

// NewController checks that spaces matches the policy and returns a
// deterministic controller over a private copy of p.
func NewController(p *Policy, spaces env.Spaces) (*Controller, error) {
	n, err := flatSize(spaces)
	if err != nil {
		return nil, err
	}
	if n != p.ObsSize() || !slices.Equal(spaces.Nvec, p.arch.Nvec) {
		return nil, fmt.Errorf("%w: spaces give %d observations and nvec %v, policy has %d and %v", ErrMismatch, n, spaces.Nvec, p.ObsSize(), p.arch.Nvec)
	}
	for _, k := range spaces.Keys {
		if k != "app" && k != "server" && k != "task" {
			return nil, fmt.Errorf("policy: observation key %q is not app, server or task", k)
		}
	}
	return &Controller{p: p.Clone(), spaces: spaces, deterministic: true, act: make([]int, len(spaces.Nvec))}, nil
}

// SetDeterministic chooses argmax actions (true, the default) or samples.
func (c *Controller) SetDeterministic(d bool) { c.deterministic = d }

// Reset implements agents.Controller.
func (c *Controller) Reset(seed uint64) error {
	c.rng = rng.New(seed, rng.PPOAction)
	return nil
}

// Act implements agents.Controller.
func (c *Controller) Act(obs env.Observation) (env.Action, error) {
	for _, p := range [...]struct {
		key  string
		part []float64
	}{{"app", obs.App}, {"server", obs.Server}, {"task", obs.Task}} {
		if want := c.spaces.Observation[p.key].Size(); len(p.part) != want {
			return env.Action{}, fmt.Errorf("policy: observation %q has %d values, want %d", p.key, len(p.part), want)
		}
	}
	c.flat = obs.Flatten(c.flat[:0])
	if !c.deterministic && c.rng == nil {
		return env.Action{}, fmt.Errorf("policy: controller must be Reset before sampling")
	}
	v, err := c.p.Act(c.flat, c.deterministic, c.rng, c.act)
	if err != nil {
		return env.Action{}, err
	}
	c.value = v
	return env.Action{Choices: slices.Clone(c.act)}, nil
}

// Value is the critic's value of the observation of the last Act, in the
// policy's units (Normalization.RewardScale converts them to the
// environment's); 0 before the first.
func (c *Controller) Value() float64 { return c.value }

// Actor runs a residual policy (Card.Residual) for residual.Controller:
// the choices for the flattened observation with the base rule's
// features appended, deterministic (argmax) unless SetDeterministic(false)
// and Reset, as Controller. Not safe for concurrent use.
type Actor struct {
	p             *Policy
	deterministic bool
	rng           *rand.Rand
}

// NewActor returns a deterministic actor over a private copy of p, whose
// observation must be obs values (the flat Dict observation and the
// residual features).
func NewActor(p *Policy, obs int) (*Actor, error) {
	if obs != p.ObsSize() {
		return nil, fmt.Errorf("%w: %d observation values with the residual features, policy has %d", ErrMismatch, obs, p.ObsSize())
	}
	return &Actor{p: p.Clone(), deterministic: true}, nil
}

// SetDeterministic chooses argmax actions (true, the default) or samples.
func (a *Actor) SetDeterministic(d bool) { a.deterministic = d }

// Reset seeds the sampling stream rng.PPOAction.
func (a *Actor) Reset(seed uint64) { a.rng = rng.New(seed, rng.PPOAction) }

// Act implements residual.Actor.
func (a *Actor) Act(flat []float64, choices []int) error {
	if !a.deterministic && a.rng == nil {
		return fmt.Errorf("policy: actor must be Reset before sampling")
	}
	_, err := a.p.Act(flat, a.deterministic, a.rng, choices)
	return err
}
