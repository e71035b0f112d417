package policy

import (
	"fmt"

	"streamscale/agents"
	"streamscale/agents/residual"
	"streamscale/agents/rulespec"
	"streamscale/env"
)

// NewResidualController runs a residual policy (info, its card's
// Residual) as an agents.Controller over its base rule built for the
// scenario sc: the rule observes, the policy chooses a correction per
// task (argmax when deterministic, else sampled from the stream
// rng.PPOAction of the episode seed), and the action carries the
// corrected targets.
func NewResidualController(p *Policy, info *residual.Info, sc env.Config, deterministic bool) (agents.Controller, error) {
	if info == nil {
		return nil, fmt.Errorf("%w: not a residual policy", ErrMismatch)
	}
	rule, err := rulespec.Parse(info.Base)
	if err != nil {
		return nil, fmt.Errorf("residual policy: base rule: %w", err)
	}
	if err := info.Check(len(sc.App.Tasks)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMismatch, err)
	}
	a, err := residual.NewContext(rule, sc, info.Context)
	if err != nil {
		return nil, err
	}
	actor, err := NewActor(p, sc.Spaces().FlatSize()+info.Features)
	if err != nil {
		return nil, err
	}
	actor.SetDeterministic(deterministic)
	return residual.NewController(a, actor), nil
}
