package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"streamscale/env"
	"streamscale/eval/controllers"
	"streamscale/eval/paired"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/eval/tune"
	"streamscale/internal/command"
	"streamscale/traces"
)

// defaultGrids are the grids `eval tune` tries per rule unless -grid is
// given.
var defaultGrids = map[string]string{
	"threshold":          "target=0.5,0.6,0.7,0.8:tol=0.05,0.1,0.2:window=10,30,60",
	"threshold:measured": "target=0.5,0.6,0.7,0.8:tol=0.05,0.1,0.2:window=10,30,60",
	"flink":              "target=0.5,0.6,0.7,0.8:window=10,30,60:catchup=5,10,30",
}

// tuneFlags are the flags of `eval tune`.
type tuneFlags struct {
	base, grid, out, profiles, traces, dir, places, scenario *string
	seed                                                     *uint64
	steps                                                    *int
	budget                                                   *float64
	asJSON                                                   *bool
}

func newTuneFlags(fset *flag.FlagSet) tuneFlags {
	return tuneFlags{
		base:     fset.String("rule", "threshold:measured", "rule to tune: threshold, threshold:measured or flink"),
		grid:     fset.String("grid", "", "grid KEY=V1,V2:KEY2=… (default: the rule's grid in eval/cli's defaultGrids)"),
		out:      fset.String("out", "out/tune", "output directory (created if missing)"),
		profiles: fset.String("profiles", "pred,etl", "comma-separated profiles"),
		traces:   fset.String("traces", "taxi,intel", "comma-separated workloads"),
		dir:      fset.String("trace-dir", traces.DefaultDir(), "trace data directory (env STREAMSCALE_TRACES)"),
		places:   fset.String("placements", joinSeeds(tune.DevelopmentPlacements), "comma-separated tuning placement seeds (never the evaluation placements 101–110)"),
		seed:     fset.Uint64("seed", 1, "root seed (episode seeds)"),
		steps:    fset.Int("steps", 3600, "intervals per run (0 = the full trace)"),
		scenario: fset.String("scenario", env.Scenarios()[0], scenarioUsage),
		budget:   fset.Float64("violation-budget", paired.DefaultViolationBudget, "violation rate (a fraction in (0, 1)) every cell must stay within"),
		asJSON:   fset.Bool("json", false, "print tune.json to stdout"),
	}
}

