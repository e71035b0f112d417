package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"streamscale/agents/residual"
	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/internal/command"
	"streamscale/internal/regfile"
	"streamscale/ppo"
	"streamscale/ppo/policy"
	"streamscale/train/progress"
	"streamscale/train/simvec"
)

// ErrUsage is wrapped by errors in the options (exit status 2): it is
// command.ErrUsage, and those errors are one line naming the flag.
var ErrUsage = command.ErrUsage

// Options are the command's flags.
type Options struct {
	Env        string // "streamscale" or "cartpole"
	Profile    string // streamscale profile: "pred" or "etl"
	ProfileSet bool   // -profile was given explicitly
	// Scenario is the streamscale physics preset (env.Scenarios; "" means
	// the default, the first); ScenarioSet says -scenario was given.
	Scenario    string
	ScenarioSet bool
	// Randomize trains on per-episode physics drawn from
	// env.DefaultRanges() around the preset (domain randomisation).
	Randomize bool
	// TrainPlacements is the number of training placements (0: the
	// paper's two, 42 and 37; more adds 2001, 2002, …; -train-placements).
	TrainPlacements int
	// SelectLast ships the last iterate instead of the policy with the
	// best development reward (-select last; SB3's default, which saves
	// the final model unless an EvalCallback keeps the best one).
	SelectLast bool
	// TrainTraces are the training workloads (-train-traces; nil: the
	// paper's taxi-train ×1 and ×2).
	TrainTraces []simvec.TraceVariant
	// ActionDeltas is the action set (-action-deltas; zero: the paper's
	// {−500, −50, 0, +50, +500}).
	ActionDeltas [5]float64
	// ActionUtilization, when not zero, is a target-utilization action
	// set in place of the deltas (-action-utilization;
	// env.Config.ActionUtilization).
	ActionUtilization [5]float64
	// RewardSpan, when > 0, is the reward's R_resource span in
	// millicores per task (env.RewardConfig.SpanPerTask; -reward-span; 0:
	// the default's 2,000); an ablation, recorded in the summary.
	RewardSpan float64
	Seed       uint64
	Steps      int    // 0: environment default
	Envs       int    // 0: environment default
	Out        string // "" → runs/<env>-seed<seed>
	Resume     bool
	JSON       bool
	Workers    int
	NormObs    bool // ppo.Config.NormObs (-norm-obs)
	NormReward bool // ppo.Config.NormReward (-norm-reward)
	// EntCoef and ClipRangeVF, when not nil, override ppo.Config's
	// ent_coef and clip_range_vf (-ent-coef, -clip-range-vf); nil keeps
	// the environment's default.
	EntCoef, ClipRangeVF *float64
	// Gamma, when not nil, overrides the discount factor (-gamma).
	Gamma *float64
	// GAELambda, VFCoef and LearningRate, when not nil, and NEpochs,
	// BatchSize, NetArch and CriticArch, when not zero, override
	// ppo.Config's gae_lambda, vf_coef, learning_rate, n_epochs,
	// batch_size, net_arch and critic_arch (-gae-lambda, -vf-coef,
	// -learning-rate, -n-epochs, -batch-size, -net-arch, -critic-arch);
	// unset keeps the environment's default.
	GAELambda, VFCoef   *float64
	LearningRate        *ppo.Schedule
	NEpochs, BatchSize  int
	NetArch, CriticArch []int
	// TargetKL, when > 0, is ppo.Config's target_kl (-target-kl): an
	// update stops at the first minibatch whose approximate KL exceeds
	// 1.5 times it.
	TargetKL float64
	// CPUProfile, when set, is where the command writes a CPU profile;
	// Run ignores it.
	CPUProfile string
	// GCPercent is the garbage collector's target heap growth in percent
	// (runtime/debug.SetGCPercent) that the command sets; Run ignores it.
	GCPercent int
	// ConfigFile and ConfigSHA256 are the -config recipe file the options
	// were read from and its hash ("" without -config); recorded.
	ConfigFile, ConfigSHA256 string
	// Progress prints a progress line per iteration on Stderr
	// (progress.Line; -progress, or a terminal without -json).
	Progress bool
	// Force lets the run overwrite a policy already in Out (-force).
	Force bool
	// Seeds, when not nil, are the seeds RunSeeds trains (-seeds); Run
	// ignores it.
	Seeds []uint64
	// Threads bounds the goroutines the run keeps busy stepping
	// environments and updating (0: GOMAXPROCS); RunSeeds sets it for
	// seeds trained side by side. It does not change results.
	Threads int

	// Residual, when set, is the spec of a base rule (agents/rulespec,
	// e.g. "threshold:measured:target=0.7:tol=0.1:window=10"): the
	// policy's choices are corrections of its targets (agents/residual;
	// -residual), recorded in the card.
	Residual string
	// Objective, when set, replaces the seven-term reward by a
	// constrained objective (simvec.ParseLagrangian: "lagrangian[:budget=B]
	// [:lambda=L][:lr=E]"; -objective); residual runs only.
	Objective string
	// FirstLogitBias, when not nil, is ppo.Config.FirstLogitBias
	// (-first-logit-bias); residual runs default to 2.
	FirstLogitBias *float64
	// ResidualContext names the temporal features a residual policy
	// observes beside the rule's (agents/residual.Context: "", "trend"
	// or "stack:K"; -residual-context), recorded in the card.
	ResidualContext string

	residualRule    rulespec.Rule
	residualContext residual.Context
	objective       *simvec.Lagrangian

	prefix string // starts every progress line (RunSeeds: "seed n: ")
}

