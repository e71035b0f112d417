package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"streamscale/env"
	"streamscale/eval/controllers"
	"streamscale/eval/live"
	"streamscale/eval/liveexp"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/eval/simgap"
	"streamscale/internal/command"
	"streamscale/serve/runtime/ops"
)

// liveWorkerCmd is the worker process of `eval live` (the local provider
// execs this binary with "live-worker"); not for direct use.
func liveWorkerCmd(ctx context.Context, args []string, o Options) error {
	return live.RunWorker(ctx, args, o.Env, o.Stderr)
}

func liveCmd(ctx context.Context, args []string, o Options) error {
	return liveCommand(ctx, "eval live", false, args, o)
}

// simgapCmd is `eval simgap`: `eval live`, and each controller also in the
// simulator on the same trace slice, side by side.
func simgapCmd(ctx context.Context, args []string, o Options) error {
	return liveCommand(ctx, "eval simgap", true, args, o)
}

// liveFlags are the flags of eval live and eval simgap.
type liveFlags struct {
	fs                                          *flag.FlagSet
	profile, ctrl, ctrls, candidate, trace, dir *string
	start, workers, nPlace, maxWorkers, taskMC  *int
	budget, hseeds                              *int
	scale, dur, warmup                          *time.Duration
	mult, cpuScale, peak, sloMS                 *float64
	seed, placement                             *uint64
	policies, api, serveBin, out                *string
	asJSON, verbose, obsLog                     *bool
	scenario, baseline, simStep                 *string
	plannerAddr, plannerToken, costModel        *string
	budgetProcess                               budgetMode
}

func newLiveFlags(name string) *liveFlags {
	fs := command.NewFlagSet(name)
	f := &liveFlags{fs: fs}
	f.profile = fs.String("profile", "pred", "application profile: pred or etl (vertical), or wc, sd, aa, pl, nwm, syn (horizontal: the planner's placement loop)")
	f.ctrl = fs.String("controller", "", "controller: static:N, threshold, vrebalance, ppo, ppo:DIR; for a horizontal profile clasp, faasflow, zhang24, ds2, hpa, faasflow-sp, zhang24-sp, clasp-paper, clasp-h90 or fixed:N (or -controllers)")
	f.ctrls = fs.String("controllers", "", "comma-separated controllers run in turn on the same slice and seed (paired live runs)")
	f.candidate = fs.String("candidate", "", "vertical profiles with several -controllers: the paired candidate, one of them (default: the first PPO controller listed, else the first)")
	f.trace = fs.String("trace", "taxi", "workload: taxi, taxi-train, intel, or a .csv/.parquet trace file")
	f.dir = fs.String("traces", "", "trace data directory (default env STREAMSCALE_TRACES or the built-in one)")
	f.start = fs.Int("start", 0, "first trace point replayed")
	f.scale = fs.Duration("time-scale", 250*time.Millisecond, "wall time of one trace point and one control interval (the simulator's 1 s)")
	f.dur = fs.Duration("duration", 15*time.Second, "how long the load runs per controller (intervals = duration / time-scale)")
	// The default multiplier puts the minimum allocation clearly past
	// saturation and leaves a generous one far from it: taxi points 0–59
	// × 0.75 offer ≈ 2,960 inputs/s, and the costliest operators spend
	// 2.1–2.5 µs per input at 5 live mc (eval calibrate's low phase,
	// pred SenMLParse 2.13, etl MQTTPublish and TableInsert 2.47), so
	// static:500 runs at ρ ≈ 1.3–1.5 and static:4000 at ρ ≈ 0.2. The
	// earlier 0.5 was chosen while the workers' CFS quota charged a
	// throttled task's wait (package cfs) and halved its capacity at 5
	// mc; with the quota charged as the kernel does, 0.5 left pred's
	// minimum at ρ ≈ 0.85, where a run violated 8–100% by placement.
	f.mult = fs.Float64("rate-mult", 0.75, "arrival-rate multiplier, > 0")
	f.cpuScale = fs.Float64("cpu-scale", 0.01, "live CFS millicores given per scenario millicore")
	f.warmup = fs.Duration("warmup", 2*time.Second, "vertical profiles: load run before each controller's recorded intervals, every task at its maximum, nothing recorded (the workers' cold start; 0: none)")
	f.workers = fs.Int("workers", 1, "worker processes")
	f.seed = fs.Uint64("seed", 1, "seed of the input source and the controllers")
	f.placement = fs.Uint64("placement-seed", 101, "seed of the (first) scenario task placement (the servers the controllers see)")
	f.nPlace = fs.Int("placements", 1, "number of placements, seeds -placement-seed, -placement-seed+1, …; every controller runs on each")
	f.policies = fs.String("policies", "policies/calibrated", "directory of trained PPO policies: <dir>/<profile>/policy.json and .safetensors")
	f.api = fs.String("api", "", "policy endpoint URL for ppo (default: serve the policies in this process on a free loopback port)")
	f.serveBin = fs.String("serve-bin", "", "a built serve binary to start the policy endpoint with (serve api, in its own process group, stopped with the run) instead of serving in this process")
	f.out = fs.String("out", "out/live", "output directory (created if missing)")
	f.asJSON = fs.Bool("json", false, "print summary.json to stdout")
	f.verbose = fs.Bool("v", false, "log the runtime's events to stderr")
	f.scenario = fs.String("scenario", env.Scenarios()[0], "with simgap: "+scenarioUsage)
	f.baseline = fs.String("baseline", "", "with simgap: a second scenario every controller is also simulated in (the gap before a calibration, e.g. realistic)")
	f.obsLog = fs.Bool("obs", false, "with simgap: record every observation the controllers are given in both worlds ("+simgap.FileObservations+") and report the features that differ most")
	f.simStep = fs.String("sim-step", simStepInterval, "with simgap: the simulated step's length in -scenario: "+simStepInterval+" (the live interval, -time-scale), "+simStepScenario+" (the file's step_seconds, 1 s unless it sets one) or a duration 10ms..1m; -baseline keeps its file's")
	f.maxWorkers = fs.Int("max-workers", 8, "horizontal profiles: most workers the placement controller may use")
	f.taskMC = fs.Int("task-mc", 1000, "horizontal profiles: CFS quota of every task in every worker, millicores (the worker capacity scaled)")
	f.budget = fs.Int("worker-budget", 0, "horizontal profiles: CPU budget, millicores, that every worker's tasks share on top of -task-mc (a worker's budget W in CLASP's model; 0: none)")
	fs.Var(&f.budgetProcess, "worker-budget-mode", "horizontal profiles: "+budgetModeHelp)
	f.peak = fs.Float64("peak", 200, "horizontal profiles with -trace burst or gradual: inputs/s at 100% of the CLASP load mode")
	f.sloMS = fs.Float64("slo-ms", 1000, "horizontal profiles: the p95 an interval must stay under, ms")
	f.hseeds = fs.Int("seeds", 1, "horizontal profiles: seeds -seed … -seed+N-1, every controller on each (the pairs of the paired verdicts)")
	f.plannerAddr = fs.String("planner", "", "attach to a running planner service's control API at HOST:PORT (serve planner -serve) instead of starting a planner and workers here")
	f.plannerToken = fs.String("planner-token", "", "the planner service's token (default $"+live.TokenEnv+")")
	f.costModel = fs.String("cost-model", "", costModelUsage)
	return f
}

