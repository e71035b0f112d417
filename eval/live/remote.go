package live

import (
	"context"
	"fmt"
	"slices"

	"streamscale/agents"
	"streamscale/agents/residual"
	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/serve/client"
)

// Remote is a vertical controller answered by a policy endpoint (`serve
// api`) through serve/client: every Act is one POST
// /v1/policies/{name}/act with the observation, and the answer's choice
// indices are the action (the per-dimension argmax).
//
// For a residual policy (the listing's residual record) the Remote runs
// the policy's base rule itself, built for the run's scenario and Reset
// with the episode: the rule keeps memory (a scale-down window) that the
// stateless endpoint cannot. Every Act steps the rule on the observation,
// sends its targets as rule_targets, and the answer's corrected targets
// are the action.
type Remote struct {
	c    *client.Client
	name string
	ctx  context.Context
	rule agents.Controller // a residual policy's base rule; nil otherwise
}

// NewRemote returns the controller asking policy name at the endpoint
// base URL, after checking that the policy exists and that its
// observation and action layout is the scenario's (a policy trained for
// another layout is refused with an error naming the difference). ctx
// bounds every request.
func NewRemote(ctx context.Context, base, name string, sc env.Config) (*Remote, error) {
	c, err := client.New(base, nil)
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	ps, err := c.Policies(ctx)
	if err != nil {
		return nil, fmt.Errorf("live: policy endpoint %s: %w", base, err)
	}
	sp := sc.Spaces()
	for _, p := range ps {
		if p.Name != name {
			continue
		}
		if p.Profile != "" && p.Profile != sc.App.Name {
			return nil, fmt.Errorf("live: policy %s was trained on profile %q, the run is %q", name, p.Profile, sc.App.Name)
		}
		for _, k := range sp.Keys {
			got, want := p.Observation.Boxes[k].Shape, sp.Observation[k].Shape
			if !slices.Equal(got, want) {
				return nil, fmt.Errorf("live: policy %s observes %s of shape %v, the runtime's profile gives %v", name, k, got, want)
			}
		}
		if !slices.Equal(p.Action.Nvec, sp.Nvec) {
			return nil, fmt.Errorf("live: policy %s acts on %d tasks, the profile has %d", name, len(p.Action.Nvec), len(sp.Nvec))
		}
		if p.Residual != nil {
			rule, err := residualRule(name, p.Residual, sc)
			if err != nil {
				return nil, err
			}
			return &Remote{c: c, name: name, ctx: ctx, rule: rule}, nil
		}
		if u := p.Action.TargetUtilization; !slices.Equal(u, sp.TargetUtilization) {
			return nil, fmt.Errorf("live: policy %s acts with target utilizations %v, the run applies %v", name, u, sp.TargetUtilization)
		}
		if d := p.Action.DeltaMillicores; len(d) > 0 && !slices.Equal(d, sp.DeltaMillicores) {
			return nil, fmt.Errorf("live: policy %s acts with deltas %v millicores, the run applies %v", name, d, sp.DeltaMillicores)
		}
		return &Remote{c: c, name: name, ctx: ctx}, nil
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return nil, fmt.Errorf("live: policy endpoint %s serves no policy %q (it serves %v)", base, name, names)
}

// residualRule builds the base rule of residual policy name for the
// scenario, after checking that the policy's record is one the run can
// follow: its choices and features (residual.Info.Check) and the
// scenario's allocation bounds, which scale the observation's TaskCPU.
func residualRule(name string, r *client.Residual, sc env.Config) (agents.Controller, error) {
	info := residual.Info{Base: r.Base, Choices: r.Choices, Features: r.Features, MinCPU: r.MinCPU, MaxCPU: r.MaxCPU}
	if err := info.Check(len(sc.App.Tasks)); err != nil {
		return nil, fmt.Errorf("live: policy %s: %w", name, err)
	}
	if lo, hi := rulespec.ScenarioBounds(sc); lo != r.MinCPU || hi != r.MaxCPU {
		return nil, fmt.Errorf("live: residual policy %s was trained with allocations in [%v, %v] millicores, the run's are [%v, %v]", name, r.MinCPU, r.MaxCPU, lo, hi)
	}
	spec, err := rulespec.Parse(r.Base)
	if err != nil {
		return nil, fmt.Errorf("live: residual policy %s: base rule: %w", name, err)
	}
	rule, err := spec.New(sc)
	if err != nil {
		return nil, fmt.Errorf("live: residual policy %s: base rule %s: %w", name, r.Base, err)
	}
	return rule, nil
}

// Reset implements agents.Controller: the endpoint keeps no episode
// state; a residual policy's base rule starts a new episode.
func (r *Remote) Reset(seed uint64) error {
	if r.rule != nil {
		return r.rule.Reset(seed)
	}
	return nil
}

// Act implements agents.Controller.
func (r *Remote) Act(obs env.Observation) (env.Action, error) {
	if r.rule == nil {
		res, err := r.c.Act(r.ctx, r.name, obs, client.Options{})
		if err != nil {
			return env.Action{}, fmt.Errorf("policy endpoint: %w", err)
		}
		return env.Action{Choices: res.Action}, nil
	}
	base, err := r.rule.Act(obs)
	if err != nil {
		return env.Action{}, fmt.Errorf("residual policy %s: base rule: %w", r.name, err)
	}
	res, err := r.c.Act(r.ctx, r.name, obs, client.Options{RuleTargets: base.Targets})
	if err != nil {
		return env.Action{}, fmt.Errorf("policy endpoint: %w", err)
	}
	if len(res.Targets) != len(base.Targets) {
		return env.Action{}, fmt.Errorf("policy endpoint: residual policy %s answered %d targets for %d tasks", r.name, len(res.Targets), len(base.Targets))
	}
	return env.Action{Targets: res.Targets}, nil
}
