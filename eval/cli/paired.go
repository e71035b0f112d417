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
	"sync"
	"time"

	"streamscale/env"
	"streamscale/eval/controllers"
	"streamscale/eval/paired"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/internal/command"
	"streamscale/traces"
)

// DefaultControllers is the default -controllers list of `eval paired`;
// entries not available yet are skipped with a notice.
const DefaultControllers = "ppo,vrebalance,threshold,threshold:measured,clasp,static:500,static:2000,static:10000"

// Artifact names in the -out directory.
const (
	FileIntervals = "intervals.parquet"
	FileRuns      = "runs.parquet"
	FileSummary   = "summary.json"
	FileReport    = "report.md"
)

func pairedCmd(ctx context.Context, args []string, o Options) error {
	start := time.Now()
	fs := command.NewFlagSet("eval paired")
	outDir := fs.String("out", "out/paired", "output directory (created if missing)")
	profilesF := fs.String("profiles", "pred,etl", "comma-separated profiles")
	tracesF := fs.String("traces", "taxi,intel", "comma-separated workloads: taxi, taxi-train, intel or .csv/.parquet files")
	dir := fs.String("trace-dir", traces.DefaultDir(), "trace data directory (env STREAMSCALE_TRACES)")
	mult := fs.Float64("rate-mult", 1, "arrival-rate multiplier, > 0")
	nPlace := fs.Int("placements", len(paired.DefaultPlacements), "number of placement seeds, taken from 101, 102, …")
	ctrlF := fs.String("controllers", DefaultControllers, "comma-separated controller specs")
	candF := fs.String("candidate", "ppo", "controller judged against the others")
	policies := fs.String("policies", "policies/default", "directory of trained PPO policies: <dir>/<profile>/policy.json and .safetensors")
	seed := fs.Uint64("seed", 1, "root seed (episode seeds and bootstrap)")
	steps := fs.Int("steps", 3600, "intervals per run (0 = the full trace)")
	scenario := fs.String("scenario", env.Scenarios()[0], scenarioUsage)
	asJSON := fs.Bool("json", false, "print summary.json to stdout")
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	set := explicit(fs)

	profiles, err := splitList("profiles", *profilesF)
	if err != nil {
		return err
	}
	for _, p := range profiles {
		if err := checkProfile(p); err != nil {
			return err
		}
	}
	traceNames, err := splitList("traces", *tracesF)
	if err != nil {
		return err
	}
	for _, t := range traceNames {
		if err := checkTrace(t); err != nil {
			return err
		}
	}
	if err := checkRateMult(*mult); err != nil {
		return err
	}
	if err := checkRunShape(*nPlace, *steps, *outDir); err != nil {
		return err
	}
	scen, err := resolveScenario("scenario", *scenario)
	if err != nil {
		return err
	}

	plan := paired.Plan{Profiles: profiles, Seed: *seed, Steps: *steps, RateMult: *mult, Scenario: *scenario, Physics: scen.Physics, Demand: scen.Demand}
	for i := range *nPlace {
		plan.Placements = append(plan.Placements, 101+uint64(i))
	}
	for _, name := range traceNames {
		t, err := loadTrace(name, *dir, *mult, *seed, o)
		if err != nil {
			return err
		}
		plan.Workloads = append(plan.Workloads, t)
	}

	// The physics must fit the episode (checked before the controllers,
	// whose preflight skips the unavailable defaults).
	for _, prof := range plan.Profiles {
		for _, w := range plan.Workloads {
			sc, err := runner.Config(runner.Spec{Profile: prof, Workload: w, PlacementSeed: plan.Placements[0], Steps: plan.Steps, Physics: plan.Physics, Demand: plan.Demand})
			if err != nil {
				return usageError(err)
			}
			if err := checkScenario(sc); err != nil {
				return err
			}
		}
	}

	// Controllers: parse each spec and build it once per profile × workload
	// (a PPO policy must exist), so that a bad one fails before any run.
	// Entries of the default list that are not available are skipped.
	ctrlSpecs, err := splitList("controllers", *ctrlF)
	if err != nil {
		return err
	}
	sel, err := controllers.New(controllers.Options{PoliciesDir: *policies}).Select(controllers.SelectOptions{
		Specs: ctrlSpecs, SpecsGiven: set["controllers"],
		Candidate: *candF, CandidateGiven: set["candidate"],
		Check: func(c controllers.Spec) error { return preflight(c, plan) },
	})
	if err != nil {
		return usageError(err)
	}
	for _, note := range sel.Notes {
		fmt.Fprintln(o.Stderr, note)
	}
	for _, c := range sel.Controllers {
		plan.Controllers = append(plan.Controllers, c)
	}
	plan.Candidate = sel.Candidate
	if err := plan.Validate(); err != nil {
		return usageError(err)
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}

	sum, err := executePaired(ctx, plan, *outDir, o)
	if err != nil {
		return err
	}
	js, err := writeSummary(*outDir, sum)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "eval: paired evaluation of %d runs in %.1fs wall time; artifacts in %s\n",
		len(plan.Specs()), time.Since(start).Seconds(), *outDir)
	if *asJSON {
		_, err = o.Stdout.Write(js)
		return err
	}
	return printVerdicts(o, sum, *outDir)
}

// preflight builds c (of either kind, on its own scenario) for every
// profile × workload of plan (on the first placement) and discards it.
func preflight(c controllers.Spec, plan paired.Plan) error {
	for _, prof := range plan.Profiles {
		for _, w := range plan.Workloads {
			sc, err := runner.Config(runner.Spec{Profile: prof, Workload: w, PlacementSeed: plan.Placements[0], Steps: plan.Steps, Physics: plan.Physics, Demand: plan.Demand})
			if err != nil {
				return err
			}
			if err := c.Check(sc); err != nil {
				return err
			}
		}
	}
	return nil
}

