package cli

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/eval/controllers"
	"streamscale/eval/live"
	"streamscale/eval/paired"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/internal/command"
	"streamscale/serve/client"
	"streamscale/serve/runtime/ops"
	"streamscale/traces"
)

// LiveRun is one controller's live run in summary.json: its key, the
// run-level record (runner.Summary: violation_rate, mean_p95_ms,
// mean_cpu_millicores, mean_throughput, …) and what the live run adds
// (live.Info: lost, inputs, control failures, …).
type LiveRun struct {
	runner.Key
	runner.Summary
	live.Info
	Placement        []int  `json:"placement"` // server of each task in the scenario
	TrajectorySHA256 string `json:"trajectory_sha256"`
	// MeanTaskCPU is each task's mean applied allocation, scenario
	// millicores (eval simgap: where the CPU of the two worlds differs).
	MeanTaskCPU []float64 `json:"mean_task_cpu_millicores,omitempty"`
}

// meanTaskCPU is each task's mean applied allocation over r's intervals.
func meanTaskCPU(r runner.Result) []float64 {
	var out []float64
	for _, iv := range r.Intervals {
		if out == nil {
			out = make([]float64, len(iv.Applied))
		}
		for k, a := range iv.Applied {
			if k < len(out) {
				out[k] += a / float64(len(r.Intervals))
			}
		}
	}
	return out
}

// LiveSummary is summary.json of `eval live`: the configuration, the
// provenance and one LiveRun per controller, in the order run. Live runs
// are not reproducible (real time on a shared machine); the seed and the
// configuration are recorded so a rerun is the same experiment.
type LiveSummary struct {
	Profile     string  `json:"profile"`
	Trace       string  `json:"trace"`
	TraceSource string  `json:"trace_source"`
	TraceStart  int     `json:"trace_start"`
	Intervals   int     `json:"intervals"`
	TimeScaleS  float64 `json:"time_scale_s"`
	RateMult    float64 `json:"rate_mult"`
	CPUScale    float64 `json:"cpu_scale"`
	// WarmupIntervals ran before every controller's recorded intervals
	// (live.Config.Warmup).
	WarmupIntervals int       `json:"warmup_intervals"`
	Workers         int       `json:"workers"`
	Seed            uint64    `json:"seed"`
	PlacementSeeds  []uint64  `json:"placement_seeds"`
	SLOMS           float64   `json:"slo_ms"`
	Tasks           []string  `json:"tasks"`
	API             string    `json:"api,omitempty"`
	Runs            []LiveRun `json:"runs"`
	// Sim holds, for `eval simgap`, each controller's simulated run on the
	// same slice (same order as Runs), and SimScenario its physics preset.
	Sim         []LiveRun `json:"sim,omitempty"`
	SimScenario string    `json:"sim_scenario,omitempty"`
	// SimStepS and SimBaselineStepS are the simulated step's length,
	// seconds (env.Physics.StepSeconds), in Sim (-sim-step) and
	// SimBaseline (the baseline file's).
	SimStepS         float64 `json:"sim_step_s,omitempty"`
	SimBaselineStepS float64 `json:"sim_baseline_step_s,omitempty"`
	// SimBaseline holds, with -baseline, each controller's simulated run
	// in the baseline scenario SimBaselineScenario (the gap before).
	SimBaseline         []LiveRun `json:"sim_baseline,omitempty"`
	SimBaselineScenario string    `json:"sim_baseline_scenario,omitempty"`
	// SimGap and SimBaselineGap are the goal verdicts of Sim and
	// SimBaseline against Runs per controller, over the placements
	// (gapVerdicts).
	SimGap         []ControllerGap `json:"sim_gap,omitempty"`
	SimBaselineGap []ControllerGap `json:"sim_baseline_gap,omitempty"`
	// ObsGap is, with -obs, the features whose means differ most between
	// the worlds per controller (observationGaps).
	ObsGap []ObsGap `json:"obs_gap,omitempty"`
	// Uptime is the host's load line (uptime) before and after the runs:
	// live figures on a shared machine move with it.
	Uptime    []string `json:"uptime,omitempty"`
	Commit    string   `json:"commit"`
	GoVersion string   `json:"go_version"`
}

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

