package run

import (
	"fmt"
	"math"
	"strconv"

	"streamscale/env"
	"streamscale/env/cartpole"
	"streamscale/ppo"
	"streamscale/ppo/policy"
	"streamscale/rng"
)

// EvalEpisodes is the number of deterministic CartPole evaluation episodes.
const EvalEpisodes = 20

// CartPoleConfig is rl-zoo's PPO configuration for CartPole-v1 (8 envs,
// n_steps 32, batch 256, 20 epochs, γ 0.98, λ 0.8, lr lin_1e-3, clip
// lin_0.2, ent 0, 1e5 steps) with SB3's other defaults (vf_coef 0.5,
// max_grad_norm 0.5, no value clipping, 64-64 tanh nets).
func CartPoleConfig() ppo.Config {
	c := ppo.DefaultConfig()
	c.TotalTimesteps = 100_000
	c.NumEnvs = 8
	c.NumSteps = 32
	c.BatchSize = 256
	c.Epochs = 20
	c.Gamma = 0.98
	c.Lambda = 0.8
	c.LearningRate = ppo.Linear(1e-3, 0)
	c.ClipRange = ppo.Linear(0.2, 0)
	c.ClipRangeVF = 0
	c.EntCoef = 0
	return c
}

// CartPoleSpaces describes CartPole's observation as a one-key layout
// ("obs"); the bounds are Gymnasium's (±4.8 m, ±0.419 rad, velocities
// unbounded, written as float32's largest value).
func CartPoleSpaces() env.Spaces {
	big := float64(math.MaxFloat32)
	high := []float64{2 * cartpole.XThreshold, big, 2 * cartpole.ThetaThreshold, big}
	low := make([]float64, 4)
	for i, h := range high {
		low[i] = -h
	}
	return env.Spaces{
		Keys:        []string{"obs"},
		Observation: map[string]env.Box{"obs": {Shape: []int{4}, Low: low, High: high}},
		Nvec:        []int{2},
	}
}

// cartPoleVec adapts cartpole.Vec to ppo.VecEnv (and StatefulVecEnv).
type cartPoleVec struct {
	*cartpole.Vec
	r cartpole.StepResult
}

func newCartPoleVec(n int) (*cartPoleVec, error) {
	v, err := cartpole.NewVec(n)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	return &cartPoleVec{Vec: v}, nil
}

// Step implements ppo.VecEnv; the result slices are shared, not copied.
func (c *cartPoleVec) Step(actions []int, r *ppo.StepResult) error {
	c.r = cartpole.StepResult{
		Obs: r.Obs, Rewards: r.Rewards, Terminated: r.Terminated, Truncated: r.Truncated,
		FinalObs: r.FinalObs, Episodes: c.r.Episodes[:0],
	}
	if err := c.Vec.Step(actions, &c.r); err != nil {
		return err
	}
	r.Episodes = r.Episodes[:0]
	for _, e := range c.r.Episodes {
		r.Episodes = append(r.Episodes, ppo.Episode(e))
	}
	return nil
}

var _ ppo.StatefulVecEnv = (*cartPoleVec)(nil)

// EvalCartPole plays episodes deterministic episodes, episode k reset
// with rng.Derive(seed, rng.TrainEvalCartPole+k) (seed: the run's root),
// and returns the mean and (population) standard deviation of the returns.
func EvalCartPole(p *policy.Policy, seed uint64, episodes int) (mean, std float64, err error) {
	e := cartpole.New()
	act := make([]int, 1)
	returns := make([]float64, episodes)
	for k := range episodes {
		o := e.Reset(rng.Derive(seed, rng.TrainEvalCartPole+strconv.Itoa(k)))
		for {
			if _, err := p.Act(o[:], true, nil, act); err != nil {
				return 0, 0, fmt.Errorf("train: eval: %w", err)
			}
			obs, r, term, trunc, err := e.Step(act[0])
			if err != nil {
				return 0, 0, fmt.Errorf("train: eval: %w", err)
			}
			returns[k] += r
			if term || trunc {
				break
			}
			o = obs
		}
	}
	for _, r := range returns {
		mean += r
	}
	mean /= float64(episodes)
	for _, r := range returns {
		std += (r - mean) * (r - mean)
	}
	return mean, math.Sqrt(std / float64(episodes)), nil
}
