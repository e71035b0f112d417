package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"

	"streamscale/env"

	"streamscale/internal/command"
	"streamscale/ppo"
	"streamscale/train/run"
	"streamscale/train/simvec"
)

const synopsis = `usage: go run ./train [flags]

Trains a PPO policy on the streamscale simulator or on CartPole-v1 and
writes policy.{safetensors,json}, progress.{csv,parquet}, checkpoint.ckpt
and summary.json into -out.

Flags:`

// DefaultGCPercent is -gogc's default. A training run allocates ≈ 0.5 MB
// per minibatch (gorgonia's generic ops) over a live heap of ≈ 35 MB, so
// at Go's default of 100 it collects ≈ 30 times per ETL iteration
// (≈ 1% of its CPU); at 400, 7–8 times, with a heap of ≈ 175 MB.
const DefaultGCPercent = 400

// Main runs the train command with args (without the program name) and
// returns its exit status: 0 on success or -h, 2 for bad usage, 1 for any
// other error.
func Main(ctx context.Context, args []string, o command.IO) int {
	opts, err := parse(args, o)
	if err != nil {
		return command.Exit(err, o)
	}
	o = o.Fill()
	opts.Progress = opts.Progress || (o.Terminal && !opts.JSON)
	debug.SetGCPercent(opts.GCPercent)
	if opts.CPUProfile != "" {
		stop, err := startProfile(opts.CPUProfile)
		if err != nil {
			return command.Exit(err, o)
		}
		defer stop()
	}
	if opts.Seeds != nil {
		return command.Exit(run.RunSeeds(ctx, opts, o), o)
	}
	return command.Exit(run.Run(ctx, opts, o), o)
}

// MaxWidth bounds a hidden layer's width in -net-arch and -critic-arch.
const MaxWidth = 4096

// parseWidths reads hidden layer widths: one to eight comma-separated
// integers in [1, MaxWidth].
func parseWidths(s string) ([]int, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 8 {
		return nil, fmt.Errorf("%q has %d layers, want 1 to 8", s, len(parts))
	}
	w := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 || v > MaxWidth {
			return nil, fmt.Errorf("%q: layer %d is %q, want an integer width in [1, %d]", s, i, p, MaxWidth)
		}
		w[i] = v
	}
	return w, nil
}

// startProfile starts a CPU profile written to path; stop ends it.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("train: -cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("train: -cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// MaxSeeds bounds the seeds of one -seeds.
const MaxSeeds = 64

// ParseSeeds reads a -seeds list: comma-separated seeds or inclusive
// ranges A-B, e.g. "1,2,3", "1-5", "1-3,10"; at most MaxSeeds in all,
// none repeated, in the order given.
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	seen := map[uint64]bool{}
	add := func(v uint64) error {
		if seen[v] {
			return fmt.Errorf("%q repeats seed %d", s, v)
		}
		if len(out) == MaxSeeds {
			return fmt.Errorf("%q has more than %d seeds", s, MaxSeeds)
		}
		seen[v] = true
		out = append(out, v)
		return nil
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %q is not a seed (a non-negative integer) or a range A-B", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("%q: %q is not a range A-B with A ≤ B", s, part)
			}
			if b-a >= MaxSeeds {
				return nil, fmt.Errorf("%q has more than %d seeds", s, MaxSeeds)
			}
		}
		for v := a; ; v++ {
			if err := add(v); err != nil {
				return nil, err
			}
			if v == b {
				break
			}
		}
	}
	return out, nil
}

// applyRecipe reads the recipe file at path and gives fs every key the
// command line did not: first the [profiles.<p>] table of the profile
// trained (the -profile flag, else the recipe's profile key, else the
// flag's default), then the top level. A value is set through the flag
// itself, so it is checked exactly as on the command line.
func applyRecipe(fs *flag.FlagSet, path string, opts *run.Options) error {
	rf, err := run.ReadRecipe(path)
	if err != nil {
		return command.Usagef("%v", err)
	}
	profile := fs.Lookup("profile").Value.String()
	if !command.Set(fs, "profile") && rf.Recipe.Profile != nil {
		profile = *rf.Recipe.Profile
	}
	apply := func(r run.Recipe, where string) error {
		for _, kv := range r.Flags() {
			if command.Set(fs, kv[0]) { // on the command line, or in the profile's table
				continue
			}
			if err := fs.Set(kv[0], kv[1]); err != nil {
				return command.Usagef("train: -config %s: key %q%s: %v", path, kv[0], where, err)
			}
		}
		return nil
	}
	if t, ok := rf.Recipe.Profiles[profile]; ok {
		if err := apply(t, " ([profiles."+profile+"])"); err != nil {
			return err
		}
	}
	if err := apply(rf.Recipe, " (top level)"); err != nil {
		return err
	}
	opts.ConfigFile, opts.ConfigSHA256 = rf.Path, rf.SHA256
	return nil
}

