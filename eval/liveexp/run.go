package liveexp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/eval/live"
	"streamscale/eval/runner"
	"streamscale/eval/simgap"
	"streamscale/internal/command"
	"streamscale/serve/runtime/ops"
	"streamscale/traces"
)

// Config is one live experiment: every controller on every placement, in
// turn, on the same trace slice and seed.
type Config struct {
	// Profile and TraceName name the application profile and the
	// workload as recorded; TraceSource is the trace's source as recorded.
	Profile, TraceName, TraceSource string
	// Trace is the slice replayed from its point 0 (TraceStart is where
	// it starts in the named trace, recorded).
	Trace      *traces.Trace
	TraceStart int
	// App is the runtime application of Profile (ops.AppByName).
	App ops.App
	// Scenarios are the edge scenarios, one per placement seed in
	// PlacementSeeds (runner.Config of the profile), checked by the caller.
	Scenarios      []env.Config
	PlacementSeeds []uint64
	// Controllers run in this order on every placement.
	Controllers []runner.Factory
	// Step, Intervals and Warmup as in live.Config; Seed seeds the input
	// source, the controllers and the simulated episodes; Workers and
	// CPUScale as in live.Config; RateMult is the trace's multiplier
	// (recorded).
	Step              time.Duration
	Intervals, Warmup int
	Seed              uint64
	Workers           int
	CPUScale          float64
	RateMult          float64
	// Policies is the directory of the PPO controller "ppo"
	// (<Policies>/<profile>/policy.json). API, if set, is a running policy
	// endpoint every PPO controller asks; otherwise Run starts one per
	// policy directory (StartEndpoint, with ServeBin) and stops it before
	// it returns.
	Policies, API, ServeBin string
	// Planner and PlannerToken attach to a running planner service
	// (live.Config.Planner) instead of starting a planner and workers.
	Planner, PlannerToken string
	// WorkerArgs are the arguments the worker processes are started with
	// (live.Config.WorkerArgs).
	WorkerArgs []string
	// Sim, if set, also simulates every run (eval simgap).
	Sim *SimConfig
	// Log receives the runtime's events (nil: discarded); Progress one
	// line per run started and ended (nil: discarded).
	Log, Progress io.Writer
	// Build is recorded in the summary.
	Build command.Build
}

// SimConfig is the simulated half of eval simgap.
type SimConfig struct {
	// Scenario is the physics every run is also simulated in, named
	// ScenarioName; Baseline, if set, a second one, named BaselineName.
	Scenario     env.Scenario
	ScenarioName string
	Baseline     *env.Scenario
	BaselineName string
	Observe      bool // record every observation in both worlds
}

// Output is what Run returns.
type Output struct {
	Summary Summary
	// Results are the runs in the order run: one live result per
	// controller and placement, each followed by its simulated one with
	// Sim (not the baseline's).
	Results []runner.Result
	// FeatureNames and Observations are, with SimConfig.Observe, the
	// observation features and every run's observations (live and sim
	// alternating, as Results).
	FeatureNames []string
	Observations []simgap.ObsRun
}

// ErrController marks an error of a controller the experiment could not
// build (a policy the endpoint does not serve, a bad spec).
var ErrController = errors.New("liveexp: controller")

// Run runs the experiment: for every placement, every controller live on
// the runtime (live.Run) and, with Sim, in the simulator on the same slice
// and seed. It starts the policy endpoints the PPO controllers need and
// stops them, and every process live.Run starts, before it returns, on
// success, on error and when ctx ends.
func Run(ctx context.Context, c Config) (Output, error) {
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if len(c.Scenarios) == 0 || len(c.Scenarios) != len(c.PlacementSeeds) || len(c.Controllers) == 0 {
		return Output{}, fmt.Errorf("liveexp: %d scenarios, %d placement seeds, %d controllers", len(c.Scenarios), len(c.PlacementSeeds), len(c.Controllers))
	}
	apiOf, apis, closeAll, err := c.endpoints(ctx)
	defer closeAll()
	if err != nil {
		return Output{}, err
	}
	out := Output{Summary: c.summary()}
	if c.Sim != nil && c.Sim.Observe {
		out.FeatureNames = env.FeatureNames(out.Summary.Tasks, len(c.Scenarios[0].Servers))
	}
	total, done := len(c.Scenarios)*len(c.Controllers), 0
	start := c.clockNow()
	for pi, edge := range c.Scenarios {
		for _, f := range c.Controllers {
			if IsPPO(f.String()) {
				out.Summary.API = strings.Join(apis, ",")
			}
			if err := c.runOne(ctx, &out, pi, edge, f, apiOf[f.String()]); err != nil {
				return Output{}, err
			}
			done++
			el := c.clockNow().Sub(start)
			left := time.Duration(float64(el) / float64(done) * float64(total-done)).Round(time.Second)
			fmt.Fprintf(c.Progress, "eval: %d/%d runs done, %s elapsed, about %s left\n", done, total, el.Round(time.Second), left)
		}
	}
	if c.Sim != nil {
		live := Outcomes(out.Summary.Runs)
		out.Summary.SimGap = simgap.Verdicts(live, Outcomes(out.Summary.Sim))
		out.Summary.SimBaselineGap = simgap.Verdicts(live, Outcomes(out.Summary.SimBaseline))
		if c.Sim.Observe {
			out.Summary.ObsGap = simgap.ObservationGaps(out.FeatureNames, out.Observations)
		}
	}
	return out, nil
}