// tuneCmd tunes a rule on development placements (package tune) and
// writes tune.json and tune.md into -out.
func tuneCmd(ctx context.Context, args []string, o Options) error {
	fset := command.NewFlagSet("eval tune")
	f := newTuneFlags(fset)
	if err := parseFlags(fset, args, o); err != nil {
		return err
	}
	plan, grid, err := f.plan(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*f.out, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	sum, err := runTuneGrid(ctx, plan, o, *f.asJSON)
	if err != nil {
		return err
	}
	res, err := tune.Choose(sum, *f.base, *f.budget)
	if err != nil {
		return err
	}
	return f.write(o, plan, grid, res)
}

// plan checks the flags and builds the paired plan of the grid: the rule's
// default configuration first, then every grid point.
func (f tuneFlags) plan(o Options) (paired.Plan, string, error) {
	g := *f.grid
	if g == "" {
		var ok bool
		if g, ok = defaultGrids[*f.base]; !ok {
			return paired.Plan{}, "", usagef("eval tune: -rule %q, want threshold, threshold:measured or flink", *f.base)
		}
	}
	axes, err := tune.ParseGrid(g)
	if err != nil {
		return paired.Plan{}, "", usageError(err)
	}
	if !(*f.budget > 0 && *f.budget < 1) {
		return paired.Plan{}, "", usagef("eval tune: -violation-budget %g, want a fraction in (0, 1)", *f.budget)
	}
	places, err := parseSeeds("tune", "placements", *f.places)
	if err != nil {
		return paired.Plan{}, "", err
	}
	if err := tune.CheckPlacements(places); err != nil {
		return paired.Plan{}, "", usageError(err)
	}
	profiles, err := checkedProfiles(*f.profiles)
	if err != nil {
		return paired.Plan{}, "", err
	}
	if err := checkRunShape(len(places), *f.steps, *f.out); err != nil {
		return paired.Plan{}, "", err
	}
	scen, err := resolveScenario("scenario", *f.scenario)
	if err != nil {
		return paired.Plan{}, "", err
	}
	plan := paired.Plan{Profiles: profiles, Placements: places, Seed: *f.seed, Steps: *f.steps, RateMult: 1,
		Scenario: *f.scenario, Physics: scen.Physics, Demand: scen.Demand, ViolationBudget: *f.budget, Candidate: *f.base}
	if plan.Workloads, err = loadTraces(*f.traces, *f.dir, 1, *f.seed, o); err != nil {
		return paired.Plan{}, "", err
	}
	reg := controllers.New(controllers.Options{})
	for _, spec := range append([]string{*f.base}, tune.Specs(*f.base, axes)...) {
		c, err := reg.Parse(spec)
		if err != nil {
			return paired.Plan{}, "", usageError(err)
		}
		plan.Controllers = append(plan.Controllers, c)
	}
	if err := plan.Validate(); err != nil {
		return paired.Plan{}, "", usageError(err)
	}
	return plan, g, nil
}

// checkedProfiles splits and checks a -profiles list.
func checkedProfiles(v string) ([]string, error) {
	profiles, err := splitList("profiles", v)
	if err != nil {
		return nil, err
	}
	for _, p := range profiles {
		if err := checkProfile(p); err != nil {
			return nil, err
		}
	}
	return profiles, nil
}

// loadTraces splits, checks and loads a -traces list.
func loadTraces(v, dir string, mult float64, seed uint64, o Options) ([]*traces.Trace, error) {
	names, err := splitList("traces", v)
	if err != nil {
		return nil, err
	}
	var out []*traces.Trace
	for _, name := range names {
		if err := checkTrace(name); err != nil {
			return nil, err
		}
		t, err := loadTrace(name, dir, mult, seed, o)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// runTuneGrid runs every grid point of plan and analyzes the runs.
func runTuneGrid(ctx context.Context, plan paired.Plan, o Options, quiet bool) (paired.Summary, error) {
	specs := plan.Specs()
	results := make([]runner.Result, len(specs))
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	bar := newProgress(o, quiet, false)
	err := paired.Execute(ctx, specs, workers, func(i int, r runner.Result) error {
		r.Intervals = nil
		results[i] = r
		return nil
	}, bar.update)
	bar.finish()
	if err != nil {
		return paired.Summary{}, err
	}
	return paired.Analyze(plan, results)
}

// write writes tune.json and tune.md and prints the choice (or the JSON).
func (f tuneFlags) write(o Options, plan paired.Plan, grid string, res tune.Result) error {
	var names []string
	for _, w := range plan.Workloads {
		names = append(names, w.Name)
	}
	js, err := report.MarshalJSON(struct {
		command.Build
		Seed     uint64      `json:"seed"`
		Scenario string      `json:"scenario"`
		Steps    int         `json:"steps"`
		Traces   []string    `json:"traces"`
		Result   tune.Result `json:"result"`
	}{command.Build{Commit: o.Commit, GoVersion: o.GoVersion}, *f.seed, *f.scenario, *f.steps, names, res})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*f.out, "tune.json"), js, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	md := fmt.Sprintf("# Tuning %s\n\nGrid `%s` on placements %s (%s, %d intervals); budget %.3g%% of intervals in every cell.\n\n",
		*f.base, grid, joinSeeds(plan.Placements), *f.scenario, *f.steps, 100**f.budget)
	if err := os.WriteFile(filepath.Join(*f.out, "tune.md"), append([]byte(md), tune.Markdown(res)...), 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if *f.asJSON {
		_, err = o.Stdout.Write(js)
		return err
	}
	fmt.Fprintf(o.Stdout, "chosen %s (%d configurations; %s)\n", res.Chosen, len(res.Points), filepath.Join(*f.out, "tune.md"))
	return nil
}

func joinSeeds(s []uint64) string {
	var out []string
	for _, x := range s {
		out = append(out, strconv.FormatUint(x, 10))
	}
	return strings.Join(out, ",")
}

// parseSeeds parses a comma-separated list of placement seeds given to
// cmd's flag name.
func parseSeeds(cmd, name, v string) ([]uint64, error) {
	parts, err := splitList(name, v)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, p := range parts {
		x, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return nil, usagef("eval %s: -%s: %q is not a seed", cmd, name, p)
		}
		out = append(out, x)
	}
	return out, nil
}
