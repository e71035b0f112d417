package live

import (
	"context"
	"fmt"
	"slices"

	"streamscale/env"
	"streamscale/serve/client"
)

// Remote is a vertical controller answered by a policy endpoint (`serve
// api`) through serve/client: every Act is one POST
// /v1/policies/{name}/act with the observation, and the answer's choice
// indices are the action (the per-dimension argmax).
type Remote struct {
	c    *client.Client
	name string
	ctx  context.Context
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

// Reset implements agents.Controller (the endpoint keeps no episode
// state).
func (r *Remote) Reset(uint64) error { return nil }

// Act implements agents.Controller.
func (r *Remote) Act(obs env.Observation) (env.Action, error) {
	res, err := r.c.Act(r.ctx, r.name, obs, client.Options{})
	if err != nil {
		return env.Action{}, fmt.Errorf("policy endpoint: %w", err)
	}
	return env.Action{Choices: res.Action}, nil
}