// summary is the summary's configuration part.
func (c *Config) summary() Summary {
	s := Summary{Profile: c.Profile, Trace: c.TraceName, TraceSource: c.TraceSource, TraceStart: c.TraceStart, Intervals: c.Intervals,
		TimeScaleS: c.Step.Seconds(), RateMult: c.RateMult, CPUScale: c.CPUScale, WarmupIntervals: c.Warmup, Workers: c.Workers, Seed: c.Seed,
		PlacementSeeds: c.PlacementSeeds, SLOMS: c.Scenarios[0].App.SLOMS, Build: c.Build}
	for _, t := range c.Scenarios[0].App.Tasks {
		s.Tasks = append(s.Tasks, t.Name)
	}
	return s
}

// endpoints returns the policy endpoint of every PPO controller: API for
// all, or one started per policies directory the controllers name (a
// ppo:DIR controller's policy is DIR's base name in DIR's parent). close
// stops the ones started (also when err is set).
func (c *Config) endpoints(ctx context.Context) (apiOf map[string]string, apis []string, close func(), err error) {
	apiOf, byDir := map[string]string{}, map[string]string{}
	var started []*Endpoint
	close = func() {
		for _, e := range slices.Backward(started) {
			e.Close()
		}
	}
	for _, f := range c.Controllers {
		if !IsPPO(f.String()) {
			continue
		}
		if c.API != "" {
			apiOf[f.String()] = c.API
			apis = []string{c.API}
			continue
		}
		dir := PolicyEndpointDir(f.String(), c.Policies)
		u, ok := byDir[dir]
		if !ok {
			fmt.Fprintf(c.Progress, "eval: starting the policy endpoint over %s\n", dir)
			e, err := StartEndpoint(ctx, dir, c.ServeBin, c.Progress)
			if err != nil {
				return nil, nil, close, err
			}
			started = append(started, e)
			u, byDir[dir] = e.URL, e.URL
			apis = append(apis, u)
		}
		apiOf[f.String()] = u
	}
	return apiOf, apis, close, nil
}

// runOne runs controller f live on placement pi (and simulated with Sim)
// and appends its records to out.
func (c *Config) runOne(ctx context.Context, out *Output, pi int, edge env.Config, f runner.Factory, apiURL string) error {
	// The controller's own scenario: a policy's action set
	// (env.Config.ActionDeltas) from its card.
	sc, err := f.Config(edge)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrController, f, err)
	}
	ctrl, err := BuildLive(ctx, f, sc, apiURL)
	if err != nil {
		return err
	}
	seed := c.PlacementSeeds[pi]
	cfg := live.Config{Scenario: sc, App: c.App, Trace: c.Trace, Step: c.Step, Intervals: c.Intervals, Seed: c.Seed, Workers: c.Workers,
		CPUScale: c.CPUScale, Warmup: c.Warmup, Controller: ctrl, Name: f.String(), WorkerArgs: c.WorkerArgs,
		Planner: c.Planner, PlannerToken: c.PlannerToken, Log: c.Log}
	var liveObs obsLog
	if c.Sim != nil && c.Sim.Observe {
		cfg.Observe = liveObs.add
	}
	fmt.Fprintf(c.Progress, "eval: live %s / %s, placement %d: %s for %v (%d intervals of %v)\n", c.Profile, c.TraceName, seed, f, time.Duration(c.Intervals)*c.Step, c.Intervals, c.Step)
	res, info, err := live.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("liveexp: live %s: %w", f, err)
	}
	res.Trace, res.PlacementSeed = c.TraceName, seed
	if n := len(res.Intervals); n < c.Intervals {
		fmt.Fprintf(c.Progress, "eval: %s: %d of %d intervals recorded (the host missed control ticks)\n", f, n, c.Intervals)
	}
	out.Results = append(out.Results, res)
	out.Summary.Runs = append(out.Summary.Runs, record(res, info, c.Sim != nil))
	if c.Sim != nil {
		// Live, the controller also decides after the last interval (an
		// action no interval applies): row t is the observation interval
		// t's allocation was decided on, one per recorded interval.
		live := simgap.ObsRun{World: simgap.WorldLive, Controller: f.String(), Placement: seed, Rows: liveObs.rows(len(res.Intervals))}
		if err := c.simulate(ctx, out, seed, f, live); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.Progress, "eval: %s: violation rate %.2f%%, mean p95 %.1f ms, mean CPU %.0f mc, throughput %.1f/s of %.1f, dropped %d, unfinished %d, control failures %d\n",
		f, 100*res.Summary.ViolationRate, res.Summary.MeanP95MS, res.Summary.MeanCPU, res.Summary.MeanThroughput, res.Summary.MeanOffered, info.Dropped, info.Unfinished, info.ControlFailures)
	return nil
}

