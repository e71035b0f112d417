package cli

import (
	"context"
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

// tuneCmd tunes a rule on development placements (package tune) and
// writes tune.json and tune.md into -out.
func tuneCmd(ctx context.Context, args []string, o Options) error {
	fset := command.NewFlagSet("eval tune")
	base := fset.String("rule", "threshold:measured", "rule to tune: threshold, threshold:measured or flink")
	grid := fset.String("grid", "", "grid KEY=V1,V2:KEY2=… (default: the rule's grid, see -h of eval tune's doc)")
	outDir := fset.String("out", "out/tune", "output directory (created if missing)")
	profilesF := fset.String("profiles", "pred,etl", "comma-separated profiles")
	tracesF := fset.String("traces", "taxi,intel", "comma-separated workloads")
	dir := fset.String("trace-dir", traces.DefaultDir(), "trace data directory (env STREAMSCALE_TRACES)")
	placesF := fset.String("placements", joinSeeds(tune.DevelopmentPlacements), "comma-separated tuning placement seeds (never the evaluation placements 101–110)")
	seed := fset.Uint64("seed", 1, "root seed (episode seeds)")
	steps := fset.Int("steps", 3600, "intervals per run (0 = the full trace)")
	scenario := fset.String("scenario", env.Scenarios()[0], scenarioUsage)
	budget := fset.Float64("violation-budget", paired.DefaultViolationBudget, "violation rate (a fraction in (0, 1)) every cell must stay within")
	asJSON := fset.Bool("json", false, "print tune.json to stdout")
	if err := parseFlags(fset, args, o); err != nil {
		return err
	}
	g := *grid
	if g == "" {
		var ok bool
		if g, ok = defaultGrids[*base]; !ok {
			return usagef("eval tune: -rule %q, want threshold, threshold:measured or flink", *base)
		}
	}
	axes, err := tune.ParseGrid(g)
	if err != nil {
		return usageError(err)
	}
	if !(*budget > 0 && *budget < 1) {
		return usagef("eval tune: -violation-budget %g, want a fraction in (0, 1)", *budget)
	}
	places, err := parseSeeds(*placesF)
	if err != nil {
		return err
	}
	if err := tune.CheckPlacements(places); err != nil {
		return usageError(err)
	}
	profiles, err := splitList("profiles", *profilesF)
	if err != nil {
		return err
	}
	for _, p := range profiles {
		if err := checkProfile(p); err != nil {
			return err
		}
	}
	names, err := splitList("traces", *tracesF)
	if err != nil {
		return err
	}
	if err := checkRunShape(len(places), *steps, *outDir); err != nil {
		return err
	}
	scen, err := resolveScenario("scenario", *scenario)
	if err != nil {
		return err
	}
	plan := paired.Plan{Profiles: profiles, Placements: places, Seed: *seed, Steps: *steps, RateMult: 1,
		Scenario: *scenario, Physics: scen.Physics, Demand: scen.Demand, ViolationBudget: *budget, Candidate: *base}
	for _, name := range names {
		if err := checkTrace(name); err != nil {
			return err
		}
		t, err := loadTrace(name, *dir, 1, *seed, o)
		if err != nil {
			return err
		}
		plan.Workloads = append(plan.Workloads, t)
	}
	reg := controllers.New(controllers.Options{})
	for _, spec := range append([]string{*base}, tune.Specs(*base, axes)...) {
		c, err := reg.Parse(spec)
		if err != nil {
			return usageError(err)
		}
		plan.Controllers = append(plan.Controllers, c)
	}
	if err := plan.Validate(); err != nil {
		return usageError(err)
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	specs := plan.Specs()
	results := make([]runner.Result, len(specs))
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	bar := newProgress(o, *asJSON, false)
	err = paired.Execute(ctx, specs, workers, func(i int, r runner.Result) error {
		r.Intervals = nil
		results[i] = r
		return nil
	}, bar.update)
	bar.finish()
	if err != nil {
		return err
	}
	sum, err := paired.Analyze(plan, results)
	if err != nil {
		return err
	}
	res, err := tune.Choose(sum, *base, *budget)
	if err != nil {
		return err
	}
	js, err := report.MarshalJSON(struct {
		command.Build
		Seed     uint64      `json:"seed"`
		Scenario string      `json:"scenario"`
		Steps    int         `json:"steps"`
		Traces   []string    `json:"traces"`
		Result   tune.Result `json:"result"`
	}{command.Build{Commit: o.Commit, GoVersion: o.GoVersion}, *seed, *scenario, *steps, names, res})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*outDir, "tune.json"), js, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	md := fmt.Sprintf("# Tuning %s\n\nGrid `%s` on placements %s (%s, %d intervals); budget %.1f%% of intervals in every cell.\n\n",
		*base, g, joinSeeds(places), *scenario, *steps, 100**budget)
	if err := os.WriteFile(filepath.Join(*outDir, "tune.md"), append([]byte(md), tune.Markdown(res)...), 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if *asJSON {
		_, err = o.Stdout.Write(js)
		return err
	}
	fmt.Fprintf(o.Stdout, "chosen %s (%d configurations; %s)\n", res.Chosen, len(res.Points), filepath.Join(*outDir, "tune.md"))
	return nil
}

func joinSeeds(s []uint64) string {
	var out []string
	for _, x := range s {
		out = append(out, strconv.FormatUint(x, 10))
	}
	return strings.Join(out, ",")
}

// parseSeeds parses a comma-separated list of placement seeds.
func parseSeeds(v string) ([]uint64, error) {
	parts, err := splitList("placements", v)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, p := range parts {
		x, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return nil, usagef("eval tune: -placements: %q is not a seed", p)
		}
		out = append(out, x)
	}
	return out, nil
}