func liveCommand(ctx context.Context, name string, simgap bool, args []string, o Options) error {
	fs := command.NewFlagSet(name)
	profile := fs.String("profile", "pred", "application profile: pred or etl (vertical), or wc, sd, aa, pl, nwm, syn (horizontal: the planner's placement loop)")
	ctrl := fs.String("controller", "", "controller: static:N, threshold, vrebalance, ppo, ppo:DIR; for a horizontal profile clasp, faasflow, zhang24, ds2, hpa, faasflow-sp, zhang24-sp, clasp-paper, clasp-h90 or fixed:N (or -controllers)")
	ctrls := fs.String("controllers", "", "comma-separated controllers run in turn on the same slice and seed (paired live runs)")
	trace := fs.String("trace", "taxi", "workload: taxi, taxi-train, intel, or a .csv/.parquet trace file")
	dir := fs.String("traces", "", "trace data directory (default env STREAMSCALE_TRACES or the built-in one)")
	start := fs.Int("start", 0, "first trace point replayed")
	scale := fs.Duration("time-scale", 250*time.Millisecond, "wall time of one trace point and one control interval (the simulator's 1 s)")
	dur := fs.Duration("duration", 15*time.Second, "how long the load runs per controller (intervals = duration / time-scale)")
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
	mult := fs.Float64("rate-mult", 0.75, "arrival-rate multiplier, > 0")
	cpuScale := fs.Float64("cpu-scale", 0.01, "live CFS millicores given per scenario millicore")
	warmup := fs.Duration("warmup", 2*time.Second, "vertical profiles: load run before each controller's recorded intervals, every task at its maximum, nothing recorded (the workers' cold start; 0: none)")
	workers := fs.Int("workers", 1, "worker processes")
	seed := fs.Uint64("seed", 1, "seed of the input source and the controllers")
	placement := fs.Uint64("placement-seed", 101, "seed of the (first) scenario task placement (the servers the controllers see)")
	nPlace := fs.Int("placements", 1, "number of placements, seeds -placement-seed, -placement-seed+1, …; every controller runs on each")
	policies := fs.String("policies", "policies/calibrated", "directory of trained PPO policies: <dir>/<profile>/policy.json and .safetensors")
	api := fs.String("api", "", "policy endpoint URL for ppo (default: start go run ./serve api on a free loopback port)")
	serveBin := fs.String("serve-bin", "", "a built serve binary to start the policy endpoint with (instead of go run ./serve)")
	out := fs.String("out", "out/live", "output directory (created if missing)")
	asJSON := fs.Bool("json", false, "print summary.json to stdout")
	verbose := fs.Bool("v", false, "log the runtime's events to stderr")
	scenario := fs.String("scenario", env.Scenarios()[0], "with simgap: "+scenarioUsage)
	baseline := fs.String("baseline", "", "with simgap: a second scenario every controller is also simulated in (the gap before a calibration, e.g. realistic)")
	obsLog := fs.Bool("obs", false, "with simgap: record every observation the controllers are given in both worlds ("+FileObservations+") and report the features that differ most")
	simStep := fs.String("sim-step", simStepInterval, "with simgap: the simulated step's length in -scenario: "+simStepInterval+" (the live interval, -time-scale), "+simStepScenario+" (the file's step_seconds, 1 s unless it sets one) or a duration 10ms..1m; -baseline keeps its file's")
	maxWorkers := fs.Int("max-workers", 8, "horizontal profiles: most workers the placement controller may use")
	taskMC := fs.Int("task-mc", 1000, "horizontal profiles: CFS quota of every task in every worker, millicores (the worker capacity scaled)")
	budget := fs.Int("worker-budget", 0, "horizontal profiles: CPU budget, millicores, that every worker's tasks share on top of -task-mc (a worker's budget W in CLASP's model; 0: none)")
	var budgetProcess budgetMode
	fs.Var(&budgetProcess, "worker-budget-mode", "horizontal profiles: "+budgetModeHelp)
	peak := fs.Float64("peak", 200, "horizontal profiles with -trace burst or gradual: inputs/s at 100% of the CLASP load mode")
	sloMS := fs.Float64("slo-ms", 1000, "horizontal profiles: the p95 an interval must stay under, ms")
	hseeds := fs.Int("seeds", 1, "horizontal profiles: seeds -seed … -seed+N-1, every controller on each (the pairs of the paired verdicts)")
	plannerAddr := fs.String("planner", "", "attach to a running planner service's control API at HOST:PORT (serve planner -serve) instead of starting a planner and workers here")
	plannerToken := fs.String("planner-token", "", "the planner service's token (default $"+live.TokenEnv+")")
	costModel := fs.String("cost-model", "", costModelUsage)
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	if *plannerAddr != "" && *plannerToken == "" {
		*plannerToken = o.Env(live.TokenEnv)
	}
	if isHorizontalProfile(*profile) {
		if simgap {
			return usagef("%s: profile %s is horizontal; simgap compares vertical controllers (pred, etl)", name, *profile)
		}
		if err := checkRateMult(*mult); err != nil {
			return err
		}
		set := explicit(fs)
		hf := hliveFlags{profile: *profile, trace: *trace, dir: *dir, out: *out, scale: *scale, dur: *dur, scaleSet: set["time-scale"],
			durSet: set["duration"], multSet: set["rate-mult"], mult: *mult, peak: *peak, sloMS: *sloMS, workers: *workers, maxWorkers: *maxWorkers, taskMC: *taskMC, budget: *budget, budgetProcess: budgetProcess,
			seed: *seed, seeds: *hseeds, asJSON: *asJSON, verbose: *verbose, planner: *plannerAddr, plannerToken: *plannerToken, costModel: *costModel}
		switch {
		case (*ctrl == "") == (*ctrls == ""):
			return usagef("eval: give one of -controller and -controllers")
		case *scale < 10*time.Millisecond || *scale > time.Minute:
			return usagef("eval: -time-scale %v, want 10ms..1m", *scale)
		case *dur < *scale || *dur > 24*time.Hour:
			return usagef("eval: -duration %v, want at least one -time-scale (%v) and at most 24h", *dur, *scale)
		case *workers < 1 || *workers > 16:
			return usagef("eval: -workers %d, want 1..16", *workers)
		case *out == "":
			return usagef("eval: -out is empty")
		}
		hf.specs = []string{*ctrl}
		if *ctrls != "" {
			var err error
			if hf.specs, err = splitList("controllers", *ctrls); err != nil {
				return err
			}
		}
		return hlive(ctx, hf, o)
	}
	if explicit(fs)["seeds"] {
		return usagef("%s: -seeds is for horizontal profiles; vertical runs are paired by -placements", name)
	}
	if *costModel != "" {
		return usagef("eval: -cost-model applies to horizontal profiles (CLASP's planners), not %s", *profile)
	}
	scen, err := resolveScenario("scenario", *scenario)
	if err != nil {
		return err
	}
	var base *env.Scenario
	if *baseline != "" {
		if !simgap {
			return usagef("eval: -baseline applies only to eval simgap")
		}
		b, err := resolveScenario("baseline", *baseline)
		if err != nil {
			return err
		}
		base = &b
	}
	if explicit(fs)["sim-step"] && !simgap {
		return usagef("eval: -sim-step applies only to eval simgap")
	}
	if *obsLog && !simgap {
		return usagef("eval: -obs applies only to eval simgap")
	}
	if simgap {
		if err := applySimStep(*simStep, *scale, &scen); err != nil {
			return err
		}
	}
	// With simgap the live controllers see the scenario's measured
	// demands too (the observation's demand feature), as the simulated
	// ones do.
	var liveDemand *env.ScenarioDemand
	if simgap {
		liveDemand = scen.Demand
	}
	if err := checkProfile(*profile); err != nil {
		return err
	}
	if err := checkTrace(*trace); err != nil {
		return err
	}
	if err := checkRateMult(*mult); err != nil {
		return err
	}
	switch {
	case (*ctrl == "") == (*ctrls == ""):
		return usagef("eval: give one of -controller and -controllers")
	case *scale < 10*time.Millisecond || *scale > time.Minute:
		return usagef("eval: -time-scale %v, want 10ms..1m", *scale)
	case *dur < *scale || *dur > 24*time.Hour:
		return usagef("eval: -duration %v, want at least one -time-scale (%v) and at most 24h", *dur, *scale)
	case !(*cpuScale > 0) || *cpuScale > 1000:
		return usagef("eval: -cpu-scale %v, want > 0 and ≤ 1000", *cpuScale)
	case *workers < 1 || *workers > 16:
		return usagef("eval: -workers %d, want 1..16", *workers)
	case *start < 0:
		return usagef("eval: -start %d, want ≥ 0", *start)
	case *warmup < 0 || *warmup > time.Hour:
		return usagef("eval: -warmup %v, want 0..1h", *warmup)
	case *nPlace < 1 || *nPlace > 100:
		return usagef("eval: -placements %d, want 1..100", *nPlace)
	case *out == "":
		return usagef("eval: -out is empty")
	}
	specs := []string{*ctrl}
	if *ctrls != "" {
		var err error
		if specs, err = splitList("controllers", *ctrls); err != nil {
			return err
		}
	}
	reg := controllers.New(controllers.Options{PoliciesDir: *policies})
	var parsed []controllers.Spec
	for _, s := range specs {
		sp, err := reg.Parse(s)
		if err != nil {
			return usageError(err)
		}
		if sp.Horizontal() {
			return usagef("eval: controller %s is horizontal; eval live runs vertical controllers (static, threshold, vrebalance, ppo)", sp)
		}
		if strings.HasPrefix(sp.String(), "ppo-sample") {
			return usagef("eval: controller %s: live PPO is asked through the endpoint by argmax; use ppo or ppo:DIR", sp)
		}
		parsed = append(parsed, sp)
	}
	n := int(*dur / *scale)
	warm := int((*warmup + *scale/2) / *scale)
	var tr *traces.Trace
	tr, err = loadTrace(*trace, *dir, *mult, *seed, o)
	if err != nil {
		return err
	}
	if *start > 0 { // the slice replayed, from its first point
		c := make([]float64, tr.Len())
		for i := range c {
			c[i] = tr.Counts[(*start+i)%tr.Len()]
		}
		tr.Counts = c
	}
	app, err := ops.AppByName(*profile)
	if err != nil {
		return usageError(err)
	}
	var seeds []uint64
	var scs []env.Config
	for i := range *nPlace {
		ps := *placement + uint64(i)
		sc, err := runner.Config(runner.Spec{Profile: *profile, Workload: tr, PlacementSeed: ps, Steps: n, Demand: liveDemand})
		if err != nil {
			return usageError(err)
		}
		if err := checkScenario(sc); err != nil {
			return err
		}
		// The simulated scenarios too (a per-task hop naming a task of
		// another profile, a delay longer than the run), before any live
		// run spends minutes.
		for _, s := range []*env.Scenario{&scen, base} {
			if s == nil || !simgap {
				continue
			}
			c := sc
			if err := (env.Scenario{Physics: s.Physics}).Apply(&c); err != nil {
				return usageError(err)
			}
			if err := checkScenario(c); err != nil {
				return err
			}
		}
		// Check every controller before any run (a missing policy)
		// so that a bad list fails at once.
		for _, sp := range parsed {
			if err := sp.Check(sc); err != nil {
				return usageError(err)
			}
		}
		seeds, scs = append(seeds, ps), append(scs, sc)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	sum := LiveSummary{Profile: *profile, Trace: *trace, TraceSource: tr.Origin(), TraceStart: *start, Intervals: n,
		TimeScaleS: scale.Seconds(), RateMult: *mult, CPUScale: *cpuScale, WarmupIntervals: warm, Workers: *workers, Seed: *seed, PlacementSeeds: seeds,
		SLOMS: scs[0].App.SLOMS, Commit: o.Commit, GoVersion: o.GoVersion}
	if u := hostLoad(); u != "" {
		sum.Uptime = append(sum.Uptime, "before: "+u)
	}
	for _, t := range scs[0].App.Tasks {
		sum.Tasks = append(sum.Tasks, t.Name)
	}
	// The policy endpoints: -api for every PPO controller, or one
	// `serve api` per policies directory the PPO controllers name (a
	// ppo:DIR controller's policy is DIR's base name in DIR's parent).
	apiOf, byDir := map[string]string{}, map[string]string{}
	var apis []string
	for _, sp := range parsed {
		if !isPPO(sp) {
			continue
		}
		dir := policyEndpointDir(sp.String(), *policies)
		if *api != "" {
			apiOf[sp.String()] = *api
			continue
		}
		u, ok := byDir[dir]
		if !ok {
			var stop func()
			u, stop, err = startAPI(ctx, dir, *serveBin, o)
			if err != nil {
				return err
			}
			defer stop()
			byDir[dir] = u
			apis = append(apis, u)
		}
		apiOf[sp.String()] = u
	}
	if *api != "" && len(apiOf) > 0 {
		apis = []string{*api}
	}
	var results []runner.Result
	var obsRuns []obsRun
	for pi, edge := range scs {
		for _, sp := range parsed {
			// The controller's own scenario: a policy's action set
			// (env.Config.ActionDeltas) from its card.
			sc, err := sp.Config(edge)
			if err != nil {
				return usageError(err)
			}
			c, err := buildLive(ctx, sp, sc, *policies, apiOf[sp.String()])
			if err != nil {
				return err
			}
			var liveRec, simRec *obsRecorder
			var simCtrl runner.Factory = sp
			if *obsLog {
				liveRec, simRec = &obsRecorder{Controller: c}, &obsRecorder{}
				c, simCtrl = liveRec, recordingFactory{Factory: sp, rec: simRec}
			}
			if isPPO(sp) {
				sum.API = strings.Join(apis, ",")
			}
			cfg := live.Config{Scenario: sc, App: app, Trace: tr, Step: *scale, Intervals: n, Seed: *seed, Workers: *workers,
				CPUScale: *cpuScale, Warmup: warm, Controller: c, Name: sp.String(), WorkerArgs: []string{"live-worker"},
				Planner: *plannerAddr, PlannerToken: *plannerToken}
			if *verbose {
				cfg.Log = o.Stderr
			}
			fmt.Fprintf(o.Stderr, "eval: live %s / %s, placement %d: %s for %v (%d intervals of %v)\n", *profile, *trace, seeds[pi], sp, *dur, n, *scale)
			res, info, err := live.Run(ctx, cfg)
			if err != nil {
				return fmt.Errorf("eval: live %s: %w", sp, err)
			}
			res.Trace, res.PlacementSeed = *trace, seeds[pi]
			results = append(results, res)
			lr := LiveRun{Key: res.Key, Summary: res.Summary, Info: info, Placement: sc.Placement, TrajectorySHA256: res.TrajectorySHA256}
			if simgap {
				lr.MeanTaskCPU = meanTaskCPU(res)
			}
			sum.Runs = append(sum.Runs, lr)
			if simgap {
				sim, err := runner.Run(ctx, runner.Spec{Profile: *profile, TraceName: *trace, Workload: tr, PlacementSeed: seeds[pi],
					Seed: *seed, Steps: n, Controller: simCtrl, Physics: scen.Physics, Scenario: *scenario, Demand: scen.Demand})
				if err != nil {
					return err
				}
				if *obsLog {
					// Live, the controller also acts after the last
					// interval (an action no interval applies); the
					// simulated episode ends there. Row t is the
					// observation interval t's action was decided on.
					obsRuns = append(obsRuns, obsRun{world: "live", controller: sp.String(), placement: seeds[pi], rows: liveRec.rows[:min(len(liveRec.rows), n)]},
						obsRun{world: "sim", controller: sp.String(), placement: seeds[pi], rows: simRec.rows})
				}
				results = append(results, sim)
				sum.Sim = append(sum.Sim, LiveRun{Key: sim.Key, Summary: sim.Summary, Placement: sim.Placement, TrajectorySHA256: sim.TrajectorySHA256, MeanTaskCPU: meanTaskCPU(sim)})
				sum.SimScenario, sum.SimStepS = *scenario, scen.Physics.StepLength()
				if base != nil {
					bs, err := runner.Run(ctx, runner.Spec{Profile: *profile, TraceName: *trace, Workload: tr, PlacementSeed: seeds[pi],
						Seed: *seed, Steps: n, Controller: sp, Physics: base.Physics, Scenario: *baseline, Demand: base.Demand})
					if err != nil {
						return err
					}
					sum.SimBaseline = append(sum.SimBaseline, LiveRun{Key: bs.Key, Summary: bs.Summary, Placement: bs.Placement, TrajectorySHA256: bs.TrajectorySHA256, MeanTaskCPU: meanTaskCPU(bs)})
					sum.SimBaselineScenario, sum.SimBaselineStepS = *baseline, base.Physics.StepLength()
				}
			}
			fmt.Fprintf(o.Stderr, "eval: %s: violation rate %.3f, mean p95 %.1f ms, mean CPU %.0f mc, throughput %.1f/s of %.1f, lost %d, control failures %d\n",
				sp, res.Summary.ViolationRate, res.Summary.MeanP95MS, res.Summary.MeanCPU, res.Summary.MeanThroughput, res.Summary.MeanOffered, info.Lost, info.ControlFailures)
		}
	}
	if err := writeLiveIntervals(filepath.Join(*out, FileIntervals), results); err != nil {
		return err
	}
	if simgap {
		if _, err := simgapFigures(*out, results); err != nil {
			return err
		}
	}
	if *obsLog {
		names := env.FeatureNames(sum.Tasks, len(scs[0].Servers))
		if err := writeObservations(filepath.Join(*out, FileObservations), names, obsRuns); err != nil {
			return err
		}
		sum.ObsGap = observationGaps(names, obsRuns)
	}
	if len(parsed) > 1 {
		if err := livePaired(o, *out, *profile, *trace, tr, seeds, parsed, results, simgap, *seed, n, *mult); err != nil {
			return err
		}
	}
	if u := hostLoad(); u != "" {
		sum.Uptime = append(sum.Uptime, "after: "+u)
	}
	if simgap {
		sum.SimGap = gapVerdicts(sum.Runs, sum.Sim)
		sum.SimBaselineGap = gapVerdicts(sum.Runs, sum.SimBaseline)
	}
	b, err := report.MarshalJSON(sum)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, FileSummary), b, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if err := os.WriteFile(filepath.Join(*out, FileReport), liveMarkdown(sum), 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if *asJSON {
		_, err = o.Stdout.Write(b)
		return err
	}
	_, err = o.Stdout.Write(liveMarkdown(sum))
	return err
}

// policyEndpointDir is the directory the policy endpoint of PPO
// controller spec serves: policies for "ppo" (the policy is the profile's
// name), DIR's parent for "ppo:DIR" (the policy is DIR's base name).
// Controllers with different directories need different endpoints.
func policyEndpointDir(spec, policies string) string {
	if d, ok := strings.CutPrefix(spec, "ppo:"); ok {
		return filepath.Dir(d)
	}
	return policies
}

func isPPO(sp controllers.Spec) bool {
	return sp.String() == "ppo" || strings.HasPrefix(sp.String(), "ppo:")
}

// buildLive builds the controller of spec for the live run: in-process,
// or for ppo a live.Remote asking the policy endpoint at apiURL.
//
// The live observation has no metric lag (it reports the window that has
// just ended), whatever the scenario's physics say, so an in-process
// controller that compensates the lag (threshold:measured) is built for
// none.
func buildLive(ctx context.Context, sp controllers.Spec, sc env.Config, policies, apiURL string) (agents.Controller, error) {
	if !isPPO(sp) {
		lsc := sc
		lsc.Physics.MetricLagSteps = 0
		a, err := sp.Build(lsc)
		if err != nil {
			return nil, usageError(err)
		}
		return a.Controller(), nil
	}
	name := sc.App.Name
	if d, ok := strings.CutPrefix(sp.String(), "ppo:"); ok {
		name = filepath.Base(d)
	}
	r, err := live.NewRemote(ctx, apiURL, name, sc)
	if err != nil {
		return nil, usageError(err)
	}
	return r, nil
}

// startAPI starts `serve api -policies dir` on a free loopback port (with
// serveBin, or `go run ./serve` from the working directory) and waits up
// to 5 minutes for it to list its policies.
func startAPI(ctx context.Context, dir, serveBin string, o Options) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("eval: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"api", "-policies", dir, "-addr", addr}
	var cmd *exec.Cmd
	if serveBin != "" {
		cmd = exec.Command(serveBin, args...)
	} else {
		cmd = exec.Command("go", append([]string{"run", "./serve"}, args...)...)
	}
	cmd.Stdout, cmd.Stderr = o.Stderr, o.Stderr
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("eval: start the policy endpoint: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }() //nolint:errcheck // the exit status after our SIGTERM is not an error
	stop := func() {
		cmd.Process.Signal(os.Interrupt) //nolint:errcheck // it may have exited
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill() //nolint:errcheck
			<-done
		}
	}
	url := "http://" + addr
	c, err := client.New(url, nil)
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("eval: %w", err)
	}
	fmt.Fprintf(o.Stderr, "eval: starting the policy endpoint on %s (serve api -policies %s)\n", addr, dir)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Policies(rctx)
		cancel()
		if err == nil {
			return url, stop, nil
		}
		select {
		case <-done:
			return "", nil, errors.New("eval: the policy endpoint exited before it was ready")
		case <-ctx.Done():
			stop()
			return "", nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("eval: the policy endpoint on %s was not ready within 5 minutes: %v", addr, err)
		}
	}
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