// liveCommand is eval live and eval simgap: the flags, the experiment
// (liveexp.Run, or hlive for a horizontal profile) and its files.
func liveCommand(ctx context.Context, name string, simgapOn bool, args []string, o Options) error {
	f := newLiveFlags(name)
	if err := parseFlags(f.fs, args, o); err != nil {
		return err
	}
	if *f.plannerAddr != "" && *f.plannerToken == "" {
		*f.plannerToken = o.Env(live.TokenEnv)
	}
	if isHorizontalProfile(*f.profile) {
		return f.horizontal(ctx, name, simgapOn, o)
	}
	cfg, candidate, err := f.config(name, simgapOn, o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*f.out, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	var uptime []string
	if u := hostLoad(); u != "" {
		uptime = append(uptime, "before: "+u)
	}
	res, err := liveexp.Run(ctx, cfg)
	if errors.Is(err, liveexp.ErrController) {
		return usageError(err)
	}
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if err := writeLiveOutputs(*f.out, cfg, res, candidate); err != nil {
		return err
	}
	if u := hostLoad(); u != "" {
		uptime = append(uptime, "after: "+u)
	}
	res.Summary.Uptime = append(uptime[:0:0], uptime...)
	b, err := report.MarshalJSON(res.Summary)
	if err != nil {
		return err
	}
	md := liveexp.Markdown(res.Summary)
	for _, file := range []struct {
		name string
		b    []byte
	}{{FileSummary, b}, {FileReport, md}} {
		if err := os.WriteFile(filepath.Join(*f.out, file.name), file.b, 0o644); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	if *f.asJSON {
		_, err = o.Stdout.Write(b)
		return err
	}
	_, err = o.Stdout.Write(md)
	return err
}

// horizontal runs a horizontal profile's eval live (hlive).
func (f *liveFlags) horizontal(ctx context.Context, name string, simgapOn bool, o Options) error {
	if simgapOn {
		return usagef("%s: profile %s is horizontal; simgap compares vertical controllers (pred, etl)", name, *f.profile)
	}
	if err := checkRateMult(*f.mult); err != nil {
		return err
	}
	if err := f.checkCommon(); err != nil {
		return err
	}
	if *f.candidate != "" {
		return usagef("eval: -candidate applies to vertical profiles (pred, etl)")
	}
	set := explicit(f.fs)
	hf := hliveFlags{profile: *f.profile, trace: *f.trace, dir: *f.dir, out: *f.out, scale: *f.scale, dur: *f.dur, scaleSet: set["time-scale"],
		durSet: set["duration"], multSet: set["rate-mult"], mult: *f.mult, peak: *f.peak, sloMS: *f.sloMS, workers: *f.workers, maxWorkers: *f.maxWorkers,
		taskMC: *f.taskMC, budget: *f.budget, budgetProcess: f.budgetProcess, seed: *f.seed, seeds: *f.hseeds, asJSON: *f.asJSON, verbose: *f.verbose,
		planner: *f.plannerAddr, plannerToken: *f.plannerToken, costModel: *f.costModel}
	specs, err := f.specs()
	if err != nil {
		return err
	}
	hf.specs = specs
	return hlive(ctx, hf, o)
}

// checkCommon checks the flags both kinds of profile share.
func (f *liveFlags) checkCommon() error {
	switch {
	case (*f.ctrl == "") == (*f.ctrls == ""):
		return usagef("eval: give one of -controller and -controllers")
	case *f.scale < 10*time.Millisecond || *f.scale > time.Minute:
		return usagef("eval: -time-scale %v, want 10ms..1m", *f.scale)
	case *f.dur < *f.scale || *f.dur > 24*time.Hour:
		return usagef("eval: -duration %v, want at least one -time-scale (%v) and at most 24h", *f.dur, *f.scale)
	case *f.workers < 1 || *f.workers > 16:
		return usagef("eval: -workers %d, want 1..16", *f.workers)
	case *f.out == "":
		return usagef("eval: -out is empty")
	}
	return nil
}

// specs is -controller or -controllers as a list.
func (f *liveFlags) specs() ([]string, error) {
	if *f.ctrls != "" {
		return splitList("controllers", *f.ctrls)
	}
	return []string{*f.ctrl}, nil
}

// checkVertical checks the flags of a vertical profile.
func (f *liveFlags) checkVertical(name string, simgapOn bool) error {
	set := explicit(f.fs)
	switch {
	case set["seeds"]:
		return usagef("%s: -seeds is for horizontal profiles; vertical runs are paired by -placements", name)
	case *f.costModel != "":
		return usagef("eval: -cost-model applies to horizontal profiles (CLASP's planners), not %s", *f.profile)
	case *f.baseline != "" && !simgapOn:
		return usagef("eval: -baseline applies only to eval simgap")
	case set["sim-step"] && !simgapOn:
		return usagef("eval: -sim-step applies only to eval simgap")
	case *f.obsLog && !simgapOn:
		return usagef("eval: -obs applies only to eval simgap")
	}
	for _, check := range []func() error{func() error { return checkProfile(*f.profile) }, func() error { return checkTrace(*f.trace) },
		func() error { return checkRateMult(*f.mult) }, f.checkCommon} {
		if err := check(); err != nil {
			return err
		}
	}
	switch {
	case !(*f.cpuScale > 0) || *f.cpuScale > 1000:
		return usagef("eval: -cpu-scale %v, want > 0 and ≤ 1000", *f.cpuScale)
	case *f.start < 0:
		return usagef("eval: -start %d, want ≥ 0", *f.start)
	case *f.warmup < 0 || *f.warmup > time.Hour:
		return usagef("eval: -warmup %v, want 0..1h", *f.warmup)
	case *f.nPlace < 1 || *f.nPlace > 100:
		return usagef("eval: -placements %d, want 1..100", *f.nPlace)
	}
	return nil
}

// simConfig is simgap's simulated half from -scenario, -baseline,
// -sim-step and -obs (nil without simgap).
func (f *liveFlags) simConfig(simgapOn bool) (*liveexp.SimConfig, error) {
	scen, err := resolveScenario("scenario", *f.scenario)
	if err != nil || !simgapOn {
		return nil, err
	}
	if err := applySimStep(*f.simStep, *f.scale, &scen); err != nil {
		return nil, err
	}
	s := &liveexp.SimConfig{Scenario: scen, ScenarioName: *f.scenario, Observe: *f.obsLog}
	if *f.baseline != "" {
		b, err := resolveScenario("baseline", *f.baseline)
		if err != nil {
			return nil, err
		}
		s.Baseline, s.BaselineName = &b, *f.baseline
	}
	return s, nil
}

// parseControllers parses the vertical controllers, refusing horizontal
// ones and sampled PPO, and the candidate.
func (f *liveFlags) parseControllers() ([]controllers.Spec, []runner.Factory, string, error) {
	specs, err := f.specs()
	if err != nil {
		return nil, nil, "", err
	}
	reg := controllers.New(controllers.Options{PoliciesDir: *f.policies})
	var parsed []controllers.Spec
	var facs []runner.Factory
	for _, s := range specs {
		sp, err := reg.Parse(s)
		if err != nil {
			return nil, nil, "", usageError(err)
		}
		if sp.Horizontal() {
			return nil, nil, "", usagef("eval: controller %s is horizontal; eval live runs vertical controllers (static, threshold, vrebalance, ppo)", sp)
		}
		if strings.HasPrefix(sp.String(), "ppo-sample") {
			return nil, nil, "", usagef("eval: controller %s: live PPO is asked through the endpoint by argmax; use ppo or ppo:DIR", sp)
		}
		parsed, facs = append(parsed, sp), append(facs, sp)
	}
	cand := liveexp.DefaultCandidate(facs)
	if *f.candidate != "" {
		c, err := reg.Parse(*f.candidate)
		if err != nil {
			return nil, nil, "", usageError(err)
		}
		if !slices.ContainsFunc(facs, func(x runner.Factory) bool { return x.String() == c.String() }) {
			return nil, nil, "", usagef("eval: -candidate %s is not one of the controllers %v", c, specs)
		}
		cand = c.String()
	}
	return parsed, facs, cand, nil
}

// config checks the vertical flags and builds the experiment; every
// scenario and controller is checked before any run.
func (f *liveFlags) config(name string, simgapOn bool, o Options) (liveexp.Config, string, error) {
	if err := f.checkVertical(name, simgapOn); err != nil {
		return liveexp.Config{}, "", err
	}
	sim, err := f.simConfig(simgapOn)
	if err != nil {
		return liveexp.Config{}, "", err
	}
	parsed, facs, cand, err := f.parseControllers()
	if err != nil {
		return liveexp.Config{}, "", err
	}
	tr, err := loadTrace(*f.trace, *f.dir, *f.mult, *f.seed, o)
	if err != nil {
		return liveexp.Config{}, "", err
	}
	if *f.start > 0 { // the slice replayed, from its first point
		c := make([]float64, tr.Len())
		for i := range c {
			c[i] = tr.Counts[(*f.start+i)%tr.Len()]
		}
		tr.Counts = c
	}
	app, err := ops.AppByName(*f.profile)
	if err != nil {
		return liveexp.Config{}, "", usageError(err)
	}
	n := int(*f.dur / *f.scale)
	cfg := liveexp.Config{Profile: *f.profile, TraceName: *f.trace, TraceSource: tr.Origin(), Trace: tr, TraceStart: *f.start, App: app,
		Controllers: facs, Step: *f.scale, Intervals: n, Warmup: int((*f.warmup + *f.scale/2) / *f.scale), Seed: *f.seed, Workers: *f.workers,
		CPUScale: *f.cpuScale, RateMult: *f.mult, Policies: *f.policies, API: *f.api, ServeBin: *f.serveBin,
		Planner: *f.plannerAddr, PlannerToken: *f.plannerToken, WorkerArgs: []string{"live-worker"}, Sim: sim, Progress: o.Stderr,
		Build: command.Build{Commit: o.Commit, GoVersion: o.GoVersion}}
	if *f.verbose {
		cfg.Log = o.Stderr
	}
	if cfg.Scenarios, cfg.PlacementSeeds, err = f.placements(tr, n, sim, parsed); err != nil {
		return liveexp.Config{}, "", err
	}
	return cfg, cand, nil
}

// placements builds and checks every placement's edge scenario: the
// simulated scenarios too with simgap (a per-task hop naming a task of
// another profile, a delay longer than the run), and every controller on
// it (a missing policy), so that a bad flag fails before any live run.
// With simgap the live controllers see the scenario's measured demands
// (the observation's demand feature), as the simulated ones do.
func (f *liveFlags) placements(tr env.Workload, n int, sim *liveexp.SimConfig, parsed []controllers.Spec) ([]env.Config, []uint64, error) {
	var demand *env.ScenarioDemand
	var physics []env.Physics
	if sim != nil {
		demand = sim.Scenario.Demand
		physics = append(physics, sim.Scenario.Physics)
		if sim.Baseline != nil {
			physics = append(physics, sim.Baseline.Physics)
		}
	}
	var scs []env.Config
	var seeds []uint64
	for i := range *f.nPlace {
		ps := *f.placement + uint64(i)
		sc, err := runner.Config(runner.Spec{Profile: *f.profile, Workload: tr, PlacementSeed: ps, Steps: n, Demand: demand})
		if err != nil {
			return nil, nil, usageError(err)
		}
		if err := checkScenario(sc); err != nil {
			return nil, nil, err
		}
		for _, ph := range physics {
			c := sc
			if err := (env.Scenario{Physics: ph}).Apply(&c); err != nil {
				return nil, nil, usageError(err)
			}
			if err := checkScenario(c); err != nil {
				return nil, nil, err
			}
		}
		for _, sp := range parsed {
			if err := sp.Check(sc); err != nil {
				return nil, nil, usageError(err)
			}
		}
		scs, seeds = append(scs, sc), append(seeds, ps)
	}
	return scs, seeds, nil
}

// writeLiveOutputs writes intervals.parquet, and with simgap the figures
// and observations.parquet, and with several controllers paired.json,
// paired.md and their figures.
func writeLiveOutputs(dir string, cfg liveexp.Config, res liveexp.Output, candidate string) error {
	if err := writeLiveIntervals(filepath.Join(dir, FileIntervals), res.Results); err != nil {
		return err
	}
	if cfg.Sim != nil {
		if _, err := simgap.Figures(dir, res.Results); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	if res.FeatureNames != nil {
		if err := writeObservations(filepath.Join(dir, simgap.FileObservations), res.FeatureNames, res.Observations); err != nil {
			return err
		}
	}
	if len(cfg.Controllers) < 2 {
		return nil
	}
	psum, series, err := liveexp.Paired(cfg, res, candidate)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if _, err := writeSummaryAs(dir, "paired.json", psum); err != nil {
		return err
	}
	return writeJudgedReport(dir, "paired.md", psum, series)
}

// writeObservations writes observations.parquet to path.
func writeObservations(path string, names []string, runs []simgap.ObsRun) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	bw := bufio.NewWriter(f)
	err = simgap.WriteObservations(bw, names, runs)
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("eval: writing %s: %w", path, err)
	}
	return nil
}

// writeLiveIntervals writes every run's intervals to one Parquet file (the
// schema of `eval paired`'s intervals.parquet).
func writeLiveIntervals(path string, rs []runner.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	bw := bufio.NewWriter(f)
	iw := report.NewIntervalWriter(bw)
	for _, r := range rs {
		if err = iw.Write(r); err != nil {
			break
		}
	}
	if err == nil {
		err = iw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("eval: %w", cerr)
	}
	return err
}

// -sim-step's named values.
const (
	simStepInterval = "interval"
	simStepScenario = "scenario"
)

// applySimStep sets the simulated step's length of scen from -sim-step:
// the live interval scale, the scenario's own (1 s unless it sets
// step_seconds), or a duration. The default is the live interval because
// a live interval replays one trace point at the point's per-second rate
// for scale of wall time: a simulated step of 1 s builds four times the
// backlog of a 250 ms live interval in an overloaded interval
// (env.Physics.StepSeconds), which the start of a run shows. Steady-state
// latencies and rates do not depend on it. -baseline is simulated as its
// file says (the simulator before a calibration, with the paper's 1 s
// step unless the file sets one), so `-baseline` naming the -scenario file
// is the ablation of the step length on the same live runs.
func applySimStep(v string, scale time.Duration, scen *env.Scenario) error {
	var L float64
	switch v {
	case simStepScenario:
		return nil
	case simStepInterval:
		L = scale.Seconds()
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Millisecond || d > time.Minute {
			return usagef("eval: -sim-step %q, want %s, %s or a duration 10ms..1m", v, simStepInterval, simStepScenario)
		}
		L = d.Seconds()
	}
	if L == 1 {
		L = 0 // the one-second step is the zero value (same bytes as before the option)
	}
	scen.Physics.StepSeconds = L
	return nil
}
