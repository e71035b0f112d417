package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/ppo"
	"streamscale/ppo/policy"
	"streamscale/rng"
	"streamscale/train/simvec"
)

// Simulator is what training on streamscale needs from the simulator.
type Simulator interface {
	// Spaces is the profile's observation layout and action space.
	Spaces(profile string) (env.Spaces, error)
	// VecEnv returns n training environments over the profile's training
	// scenarios (e.g. simvec.NewVec(simvec.TrainingScenarios(profile, physics), n,
	// "", seed, workers, logf)), with SB3 autoreset semantics.
	VecEnv(profile string, n int, seed uint64) (ppo.VecEnv, error)
	// DevReward runs the profile's dev episodes with c and returns the
	// mean episode reward, for model selection. seed is the run's root.
	// observe, if not nil, sees every step of episode ep (0-based).
	DevReward(c agents.Controller, profile string, seed uint64, observe func(ep int, s *agents.Step) error) (float64, error)
}

// NewSimulator returns the streamscale simulator on the given scenario
// (the -scenario preset or file: its physics and measured task demands):
// the paper's four training scenarios per profile
// (taxi-train ×1 and ×2 on placements 42 and 37) and its development
// scenarios (held-out placements) for model selection, all on those
// physics. Traces come from traces.DefaultDir().
// placements is the number of training placements (simvec.Placements;
// 0 or 2: the paper's two); variants the training workloads, each on
// every placement and used by the development episodes too (nil: the
// paper's, simvec.PaperTraces).
// deltas is the action set (env.Config.ActionDeltas; zero: the paper's)
// and util, when not zero, a target-utilization set in its place
// (env.Config.ActionUtilization);
// reward the reward coefficients of the training and development
// environments (nil: env.DefaultReward).
var NewSimulator = func(sc env.Scenario, randomize *env.PhysicsRanges, placements int, variants []simvec.TraceVariant, deltas, util [5]float64, reward *env.RewardConfig) (Simulator, error) {
	if placements == 0 {
		placements = len(simvec.TrainingPlacements)
	}
	return simulator{physics: sc.Physics, demand: sc.Demand, randomize: randomize, placements: simvec.Placements(placements), variants: variants, deltas: deltas, util: util, reward: reward}, nil
}

type simulator struct {
	physics env.Physics // of the training and the development environments
	// demand, if not nil, are the scenario file's measured task demands.
	demand *env.ScenarioDemand
	// randomize, if not nil, randomises the training environments' physics
	// per episode (the development episodes keep the preset's).
	randomize *env.PhysicsRanges
	// placements are the training placement seeds.
	placements []uint64
	// variants are the training workloads (nil: simvec.PaperTraces).
	variants []simvec.TraceVariant
	// deltas is the action set of every environment (zero: the paper's).
	deltas [5]float64
	// util, when not zero, replaces deltas with target utilizations.
	util [5]float64
	// reward, if not nil, replaces the reward coefficients.
	reward *env.RewardConfig
	// workers are the goroutines stepping the training environments
	// (0: GOMAXPROCS; Options.Threads).
	workers int
}

func (s simulator) Spaces(profile string) (env.Spaces, error) {
	sc := simvec.TrainingScenarios(profile, s.physics)[0]
	sc.ActionDeltas, sc.ActionUtilization = s.deltas, s.util
	c, err := sc.Config("", 0, quietLog)
	if err != nil {
		return env.Spaces{}, err
	}
	return c.Spaces(), nil
}

func (s simulator) VecEnv(profile string, n int, seed uint64) (ppo.VecEnv, error) {
	scs := simvec.TrainingScenariosOn(profile, s.physics, s.placements, s.variants)
	for i := range scs {
		scs[i].Randomize, scs[i].Demand, scs[i].ActionDeltas, scs[i].ActionUtilization, scs[i].Reward = s.randomize, s.demand, s.deltas, s.util, s.reward
	}
	return simvec.NewVec(scs, n, "", seed, s.workers, log.Printf)
}