// Files in the output directory.
const (
	CheckpointFile = "checkpoint.ckpt"
	CSVFile        = "progress.csv"
	ParquetFile    = "progress.parquet"
	SummaryFile    = "summary.json"
)

// Summary is what -json prints and summary.json holds.
type Summary struct {
	Env               string    `json:"env"`
	Profile           string    `json:"profile,omitempty"`
	Scenario          string    `json:"scenario,omitempty"`             // streamscale physics preset
	Randomize         bool      `json:"randomize,omitempty"`            // domain randomisation of the training physics
	TrainPlacements   int       `json:"train_placements,omitempty"`     // training placements beyond the paper's two, if set
	TrainTraces       string    `json:"train_traces,omitempty"`         // training workloads other than the paper's, if set
	ActionDeltas      []float64 `json:"action_deltas,omitempty"`        // the action set, if not the paper's (-action-deltas)
	ActionUtilization []float64 `json:"action_utilization,omitempty"`   // a target-utilization action set (-action-utilization)
	RewardSpan        float64   `json:"reward_span_per_task,omitempty"` // R_resource's span, mc per task, if not the default (-reward-span)
	Select            string    `json:"select,omitempty"`               // "last" when the last iterate is shipped (-select last); absent: best development reward
	Residual          string    `json:"residual,omitempty"`             // the base rule of a residual policy (-residual)
	Objective         string    `json:"objective,omitempty"`            // the constrained objective (-objective)
	ResidualContext   string    `json:"residual_context,omitempty"`     // a residual policy's temporal context (-residual-context)
	Lambda            *float64  `json:"lagrangian_lambda,omitempty"`    // the Lagrange multiplier at the end (-objective lagrangian)
	// PPO hyperparameters given on the command line (absent: the
	// environment's default; the card's hyperparameters hold them all).
	GAELambda      *float64 `json:"gae_lambda,omitempty"`    // -gae-lambda
	VFCoef         *float64 `json:"vf_coef,omitempty"`       // -vf-coef
	LearningRate   string   `json:"learning_rate,omitempty"` // -learning-rate, as ppo.ParseSchedule reads it
	NEpochs        int      `json:"n_epochs,omitempty"`      // -n-epochs
	TargetKL       float64  `json:"target_kl,omitempty"`     // -target-kl
	BatchSize      int      `json:"batch_size,omitempty"`    // -batch-size
	NetArch        []int    `json:"net_arch,omitempty"`      // -net-arch
	CriticArch     []int    `json:"critic_arch,omitempty"`   // -critic-arch
	Seed           uint64   `json:"seed"`
	Transitions    int      `json:"transitions"`
	Iterations     int      `json:"iterations"`
	Updates        int      `json:"updates"` // Adam steps
	WallSeconds    float64  `json:"wall_seconds"`
	SPS            float64  `json:"sps"`
	PolicyPath     string   `json:"policy_path"`
	PolicySHA256   string   `json:"policy_sha256"`
	EvalEpisodes   int      `json:"eval_episodes"`
	EvalMeanReturn *float64 `json:"eval_mean_return"`
	EvalStdReturn  *float64 `json:"eval_std_return"`
	BestDevReward  *float64 `json:"best_dev_reward"`
	ConfigHash     string   `json:"config_hash"`
	command.Build           // commit, go_version
	Resumed        bool     `json:"resumed"`
	NormObs        bool     `json:"norm_obs"`    // observations normalised (VecNormalize)
	NormReward     bool     `json:"norm_reward"` // rewards scaled (VecNormalize)

	// Learning diagnostics, from the progress rows (ppo.Stats) of every
	// iteration, those of a resumed run's first part included; null when
	// undefined (NaN).
	//
	// ExplainedVarianceLastQuarter is the mean of train/explained_variance
	// over the last ⌈iterations/4⌉ iterations; ExplainedVarianceFinal is
	// the last iteration's.
	ExplainedVarianceLastQuarter *float64 `json:"explained_variance_last_quarter"`
	ExplainedVarianceFinal       *float64 `json:"explained_variance_final"`
	// EntropyFractionFinal is the last iteration's mean entropy over its
	// maximum Σ_d log nvec_d (train/entropy_fraction; 1 = uniform).
	EntropyFractionFinal *float64 `json:"entropy_fraction_final"`
	// ChosenActionProbMean is the mean over the last rollout of
	// exp(log π(a|s)/D): the geometric mean of the sampled action's D
	// per-dimension probabilities (rollout/chosen_action_prob; 1/nvec for
	// a uniform policy).
	ChosenActionProbMean *float64 `json:"chosen_action_prob_mean"`
	// DevValueRMSE is the root mean square error of the saved policy's
	// critic V(s_t) against the realised discounted return (γ of the run,
	// truncation bootstrapped from the critic as in training) over every
	// step of the development episodes, in the environment's reward units
	// (values × √(ret_rms.var + ε) with reward normalisation);
	// DevValueRelativeError is it over the root mean square of the
	// returns. Streamscale only.
	DevValueRMSE          *float64 `json:"dev_value_rmse"`
	DevValueRelativeError *float64 `json:"dev_value_relative_error"`
	// ExplainedVarianceMCLastQuarter and ExplainedVarianceMCFinal are as
	// the two above for train/explained_variance_mc (ppo.Stats.
	// ExplainedVarianceMC: the critic against the rollout's λ = 1 returns).
	// Runs resumed from a checkpoint written before that metric existed
	// leave its first part out.
	ExplainedVarianceMCLastQuarter *float64 `json:"explained_variance_mc_last_quarter"`
	ExplainedVarianceMCFinal       *float64 `json:"explained_variance_mc_final"`
	// EpRewMeanFinal is the last iteration's rollout/ep_rew_mean: the
	// mean return of the last 100 training episodes (null before any).
	EpRewMeanFinal *float64 `json:"ep_rew_mean_final"`

	// Recipe is the fully resolved recipe (every key, defaults filled in;
	// Options.Resolved): as a -config file it trains this run again.
	Recipe Recipe `json:"recipe"`
	// ConfigFile and ConfigSHA256 are the -config file the recipe was
	// read from and the SHA-256 of its bytes (absent without -config).
	ConfigFile   string `json:"config_file,omitempty"`
	ConfigSHA256 string `json:"config_sha256,omitempty"`
}

