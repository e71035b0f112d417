// Package simvec adapts the streamscale simulator's vector environment to
// the flat-array VecEnv that package ppo trains on, and builds the paper's
// training and development scenarios.
//
// Observations are flattened in sorted Dict-key order: app, server, task
// (as Stable-Baselines3 flattens a Dict space). Actions are the
// MultiDiscrete indices, env-major. Determinism: everything derives from
// the seeds passed in; the adapter adds no randomness.
package simvec

import (
	"fmt"

	"streamscale/env"
	"streamscale/ppo"
	"streamscale/traces"
)

// Vec is a ppo.StatefulVecEnv over an env.VecEnv.
type Vec struct {
	v       *env.VecEnv
	obsSize int
	nvec    []int
	nTasks  int
	actions []env.Action
}

var _ ppo.StatefulVecEnv = (*Vec)(nil)

// New wraps v.
func New(v *env.VecEnv) *Vec {
	sp := v.Spaces()
	s := &Vec{v: v, obsSize: sp.FlatSize(), nvec: sp.Nvec, nTasks: len(sp.Nvec)}
	s.actions = make([]env.Action, v.NumEnvs())
	for i := range s.actions {
		s.actions[i].Choices = make([]int, s.nTasks)
	}
	return s
}

// Inner returns the wrapped vector env.
func (s *Vec) Inner() *env.VecEnv { return s.v }

// NumEnvs implements ppo.VecEnv.
func (s *Vec) NumEnvs() int { return s.v.NumEnvs() }

// ObsSize implements ppo.VecEnv.
func (s *Vec) ObsSize() int { return s.obsSize }

// Nvec implements ppo.VecEnv.
func (s *Vec) Nvec() []int { return s.nvec }

func (s *Vec) flatten(dst []float64, o env.Observation) {
	n := copy(dst, o.App)
	n += copy(dst[n:], o.Server)
	copy(dst[n:], o.Task)
}

// Reset implements ppo.VecEnv: env i starts with seed+i.
func (s *Vec) Reset(seed uint64, obs []float64) error {
	if len(obs) != s.NumEnvs()*s.obsSize {
		return fmt.Errorf("simvec: observation buffer has %d entries, want %d", len(obs), s.NumEnvs()*s.obsSize)
	}
	o, err := s.v.Reset(seed)
	if err != nil {
		return err
	}
	for i := range o {
		s.flatten(obs[i*s.obsSize:(i+1)*s.obsSize], o[i])
	}
	return nil
}

// Step implements ppo.VecEnv.
func (s *Vec) Step(actions []int, r *ppo.StepResult) error {
	n := s.NumEnvs()
	if len(actions) != n*s.nTasks {
		return fmt.Errorf("simvec: %d action entries, want %d", len(actions), n*s.nTasks)
	}
	for i := range s.actions {
		copy(s.actions[i].Choices, actions[i*s.nTasks:(i+1)*s.nTasks])
	}
	res, err := s.v.Step(s.actions)
	if err != nil {
		return err
	}
	r.Episodes = r.Episodes[:0]
	for i := 0; i < n; i++ {
		row := r.Obs[i*s.obsSize : (i+1)*s.obsSize]
		s.flatten(row, res.Obs[i])
		r.Rewards[i] = res.Rewards[i]
		r.Terminated[i] = res.Terminated[i]
		r.Truncated[i] = res.Truncated[i]
		if res.Terminated[i] || res.Truncated[i] {
			s.flatten(r.FinalObs[i*s.obsSize:(i+1)*s.obsSize], res.FinalObs[i])
			r.Episodes = append(r.Episodes, ppo.Episode{Env: i, Return: res.EpisodeReturn[i], Length: res.EpisodeLength[i]})
		}
	}
	return nil
}

// MarshalBinary implements ppo.StatefulVecEnv.
func (s *Vec) MarshalBinary() ([]byte, error) { return s.v.MarshalBinary() }

// UnmarshalBinary implements ppo.StatefulVecEnv.
func (s *Vec) UnmarshalBinary(b []byte) error { return s.v.UnmarshalBinary(b) }

// Scenario names one training or evaluation setting.
type Scenario struct {
	Profile       string
	Trace         string  // trace name or path
	RateMult      float64 // ×1, ×2, …
	PlacementSeed uint64
}

// TrainingPlacements are the paper's training placement seeds.
var TrainingPlacements = []uint64{42, 37}

// DevPlacements are the held-out placement seeds of the development
// episodes used for model selection (distinct from the training and the
// evaluation placements).
var DevPlacements = []uint64{1001, 1002, 1003}

// TrainingScenarios returns the paper's four training scenarios of a
// profile: trace taxi-train at ×1 and ×2, each with placements 42 and 37.
func TrainingScenarios(profile string) []Scenario {
	var out []Scenario
	for _, m := range []float64{1, 2} {
		for _, p := range TrainingPlacements {
			out = append(out, Scenario{Profile: profile, Trace: "taxi-train", RateMult: m, PlacementSeed: p})
		}
	}
	return out
}

// DevScenarios returns the development scenarios of a profile: the
// training trace at ×1 and ×2 on the held-out placements.
func DevScenarios(profile string) []Scenario {
	var out []Scenario
	for _, m := range []float64{1, 2} {
		for _, p := range DevPlacements {
			out = append(out, Scenario{Profile: profile, Trace: "taxi-train", RateMult: m, PlacementSeed: p})
		}
	}
	return out
}

// Config builds the env.Config of a scenario, loading its trace from dir
// (traces.DefaultDir() when empty; a seeded synthetic trace when absent).
func (sc Scenario) Config(dir string, seed uint64, logf func(string, ...any)) (env.Config, error) {
	tr, err := traces.Load(sc.Trace, traces.Options{Dir: dir, RateMult: sc.RateMult, Seed: seed, Logf: logf})
	if err != nil {
		return env.Config{}, err
	}
	return env.Scenario(sc.Profile, sc.PlacementSeed, tr)
}

// NewVec builds n environments spread round-robin over the scenarios.
func NewVec(scs []Scenario, n int, dir string, seed uint64, workers int, logf func(string, ...any)) (*Vec, error) {
	if n <= 0 || len(scs) == 0 {
		return nil, fmt.Errorf("simvec: need at least one env and one scenario (got %d, %d)", n, len(scs))
	}
	cfgs := make([]env.Config, n)
	for i := range cfgs {
		c, err := scs[i%len(scs)].Config(dir, seed, logf)
		if err != nil {
			return nil, err
		}
		cfgs[i] = c
	}
	v, err := env.NewVec(cfgs, env.SameStep, workers)
	if err != nil {
		return nil, err
	}
	return New(v), nil
}
