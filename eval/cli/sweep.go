package cli

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"streamscale/env"
	"streamscale/eval/controllers"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/eval/sweep"
	"streamscale/internal/command"
)

// Artifact names of `eval sweep` in the -out directory.
const (
	FileSweep       = "sweep.parquet"
	FileSweepFigure = "sweep.png"
	FileSweepJSON   = "sweep.json"
)

func sweepCmd(ctx context.Context, args []string, o Options) error {
	start := time.Now()
	fs := command.NewFlagSet("eval sweep")
	wf := addWorkloadFlags(fs)
	profile, trace, dir, mult, scenario := wf.profile, wf.trace, wf.dir, wf.mult, wf.scenario
	outDir := fs.String("out", "out/sweep", "output directory (created if missing)")
	gridF := fs.String("grid", formatGrid(sweep.DefaultGrid()), "comma-separated CPU allocations per task, millicores, strictly ascending")
	nPlace := fs.Int("placements", 3, "number of placement seeds, taken from 101, 102, …")
	seed := fs.Uint64("seed", 1, "root seed of the episode seeds")
	steps := fs.Int("steps", 3600, "intervals per run (0 = the full trace)")
	asJSON := fs.Bool("json", false, "print sweep.json to stdout")
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	scen, err := wf.check()
	if err != nil {
		return err
	}
	grid, err := parseGrid(*gridF)
	if err != nil {
		return err
	}
	if err := checkRunShape(*nPlace, *steps, *outDir); err != nil {
		return err
	}
	reg := controllers.New(controllers.Options{})
	plan := sweep.Plan{
		Profile: *profile, Trace: *trace, Scenario: *scenario, Physics: scen.Physics, Demand: scen.Demand, Grid: grid,
		Placements: sweep.Placements(*nPlace), Seed: *seed, Steps: *steps,
	}
	for _, c := range grid {
		spec, err := reg.Parse("static:" + strconv.FormatFloat(c, 'f', -1, 64))
		if err != nil {
			return usageError(err)
		}
		plan.Static = append(plan.Static, spec)
	}
	tr, err := loadTrace(*trace, *dir, *mult, *seed, o)
	if err != nil {
		return err
	}
	plan.Workload = tr
	if err := checkSweepGrid(plan); err != nil {
		return err
	}
	if err := plan.Validate(); err != nil {
		return usageError(err)
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}

	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	bar := newProgress(o, false, false)
	rows, sum, err := sweep.Execute(ctx, plan, workers, bar.update)
	bar.finish()
	if err != nil {
		return err
	}
	sum.Commit, sum.GoVersion = o.Commit, o.GoVersion
	sum.TraceSource = tr.Origin()
	js, err := writeSweep(*outDir, sum, rows)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "eval: sweep of %d runs in %.1fs wall time; artifacts in %s\n",
		len(grid)*len(plan.Placements), time.Since(start).Seconds(), *outDir)
	if *asJSON {
		_, err = o.Stdout.Write(js)
		return err
	}
	return printSweep(o, sum)
}

// parseGrid parses -grid: comma-separated millicores per task, each a
// finite number > 0, strictly ascending.
func parseGrid(v string) ([]float64, error) {
	var out []float64
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, usagef("eval: -grid %q has an empty entry", v)
		}
		c, err := strconv.ParseFloat(s, 64)
		if err != nil || !(c > 0) {
			return nil, usagef("eval: -grid entry %q, want millicores > 0", s)
		}
		if n := len(out); n > 0 && c <= out[n-1] {
			return nil, usagef("eval: -grid %q is not strictly ascending (%s after %s)", v, s, strconv.FormatFloat(out[n-1], 'f', -1, 64))
		}
		out = append(out, c)
	}
	return out, nil
}

func formatGrid(g []float64) string {
	var s []string
	for _, c := range g {
		s = append(s, strconv.FormatFloat(c, 'f', -1, 64))
	}
	return strings.Join(s, ",")
}

// writeFile creates path and writes it through a buffer with write.
func writeFile(path string, write func(*bufio.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("eval: %w", cerr)
	}
	return err
}