// CardRecipe is what the policy card's recipe field holds: the resolved
// recipe and the file it was read from.
type CardRecipe struct {
	Resolved     Recipe `json:"resolved"`
	ConfigFile   string `json:"config_file,omitempty"`
	ConfigSHA256 string `json:"config_sha256,omitempty"`
}

// setup is everything Run needs, built and checked before any work.
type setup struct {
	o      Options
	cfg    ppo.Config
	venv   ppo.VecEnv
	spaces env.Spaces
	sim    Simulator // streamscale only
	// residual, for a -residual run, is the scenario the base rule is
	// built for (bounds, metric lag) and the card's record.
	residual *residualSetup
}

func (o *Options) check() error {
	switch o.Env {
	case "streamscale", "cartpole":
	default:
		return command.Usagef("train: -env %q, want streamscale or cartpole", o.Env)
	}
	if o.Env == "streamscale" && o.Profile != "pred" && o.Profile != "etl" {
		return command.Usagef("train: -profile %q, want pred or etl", o.Profile)
	}
	if o.Env == "cartpole" && o.ProfileSet {
		return command.Usagef("train: -profile applies only to -env streamscale")
	}
	if o.TrainPlacements < 0 || o.TrainPlacements > 64 {
		return command.Usagef("train: -train-placements %d, want 0 (the paper's two) to 64", o.TrainPlacements)
	}
	if o.Env == "cartpole" && (o.Randomize || o.TrainPlacements != 0 || o.TrainTraces != nil || o.ActionDeltas != [5]float64{} || o.ActionUtilization != [5]float64{} || o.RewardSpan != 0) {
		return command.Usagef("train: -randomize, -train-placements, -train-traces, -action-deltas, -action-utilization and -reward-span apply only to -env streamscale")
	}
	if o.ActionDeltas != [5]float64{} && o.ActionUtilization != [5]float64{} {
		return command.Usagef("train: -action-deltas and -action-utilization are two action sets; give one")
	}
	if o.Env == "cartpole" && o.ScenarioSet {
		return command.Usagef("train: -scenario applies only to -env streamscale")
	}
	if o.Env == "streamscale" {
		if o.Scenario == "" {
			o.Scenario = env.Scenarios()[0]
		}
		scen, err := env.ResolveScenario(o.Scenario, regfile.Reader(env.MaxScenarioFile))
		if err != nil {
			return command.Usagef("train: -scenario: %v", err)
		}
		if scen.Demand != nil && !strings.EqualFold(scen.Demand.Profile, o.Profile) {
			return command.Usagef("train: -scenario %s has demands for profile %s, not %s", o.Scenario, scen.Demand.Profile, o.Profile)
		}
	} else {
		o.Scenario = ""
	}
	if o.Steps < 0 {
		return command.Usagef("train: -steps %d, want ≥ 0", o.Steps)
	}
	if o.Envs < 0 {
		return command.Usagef("train: -envs %d, want ≥ 0", o.Envs)
	}
	if o.Workers < 0 || o.Workers > 2 {
		return command.Usagef("train: -workers %d, want 0, 1 or 2", o.Workers)
	}
	if o.Out == "" {
		o.Out = filepath.Join("runs", fmt.Sprintf("%s-seed%d", o.Env, o.Seed))
	}
	return o.checkResidual()
}