// simulate runs f in the simulator on placement seed (Sim's scenario and
// baseline) and appends the records, and with Observe both worlds'
// observations.
func (c *Config) simulate(ctx context.Context, out *Output, seed uint64, f runner.Factory, liveObs simgap.ObsRun) error {
	s := c.Sim
	spec := runner.Spec{Profile: c.Profile, TraceName: c.TraceName, Workload: c.Trace, PlacementSeed: seed, Seed: c.Seed, Steps: c.Intervals,
		Controller: f, Physics: s.Scenario.Physics, Scenario: s.ScenarioName, Demand: s.Scenario.Demand}
	var rec *simgap.Recorder
	if s.Observe {
		rec = &simgap.Recorder{}
		spec.Controller = simgap.RecordingFactory{Factory: f, Rec: rec}
	}
	sim, err := runner.Run(ctx, spec)
	if err != nil {
		return err
	}
	if s.Observe {
		out.Observations = append(out.Observations, liveObs,
			simgap.ObsRun{World: simgap.WorldSim, Controller: f.String(), Placement: seed, Rows: rec.Rows})
	}
	out.Results = append(out.Results, sim)
	out.Summary.Sim = append(out.Summary.Sim, record(sim, live.Info{}, true))
	out.Summary.SimScenario, out.Summary.SimStepS = s.ScenarioName, s.Scenario.Physics.StepLength()
	if s.Baseline == nil {
		return nil
	}
	spec.Controller, spec.Physics, spec.Scenario, spec.Demand = f, s.Baseline.Physics, s.BaselineName, s.Baseline.Demand
	bs, err := runner.Run(ctx, spec)
	if err != nil {
		return err
	}
	out.Summary.SimBaseline = append(out.Summary.SimBaseline, record(bs, live.Info{}, true))
	out.Summary.SimBaselineScenario, out.Summary.SimBaselineStepS = s.BaselineName, s.Baseline.Physics.StepLength()
	return nil
}

// obsLog collects a live run's observations by the interval they decide
// (live.Config.Observe; called from the run's hook, one at a time).
type obsLog struct{ byStep [][]float64 }

func (l *obsLog) add(step int, obs env.Observation) {
	for len(l.byStep) <= step {
		l.byStep = append(l.byStep, nil)
	}
	l.byStep[step] = obs.Flatten(nil)
}

// rows is the observations of intervals 0..n-1.
func (l *obsLog) rows(n int) [][]float64 { return l.byStep[:min(n, len(l.byStep))] }

// IsPPO reports whether spec names a PPO controller ("ppo" or "ppo:DIR"),
// which a live run asks through a policy endpoint.
func IsPPO(spec string) bool { return spec == "ppo" || strings.HasPrefix(spec, "ppo:") }

// PolicyEndpointDir is the directory the policy endpoint of PPO
// controller spec serves: policies for "ppo" (the policy is the profile's
// name), DIR's parent for "ppo:DIR" (the policy is DIR's base name).
// Controllers with different directories need different endpoints.
func PolicyEndpointDir(spec, policies string) string {
	if d, ok := strings.CutPrefix(spec, "ppo:"); ok {
		return filepath.Dir(d)
	}
	return policies
}

// BuildLive builds controller f for a live run on scenario sc: in
// process, or for PPO a live.Remote asking the policy endpoint at apiURL
// (which, for a residual policy, runs the policy's base rule in process
// and sends its targets with every request).
//
// The live observation has no metric lag (it reports the window that has
// just ended), whatever the scenario's physics say, so an in-process
// controller that compensates the lag (threshold:measured), a residual
// policy's base rule included, is built for none.
func BuildLive(ctx context.Context, f runner.Factory, sc env.Config, apiURL string) (agents.Controller, error) {
	lsc := sc
	lsc.Physics.MetricLagSteps = 0
	if !IsPPO(f.String()) {
		a, err := f.Build(lsc)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrController, f, err)
		}
		if a.IsHorizontal() {
			return nil, fmt.Errorf("%w %s: horizontal; a live run takes vertical controllers", ErrController, f)
		}
		return a.Controller(), nil
	}
	name := sc.App.Name
	if d, ok := strings.CutPrefix(f.String(), "ppo:"); ok {
		name = filepath.Base(d)
	}
	r, err := live.NewRemote(ctx, apiURL, name, lsc) // a residual policy's base rule runs here, for no lag too
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrController, f, err)
	}
	return r, nil
}

// clockNow is the wall clock the progress lines measure elapsed time by
// (a live run takes wall time by nature; nothing recorded depends on it).
func (c *Config) clockNow() time.Time { return time.Now() }
