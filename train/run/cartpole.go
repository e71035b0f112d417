package run

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"streamscale/env"
	"streamscale/env/cartpole"
	"streamscale/ppo"
	"streamscale/ppo/policy"
	"streamscale/rng"
	"streamscale/train/simvec"
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

// cartPoleVec adapts CartPole to ppo.VecEnv (and StatefulVecEnv): n
// single-env cartpole.Vecs, so that env i is reset from its own named
// stream, simvec.EnvSeed(root, i) (rng.TrainEnv+i); an ended episode
// restarts from the env's own generator, as in cartpole.Vec.
type cartPoleVec struct {
	envs []*cartpole.Vec
	r    cartpole.StepResult
}

func newCartPoleVec(n int) (*cartPoleVec, error) {
	if n < 1 {
		return nil, fmt.Errorf("train: cartpole needs at least one env, got %d", n)
	}
	c := &cartPoleVec{envs: make([]*cartpole.Vec, n)}
	for i := range c.envs {
		v, err := cartpole.NewVec(1)
		if err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
		c.envs[i] = v
	}
	return c, nil
}

// NumEnvs implements ppo.VecEnv.
func (c *cartPoleVec) NumEnvs() int { return len(c.envs) }

// ObsSize implements ppo.VecEnv.
func (c *cartPoleVec) ObsSize() int { return cartpole.ObsSize }

// Nvec implements ppo.VecEnv.
func (c *cartPoleVec) Nvec() []int { return []int{2} }

// Reset implements ppo.VecEnv: env i starts from simvec.EnvSeed(root, i).
func (c *cartPoleVec) Reset(root uint64, obs []float64) error {
	const k = cartpole.ObsSize
	if len(obs) != len(c.envs)*k {
		return fmt.Errorf("train: cartpole observation buffer has %d values, want %d", len(obs), len(c.envs)*k)
	}
	for i, v := range c.envs {
		if err := v.Reset(simvec.EnvSeed(root, i), obs[i*k:(i+1)*k]); err != nil {
			return err
		}
	}
	return nil
}

// Step implements ppo.VecEnv; each env writes into its rows of r.
func (c *cartPoleVec) Step(actions []int, r *ppo.StepResult) error {
	const k = cartpole.ObsSize
	n := len(c.envs)
	if len(actions) != n {
		return fmt.Errorf("train: cartpole: %d actions, want %d", len(actions), n)
	}
	for i, a := range actions {
		if a != 0 && a != 1 {
			return fmt.Errorf("train: cartpole: action of env %d is %d, want 0 or 1", i, a)
		}
	}
	r.Episodes = r.Episodes[:0]
	for i, v := range c.envs {
		c.r = cartpole.StepResult{
			Obs: r.Obs[i*k : (i+1)*k], Rewards: r.Rewards[i : i+1], Terminated: r.Terminated[i : i+1],
			Truncated: r.Truncated[i : i+1], FinalObs: r.FinalObs[i*k : (i+1)*k], Episodes: c.r.Episodes[:0],
		}
		if err := v.Step(actions[i:i+1], &c.r); err != nil {
			return err
		}
		for _, e := range c.r.Episodes {
			r.Episodes = append(r.Episodes, ppo.Episode{Env: i, Return: e.Return, Length: e.Length})
		}
	}
	return nil
}

// MarshalBinary implements ppo.StatefulVecEnv: each env's state,
// length-prefixed, in order.
func (c *cartPoleVec) MarshalBinary() ([]byte, error) {
	var out []byte
	for _, v := range c.envs {
		b, err := v.MarshalBinary()
		if err != nil {
			return nil, err
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out, nil
}

// UnmarshalBinary implements ppo.StatefulVecEnv.
func (c *cartPoleVec) UnmarshalBinary(b []byte) error {
	for i, v := range c.envs {
		if len(b) < 4 || int(binary.LittleEndian.Uint32(b)) > len(b)-4 {
			return fmt.Errorf("train: cartpole state of env %d is truncated", i)
		}
		n := int(binary.LittleEndian.Uint32(b))
		if err := v.UnmarshalBinary(b[4 : 4+n]); err != nil {
			return err
		}
		b = b[4+n:]
	}
	if len(b) != 0 {
		return fmt.Errorf("train: cartpole state has %d trailing bytes", len(b))
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