// checkResidual parses -residual and -objective.
func (o *Options) checkResidual() error {
	if o.Residual == "" {
		if o.Objective != "" || o.FirstLogitBias != nil || o.ResidualContext != "" {
			return command.Usagef("train: -objective, -first-logit-bias and -residual-context apply only with -residual")
		}
		return nil
	}
	if o.Env != "streamscale" {
		return command.Usagef("train: -residual applies only to -env streamscale")
	}
	if o.ActionDeltas != [5]float64{} || o.ActionUtilization != [5]float64{} {
		return command.Usagef("train: -residual has its own choices; give no -action-deltas or -action-utilization")
	}
	rule, err := rulespec.Parse(o.Residual)
	if err != nil {
		return command.Usagef("train: -residual: %v", err)
	}
	o.residualRule, o.Residual = rule, rule.String()
	ctx, err := residual.ParseContext(o.ResidualContext)
	if err != nil {
		return command.Usagef("train: -residual-context: %v", err)
	}
	o.residualContext = ctx
	if o.Objective != "" {
		l, err := simvec.ParseLagrangian(o.Objective)
		if err != nil {
			return command.Usagef("train: -objective: %v", err)
		}
		o.objective, o.Objective = &l, l.String()
	}
	return nil
}

// refuseOverwrite is an error when o.Out already holds a policy and the
// run would replace it: neither -resume (which continues that run) nor
// -force was given.
func refuseOverwrite(o Options) error {
	if o.Resume || o.Force {
		return nil
	}
	for _, name := range []string{policy.FileName + ".json", policy.FileName + ".safetensors"} {
		if _, err := os.Lstat(filepath.Join(o.Out, name)); err == nil {
			return command.Usagef("train: -out %s already holds a policy (%s); give -force to overwrite it, -resume to continue its run, or another -out", o.Out, name)
		}
	}
	return nil
}

