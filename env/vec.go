package env

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"streamscale/rng"

	"golang.org/x/sync/errgroup"
)

// Autoreset selects when a vector env restarts an ended episode.
type Autoreset int

const (
	// SameStep resets inside the Step that ends an episode: Obs holds the
	// first observation of the next episode and FinalObs the last one of
	// the ended episode (Stable-Baselines3's VecEnv convention, which PPO's
	// truncation bootstrap uses). The default.
	SameStep Autoreset = iota
	// NextStep returns the final observation as Obs and resets on the next
	// Step, whose action for that env is ignored and whose reward is 0
	// (Gymnasium's NEXT_STEP autoreset).
	NextStep
)

// VecResult is what VecEnv.Step fills. Observations point into buffers the
// VecEnv owns; they stay valid until the next Step or Reset.
type VecResult struct {
	Obs        []Observation
	Rewards    []float64
	Terminated []bool
	Truncated  []bool
	// FinalObs[i] is the last observation of the episode env i ended in
	// this step (valid only where Terminated[i] || Truncated[i]).
	FinalObs []Observation
	// Infos[i] is env i's Info for this step.
	Infos []Info
	// EpisodeReturn and EpisodeLength are the undiscounted return and the
	// length of the episode env i ended in this step (valid where it ended).
	EpisodeReturn []float64
	EpisodeLength []int
}

// VecEnv steps N environments together, in parallel over worker
// goroutines (each env is owned by one goroutine during a step; results do
// not depend on scheduling; with one worker the calling goroutine steps
// them all). Episode k of env i (k = 0, 1, …) is reset with seed
// base + i + k·N, base being the seed given to Reset.
type VecEnv struct {
	envs      []*Env
	mode      Autoreset
	workers   int
	base      uint64
	episodes  []uint64
	pending   []bool // NextStep: reset due on the next Step
	epReturn  []float64
	epLen     []int
	res       VecResult
	finalBufs []Observation
	started   bool
}