// printSweep prints the points as a table.
func printSweep(o Options, sum sweep.Summary) error {
	w := bufio.NewWriter(o.Stdout)
	fmt.Fprintf(w, "%s / %s (%s), scenario %s, placements %d, %d intervals each (SLO %g ms)\n",
		sum.Profile, sum.Trace, sum.TraceSource, sum.Scenario, len(sum.PlacementSeeds), sum.Steps, sum.SLOMS)
	fmt.Fprintf(w, "%10s %9s %14s %12s %16s %16s\n", "cpu mc", "viol %", "median p95 ms", "mean p95 ms", "median p95/floor", "busy 10% /floor")
	for g, p := range sum.Points {
		fmt.Fprintf(w, "%10s %9s %14s %12s %16s %16s\n", strconv.FormatFloat(p.CPUMillicores, 'f', -1, 64),
			strconv.FormatFloat(100*float64(p.ViolationRate), 'f', 2, 64),
			strconv.FormatFloat(float64(p.MedianP95MS), 'f', 1, 64),
			strconv.FormatFloat(float64(p.MeanP95MS), 'f', 1, 64),
			strconv.FormatFloat(float64(sum.MedianP95Rel[g]), 'f', 3, 64),
			strconv.FormatFloat(float64(sum.PeakMedianP95Rel[g]), 'f', 3, 64))
	}
	if sum.SmallestCompliantCPU != nil {
		per := make([]string, len(sum.PlacementP95Ratios))
		for j, r := range sum.PlacementP95Ratios {
			per[j] = strconv.FormatFloat(float64(r), 'f', 3, 64)
		}
		fmt.Fprintf(w, "smallest compliant allocation (violations ≤ %g%%): %s millicores per task; its median p95 over each placement's floor (median p95 at the largest allocation): %s (placements %s)\n",
			100*sweep.ComplianceTarget, strconv.FormatFloat(*sum.SmallestCompliantCPU, 'f', -1, 64),
			strconv.FormatFloat(float64(sum.P95Ratio), 'f', 3, 64), strings.Join(per, ", "))
		fmt.Fprintf(w, "the same over the busiest %g%% of each run's intervals (by offered rate): %s\n", 100*sweep.BusyShare,
			strconv.FormatFloat(float64(sum.PeakP95Ratio), 'f', 3, 64))
	} else {
		fmt.Fprintf(w, "no allocation of the grid keeps violations ≤ %g%%\n", 100*sweep.ComplianceTarget)
	}
	return w.Flush()
}

// checkSweepGrid refuses grid allocations beyond the simulator's bounds,
// which would be clamped: two grid points would run the same episode.
func checkSweepGrid(plan sweep.Plan) error {
	sc, err := runner.Config(runner.Spec{Profile: plan.Profile, Workload: plan.Workload, PlacementSeed: plan.Placements[0], Steps: plan.Steps, Physics: plan.Physics, Demand: plan.Demand})
	if err != nil {
		return usageError(err)
	}
	e, err := env.New(sc)
	if err != nil {
		return usagef("eval: %v", err)
	}
	lo, hi := e.Config().MinCPU, e.Config().MaxCPU
	for _, c := range plan.Grid {
		if c < lo || c > hi {
			return usagef("eval: -grid entry %s outside the simulator's allocations, %s…%s millicores per task",
				strconv.FormatFloat(c, 'f', -1, 64), strconv.FormatFloat(lo, 'f', -1, 64), strconv.FormatFloat(hi, 'f', -1, 64))
		}
	}
	return nil
}

// writeSweep writes sweep.parquet, the figure and sweep.json into dir and
// returns the JSON.
func writeSweep(dir string, sum sweep.Summary, rows []sweep.Row) ([]byte, error) {
	if err := writeFile(filepath.Join(dir, FileSweep), func(w *bufio.Writer) error { return sweep.WriteRows(w, rows) }); err != nil {
		return nil, err
	}
	if err := sweep.Figure(filepath.Join(dir, FileSweepFigure), sum, rows); err != nil {
		return nil, fmt.Errorf("eval: sweep figure: %w", err)
	}
	js, err := report.MarshalJSON(sum)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, FileSweepJSON), js, 0o644); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return js, nil
}