// liveMarkdown is report.md: the configuration and one row per controller.
func liveMarkdown(s LiveSummary) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Live evaluation: %s on %s\n\n", s.Profile, s.Trace)
	fmt.Fprintf(&b, "%d intervals of %.3g s (trace points %d–%d, rate × %g), %d worker process(es), CPU scale %g live mc per scenario mc, seed %d, placement seeds %v, SLO %g ms. Live runs are not reproducible (real time on a shared machine).\n\n",
		s.Intervals, s.TimeScaleS, s.TraceStart, s.TraceStart+s.Intervals-1, s.RateMult, s.Workers, s.CPUScale, s.Seed, s.PlacementSeeds, s.SLOMS)
	b.WriteString("| controller | placement | violation rate | mean p95 ms | mean CPU mc | throughput /s | offered /s | lost | control failures | CPU used (cores) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range s.Runs {
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.1f | %.0f | %.1f | %.1f | %d | %d | %.4f |\n",
			r.Controller, r.PlacementSeed, r.ViolationRate, r.MeanP95MS, r.MeanCPU, r.MeanThroughput, r.MeanOffered, r.Lost, r.ControlFailures, r.MeanCPUUsedCores)
	}
	for _, u := range s.Uptime {
		fmt.Fprintf(&b, "\nuptime: %s", u)
	}
	if len(s.Uptime) > 0 {
		b.WriteString("\n")
	}
	gapTable(&b, s.Runs, s.Sim, fmt.Sprintf("%s, simulated steps of %g s", s.SimScenario, s.SimStepS), s.Tasks)
	gapTable(&b, s.Runs, s.SimBaseline, fmt.Sprintf("%s (baseline), simulated steps of %g s", s.SimBaselineScenario, s.SimBaselineStepS), s.Tasks)
	obsGapMarkdown(&b, s.ObsGap)
	return []byte(b.String())
}

