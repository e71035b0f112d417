// Package simvec adapts the streamscale simulator's vector environment to
// the flat-array VecEnv that package ppo trains on, and builds the paper's
// training and development scenarios.
//
// Observations are flattened in sorted Dict-key order: app, server, task
// (as Stable-Baselines3 flattens a Dict space). Actions are the
// MultiDiscrete indices, env-major. Determinism: environment i of a Vec is
// reset from the named stream rng.TrainEnv+i of the root seed (EnvSeed);
// the adapter adds no other randomness, and parallel stepping writes each
// environment's results to its own row.
package simvec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"streamscale/env"
	"streamscale/ppo"
	"streamscale/rng"
	"streamscale/traces"
)

// Vec is a ppo.StatefulVecEnv over N single-environment env.VecEnvs, one
// per training environment, so that each is seeded from its own named
// stream: Reset(root) resets env i with rng.Derive(root, rng.TrainEnv+i),
// and its k-th episode then starts from that seed + k (env.VecEnv's
// autoreset). Environments are stepped in parallel over workers
// goroutines, each owning a fixed range; results do not depend on
// scheduling.
type Vec struct {
	envs    []*env.VecEnv
	workers int
	obsSize int
	nvec    []int
	nTasks  int
	actions [][]env.Action // per env, one action
	results []*env.VecResult
}

var _ ppo.StatefulVecEnv = (*Vec)(nil)