// NewVec builds one Env per config. workers ≤ 0 means GOMAXPROCS.
func NewVec(cfgs []Config, mode Autoreset, workers int) (*VecEnv, error) {
	if len(cfgs) == 0 {
		return nil, fmt.Errorf("env: vector env needs at least one config")
	}
	if mode != SameStep && mode != NextStep {
		return nil, fmt.Errorf("env: unknown autoreset mode %d", mode)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	v := &VecEnv{mode: mode, workers: min(workers, len(cfgs))}
	for i, c := range cfgs {
		e, err := New(c)
		if err != nil {
			return nil, fmt.Errorf("env: vector env %d: %w", i, err)
		}
		if i > 0 && (e.n != v.envs[0].n || e.m != v.envs[0].m) {
			return nil, fmt.Errorf("env: vector env %d has %d tasks and %d servers, env 0 has %d and %d", i, e.n, e.m, v.envs[0].n, v.envs[0].m)
		}
		v.envs = append(v.envs, e)
	}
	n := len(v.envs)
	v.episodes = make([]uint64, n)
	v.pending = make([]bool, n)
	v.epReturn = make([]float64, n)
	v.epLen = make([]int, n)
	v.res = VecResult{
		Obs: make([]Observation, n), Rewards: make([]float64, n), Terminated: make([]bool, n),
		Truncated: make([]bool, n), FinalObs: make([]Observation, n), Infos: make([]Info, n),
		EpisodeReturn: make([]float64, n), EpisodeLength: make([]int, n),
	}
	for i, e := range v.envs {
		v.finalBufs = append(v.finalBufs, Observation{
			App: make([]float64, AppFeatures), Server: make([]float64, e.m*ServerFeatures), Task: make([]float64, e.n*TaskFeatures),
		})
		v.res.FinalObs[i] = v.finalBufs[i]
	}
	return v, nil
}

// NumEnvs is the number of environments.
func (v *VecEnv) NumEnvs() int { return len(v.envs) }

// Env returns environment i (for inspection; do not step it directly).
func (v *VecEnv) Env(i int) *Env { return v.envs[i] }

// Spaces are the (shared) spaces of the environments.
func (v *VecEnv) Spaces() Spaces { return v.envs[0].Spaces() }

func (v *VecEnv) seedOf(i int) uint64 {
	return VecSeed(v.base, i, v.episodes[i])
}

// VecSeed is the Reset seed of episode ep (0-based) of environment i of a
// vector reset with base: the first draw of stream rng.EnvVec+"<i>/<ep>".
func VecSeed(base uint64, i int, ep uint64) uint64 {
	return rng.Derive(base, rng.EnvVec+strconv.Itoa(i)+"/"+strconv.FormatUint(ep, 10))
}

// Reset resets every environment; episode ep of env i gets seed
// VecSeed(base, i, ep).
func (v *VecEnv) Reset(base uint64) ([]Observation, error) {
	v.base, v.started = base, true
	for i, e := range v.envs {
		v.episodes[i], v.pending[i], v.epReturn[i], v.epLen[i] = 0, false, 0, 0
		obs, info, err := e.Reset(v.seedOf(i))
		if err != nil {
			return nil, err
		}
		v.res.Obs[i], v.res.Infos[i] = obs, info
	}
	return v.res.Obs, nil
}

// Step applies one action per environment. Every action is validated
// before any environment moves: an invalid one returns an error naming the
// env and changes nothing.
func (v *VecEnv) Step(actions []Action) (*VecResult, error) {
	if !v.started {
		return nil, ErrNotReset
	}
	if len(actions) != len(v.envs) {
		return nil, fmt.Errorf("env: %d actions for %d envs", len(actions), len(v.envs))
	}
	for i, e := range v.envs {
		if v.pending[i] {
			continue
		}
		if err := e.ValidateAction(actions[i]); err != nil {
			return nil, fmt.Errorf("env: vector env %d: %w", i, err)
		}
	}
	n := len(v.envs)
	if v.workers == 1 {
		// One worker steps in the caller's goroutine: no goroutine to
		// start, no wake-up, and the envs stay in the caller's core's
		// caches between steps.
		for i := range n {
			if err := v.stepOne(i, actions[i]); err != nil {
				return nil, fmt.Errorf("env: vector env %d: %w", i, err)
			}
		}
		return &v.res, nil
	}
	var g errgroup.Group
	for w := 0; w < v.workers; w++ {
		lo, hi := w*n/v.workers, (w+1)*n/v.workers
		g.Go(func() error {
			for i := lo; i < hi; i++ {
				if err := v.stepOne(i, actions[i]); err != nil {
					return fmt.Errorf("env: vector env %d: %w", i, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &v.res, nil
}

func (v *VecEnv) stepOne(i int, a Action) error {
	e := v.envs[i]
	r := &v.res
	if v.pending[i] {
		v.pending[i] = false
		v.episodes[i]++
		obs, info, err := e.Reset(v.seedOf(i))
		if err != nil {
			return err
		}
		r.Obs[i], r.Infos[i], r.Rewards[i], r.Terminated[i], r.Truncated[i] = obs, info, 0, false, false
		return nil
	}
	sr, err := e.Step(a)
	if err != nil {
		return err
	}
	obs, rew, term, trunc, info := sr.Obs, sr.Reward, sr.Terminated, sr.Truncated, sr.Info
	v.epReturn[i] += rew
	v.epLen[i]++
	r.Obs[i], r.Rewards[i], r.Terminated[i], r.Truncated[i], r.Infos[i] = obs, rew, term, trunc, info
	if !term && !trunc {
		return nil
	}
	r.EpisodeReturn[i], r.EpisodeLength[i] = v.epReturn[i], v.epLen[i]
	v.epReturn[i], v.epLen[i] = 0, 0
	fb := v.finalBufs[i]
	copy(fb.App, obs.App)
	copy(fb.Server, obs.Server)
	copy(fb.Task, obs.Task)
	r.FinalObs[i] = fb
	if v.mode == NextStep {
		v.pending[i] = true
		return nil
	}
	v.episodes[i]++
	// The step's Info shares its per-task slices with the env, and Reset
	// rewrites them (Applied to the initial allocation): keep copies.
	r.Infos[i].Requested = slices.Clone(info.Requested)
	r.Infos[i].Applied = slices.Clone(info.Applied)
	r.Infos[i].Queue = slices.Clone(info.Queue)
	r.Infos[i].StateMB = slices.Clone(info.StateMB)
	obs, _, err = e.Reset(v.seedOf(i))
	if err != nil {
		return err
	}
	r.Obs[i] = obs
	return nil
}
