package ppo

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"streamscale/ppo/internal/nn"
	"streamscale/ppo/policy"
	"streamscale/rng"
)

// Options are execution details of a run; none of them changes a bit of
// the result.
type Options struct {
	// Workers is 1, or 2 to run the actor and critic halves of each
	// minibatch update on two goroutines (default: 2 when GOMAXPROCS ≥ 2).
	Workers int
	// Logger receives one Stats per iteration (nil: none).
	Logger Logger
	// AfterIteration runs after each iteration's update and logging, e.g.
	// to evaluate on dev episodes or write a checkpoint. An error stops
	// Learn and is returned wrapped.
	AfterIteration func(ctx context.Context, t *Trainer, s Stats) error
	// Clock reads the wall clock for time/fps; nil leaves fps at 0. The
	// package never reads the clock itself.
	Clock func() time.Time
}

// epWindow is SB3's stats_window_size: ep_rew_mean and ep_len_mean average
// the last 100 finished episodes.
const epWindow = 100

// Trainer runs PPO (Schulman et al. 2017) on a VecEnv exactly as
// Stable-Baselines3's PPO does, iteration by iteration: collect a rollout
// of NumSteps steps in every env, compute GAE advantages, then Epochs
// passes of shuffled minibatch updates. It is not safe for concurrent use.
type Trainer struct {
	cfg  Config
	opts Options
	env  VecEnv
	arch *nn.Arch

	theta, grad []float32
	opt         *adam
	policy      *policy.Policy                  // view of theta
	graphs      map[int]*[2]*lossGraph[float32] // per batch size, two used alternately
	netParams   [2][]int                        // indices into arch.Params of the actor's and the critic's parameters
	sums        []float64                       // per parameter: Σ grad² of the current minibatch
	batches     [][]int                         // one epoch's minibatches, views of perm

	shuffleSrc, actionSrc *rand.PCG
	shuffle, action       *rand.Rand

	// progress
	iteration, timesteps, gradSteps, epochs int
	started                                 bool
	lastObs                                 []float64
	lastStarts                              []bool
	episodes                                []Episode // the last epWindow, oldest first

	norm *normalizer // VecNormalize's running statistics

	buf  *rollout
	res  *StepResult
	perm []int
	// per-step scratch
	acts              []int
	vals, lps         []float64
	boot              []int
	bootObs, bootVals []float64
	lastVals          []float64
	lastDones         []bool
	clock0            time.Time
	steps0            int
}

// New validates cfg against env and builds a trainer with freshly
// initialised weights; no environment step is taken until Learn.
func New(cfg Config, env VecEnv, opts Options) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if env == nil {
		return nil, fmt.Errorf("ppo: no environment")
	}
	if env.NumEnvs() != cfg.NumEnvs {
		return nil, fmt.Errorf("ppo: environment has %d envs, config wants %d", env.NumEnvs(), cfg.NumEnvs)
	}
	a, err := nn.NewSplitArch(env.ObsSize(), cfg.Hidden, cfg.criticHidden(), env.Nvec())
	if err != nil {
		return nil, err
	}
	if opts.Workers == 0 {
		opts.Workers = min(2, runtime.GOMAXPROCS(0))
	}
	if opts.Workers < 1 || opts.Workers > 2 {
		return nil, fmt.Errorf("ppo: workers must be 1 or 2, got %d", opts.Workers)
	}
	t := &Trainer{cfg: cfg, opts: opts, env: env, arch: a}
	t.theta = make([]float32, a.Size)
	t.grad = make([]float32, a.Size)
	initParams(a, t.theta, rng.Source(cfg.Seed, rng.PPOInit))
	if b := float32(cfg.FirstLogitBias); b != 0 {
		setFirstLogitBias(a, t.theta, b)
	}
	t.opt = newAdam(a.Size, cfg.AdamEps)
	if t.policy, err = policy.NewSplit(a.Obs, a.Hidden, a.CriticHidden, a.Nvec, t.theta); err != nil {
		return nil, err
	}
	t.graphs = map[int]*[2]*lossGraph[float32]{}
	for i, p := range a.Params {
		t.netParams[p.Net] = append(t.netParams[p.Net], i)
	}
	t.sums = make([]float64, len(a.Params))
	t.shuffleSrc, t.actionSrc = rng.Source(cfg.Seed, rng.PPOShuffle), rng.Source(cfg.Seed, rng.PPOAction)
	t.shuffle, t.action = rand.New(t.shuffleSrc), rand.New(t.actionSrc)

	n, d := cfg.NumEnvs, len(a.Nvec)
	t.norm = newNormalizer(cfg, a.Obs)
	t.buf = newRollout(cfg.NumSteps, n, a.Obs, d)
	t.res = NewStepResult(n, a.Obs)
	t.lastObs = make([]float64, n*a.Obs)
	t.lastStarts = make([]bool, n)
	t.perm = make([]int, cfg.RolloutSize())
	t.acts, t.vals, t.lps = make([]int, n*d), make([]float64, n), make([]float64, n)
	t.lastVals, t.lastDones = make([]float64, n), make([]bool, n)
	return t, nil
}