// parse reads the flags into run.Options.
func parse(args []string, o command.IO) (run.Options, error) {
	var opts run.Options
	fs := command.NewFlagSet("train")
	fs.StringVar(&opts.Env, "env", "streamscale", "environment: streamscale or cartpole")
	fs.StringVar(&opts.Profile, "profile", "pred", "streamscale workload profile: pred or etl")
	fs.StringVar(&opts.Scenario, "scenario", env.Scenarios()[0], "streamscale simulator scenario: a physics preset ("+strings.Join(env.Scenarios(), " or ")+") or a scenario file (eval calibrate -out writes one)")
	fs.BoolVar(&opts.Randomize, "randomize", false, "domain randomisation: draw service CV, rate CV, jitter, metric noise and actuation delay per training episode from env.DefaultRanges() (streamscale; development episodes keep the preset)")
	fs.IntVar(&opts.TrainPlacements, "train-placements", 0, "training placements (streamscale): 0 = the paper's two (seeds 42, 37); N > 2 adds seeds 2001… (not the dev 1001–1003 or eval 101–110 ones)")
	sel := fs.String("select", "best-dev", "which policy to ship (streamscale): best-dev (the iterate with the best development reward) or last (the last iterate, as SB3 saves by default; skips the development episodes)")
	actionUtil := fs.String("action-utilization", "", "a target-utilization action set (streamscale), in place of the deltas: five comma-separated utilizations, 0 (hold) or in [0.05, 10]; choice i sizes a task to its observed allocation × offered load / u_i, as the threshold rule sizes (e.g. 0,0.9,0.7,0.5,0.3); an ablation, recorded in the policy")
	actionDeltas := fs.String("action-deltas", "", "the action set (streamscale): five comma-separated millicore changes, strictly increasing, the middle 0 (default: the paper's -500,-50,0,50,500); an ablation, recorded in the policy")
	fs.Float64Var(&opts.RewardSpan, "reward-span", 0, "R_resource's span in millicores per task (streamscale; env.RewardConfig.SpanPerTask, default 2000): the reward falls linearly from 1.5 at the minimum allocation to 0 at n·(minimum + span); an ablation, recorded in summary.json")
	trainTraces := fs.String("train-traces", "", "training workloads (streamscale), TRACE[:MULT],… (default: the paper's taxi-train:1,taxi-train:2); e.g. taxi-train:1,taxi-train:2,intel-train adds the held-out Intel windows; each on every training placement and in the development episodes")
	fs.Uint64Var(&opts.Seed, "seed", 284572, "root seed of every random stream")
	fs.IntVar(&opts.Steps, "steps", 0, "env steps to train for, rounded up to whole iterations (0: 500000 streamscale, 100000 cartpole)")
	fs.IntVar(&opts.Envs, "envs", 0, "parallel environments (0: 14 streamscale, 8 cartpole)")
	fs.StringVar(&opts.Out, "out", "", "output directory (default runs/<env>-seed<seed>)")
	fs.BoolVar(&opts.Resume, "resume", false, "continue from <out>/checkpoint.ckpt")
	fs.BoolVar(&opts.JSON, "json", false, "print the run summary as JSON on stdout")
	fs.IntVar(&opts.Workers, "workers", 0, "goroutines per update, 1 or 2 (0: automatic); results are identical")
	fs.BoolVar(&opts.NormObs, "norm-obs", false, "normalise observations by their running mean and variance (SB3 VecNormalize norm_obs; off in the paper)")
	fs.BoolVar(&opts.NormReward, "norm-reward", false, "scale rewards by the running std of the discounted return (SB3 VecNormalize norm_reward; off in the paper)")
	entCoef := fs.Float64("ent-coef", 0, "entropy bonus weight ent_coef (default: 0.05 streamscale, 0 cartpole)")
	clipVF := fs.Float64("clip-range-vf", 0, "value clip clip_range_vf, 0 disables (default: 0.2 streamscale, 0 cartpole)")
	fs.StringVar(&opts.CPUProfile, "cpuprofile", "", "write a CPU profile of the run to this file (diagnostics; does not change results)")
	fs.IntVar(&opts.GCPercent, "gogc", DefaultGCPercent, "garbage collector target heap growth in percent (as GOGC; Go's default is 100); does not change results")
	gamma := fs.Float64("gamma", 0, "discount factor γ in (0, 1] (default: 0.995 streamscale, 0.98 cartpole)")
	lambda := fs.Float64("gae-lambda", 0, "GAE λ in [0, 1] (SB3 gae_lambda; default: 0.95 streamscale, 0.8 cartpole)")
	vfCoef := fs.Float64("vf-coef", 0, "value loss weight vf_coef ≥ 0 (default: 0.5)")
	lr := fs.String("learning-rate", "", "Adam step size learning_rate: a number (constant), lin_X (rl-zoo: X decaying linearly to 0 at the end) or A..B (linear from A to B) (default: 3e-4 streamscale, lin_1e-3 cartpole)")
	fs.IntVar(&opts.NEpochs, "n-epochs", 0, "passes over each rollout n_epochs ≥ 1 (default: 20)")
	fs.Float64Var(&opts.TargetKL, "target-kl", 0, "stop an update early, as SB3's target_kl: at the first minibatch whose approximate KL from the rollout policy exceeds 1.5 × this, a number in [0, 10] (default: 0, off)")
	fs.IntVar(&opts.BatchSize, "batch-size", 0, "minibatch size batch_size, 2 to the rollout size (default: 256)")
	netArch := fs.String("net-arch", "", "hidden layer widths of the actor and the critic, comma-separated, e.g. 128,128 (SB3 net_arch; default: 64,64)")
	criticArch := fs.String("critic-arch", "", "hidden layer widths of the critic alone, comma-separated, e.g. 256,256 (SB3 net_arch=dict(vf=…); default: -net-arch's)")
	fs.StringVar(&opts.Residual, "residual", "", "train a residual policy over this base rule (streamscale): per task, follow the rule's target, scale it by 0.85, 1.15 or 1.35, or hold (agents/residual); a rule spec as eval takes it, e.g. threshold:measured:target=0.7:tol=0.1:window=10 or flink:target=0.7:window=10:catchup=30; recorded in the policy card")
	fs.StringVar(&opts.Objective, "objective", "", "with -residual: a constrained objective in place of the seven-term reward, lagrangian[:budget=B][:lambda=L][:lr=E] (minimise CPU with at most a share B of violating steps; a learned multiplier, default budget 0.01, λ 1, lr 20)")
	fs.StringVar(&opts.ResidualContext, "residual-context", "", "with -residual: temporal features the policy observes beside the rule's target: \"\", trend (per task the input rate's one-step change, a fast-minus-slow EWMA trend and the pending move of the last target issued) or stack:K (per task the input rate, offered load, queue and allocation of the K-1 previous observations, K in [2, 8]); agents/residual; recorded in the policy card")
	firstBias := fs.Float64("first-logit-bias", 0, "with -residual: initial bias of the follow logit (default 2: follow starts at probability 0.65)")
	config := fs.String("config", "", "a recipe file (TOML, at most 64 KiB): keys are the recipe flags' names (see configs/README.md), [profiles.pred] and [profiles.etl] tables the keys of one profile; flags given on the command line win; recorded with its SHA-256 in summary.json and the policy card")
	fs.BoolVar(&opts.Force, "force", false, "train into an -out that already holds a policy (policy.json or policy.safetensors), overwriting it")
	progress := fs.Bool("progress", false, "print a progress line per iteration on stderr (timesteps, fps, mean return, explained variance, entropy, ETA) also when stderr is not a terminal or with -json")
	seedList := fs.String("seeds", "", "train several seeds of one recipe, e.g. 1,2,3 or 1-5: each into <out>/seed-<n>/ (as -seed n would), at most GOMAXPROCS at once, and <out>/seeds.json across them")
	if err := command.Parse(fs, synopsis, args, o); err != nil {
		return run.Options{}, err
	}
	if opts.GCPercent < 1 {
		return run.Options{}, command.Usagef("train: -gogc %d, want ≥ 1", opts.GCPercent)
	}
	if *progress {
		opts.Progress = true
	}
	if command.Set(fs, "seeds") {
		if command.Set(fs, "seed") {
			return run.Options{}, command.Usagef("train: -seed and -seeds: give one")
		}
		seeds, err := ParseSeeds(*seedList)
		if err != nil {
			return run.Options{}, command.Usagef("train: -seeds: %v", err)
		}
		opts.Seeds = seeds
	}
	if *config != "" {
		if err := applyRecipe(fs, *config, &opts); err != nil {
			return run.Options{}, err
		}
	}
	if command.Set(fs, "first-logit-bias") {
		opts.FirstLogitBias = firstBias
	}
	if command.Set(fs, "ent-coef") {
		opts.EntCoef = entCoef
	}
	if command.Set(fs, "clip-range-vf") {
		opts.ClipRangeVF = clipVF
	}
	if command.Set(fs, "gamma") {
		if !(*gamma > 0 && *gamma <= 1) {
			return run.Options{}, command.Usagef("train: -gamma %v, want a number in (0, 1]", *gamma)
		}
		opts.Gamma = gamma
	}
	if command.Set(fs, "gae-lambda") {
		if !(*lambda >= 0 && *lambda <= 1) {
			return run.Options{}, command.Usagef("train: -gae-lambda %v, want a number in [0, 1]", *lambda)
		}
		opts.GAELambda = lambda
	}
	if command.Set(fs, "vf-coef") {
		if !(*vfCoef >= 0 && *vfCoef <= 1e6) {
			return run.Options{}, command.Usagef("train: -vf-coef %v, want a number in [0, 1e6]", *vfCoef)
		}
		opts.VFCoef = vfCoef
	}
	if command.Set(fs, "learning-rate") {
		s, err := ppo.ParseSchedule(*lr)
		if err != nil {
			return run.Options{}, command.Usagef("train: -learning-rate: %v", err)
		}
		opts.LearningRate = &s
	}
	if !(opts.TargetKL >= 0 && opts.TargetKL <= 10) {
		return run.Options{}, command.Usagef("train: -target-kl %v, want a number in [0, 10] (0 is off)", opts.TargetKL)
	}
	if command.Set(fs, "n-epochs") && opts.NEpochs < 1 {
		return run.Options{}, command.Usagef("train: -n-epochs %d, want ≥ 1", opts.NEpochs)
	}
	if command.Set(fs, "batch-size") && opts.BatchSize < 2 {
		return run.Options{}, command.Usagef("train: -batch-size %d, want ≥ 2", opts.BatchSize)
	}
	if command.Set(fs, "net-arch") {
		w, err := parseWidths(*netArch)
		if err != nil {
			return run.Options{}, command.Usagef("train: -net-arch: %v", err)
		}
		opts.NetArch = w
	}
	if command.Set(fs, "critic-arch") {
		w, err := parseWidths(*criticArch)
		if err != nil {
			return run.Options{}, command.Usagef("train: -critic-arch: %v", err)
		}
		opts.CriticArch = w
	}
	switch *sel {
	case "best-dev":
	case "last":
		opts.SelectLast = true
	default:
		return run.Options{}, command.Usagef("train: -select %q, want best-dev or last", *sel)
	}
	if command.Set(fs, "train-traces") {
		v, err := simvec.ParseTraceVariants(*trainTraces)
		if err != nil {
			return run.Options{}, command.Usagef("train: -train-traces: %v", err)
		}
		opts.TrainTraces = v
	}
	if command.Set(fs, "action-deltas") {
		d, err := env.ParseActionDeltas(*actionDeltas, 500, 10000)
		if err != nil {
			return run.Options{}, command.Usagef("train: -action-deltas: %v", err)
		}
		opts.ActionDeltas = d
	}
	if command.Set(fs, "action-utilization") {
		u, err := env.ParseActionUtilization(*actionUtil)
		if err != nil {
			return run.Options{}, command.Usagef("train: -action-utilization: %v", err)
		}
		opts.ActionUtilization = u
	}
	if command.Set(fs, "reward-span") && !(opts.RewardSpan > 0 && opts.RewardSpan <= 1e6) {
		return run.Options{}, command.Usagef("train: -reward-span %v, want millicores per task in (0, 1e6]", opts.RewardSpan)
	}
	opts.ProfileSet = command.Set(fs, "profile")
	opts.ScenarioSet = command.Set(fs, "scenario")
	return opts, nil
}
