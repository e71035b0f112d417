package agents

import (
	"context"
	"errors"
	"fmt"

	"streamscale/env"
)

// Actor is a controller of either kind as RunEpisode drives it: build it
// with Vertical or Horizontal. The zero Actor is invalid.
type Actor struct {
	v Controller
	h HorizontalController
}

// Vertical drives c with the observation.
func Vertical(c Controller) Actor { return Actor{v: c} }

// Horizontal drives c with the step's Info.
func Horizontal(c HorizontalController) Actor { return Actor{h: c} }

// Controller returns the vertical controller (nil for a horizontal one).
func (a Actor) Controller() Controller { return a.v }

// HorizontalController returns the horizontal controller (nil for a
// vertical one).
func (a Actor) HorizontalController() HorizontalController { return a.h }

// IsHorizontal reports whether the actor is a HorizontalController.
func (a Actor) IsHorizontal() bool { return a.h != nil }

func (a Actor) reset(seed uint64) error {
	switch {
	case a.v != nil:
		return a.v.Reset(seed)
	case a.h != nil:
		return a.h.Reset(seed)
	}
	return errors.New("agents: zero Actor")
}

func (a Actor) act(t int, obs env.Observation, info env.Info) (env.Action, error) {
	if a.v != nil {
		return a.v.Act(obs)
	}
	return a.h.Act(float64(t), info)
}

func (a Actor) overCapacity() bool {
	r, ok := a.h.(CapacityReporter)
	return ok && r.OverCapacity()
}

// Step is one step of an episode as RunEpisode reports it. Action and the
// StepResult's slices are buffers valid during the observe call only.
type Step struct {
	T      int        // 0-based step index
	Action env.Action // what the controller asked for
	env.StepResult
	// OverCapacity is the controller's CapacityReporter answer after its
	// Act (false for controllers that do not report it).
	OverCapacity bool
}

// RunEpisode plays one episode of e under c: it resets the environment and
// the controller with seed, then, until the episode is truncated, asks the
// controller for an action (a vertical one with the observation, a
// horizontal one with the Info of the previous step at now = t seconds),
// steps the environment, and hands the step to observe (nil: ignore). It
// checks ctx every 256 steps. An error from the controller, the
// environment or observe ends the episode and is returned, naming the
// step.
//
// This is the one episode loop of streamscale: eval's runs, the CLASP
// experiments and train's development episodes all play through it.
func RunEpisode(ctx context.Context, e *env.Env, c Actor, seed uint64, observe func(*Step) error) error {
	obs, info, err := e.Reset(seed)
	if err != nil {
		return fmt.Errorf("agents: reset: %w", err)
	}
	if err := c.reset(seed); err != nil {
		return fmt.Errorf("agents: controller reset: %w", err)
	}
	var s Step
	for t := 0; ; t++ {
		if t%256 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("agents: step %d: %w", t, err)
			}
		}
		a, err := c.act(t, obs, info)
		if err != nil {
			return fmt.Errorf("agents: step %d: controller: %w", t, err)
		}
		sr, err := e.Step(a)
		if err != nil {
			return fmt.Errorf("agents: step %d: %w", t, err)
		}
		s = Step{T: t, Action: a, StepResult: sr, OverCapacity: c.overCapacity()}
		if observe != nil {
			if err := observe(&s); err != nil {
				return err
			}
		}
		if sr.Truncated || sr.Terminated {
			return nil
		}
		obs, info = sr.Obs, sr.Info
	}
}