// Simgap goals (issue 16): the simulator predicts each controller's live
// violation rate within GapViolationPP percentage points and its mean CPU
// within GapCPURel, and ranks the controllers in the same order.
const (
	GapViolationPP = 2
	GapCPURel      = 0.10
)

// gapTable writes the sim-against-live table of one scenario and the
// verdict against the goals (nothing when sim does not pair with runs).
func gapTable(b *strings.Builder, runs, sim []LiveRun, scenario string, tasks []string) {
	if len(sim) != len(runs) || len(sim) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Simulator against live (scenario %s, same slice, seed and placement)\n\n", scenario)
	b.WriteString("Differences are sim − live: percentage points for the violation rate, relative to live for the others.\n\n")
	b.WriteString("| controller | placement | violation sim | violation live | Δ pp | p95 sim ms | p95 live ms | Δ | CPU sim mc | CPU live mc | Δ | throughput sim | throughput live | Δ |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	okV, okC := 0, 0
	for i, l := range runs {
		m := sim[i]
		fmt.Fprintf(b, "| %s | %d | %.3f | %.3f | %+.1f | %.1f | %.1f | %s | %.0f | %.0f | %s | %.1f | %.1f | %s |\n", l.Controller, l.PlacementSeed,
			m.ViolationRate, l.ViolationRate, 100*(m.ViolationRate-l.ViolationRate),
			m.MeanP95MS, l.MeanP95MS, rel(m.MeanP95MS, l.MeanP95MS), m.MeanCPU, l.MeanCPU, rel(m.MeanCPU, l.MeanCPU),
			m.MeanThroughput, l.MeanThroughput, rel(m.MeanThroughput, l.MeanThroughput))
		if math.Abs(100*(m.ViolationRate-l.ViolationRate)) <= GapViolationPP {
			okV++
		}
		if l.MeanCPU > 0 && math.Abs(m.MeanCPU-l.MeanCPU)/l.MeanCPU <= GapCPURel {
			okC++
		}
	}
	strict := slices.Equal(rankBy(sim), rankBy(runs))
	disc := discordant(sim, runs)
	same := len(disc) == 0
	fmt.Fprintf(b, "\nRanking by violation rate (then mean CPU), means over placements: simulator %v, live %v (%s).\n",
		rankBy(sim), rankBy(runs), map[bool]string{true: "same order", false: "different order"}[strict])
	if !strict && same {
		b.WriteString("The orders differ only between controllers the simulator ties (the same mean violation rate and CPU), which it does not rank: no pair is ordered one way in one world and the other way in the other, so the ranking goal is met.\n")
	} else if !same {
		fmt.Fprintf(b, "Pairs ranked one way in the simulator and the other way live: %v.\n", disc)
	}
	fmt.Fprintf(b, "Per run: violation rate within %d pp in %d of %d runs, mean CPU within %.0f%% in %d of %d, ranking %s.\n",
		GapViolationPP, okV, len(runs), 100*GapCPURel, okC, len(runs), map[bool]string{true: "met", false: "not met"}[same])
	gaps := gapVerdicts(runs, sim)
	b.WriteString("\nPer controller over its placements: means of both worlds, the gap of the means (the goals' verdict), the per-placement gaps (min … max) and the standard error of their mean (SE; 0 with one placement), and the live rate's standard deviation over placements. A miss is *within noise* when the gap exceeds the goal by at most 2 SE.\n\n")
	b.WriteString("| controller | placements | violation sim | violation live | Δ pp | per placement | SE | live SD | verdict | CPU sim mc | CPU live mc | Δ | per placement | SE | verdict |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---|---:|---|\n")
	vOK, cOK := 0, 0
	for _, g := range gaps {
		fmt.Fprintf(b, "| %s | %d | %.3f | %.3f | %+.1f | %+.1f … %+.1f | %.1f | %.3f | %s | %.0f | %.0f | %+.0f%% | %+.0f%% … %+.0f%% | %.0f%% | %s |\n",
			g.Controller, g.Placements, g.ViolationSim, g.ViolationLive, g.DeltaPP, g.DeltaPPMin, g.DeltaPPMax, g.DeltaPPSE, g.LiveViolationSD, g.ViolationVerdict,
			g.CPUSim, g.CPULive, 100*g.CPURel, 100*g.CPURelMin, 100*g.CPURelMax, 100*g.CPURelSE, g.CPUVerdict)
		if g.ViolationOK {
			vOK++
		}
		if g.CPUOK {
			cOK++
		}
	}
	fmt.Fprintf(b, "\nGoals (means over placements): violation rate within %d pp for %d of %d controllers, mean CPU within %.0f%% for %d of %d, ranking %s.\n",
		GapViolationPP, vOK, len(gaps), 100*GapCPURel, cOK, len(gaps), map[bool]string{true: "met", false: "not met"}[same])
	if len(tasks) == 0 || len(runs[0].MeanTaskCPU) != len(tasks) {
		return
	}
	b.WriteString("\nMean allocation per task, scenario mc, sim / live:\n\n| controller | placement |")
	for _, t := range tasks {
		fmt.Fprintf(b, " %s |", t)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(tasks)) + "\n")
	for i, l := range runs {
		fmt.Fprintf(b, "| %s | %d |", l.Controller, l.PlacementSeed)
		for k := range tasks {
			if k < len(sim[i].MeanTaskCPU) && k < len(l.MeanTaskCPU) {
				fmt.Fprintf(b, " %.0f / %.0f |", sim[i].MeanTaskCPU[k], l.MeanTaskCPU[k])
			}
		}
		b.WriteString("\n")
	}
}