// Config returns the run's configuration.
func (t *Trainer) Config() Config { return t.cfg }

// Iteration is the number of completed iterations.
func (t *Trainer) Iteration() int { return t.iteration }

// Timesteps is the number of env steps collected so far (all envs).
func (t *Trainer) Timesteps() int { return t.timesteps }

// GradientSteps is the number of Adam steps taken so far.
func (t *Trainer) GradientSteps() int { return t.gradSteps }

// Done reports whether every iteration has run.
func (t *Trainer) Done() bool { return t.iteration >= t.cfg.Iterations() }

// Policy returns a snapshot of the current policy.
func (t *Trainer) Policy() *policy.Policy { return t.policy.Clone() }

// Learn runs the remaining iterations. It returns ctx's error, unwrapped,
// if ctx ends between two iterations.
func (t *Trainer) Learn(ctx context.Context) error {
	if !t.started {
		// SB3 _setup_learn: reset every env (env i from seed+i); every
		// first observation starts an episode.
		if err := t.env.Reset(t.cfg.Seed, t.lastObs); err != nil {
			return fmt.Errorf("ppo: resetting environment: %w", err)
		}
		t.norm.reset(t.lastObs)
		if err := t.syncNorm(); err != nil {
			return err
		}
		for i := range t.lastStarts {
			t.lastStarts[i] = true
		}
		t.started = true
	}
	if t.opts.Clock != nil {
		t.clock0, t.steps0 = t.opts.Clock(), t.timesteps
	}
	for !t.Done() {
		if err := ctx.Err(); err != nil {
			return err
		}
		// ---- 1. Rollout -------------------------------------------------
		if err := t.collect(); err != nil {
			return err
		}
		t.iteration++
		progress := 1 - float64(t.timesteps)/float64(t.cfg.TotalTimesteps)
		// ---- 2. Update --------------------------------------------------
		s, err := t.update(progress)
		if err != nil {
			return err
		}
		// ---- 3. Log and hooks -------------------------------------------
		s.EpRewMean, s.EpLenMean = t.episodeMeans()
		if t.opts.Clock != nil {
			if dt := t.opts.Clock().Sub(t.clock0).Seconds(); dt > 0 {
				s.FPS = math.Floor(float64(t.timesteps-t.steps0) / dt)
			}
		}
		if t.opts.Logger != nil {
			if err := t.opts.Logger.Log(s); err != nil {
				return fmt.Errorf("ppo: logging iteration %d: %w", t.iteration, err)
			}
		}
		if t.opts.AfterIteration != nil {
			if err := t.opts.AfterIteration(ctx, t, s); err != nil {
				return fmt.Errorf("ppo: after iteration %d: %w", t.iteration, err)
			}
		}
	}
	return nil
}

// syncNorm hands the policy the normaliser's current statistics.
func (t *Trainer) syncNorm() error {
	if !t.norm.active() {
		return nil
	}
	if err := t.policy.SetNormalization(t.norm.state()); err != nil {
		return fmt.Errorf("ppo: normalization: %w", err)
	}
	return nil
}

