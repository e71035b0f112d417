package run

import (
	"fmt"

	"streamscale/agents"
	"streamscale/agents/residual"
	"streamscale/env"
	"streamscale/ppo/policy"
	"streamscale/train/simvec"
)

// DefaultFirstLogitBias is a residual run's initial bias of the "follow"
// logit (ppo.Config.FirstLogitBias): with five choices, follow starts at
// probability e²/(e² + 4) ≈ 0.65, so the first rollouts are mostly the
// base rule and the learner explores corrections around it.
const DefaultFirstLogitBias = 2

// residualSetup is what a -residual run needs beyond the environments:
// the scenario its base rule is built for in the development episodes
// and the evaluation (the training scenarios' allocation bounds and
// metric lag, which the placements and traces do not change) and the
// card's record.
type residualSetup struct {
	cfg  env.Config
	info residual.Info
	vec  *simvec.Residual
}

// wrapResidual replaces s.venv by residual choices over the base rule
// (with the constrained objective, if any, its dual step once per
// rollout).
func (s *setup) wrapResidual(scen env.Scenario) error {
	v, ok := s.venv.(*simvec.Vec)
	if !ok {
		return fmt.Errorf("train: -residual needs the simulator's training environments")
	}
	var obj *simvec.Lagrangian
	if s.o.objective != nil {
		l := *s.o.objective
		l.Window = s.cfg.NumSteps
		obj = &l
	}
	rv, err := simvec.NewResidual(v, s.o.residualRule, s.o.residualContext, obj)
	if err != nil {
		return fmt.Errorf("train: -residual: %w", err)
	}
	sc := simvec.TrainingScenarios(s.o.Profile, scen.Physics)[0]
	sc.Demand = scen.Demand
	cfg, err := sc.Config("", 0, quietLog)
	if err != nil {
		return err
	}
	s.venv = rv
	s.residual = &residualSetup{cfg: cfg, info: residual.NewInfo(s.o.residualRule, cfg, s.o.residualContext), vec: rv}
	return nil
}

// controller runs p as the run's controller: over the base rule for a
// -residual run, else on the action space directly. value, if not nil,
// is the critic's value of the last observation acted on.
func (s *setup) controller(p *policy.Policy) (c agents.Controller, value func() float64, err error) {
	if s.residual == nil {
		pc, err := policy.NewController(p, s.spaces)
		if err != nil {
			return nil, nil, err
		}
		return pc, pc.Value, nil
	}
	c, err = policy.NewResidualController(p, &s.residual.info, s.residual.cfg, true)
	return c, nil, err
}