// ControllerGap is one controller's simulator-against-live gap over the
// placements it ran on (summary.json sim_gap): the goals are judged on
// the means over placements, and the per-placement gaps say whether a
// miss is noise.
type ControllerGap struct {
	Controller string `json:"controller"`
	Placements int    `json:"placements"`
	// ViolationSim and ViolationLive are the mean violation rates; DeltaPP
	// is 100·(sim − live) of the means, DeltaPPMin and DeltaPPMax the
	// extremes of the per-placement gaps, DeltaPPSE the standard error of
	// their mean (sample SD/√n; 0 with one placement) and LiveViolationSD
	// the live rate's sample SD over placements.
	ViolationSim    float64 `json:"violation_sim"`
	ViolationLive   float64 `json:"violation_live"`
	DeltaPP         float64 `json:"delta_pp"`
	DeltaPPMin      float64 `json:"delta_pp_min"`
	DeltaPPMax      float64 `json:"delta_pp_max"`
	DeltaPPSE       float64 `json:"delta_pp_se"`
	LiveViolationSD float64 `json:"live_violation_sd"`
	// CPUSim and CPULive are the mean CPU, mc; CPURel is (sim − live) /
	// live of the means, CPURelMin, CPURelMax and CPURelSE as for the
	// violation rate over the per-placement relative gaps.
	CPUSim    float64 `json:"cpu_sim_millicores"`
	CPULive   float64 `json:"cpu_live_millicores"`
	CPURel    float64 `json:"cpu_rel"`
	CPURelMin float64 `json:"cpu_rel_min"`
	CPURelMax float64 `json:"cpu_rel_max"`
	CPURelSE  float64 `json:"cpu_rel_se"`
	// ViolationOK and CPUOK say whether the means meet the goals
	// (GapViolationPP, GapCPURel); the verdicts say "met", "miss within
	// noise" (the gap exceeds the goal by at most 2 SE), "miss beyond
	// noise" or "miss (one placement)".
	ViolationOK      bool   `json:"violation_ok"`
	CPUOK            bool   `json:"cpu_ok"`
	ViolationVerdict string `json:"violation_verdict"`
	CPUVerdict       string `json:"cpu_verdict"`
}