// New wraps envs, each holding exactly one environment, all of the same
// shape; workers ≤ 0 means GOMAXPROCS.
func New(envs []*env.VecEnv, workers int) (*Vec, error) {
	if len(envs) == 0 {
		return nil, fmt.Errorf("simvec: no environments")
	}
	sp := envs[0].Spaces()
	for i, v := range envs {
		if v.NumEnvs() != 1 {
			return nil, fmt.Errorf("simvec: environment %d holds %d envs, want 1", i, v.NumEnvs())
		}
		if v.Spaces().FlatSize() != sp.FlatSize() || !slices.Equal(v.Spaces().Nvec, sp.Nvec) {
			return nil, fmt.Errorf("simvec: environment %d has another shape than environment 0", i)
		}
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	s := &Vec{envs: envs, workers: min(workers, len(envs)), obsSize: sp.FlatSize(), nvec: sp.Nvec, nTasks: len(sp.Nvec)}
	s.actions = make([][]env.Action, len(envs))
	for i := range s.actions {
		s.actions[i] = []env.Action{{Choices: make([]int, s.nTasks)}}
	}
	s.results = make([]*env.VecResult, len(envs))
	return s, nil
}

// NumEnvs implements ppo.VecEnv.
func (s *Vec) NumEnvs() int { return len(s.envs) }

// ObsSize implements ppo.VecEnv.
func (s *Vec) ObsSize() int { return s.obsSize }

// Nvec implements ppo.VecEnv.
func (s *Vec) Nvec() []int { return s.nvec }

// flatten writes o, flattened (env.Observation.Flatten), into dst, which
// has exactly its size.
func (s *Vec) flatten(dst []float64, o env.Observation) {
	o.Flatten(dst[:0:len(dst)])
}

// EnvSeed is the Reset seed of training environment i under the run's
// root seed: rng.Derive(root, rng.TrainEnv+i).
func EnvSeed(root uint64, i int) uint64 { return rng.Derive(root, rng.TrainEnv+strconv.Itoa(i)) }

// Reset implements ppo.VecEnv: env i starts with EnvSeed(root, i).
func (s *Vec) Reset(root uint64, obs []float64) error {
	if len(obs) != s.NumEnvs()*s.obsSize {
		return fmt.Errorf("simvec: observation buffer has %d entries, want %d", len(obs), s.NumEnvs()*s.obsSize)
	}
	for i, v := range s.envs {
		o, err := v.Reset(EnvSeed(root, i))
		if err != nil {
			return err
		}
		s.flatten(obs[i*s.obsSize:(i+1)*s.obsSize], o[0])
	}
	return nil
}

// Step implements ppo.VecEnv.
func (s *Vec) Step(actions []int, r *ppo.StepResult) error {
	n := s.NumEnvs()
	if len(actions) != n*s.nTasks {
		return fmt.Errorf("simvec: %d action entries, want %d", len(actions), n*s.nTasks)
	}
	for i := range s.envs {
		if err := s.envs[i].Env(0).ValidateAction(env.Action{Choices: actions[i*s.nTasks : (i+1)*s.nTasks]}); err != nil {
			return fmt.Errorf("simvec: env %d: %w", i, err)
		}
	}
	for i := range s.actions {
		copy(s.actions[i][0].Choices, actions[i*s.nTasks:(i+1)*s.nTasks])
	}
	if err := s.stepAll(); err != nil {
		return err
	}
	r.Episodes = r.Episodes[:0]
	for i, res := range s.results {
		row := r.Obs[i*s.obsSize : (i+1)*s.obsSize]
		s.flatten(row, res.Obs[0])
		r.Rewards[i] = res.Rewards[0]
		r.Terminated[i] = res.Terminated[0]
		r.Truncated[i] = res.Truncated[0]
		if res.Terminated[0] || res.Truncated[0] {
			s.flatten(r.FinalObs[i*s.obsSize:(i+1)*s.obsSize], res.FinalObs[0])
			r.Episodes = append(r.Episodes, ppo.Episode{Env: i, Return: res.EpisodeReturn[0], Length: res.EpisodeLength[0]})
		}
	}
	return nil
}

// stepAll steps every environment with its s.actions entry, in parallel
// over s.workers goroutines each owning a fixed range, into s.results.
func (s *Vec) stepAll() error {
	n := s.NumEnvs()
	var g errgroup.Group
	for w := range s.workers {
		lo, hi := w*n/s.workers, (w+1)*n/s.workers
		g.Go(func() error {
			for i := lo; i < hi; i++ {
				res, err := s.envs[i].Step(s.actions[i])
				if err != nil {
					return fmt.Errorf("simvec: env %d: %w", i, err)
				}
				s.results[i] = res
			}
			return nil
		})
	}
	return g.Wait()
}

// MarshalBinary implements ppo.StatefulVecEnv: each environment's state,
// length-prefixed, in order.
func (s *Vec) MarshalBinary() ([]byte, error) {
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(s.envs)))
	for _, v := range s.envs {
		b, err := v.MarshalBinary()
		if err != nil {
			return nil, err
		}
		out = binary.LittleEndian.AppendUint64(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out, nil
}

// UnmarshalBinary implements ppo.StatefulVecEnv. The framing is checked
// before any environment is restored; an environment that refuses its
// state leaves the ones before it restored.
func (s *Vec) UnmarshalBinary(b []byte) error {
	if len(b) < 4 || int(binary.LittleEndian.Uint32(b)) != len(s.envs) {
		return fmt.Errorf("simvec: state is not for %d environments", len(s.envs))
	}
	b = b[4:]
	parts := make([][]byte, len(s.envs))
	for i := range parts {
		if len(b) < 8 || binary.LittleEndian.Uint64(b) > uint64(len(b)-8) {
			return fmt.Errorf("simvec: state of environment %d is truncated", i)
		}
		n := int(binary.LittleEndian.Uint64(b))
		parts[i], b = b[8:8+n], b[8+n:]
	}
	if len(b) != 0 {
		return fmt.Errorf("simvec: %d trailing bytes after the state", len(b))
	}
	for i, p := range parts {
		if err := s.envs[i].UnmarshalBinary(p); err != nil {
			return fmt.Errorf("simvec: environment %d: %w", i, err)
		}
	}
	return nil
}

// EnvSpec names one training or evaluation setting.
type EnvSpec struct {
	Profile       string
	Trace         string  // trace name or path
	RateMult      float64 // ×1, ×2, …
	PlacementSeed uint64
	Physics       env.Physics // simulator physics (env.Config.Physics; zero: deterministic)
	// Randomize, if not nil, draws some physics anew at every episode
	// (env.Config.Randomize: domain randomisation).
	Randomize *env.PhysicsRanges
	// Demand, if not nil, replaces the profile's task demands with
	// measured ones (a scenario file's, env.Scenario.Apply).
	Demand *env.ScenarioDemand
	// ActionDeltas is the action set (env.Config.ActionDeltas; zero: the
	// paper's).
	ActionDeltas [5]float64
	// ActionUtilization, when not zero, is a target-utilization action
	// set in place of the deltas (env.Config.ActionUtilization).
	ActionUtilization [5]float64
	// Reward, if not nil, replaces the reward coefficients
	// (env.Config.Reward; nil: env.DefaultReward).
	Reward *env.RewardConfig
}

// TrainingPlacements are the paper's training placement seeds.
var TrainingPlacements = []uint64{42, 37}

// DevPlacements are the held-out placement seeds of the development
// episodes used for model selection (distinct from the training and the
// evaluation placements).
var DevPlacements = []uint64{1001, 1002, 1003}

// ExtraPlacementBase is where the training placement seeds beyond the
// paper's two start (2001, 2002, …): apart from the development seeds
// 1001–1003 and the evaluation seeds 101–110.
const ExtraPlacementBase = 2000

// Placements returns n training placement seeds: the paper's 42 and 37
// first, then ExtraPlacementBase+1, +2, …
func Placements(n int) []uint64 {
	out := make([]uint64, 0, n)
	for i := range n {
		if i < len(TrainingPlacements) {
			out = append(out, TrainingPlacements[i])
		} else {
			out = append(out, uint64(ExtraPlacementBase+i-len(TrainingPlacements)+1))
		}
	}
	return out
}

// TraceVariant is one training workload: a named trace at a rate
// multiplier.
type TraceVariant struct {
	Trace    string
	RateMult float64
}

// String is the variant as ParseTraceVariants reads it.
func (v TraceVariant) String() string {
	return v.Trace + ":" + strconv.FormatFloat(v.RateMult, 'g', -1, 64)
}

// PaperTraces are the paper's training workloads: taxi-train at ×1 and ×2.
var PaperTraces = []TraceVariant{{"taxi-train", 1}, {"taxi-train", 2}}

// evaluationTraces are refused as training workloads: a policy must not
// be trained on what it is evaluated on.
var evaluationTraces = []string{"taxi", "intel"}

// ParseTraceVariants reads a comma-separated list of TRACE[:MULT] (MULT
// defaults to 1), e.g. "taxi-train:1,taxi-train:2,intel-train". Each TRACE
// must be a named trace other than an evaluation trace (taxi, intel), MULT
// finite and in (0, 16], and no variant may repeat.
func ParseTraceVariants(s string) ([]TraceVariant, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("simvec: empty list of training traces")
	}
	var out []TraceVariant
	for _, f := range strings.Split(s, ",") {
		name, m, hasMult := strings.Cut(strings.TrimSpace(f), ":")
		v := TraceVariant{Trace: name, RateMult: 1}
		if hasMult {
			x, err := strconv.ParseFloat(m, 64)
			if err != nil || !(x > 0 && x <= 16) {
				return nil, fmt.Errorf("simvec: training trace %q: multiplier %q, want a number in (0, 16]", f, m)
			}
			v.RateMult = x
		}
		if !slices.Contains(traces.Names(), name) {
			return nil, fmt.Errorf("simvec: training trace %q: want one of %s", name, strings.Join(traces.Names(), ", "))
		}
		if slices.Contains(evaluationTraces, name) {
			return nil, fmt.Errorf("simvec: training trace %q is an evaluation trace", name)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("simvec: training trace %s given twice", v)
		}
		out = append(out, v)
	}
	return out, nil
}