// executePaired runs the plan, streaming intervals.parquet and collecting
// runs.parquet rows and the figures' series, and analyzes the results.
func executePaired(ctx context.Context, plan paired.Plan, outDir string, o Options) (paired.Summary, error) {
	specs := plan.Specs()
	f, err := os.Create(filepath.Join(outDir, FileIntervals))
	if err != nil {
		return paired.Summary{}, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	iw := report.NewIntervalWriter(bw)

	results := make([]runner.Result, len(specs))
	series := make([]report.Series, len(specs))
	rows := make([]report.RunRow, len(specs))
	emit := func(i int, r runner.Result) error {
		if err := iw.Write(r); err != nil {
			return err
		}
		series[i] = report.SeriesOf(r)
		rows[i] = report.RunRowOf(r)
		r.Intervals = nil // written; keep only the summary
		results[i] = r
		return nil
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	bar := newProgress(o)
	err = paired.Execute(ctx, specs, workers, emit, bar.update)
	bar.finish()
	if err != nil {
		return paired.Summary{}, err
	}
	if err := iw.Close(); err != nil {
		return paired.Summary{}, err
	}
	if err := bw.Flush(); err != nil {
		return paired.Summary{}, fmt.Errorf("eval: %w", err)
	}
	if err := f.Close(); err != nil {
		return paired.Summary{}, fmt.Errorf("eval: %w", err)
	}

	rf, err := os.Create(filepath.Join(outDir, FileRuns))
	if err != nil {
		return paired.Summary{}, fmt.Errorf("eval: %w", err)
	}
	defer rf.Close()
	if err := report.WriteRuns(rf, rows); err != nil {
		return paired.Summary{}, err
	}
	if err := rf.Close(); err != nil {
		return paired.Summary{}, fmt.Errorf("eval: %w", err)
	}

	sum, err := paired.Analyze(plan, results)
	if err != nil {
		return paired.Summary{}, err
	}
	sum.Commit, sum.GoVersion = o.Commit, o.GoVersion
	if err := writeJudgedReport(outDir, FileReport, sum, series); err != nil {
		return paired.Summary{}, err
	}
	return sum, nil
}

// writeJudgedReport writes the figures of a judged paired summary into dir
// and its markdown report, which links them, as dir/file (eval paired, and
// eval live with several controllers).
func writeJudgedReport(dir, file string, sum paired.Summary, series []report.Series) error {
	figs, err := report.Figures(dir, sum, series)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, file), report.Markdown(sum, figs), 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	return nil
}

func writeSummary(outDir string, sum paired.Summary) ([]byte, error) {
	return writeSummaryAs(outDir, FileSummary, sum)
}

// writeSummaryAs writes a paired summary's JSON as dir/file and returns it.
func writeSummaryAs(dir, file string, sum paired.Summary) ([]byte, error) {
	js, err := report.SummaryJSON(sum)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, file), js, 0o644); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return js, nil
}

// printVerdicts prints a short text summary of the verdicts.
func printVerdicts(o Options, sum paired.Summary, outDir string) error {
	w := bufio.NewWriter(o.Stdout)
	yn := func(v paired.Verdict) string {
		if v.Holds {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(w, "candidate %s; report %s\n", sum.Protocol.Candidate, filepath.Join(outDir, FileReport))
	fmt.Fprintf(w, "%-6s %-8s %-16s %9s %10s %10s %10s %7s  %-3s %-3s %-3s\n", "prof", "trace", "controller", "viol %", "p95 ms", "cpu mc", "resv mc", "servers", "H1", "H2", "H3")
	for _, c := range sum.Combinations {
		for _, cs := range c.Controllers {
			h := "  -   -   -"
			for _, cmp := range c.Comparisons {
				if cmp.Baseline == cs.Controller {
					h = fmt.Sprintf("  %-3s %-3s %-3s", yn(cmp.H1), yn(cmp.H2), yn(cmp.H3))
				}
			}
			fmt.Fprintf(w, "%-6s %-8s %-16s %9s %10s %10s %10s %7s%s\n", c.Profile, c.Trace, cs.Controller,
				strconv.FormatFloat(100*float64(cs.ViolationRateMean), 'f', 2, 64),
				strconv.FormatFloat(float64(cs.MeanP95MS), 'f', 1, 64),
				strconv.FormatFloat(float64(cs.MeanCPU), 'f', 0, 64),
				strconv.FormatFloat(float64(cs.MeanReservedCPU), 'f', 0, 64),
				strconv.FormatFloat(float64(cs.MeanActiveServers), 'f', 2, 64), h)
		}
	}
	return w.Flush()
}

// progress draws a progress bar on a terminal stderr.
type progress struct {
	mu    sync.Mutex
	o     Options
	start time.Time
	drawn bool
}

func newProgress(o Options) *progress { return &progress{o: o, start: time.Now()} }

func (p *progress) update(done, total int) {
	if !p.o.Terminal || total == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	const width = 30
	n := done * width / total
	fmt.Fprintf(p.o.Stderr, "\r[%s%s] %d/%d runs %5.1fs", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, time.Since(p.start).Seconds())
	p.drawn = true
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.o.Stderr)
	}
}

// checkRunShape checks the flags eval paired and eval sweep share: the
// number of placements, the steps per run and the output directory.
func checkRunShape(placements, steps int, outDir string) error {
	switch {
	case placements < 1 || placements > 1000:
		return usagef("eval: -placements %d, want 1…1000", placements)
	case steps < 0:
		return usagef("eval: -steps %d, want ≥ 0 (0 = the full trace)", steps)
	case outDir == "":
		return usagef("eval: -out is empty")
	}
	return nil
}
