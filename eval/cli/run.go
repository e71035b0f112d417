package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"

	"streamscale/eval/controllers"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/internal/command"
)

// RunReport is what `eval run -json` prints: the run's key and scenario,
// its summary (runner.Summary, the run-level record) and provenance.
type RunReport struct {
	runner.Key
	TraceSource string   `json:"trace_source"`
	RateMult    float64  `json:"rate_mult"`
	Horizontal  bool     `json:"horizontal"`
	SLOMS       float64  `json:"slo_ms"`
	Tasks       []string `json:"tasks"`
	Placement   []int    `json:"placement"`
	runner.Summary
	TrajectorySHA256 string `json:"trajectory_sha256"`
	ConfigSHA256     string `json:"config_sha256"`
	command.Build           // commit, go_version
}

func runCmd(ctx context.Context, args []string, o Options) error {
	fs := command.NewFlagSet("eval run")
	wf := addWorkloadFlags(fs)
	profile, trace, dir, mult, scenario := wf.profile, wf.trace, wf.dir, wf.mult, wf.scenario
	placement := fs.Uint64("placement-seed", 101, "seed of the random task placement")
	seed := fs.Uint64("seed", 1, "episode and controller seed")
	steps := fs.Int("steps", 0, "intervals to run (0 = the full trace)")
	ctrl := fs.String("controller", "static:2000", "controller: static:N (millicores per task), threshold, vrebalance, ppo, ppo:DIR, clasp")
	policies := fs.String("policies", "policies/default", "directory of trained PPO policies: <dir>/<profile>/policy.json and .safetensors")
	out := fs.String("out", "", "write per-interval metrics to this Parquet file")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	scen, err := wf.check()
	if err != nil {
		return err
	}
	if *steps < 0 {
		return usagef("eval: -steps %d, want ≥ 0 (0 = the full trace)", *steps)
	}
	spec, err := controllers.New(controllers.Options{PoliciesDir: *policies}).Parse(*ctrl)
	if err != nil {
		return usageError(err)
	}
	tr, err := loadTrace(*trace, *dir, *mult, *seed, o)
	if err != nil {
		return err
	}

	rs := runner.Spec{
		Profile: *profile, TraceName: *trace, Workload: tr, PlacementSeed: *placement,
		Seed: *seed, Steps: *steps, Controller: spec, Physics: scen.Physics, Scenario: *scenario, Demand: scen.Demand,
	}
	// The edge scenario: Check derives a horizontal controller's own.
	sc, err := runner.Config(runner.Spec{Profile: rs.Profile, Workload: rs.Workload, PlacementSeed: rs.PlacementSeed, Steps: rs.Steps, Physics: rs.Physics, Demand: rs.Demand})
	if err != nil {
		return usageError(err)
	}
	if err := checkScenario(sc); err != nil {
		return err
	}
	if err := spec.Check(sc); err != nil { // e.g. a missing PPO policy
		return usageError(err)
	}
	res, err := runner.Run(ctx, rs)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := writeIntervals(*out, res); err != nil {
			return err
		}
	}
	s := res.Summary
	rep := RunReport{
		Key: res.Key, TraceSource: tr.Origin(), RateMult: *mult, Horizontal: res.Horizontal,
		SLOMS: res.SLOMS, Tasks: res.Tasks, Placement: res.Placement, Summary: s,
		TrajectorySHA256: res.TrajectorySHA256, ConfigSHA256: res.ConfigSHA256,
		Build: command.Build{Commit: o.Commit, GoVersion: o.GoVersion},
	}
	if *asJSON {
		b, err := report.MarshalJSON(rep)
		if err != nil {
			return err
		}
		_, err = o.Stdout.Write(b)
		return err
	}
	return printRun(o, rep)
}

// writeIntervals writes res's intervals to a Parquet file at path.
func writeIntervals(path string, res runner.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	bw := bufio.NewWriter(f)
	iw := report.NewIntervalWriter(bw)
	err = iw.Write(res)
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

// printRun prints a run's summary for a person: rates as percentages.
func printRun(o Options, rep RunReport) error {
	_, err := fmt.Fprintf(o.Stdout, `%s / %s (%s), scenario %s, placement seed %d, seed %d, controller %s: %d intervals
  violation rate  %.2f%%  (p95 > SLO %g ms)
  mean p95        %.1f ms  (mean latency %.1f ms)
  mean CPU        %.0f millicores
  reserved CPU    %.0f millicores on %.2f active servers (%d re-plans, %d intervals over capacity)
  throughput      %.1f of %.1f messages/s offered
  mean reward     %.4f  (return %.2f)
  trajectory      sha256 %s
`, rep.Profile, rep.Trace, rep.TraceSource, rep.Scenario, rep.PlacementSeed, rep.Seed, rep.Controller, rep.Steps,
		100*rep.ViolationRate, rep.SLOMS, rep.MeanP95MS, rep.MeanLatencyMS, rep.MeanCPU,
		rep.MeanReservedCPU, rep.MeanActiveServers, rep.Replans, rep.OverCapacitySteps,
		rep.MeanThroughput, rep.MeanOffered, rep.MeanReward, rep.TotalReward, rep.TrajectorySHA256)
	return err
}