// collect fills the rollout buffer (SB3's collect_rollouts): one batched
// policy evaluation per step, rewards and statistics through the
// normaliser (VecNormalize) when it is on, truncation bootstrapped as
// r ← r + γ·V(final observation) on the (scaled) reward with the final
// observation normalised by the step's statistics, then GAE over the
// buffer. The buffer stores the observations as the policy saw them.
func (t *Trainer) collect() error {
	cfg, a, b := t.cfg, t.arch, t.buf
	n, d := cfg.NumEnvs, len(a.Nvec)
	for step := range cfg.NumSteps {
		base := step * n
		t.policy.NormalizeObs(b.observations[base*a.Obs:(base+n)*a.Obs], t.lastObs)
		if err := t.policy.Step(t.lastObs, false, t.action, t.acts, t.vals, t.lps); err != nil {
			return fmt.Errorf("ppo: policy at step %d: %w", t.timesteps, err)
		}
		t.res.Episodes = t.res.Episodes[:0]
		if err := t.env.Step(t.acts, t.res); err != nil {
			return fmt.Errorf("ppo: environment step %d: %w", t.timesteps, err)
		}
		if err := t.res.check(n, a.Obs); err != nil {
			return err
		}
		if t.norm.active() {
			t.norm.step(t.res)
			if err := t.syncNorm(); err != nil {
				return err
			}
		}
		t.timesteps += n
		for _, ep := range t.res.Episodes {
			t.episodes = append(t.episodes, ep)
			if len(t.episodes) > epWindow {
				t.episodes = t.episodes[1:]
			}
		}
		if err := t.bootstrap(); err != nil {
			return err
		}
		copy(b.actions[base*d:(base+n)*d], t.acts)
		copy(b.rewards[base:base+n], t.res.Rewards)
		copy(b.starts[base:base+n], t.lastStarts)
		copy(b.values[base:base+n], t.vals)
		copy(b.logps[base:base+n], t.lps)
		copy(t.lastObs, t.res.Obs)
		for e := range n {
			t.lastStarts[e] = t.res.Terminated[e] || t.res.Truncated[e]
		}
	}
	if err := t.policy.Values(t.lastObs, t.lastVals); err != nil {
		return fmt.Errorf("ppo: bootstrap values: %w", err)
	}
	gae(b.rewards, b.values, b.starts, t.lastVals, t.lastStarts, cfg.NumSteps, n, cfg.Gamma, cfg.Lambda, b.advantages, b.returns)
	// The same recursion at λ = 1 for train/explained_variance_mc; it
	// writes only mcAdv and mcReturns, which nothing else reads.
	gae(b.rewards, b.values, b.starts, t.lastVals, t.lastStarts, cfg.NumSteps, n, cfg.Gamma, 1, b.mcAdv, b.mcReturns)
	return nil
}

// bootstrap adds γ·V(final observation) to the reward of every env whose
// episode was truncated and not terminated (SB3's TimeLimit.truncated).
func (t *Trainer) bootstrap() error {
	a, r := t.arch, t.res
	t.bootObs, t.boot = t.bootObs[:0], t.boot[:0]
	for e := range r.Rewards {
		if r.Truncated[e] && !r.Terminated[e] {
			t.bootObs = append(t.bootObs, r.FinalObs[e*a.Obs:(e+1)*a.Obs]...)
			t.boot = append(t.boot, e)
		}
	}
	if len(t.boot) == 0 {
		return nil
	}
	if cap(t.bootVals) < len(t.boot) {
		t.bootVals = make([]float64, len(t.boot))
	}
	v := t.bootVals[:len(t.boot)]
	if err := t.policy.Values(t.bootObs, v); err != nil {
		return fmt.Errorf("ppo: value of final observation: %w", err)
	}
	for i, e := range t.boot {
		r.Rewards[e] += t.cfg.Gamma * v[i]
	}
	return nil
}

func (t *Trainer) episodeMeans() (rew, length float64) {
	if len(t.episodes) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, ep := range t.episodes {
		rew += ep.Return
		length += float64(ep.Length)
	}
	k := float64(len(t.episodes))
	return rew / k, length / k
}

// fill loads the minibatch idx (flat env-major indices) into g.
func (t *Trainer) fill(g *lossGraph[float32], idx []int, clip float64) {
	a, b, cfg := t.arch, t.buf, t.cfg
	clear(g.onehot)
	var mean, std float64
	normalize := cfg.NormalizeAdv && len(idx) > 1
	if normalize {
		for _, i := range idx {
			mean += b.advantages[b.row(i)]
		}
		mean /= float64(len(idx))
		for _, i := range idx {
			d := b.advantages[b.row(i)] - mean
			std += d * d
		}
		std = math.Sqrt(std / float64(len(idx)-1)) // unbiased, as torch.std
	}
	for k, i := range idx {
		r := b.row(i)
		copy(g.aObs[k*a.Obs:(k+1)*a.Obs], b.observations[r*a.Obs:(r+1)*a.Obs])
		off := 0
		for dIdx, n := range a.Nvec {
			g.onehot[k*a.Logits+off+b.actions[r*len(a.Nvec)+dIdx]] = 1
			off += n
		}
		adv := b.advantages[r]
		if normalize {
			adv = (adv - mean) / (std + 1e-8)
		}
		g.adv[k] = float32(adv)
		g.oldLogp[k] = float32(b.logps[r])
		g.ret[k] = float32(b.returns[r])
		g.oldV[k] = float32(b.values[r])
	}
	g.setClip(clip, cfg.ClipRangeVF)
}

// chosenActionProb is the mean over the rollout of exp(log π(a|s)/D): the
// geometric mean of the D per-dimension probabilities of the sampled
// action.
func chosenActionProb(logps []float64, dims int) float64 {
	var s float64
	for _, lp := range logps {
		s += math.Exp(lp / float64(dims))
	}
	return s / float64(len(logps))
}