// probeDir creates dir and checks that a file can be written in it.
func probeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("train: output directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("train: output directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// override sets *dst to *v when an option v was given (not nil).
func override[T any](dst, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Config is the ppo.Config the options train with: the environment's
// defaults (DefaultConfig for streamscale, CartPoleConfig) with every
// given hyperparameter option in place, validated. It reads no file and
// builds no environment, so a recipe resolves without training.
func (o Options) Config() (ppo.Config, error) {
	var cfg ppo.Config
	switch o.Env {
	case "cartpole":
		cfg = CartPoleConfig()
	case "streamscale":
		cfg = ppo.DefaultConfig()
	default:
		return ppo.Config{}, command.Usagef("train: -env %q, want streamscale or cartpole", o.Env)
	}
	cfg.Seed = o.Seed
	cfg.NormObs, cfg.NormReward = o.NormObs, o.NormReward
	override(&cfg.EntCoef, o.EntCoef)
	override(&cfg.ClipRangeVF, o.ClipRangeVF)
	override(&cfg.Gamma, o.Gamma)
	override(&cfg.Lambda, o.GAELambda)
	override(&cfg.VFCoef, o.VFCoef)
	override(&cfg.LearningRate, o.LearningRate)
	if o.TargetKL > 0 {
		cfg.TargetKL = o.TargetKL
	}
	if o.NEpochs > 0 {
		cfg.Epochs = o.NEpochs
	}
	if o.BatchSize > 0 {
		cfg.BatchSize = o.BatchSize
	}
	if len(o.NetArch) > 0 {
		cfg.Hidden = append([]int(nil), o.NetArch...)
	}
	if len(o.CriticArch) > 0 {
		cfg.CriticHidden = append([]int(nil), o.CriticArch...)
	}
	if o.Steps > 0 {
		cfg.TotalTimesteps = o.Steps
	}
	if o.Envs > 0 {
		cfg.NumEnvs = o.Envs
	}
	if o.Residual != "" {
		cfg.FirstLogitBias = DefaultFirstLogitBias
	}
	override(&cfg.FirstLogitBias, o.FirstLogitBias)
	if err := cfg.Validate(); err != nil {
		return ppo.Config{}, command.Usagef("train: %v", err)
	}
	return cfg, nil
}

func prepare(o Options) (*setup, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	cfg, err := o.Config()
	if err != nil {
		return nil, err
	}
	s := &setup{o: o, cfg: cfg}
	if err := refuseOverwrite(o); err != nil {
		return nil, err
	}
	if err := probeDir(o.Out); err != nil {
		return nil, err
	}
	if o.Resume {
		if _, err := os.Stat(filepath.Join(o.Out, CheckpointFile)); err != nil {
			return nil, fmt.Errorf("train: -resume: %w", err)
		}
	}
	switch o.Env {
	case "cartpole":
		v, err := newCartPoleVec(s.cfg.NumEnvs)
		if err != nil {
			return nil, err
		}
		s.venv, s.spaces = v, CartPoleSpaces()
	case "streamscale":
		scen, err := env.ResolveScenario(o.Scenario, regfile.Reader(env.MaxScenarioFile))
		if err != nil {
			return nil, command.Usagef("train: -scenario: %v", err)
		}
		var ranges *env.PhysicsRanges
		if o.Randomize {
			r := env.DefaultRanges()
			ranges = &r
		}
		var reward *env.RewardConfig
		if o.RewardSpan != 0 {
			r := env.DefaultReward()
			r.SpanPerTask = o.RewardSpan
			reward = &r
		}
		sim, err := NewSimulator(scen, ranges, o.TrainPlacements, o.TrainTraces, o.ActionDeltas, o.ActionUtilization, reward)
		if err != nil {
			return nil, err
		}
		if ss, ok := sim.(simulator); ok {
			ss.workers = o.Threads
			sim = ss
		}
		if s.spaces, err = sim.Spaces(o.Profile); err != nil {
			return nil, err
		}
		if s.venv, err = sim.VecEnv(o.Profile, s.cfg.NumEnvs, o.Seed); err != nil {
			return nil, err
		}
		s.sim = sim
		if o.Residual != "" {
			if err := s.wrapResidual(scen); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// Run trains as o says, writing into o.Out and reporting on cio.Stdout
// (the summary) and cio.Stderr (a progress bar when cio.Terminal).
func Run(ctx context.Context, o Options, cio command.IO) error {
	_, err := runOne(ctx, o, cio)
	return err
}

// runOne is Run, returning the summary.
func runOne(ctx context.Context, o Options, cio command.IO) (Summary, error) {
	cio = cio.Fill()
	s, err := prepare(o)
	if err != nil {
		return Summary{}, err
	}
	r := &run{s: s, o: s.o, build: command.BuildInfo(), start: time.Now()}
	if err := r.buildTrainer(); err != nil {
		return Summary{}, err
	}
	if err := r.openLogs(cio); err != nil {
		return Summary{}, err
	}
	defer r.csv.Close()
	if err := r.train(ctx); err != nil {
		return Summary{}, err
	}
	wall := time.Since(r.start).Seconds()
	pol, best := r.sel.result(r.tr)
	sha, err := r.writeArtifact(pol, best)
	if err != nil {
		return Summary{}, err
	}
	sum, err := r.summarise(pol, sha, best, wall)
	if err != nil {
		return Summary{}, err
	}
	return sum, r.report(sum, cio.Stdout)
}

// run is the state of one training run between its steps.
type run struct {
	s     *setup
	o     Options
	build command.Build
	start time.Time

	tr         *ppo.Trainer
	resumeIter int
	prior      []progress.ParquetRow // rows of the run resumed from
	csv        *os.File
	parquet    bytes.Buffer
	pqLog      *progress.ParquetLogger
	loggers    ppo.Loggers
	sel        *selector
	rows       []ppo.Stats // this process's iterations, for the diagnostics
}

// Log implements ppo.Logger: every iteration goes to the progress files
// (and bar).
func (r *run) Log(st ppo.Stats) error {
	r.rows = append(r.rows, st)
	return r.loggers.Log(st)
}

// afterIteration is the trainer's hook: model selection, then the
// checkpoint. The best policy is saved before the checkpoint that
// follows it, so a resumed run always finds the selection it continues.
func (r *run) afterIteration(_ context.Context, t *ppo.Trainer, _ ppo.Stats) error {
	improved, err := r.sel.consider(t)
	if err != nil {
		return err
	}
	if improved {
		if err := r.sel.save(r.o.Out, r.s.cfg); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := t.WriteCheckpoint(&buf); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(r.o.Out, CheckpointFile), buf.Bytes())
}

// buildTrainer makes a fresh trainer, or with -resume restores it, the
// progress rows and the best-so-far policy from the checkpoint.
func (r *run) buildTrainer() error {
	r.sel = &selector{s: r.s}
	workers := r.o.Workers
	if workers == 0 && r.o.Threads == 1 {
		workers = 1
	}
	opts := ppo.Options{Workers: workers, Clock: time.Now, Logger: r, AfterIteration: r.afterIteration}
	if !r.o.Resume {
		tr, err := ppo.New(r.s.cfg, r.s.venv, opts)
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		r.tr = tr
		return nil
	}
	f, err := os.Open(filepath.Join(r.o.Out, CheckpointFile))
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	tr, err := ppo.Resume(r.s.cfg, r.s.venv, opts, f)
	f.Close()
	if err != nil {
		return fmt.Errorf("train: resuming: %w", err)
	}
	r.tr, r.resumeIter = tr, tr.Iteration()
	missing, err := trimCSV(filepath.Join(r.o.Out, CSVFile), r.resumeIter)
	if err != nil {
		return err
	}
	r.prior = readPriorParquet(filepath.Join(r.o.Out, ParquetFile), r.resumeIter)
	if slices.Contains(missing, "train/explained_variance_mc") {
		// Written before the metric existed: the column reads back as 0.
		for i := range r.prior {
			r.prior[i].ExplainedVarianceMC = math.NaN()
		}
	}
	return r.sel.restore(r.o.Out, r.s.cfg)
}

// openLogs opens progress.csv (appending when resuming) and sets up the
// Parquet rows and, on a terminal, the progress bar.
func (r *run) openLogs(cio command.IO) error {
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if !r.o.Resume {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(filepath.Join(r.o.Out, CSVFile), flags, 0o644)
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	r.csv = f
	fi, _ := f.Stat()
	r.pqLog = progress.NewParquetLogger(&r.parquet, r.prior)
	r.loggers = ppo.Loggers{progress.NewCSVLogger(f, fi == nil || fi.Size() == 0), r.pqLog}
	if r.o.Progress {
		r.loggers = append(r.loggers, progress.NewLine(cio.Stderr, r.o.prefix, r.s.cfg.Iterations(), r.s.cfg.Transitions()))
	}
	return nil
}

// train runs the remaining iterations and writes progress.parquet, also
// when training stopped early.
func (r *run) train(ctx context.Context) error {
	learnErr := r.tr.Learn(ctx)
	if err := r.pqLog.Close(); err != nil {
		return fmt.Errorf("train: %w", errors.Join(learnErr, err))
	}
	if err := writeAtomic(filepath.Join(r.o.Out, ParquetFile), r.parquet.Bytes()); err != nil && learnErr == nil {
		learnErr = err
	}
	if rows := r.pqLog.Rows(); learnErr == nil && len(rows) > 0 {
		var png bytes.Buffer
		if err := progress.WriteCurve(&png, rows); err != nil {
			return fmt.Errorf("train: %w", err)
		}
		if err := writeAtomic(filepath.Join(r.o.Out, progress.CurveFile), png.Bytes()); err != nil {
			return err
		}
	}
	if learnErr != nil {
		return fmt.Errorf("train: %w", learnErr)
	}
	return nil
}

// writeArtifact writes the selected policy and its card as
// policy.FileName.{safetensors,json} and returns the weights' SHA-256.
func (r *run) writeArtifact(pol *policy.Policy, best *float64) (string, error) {
	var wb bytes.Buffer
	sha, err := pol.WriteSafetensors(&wb)
	if err != nil {
		return "", err
	}
	card := ppo.NewCard(pol, r.s.cfg, sha)
	card.Name = filepath.Base(r.o.Out)
	card.Env, card.Spaces = r.o.Env, r.s.spaces
	if r.o.Env == "streamscale" {
		card.Profile, card.Scenario = r.o.Profile, r.o.Scenario
	}
	card.Transitions, card.GradientSteps = r.tr.Timesteps(), r.tr.GradientSteps()
	card.BestDevReward = best
	if r.s.residual != nil {
		card.Residual = &r.s.residual.info
	}
	card.Commit, card.GoVersion = r.build.Commit, r.build.GoVersion
	rec, err := json.Marshal(CardRecipe{Resolved: r.o.Resolved(r.s.cfg), ConfigFile: r.o.ConfigFile, ConfigSHA256: r.o.ConfigSHA256})
	if err != nil {
		return "", fmt.Errorf("train: %w", err)
	}
	card.Recipe = rec
	cb, err := json.MarshalIndent(card, "", "  ")
	if err != nil {
		return "", fmt.Errorf("train: %w", err)
	}
	if err := writeAtomic(r.policyPath(), wb.Bytes()); err != nil {
		return "", err
	}
	return sha, writeAtomic(filepath.Join(r.o.Out, policy.FileName+".json"), append(cb, '\n'))
}

func (r *run) policyPath() string { return filepath.Join(r.o.Out, policy.FileName+".safetensors") }

// summarise evaluates the policy (CartPole) and writes summary.json.
func (r *run) summarise(pol *policy.Policy, sha string, best *float64, wall float64) (Summary, error) {
	o, tr := r.o, r.tr
	sum := Summary{
		Env: o.Env, Seed: o.Seed, Transitions: tr.Timesteps(), Iterations: tr.Iteration(),
		Updates: tr.GradientSteps(), WallSeconds: round3(wall), PolicyPath: r.policyPath(), PolicySHA256: sha,
		BestDevReward: best, ConfigHash: r.s.cfg.Hash(), Build: r.build, Resumed: o.Resume,
	}
	if o.Env == "streamscale" {
		sum.Profile, sum.Scenario, sum.Randomize, sum.TrainPlacements = o.Profile, o.Scenario, o.Randomize, o.TrainPlacements
		if o.SelectLast {
			sum.Select = "last"
		}
		if o.ActionDeltas != ([5]float64{}) {
			sum.ActionDeltas = o.ActionDeltas[:]
		}
		if o.ActionUtilization != ([5]float64{}) {
			sum.ActionUtilization = o.ActionUtilization[:]
		}
		sum.RewardSpan = o.RewardSpan
		if o.TrainTraces != nil {
			parts := make([]string, len(o.TrainTraces))
			for i, v := range o.TrainTraces {
				parts[i] = v.String()
			}
			sum.TrainTraces = strings.Join(parts, ",")
		}
	}
	sum.GAELambda, sum.VFCoef, sum.NEpochs, sum.BatchSize = o.GAELambda, o.VFCoef, o.NEpochs, o.BatchSize
	sum.NetArch, sum.CriticArch = o.NetArch, o.CriticArch
	sum.TargetKL = o.TargetKL
	if o.LearningRate != nil {
		sum.LearningRate = o.LearningRate.String()
	}
	if wall > 0 {
		sum.SPS = math.Round(float64(tr.Timesteps()-resumeTimesteps(r.s.cfg, r.resumeIter)) / wall)
	}
	sum.NormObs, sum.NormReward = r.s.cfg.NormObs, r.s.cfg.NormReward
	sum.Recipe, sum.ConfigFile, sum.ConfigSHA256 = o.Resolved(r.s.cfg), o.ConfigFile, o.ConfigSHA256
	r.diagnose(&sum)
	if r.s.residual != nil {
		sum.Residual, sum.Objective, sum.ResidualContext = o.Residual, o.Objective, o.ResidualContext
		if o.objective != nil {
			sum.Lambda = ptr(r.s.residual.vec.Lambda())
		}
	}
	if r.s.sim != nil && r.s.residual == nil { // the critic's error needs the features (not yet for residual runs)
		rmse, rel, err := devValueError(r.s.sim, pol, r.s.spaces, o.Profile, o.Seed, r.s.cfg.Gamma)
		if err != nil {
			return Summary{}, fmt.Errorf("train: value error on dev episodes: %w", err)
		}
		sum.DevValueRMSE, sum.DevValueRelativeError = finite(rmse), finite(rel)
	}
	if o.Env == "cartpole" {
		mean, std, err := EvalCartPole(pol, o.Seed, EvalEpisodes)
		if err != nil {
			return Summary{}, err
		}
		sum.EvalEpisodes, sum.EvalMeanReturn, sum.EvalStdReturn = EvalEpisodes, &mean, &std
	}
	sb, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return Summary{}, fmt.Errorf("train: %w", err)
	}
	return sum, writeAtomic(filepath.Join(o.Out, SummaryFile), append(sb, '\n'))
}

// report prints the summary: as JSON with -json, else one line.
func (r *run) report(sum Summary, w io.Writer) error {
	if r.o.JSON {
		sb, err := json.MarshalIndent(sum, "", "  ")
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", sb)
		return err
	}
	line := fmt.Sprintf("train: %s seed %d: %d transitions, %d updates in %.1fs (%.0f sps); policy %s", r.o.Env, r.o.Seed, sum.Transitions, sum.Updates, sum.WallSeconds, sum.SPS, sum.PolicyPath)
	if sum.EvalMeanReturn != nil {
		line += fmt.Sprintf("; eval return %.1f ± %.1f over %d episodes", *sum.EvalMeanReturn, *sum.EvalStdReturn, EvalEpisodes)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// diagnose fills the learning diagnostics from the progress rows (those
// of the run resumed from first).
func (r *run) diagnose(sum *Summary) {
	ev := make([]float64, 0, len(r.prior)+len(r.rows))
	mc := make([]float64, 0, len(r.prior)+len(r.rows))
	for _, p := range r.prior {
		ev, mc = append(ev, p.ExplainedVariance), append(mc, p.ExplainedVarianceMC)
	}
	for _, st := range r.rows {
		ev, mc = append(ev, st.ExplainedVariance), append(mc, st.ExplainedVarianceMC)
	}
	if len(ev) == 0 {
		return
	}
	sum.ExplainedVarianceLastQuarter, sum.ExplainedVarianceFinal = lastQuarter(ev), finite(ev[len(ev)-1])
	sum.ExplainedVarianceMCLastQuarter, sum.ExplainedVarianceMCFinal = lastQuarter(mc), finite(mc[len(mc)-1])
	var ent, prob float64
	if len(r.rows) > 0 {
		ent, prob = r.rows[len(r.rows)-1].EntropyFraction, r.rows[len(r.rows)-1].ChosenActionProb
	} else {
		ent, prob = r.prior[len(r.prior)-1].EntropyFraction, r.prior[len(r.prior)-1].ChosenActionProb
	}
	sum.EntropyFractionFinal, sum.ChosenActionProbMean = finite(ent), finite(prob)
	if len(r.rows) > 0 {
		sum.EpRewMeanFinal = finite(r.rows[len(r.rows)-1].EpRewMean)
	} else {
		sum.EpRewMeanFinal = finite(r.prior[len(r.prior)-1].EpRewMean)
	}
}

// lastQuarter is the mean of the defined values among the last
// ⌈len/4⌉ of v, nil if none.
func lastQuarter(v []float64) *float64 {
	q := v[len(v)-(len(v)+3)/4:]
	var s float64
	var n int
	for _, x := range q {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return finite(s / float64(n))
}

// finite is &v, or nil for NaN and ±Inf (JSON null).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func resumeTimesteps(cfg ppo.Config, iter int) int { return iter * cfg.RolloutSize() }

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// writeAtomic writes b to path through a temporary file and a rename.
func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// trimCSV drops rows after iteration iter (logged after the checkpoint
// the run resumes from). A file whose header is not ppo.MetricNames (one
// written before a column was added) is rewritten in today's columns, a
// column it lacked left empty (NaN); missing lists those columns.
func trimCSV(path string, iter int) (missing []string, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	var header []string
	col := map[string]int{}
	var keep []string
	for i, l := range lines {
		if l == "" {
			continue
		}
		cells := strings.Split(strings.TrimRight(l, "\r\n"), ",")
		if i == 0 {
			header = cells
			for j, c := range cells {
				col[c] = j
			}
			for _, n := range ppo.MetricNames {
				if _, ok := col[n]; !ok {
					missing = append(missing, n)
				}
			}
			keep = append(keep, strings.Join(ppo.MetricNames, ",")+"\n")
			continue
		}
		var it int
		if j, ok := col["time/iterations"]; ok && j < len(cells) {
			fmt.Sscan(cells[j], &it)
		}
		if it > iter {
			continue
		}
		if len(missing) == 0 && slices.Equal(header, ppo.MetricNames) {
			keep = append(keep, l)
			continue
		}
		row := make([]string, len(ppo.MetricNames))
		for k, n := range ppo.MetricNames {
			if j, ok := col[n]; ok && j < len(cells) {
				row[k] = cells[j]
			}
		}
		keep = append(keep, strings.Join(row, ",")+"\n")
	}
	return missing, writeAtomic(path, []byte(strings.Join(keep, "")))
}

func readPriorParquet(path string, iter int) []progress.ParquetRow {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	rows, err := progress.ReadParquet(f, fi.Size())
	if err != nil {
		return nil
	}
	var keep []progress.ParquetRow
	for _, r := range rows {
		if int(r.Iterations) <= iter {
			keep = append(keep, r)
		}
	}
	return keep
}