// TrainingScenariosOn returns the training scenarios on the given
// placement seeds: every trace variant (nil: PaperTraces) on each.
func TrainingScenariosOn(profile string, physics env.Physics, placements []uint64, variants []TraceVariant) []EnvSpec {
	if variants == nil {
		variants = PaperTraces
	}
	var out []EnvSpec
	for _, v := range variants {
		for _, p := range placements {
			out = append(out, EnvSpec{Profile: profile, Trace: v.Trace, RateMult: v.RateMult, PlacementSeed: p, Physics: physics})
		}
	}
	return out
}

// TrainingScenarios returns the paper's four training scenarios of a
// profile on the given physics: trace taxi-train at ×1 and ×2, each with
// placements 42 and 37.
func TrainingScenarios(profile string, physics env.Physics) []EnvSpec {
	return TrainingScenariosOn(profile, physics, TrainingPlacements, nil)
}

// DevScenarios returns the development scenarios of a profile on the given
// physics: the training workloads (nil: PaperTraces) on the held-out
// placements.
func DevScenarios(profile string, physics env.Physics, variants []TraceVariant) []EnvSpec {
	return TrainingScenariosOn(profile, physics, DevPlacements, variants)
}

// Config builds the env.Config of a scenario, loading its trace from dir
// (traces.DefaultDir() when empty; a seeded synthetic trace when absent).
func (sc EnvSpec) Config(dir string, seed uint64, logf func(string, ...any)) (env.Config, error) {
	tr, err := traces.Load(sc.Trace, traces.Options{Dir: dir, RateMult: sc.RateMult, Seed: seed, Logf: logf})
	if err != nil {
		return env.Config{}, err
	}
	cfg, err := env.EdgeConfig(sc.Profile, sc.PlacementSeed, tr)
	if err != nil {
		return env.Config{}, err
	}
	if err := (env.Scenario{Physics: sc.Physics, Demand: sc.Demand}).Apply(&cfg); err != nil {
		return env.Config{}, err
	}
	cfg.Randomize = sc.Randomize
	cfg.ActionDeltas = sc.ActionDeltas
	cfg.ActionUtilization = sc.ActionUtilization
	if sc.Reward != nil {
		r := *sc.Reward
		cfg.Reward = &r
	}
	return cfg, nil
}

// NewVec builds n environments spread round-robin over the scenarios.
func NewVec(scs []EnvSpec, n int, dir string, seed uint64, workers int, logf func(string, ...any)) (*Vec, error) {
	if n <= 0 || len(scs) == 0 {
		return nil, fmt.Errorf("simvec: need at least one env and one scenario (got %d, %d)", n, len(scs))
	}
	if len(scs) > n {
		// Environment i runs scenario i mod len(scs) for the whole run, so
		// scenarios beyond the n-th would never be trained on.
		return nil, fmt.Errorf("simvec: %d training scenarios (placements × workloads) for %d environments: scenarios %d–%d would never run; use at least %d environments or fewer placements or workloads", len(scs), n, n+1, len(scs), len(scs))
	}
	envs := make([]*env.VecEnv, n)
	for i := range envs {
		c, err := scs[i%len(scs)].Config(dir, seed, logf)
		if err != nil {
			return nil, err
		}
		if envs[i], err = env.NewVec([]env.Config{c}, env.SameStep, 1); err != nil {
			return nil, err
		}
	}
	return New(envs, workers)
}