// DevReward runs one deterministic episode of c on every development
// scenario and returns the mean episode reward.
func (s simulator) DevReward(c agents.Controller, profile string, seed uint64, observe func(ep int, s *agents.Step) error) (float64, error) {
	total := 0.0
	scs := simvec.DevScenarios(profile, s.physics, s.variants)
	for i, sc := range scs {
		sc.Demand, sc.ActionDeltas, sc.ActionUtilization, sc.Reward = s.demand, s.deltas, s.util, s.reward
		cfg, err := sc.Config("", seed, quietLog)
		if err != nil {
			return 0, err
		}
		e, err := env.New(cfg)
		if err != nil {
			return 0, err
		}
		epSeed := rng.Derive(seed, rng.TrainDev+strconv.Itoa(i))
		err = agents.RunEpisode(context.Background(), e, agents.Vertical(c), epSeed, func(s *agents.Step) error {
			total += s.Reward
			if observe != nil {
				return observe(i, s)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return total / float64(len(scs)), nil
}

// quietLog drops the repeated synthetic-trace notice of helper builds (the
// training envs log it once each).
func quietLog(string, ...any) {}

// selector keeps the policy with the best dev reward (streamscale), or the
// last policy (cartpole, or Options.SelectLast, which skips the dev
// episodes).
type selector struct {
	s      *setup
	best   *policy.Policy
	reward *float64
}

// consider evaluates the trainer's current policy on the dev episodes and
// keeps it if it is the best so far; improved reports whether it was.
func (sel *selector) consider(t *ppo.Trainer) (improved bool, err error) {
	if sel.s.sim == nil || sel.s.o.SelectLast {
		return false, nil
	}
	p := t.Policy()
	c, _, err := sel.s.controller(p)
	if err != nil {
		return false, err
	}
	r, err := sel.s.sim.DevReward(c, sel.s.o.Profile, sel.s.o.Seed, nil)
	if err != nil {
		return false, err
	}
	if sel.reward == nil || r > *sel.reward {
		sel.best, sel.reward = p, &r
		return true, nil
	}
	return false, nil
}

// Files of the best-so-far policy, kept beside the checkpoint.
const (
	bestName = "best"
)

// save writes the best-so-far policy (weights and card with its dev
// reward) to dir.
func (sel *selector) save(dir string, cfg ppo.Config) error {
	var wb bytes.Buffer
	sha, err := sel.best.WriteSafetensors(&wb)
	if err != nil {
		return err
	}
	card := ppo.NewCard(sel.best, cfg, sha)
	card.Name, card.Spaces, card.BestDevReward = bestName, sel.s.spaces, sel.reward
	card.Scenario = sel.s.o.Scenario
	if sel.s.residual != nil {
		card.Residual = &sel.s.residual.info
	}
	cb, err := json.Marshal(card)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, bestName+".safetensors"), wb.Bytes()); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, bestName+".json"), cb)
}

// restore reads the best-so-far policy of an interrupted run, if it had
// one; its hash and layout are checked by policy.Read.
func (sel *selector) restore(dir string, cfg ppo.Config) error {
	if sel.s.sim == nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, bestName+".json")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	p, card, err := policy.Read(os.DirFS(dir), bestName)
	if err != nil {
		return fmt.Errorf("train: -resume: best policy: %w", err)
	}
	if card.BestDevReward == nil || card.ConfigHash != cfg.Hash() || card.Scenario != sel.s.o.Scenario {
		return fmt.Errorf("train: -resume: best policy in %s belongs to another configuration", dir)
	}
	sel.best, sel.reward = p, card.BestDevReward
	return nil
}

// result is the policy to save and its dev reward (nil if none).
func (sel *selector) result(t *ppo.Trainer) (*policy.Policy, *float64) {
	if sel.best != nil {
		return sel.best, sel.reward
	}
	return t.Policy(), nil
}

// devValueError runs p's dev episodes (deterministic, as model selection
// does) and compares the critic's V(s_t), converted to the environment's
// reward units (× Normalization.RewardScale, 1 without reward
// normalisation), with the realised discounted return of the raw rewards
//
//	G_t = r_t + γ·G_{t+1},  G_{T−1} = r_{T−1} + γ·V(s_T)
//
// where the last step is bootstrapped from the critic's value of the final
// observation when the episode was truncated (the target training uses;
// the dev scenarios have no terminal state), and not at all when it
// terminated. It returns the RMSE of V − G over
// every step of every dev episode and that RMSE relative to the root mean
// square of G.
func devValueError(sim Simulator, p *policy.Policy, spaces env.Spaces, profile string, seed uint64, gamma float64) (rmse, rel float64, err error) {
	c, err := policy.NewController(p, spaces)
	if err != nil {
		return 0, 0, err
	}
	scale := p.Normalization().RewardScale()
	eval := p.Clone()
	var sse, ssg float64
	var n int
	var vals, rews []float64
	flush := func(final float64) {
		g := final
		for t := len(rews) - 1; t >= 0; t-- {
			g = rews[t] + gamma*g
			d := vals[t] - g
			sse += d * d
			ssg += g * g
			n++
		}
		vals, rews = vals[:0], rews[:0]
	}
	var flat []float64
	v := make([]float64, 1)
	_, err = sim.DevReward(c, profile, seed, func(_ int, s *agents.Step) error {
		vals = append(vals, c.Value()*scale)
		rews = append(rews, s.Reward)
		if !s.Truncated && !s.Terminated {
			return nil
		}
		final := 0.0
		if s.Truncated && !s.Terminated {
			flat = s.Obs.Flatten(flat[:0])
			if err := eval.Values(flat, v); err != nil {
				return err
			}
			final = v[0] * scale
		}
		flush(final)
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	if n == 0 || ssg == 0 {
		return math.NaN(), math.NaN(), nil
	}
	rmse = math.Sqrt(sse / float64(n))
	return rmse, rmse / math.Sqrt(ssg/float64(n)), nil
}