// gapVerdicts judges sim against runs (paired by index) per controller,
// in the order the controllers first appear: means over the controller's
// placements, per-placement gaps and their spread (ControllerGap). nil
// when sim does not pair with runs.
func gapVerdicts(runs, sim []LiveRun) []ControllerGap {
	if len(sim) != len(runs) || len(sim) == 0 {
		return nil
	}
	var names []string
	for _, r := range runs {
		if !slices.Contains(names, r.Controller) {
			names = append(names, r.Controller)
		}
	}
	out := make([]ControllerGap, 0, len(names))
	for _, name := range names {
		g := ControllerGap{Controller: name}
		var dv, dc, lv []float64
		var cpuPaired int
		for i, l := range runs {
			if l.Controller != name {
				continue
			}
			m := sim[i]
			g.Placements++
			g.ViolationSim += m.ViolationRate
			g.ViolationLive += l.ViolationRate
			g.CPUSim += m.MeanCPU
			g.CPULive += l.MeanCPU
			dv = append(dv, 100*(m.ViolationRate-l.ViolationRate))
			lv = append(lv, l.ViolationRate)
			if l.MeanCPU > 0 {
				dc = append(dc, (m.MeanCPU-l.MeanCPU)/l.MeanCPU)
				cpuPaired++
			}
		}
		n := float64(g.Placements)
		g.ViolationSim /= n
		g.ViolationLive /= n
		g.CPUSim /= n
		g.CPULive /= n
		g.DeltaPP = 100 * (g.ViolationSim - g.ViolationLive)
		g.DeltaPPMin, g.DeltaPPMax = slices.Min(dv), slices.Max(dv)
		g.DeltaPPSE = stdErr(dv)
		g.LiveViolationSD = sampleSD(lv)
		if cpuPaired > 0 {
			g.CPURelMin, g.CPURelMax = slices.Min(dc), slices.Max(dc)
			g.CPURelSE = stdErr(dc)
		}
		if g.CPULive > 0 {
			g.CPURel = (g.CPUSim - g.CPULive) / g.CPULive
		}
		g.ViolationOK = math.Abs(g.DeltaPP) <= GapViolationPP
		g.CPUOK = g.CPULive > 0 && math.Abs(g.CPURel) <= GapCPURel
		g.ViolationVerdict = gapVerdict(g.ViolationOK, math.Abs(g.DeltaPP)-GapViolationPP, g.DeltaPPSE, g.Placements)
		g.CPUVerdict = gapVerdict(g.CPUOK, math.Abs(g.CPURel)-GapCPURel, g.CPURelSE, cpuPaired)
		out = append(out, g)
	}
	return out
}

// gapVerdict names a verdict: met, or a miss by excess beyond the goal
// that is within noise when excess ≤ 2·se (n ≥ 2 placements).
func gapVerdict(ok bool, excess, se float64, n int) string {
	switch {
	case ok:
		return "met"
	case n < 2:
		return "miss (one placement)"
	case excess <= 2*se:
		return "miss within noise"
	}
	return "miss beyond noise"
}

// sampleSD is the sample standard deviation of xs (0 for fewer than two).
func sampleSD(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// stdErr is the standard error of the mean of xs, sampleSD/√n.
func stdErr(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	return sampleSD(xs) / math.Sqrt(float64(len(xs)))
}

// rel is (sim − live) / live as a signed percentage ("n/a" when live is 0).
func rel(sim, live float64) string {
	if live == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.0f%%", 100*(sim-live)/live)
}

// rankMean is one controller's mean violation rate and mean CPU over its
// placements.
type rankMean struct {
	name string
	v, c float64
}

// rankMeans returns every controller's means, in the order first run.
func rankMeans(rs []LiveRun) []rankMean {
	var ms []rankMean
	var n []float64
	for _, r := range rs {
		i := slices.IndexFunc(ms, func(m rankMean) bool { return m.name == r.Controller })
		if i < 0 {
			ms, n = append(ms, rankMean{name: r.Controller}), append(n, 0)
			i = len(ms) - 1
		}
		ms[i].v += r.ViolationRate
		ms[i].c += r.MeanCPU
		n[i]++
	}
	for i := range ms {
		ms[i].v /= n[i]
		ms[i].c /= n[i]
	}
	return ms
}

// rankOrder orders by violation rate, then mean CPU (0: a tie on both).
func rankOrder(a, b rankMean) int {
	if c := cmp.Compare(a.v, b.v); c != 0 {
		return c
	}
	return cmp.Compare(a.c, b.c)
}

// discordant lists the controller pairs that sim and live rank in opposite
// orders (means over placements; by violation rate, then mean CPU). A pair
// that either world ties on both is not ranked by it and is never
// discordant: two controllers that hold the same allocations in the
// simulator (static:500 and VRebalance at its minimum) tie there however
// the live noise orders them.
func discordant(sim, live []LiveRun) [][2]string {
	ms, ml := rankMeans(sim), rankMeans(live)
	find := func(name string) (rankMean, bool) {
		i := slices.IndexFunc(ml, func(m rankMean) bool { return m.name == name })
		if i < 0 {
			return rankMean{}, false
		}
		return ml[i], true
	}
	var out [][2]string
	for i, a := range ms {
		for _, b := range ms[i+1:] {
			la, okA := find(a.name)
			lb, okB := find(b.name)
			if okA && okB && rankOrder(a, b)*rankOrder(la, lb) < 0 {
				out = append(out, [2]string{a.name, b.name})
			}
		}
	}
	return out
}

// rankBy lists the controllers from the fewest violations to the most
// (means over placements), ties by mean CPU, then by name.
func rankBy(rs []LiveRun) []string {
	ms := rankMeans(rs)
	slices.SortStableFunc(ms, func(a, b rankMean) int {
		if c := rankOrder(a, b); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.name
	}
	return out
}

// livePaired judges paired live runs as eval paired judges simulated ones:
// the first controller is the candidate, every other a baseline, paired by
// placement, with the same bootstrap, verdicts and figures; it writes
// paired.md, paired.json and the figures of eval paired into dir. With
// simgap, results alternate live and simulated runs; only the live ones
// are judged. The build's commit and Go version (o) are recorded as eval
// paired records them.
func livePaired(o Options, dir, profile, trace string, tr *traces.Trace, seeds []uint64, parsed []controllers.Spec, results []runner.Result, simgap bool, seed uint64, steps int, mult float64) error {
	var liveRes []runner.Result
	for i, r := range results {
		if !simgap || i%2 == 0 {
			liveRes = append(liveRes, r)
		}
	}
	facs := make([]runner.Factory, len(parsed))
	for i, sp := range parsed {
		facs[i] = sp
	}
	plan := paired.Plan{Profiles: []string{profile}, Workloads: []*traces.Trace{tr},
		Placements: seeds, Controllers: facs, Candidate: parsed[0].String(), Seed: seed, Steps: steps, RateMult: mult, Scenario: "live"}
	psum, err := paired.Analyze(plan, liveRes)
	if err != nil {
		return fmt.Errorf("eval: live paired analysis: %w", err)
	}
	psum.Commit, psum.GoVersion = o.Commit, o.GoVersion
	series := make([]report.Series, len(liveRes))
	for i, r := range liveRes {
		series[i] = report.SeriesOf(r)
	}
	if _, err := writeSummaryAs(dir, "paired.json", psum); err != nil {
		return err
	}
	return writeJudgedReport(dir, "paired.md", psum, series)
}
