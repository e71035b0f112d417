package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"streamscale/env"
	"streamscale/eval/controllers"
	"streamscale/eval/paired"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/eval/tune"
	"streamscale/internal/command"
	"streamscale/traces"
)

// DefaultControllers is the default -controllers list of `eval paired`;
// entries not available yet are skipped with a notice. The tuned rules
// are the configurations `eval tune` chose on the development placements
// (results/tune/*.json; a test holds the list to them); PredictiveFlink is
// the default set's base rule.
const DefaultControllers = "ppo,vrebalance,threshold,threshold:measured," + TunedThreshold + ",flink," + TunedFlink + "," + PredictiveFlink + ",clasp,static:500,static:2000,static:10000"

// The rules as `eval tune` chose them (results/tune/threshold-measured.json
// and results/tune/flink.json): least CPU within the 2% violation budget in
// every cell, on the training and development placements.
const (
	TunedThreshold = "threshold:measured:target=0.7:tol=0.1:window=10"
	TunedFlink     = "flink:target=0.7:window=10:catchup=30"
	// PredictiveFlink is our predictive extension of the tuned DS2-style
	// rule (the sources' least-squares load trend over 60 steps), chosen
	// on the development placements in
	// docs/experiments/2026-12-05-forecast.md; the default policy set
	// (configs/residual.toml) is a residual policy over it.
	PredictiveFlink = "flink:target=0.71:window=10:catchup=30:trend=60"
)

// Artifact names in the -out directory.
const (
	FileIntervals = "intervals.parquet"
	FileRuns      = "runs.parquet"
	FileSummary   = "summary.json"
	FileReport    = "report.md"
)

// pairedFlags are the flags of `eval paired`.
type pairedFlags struct {
	out, profiles, traces, dir, ctrls, cand, policies, scenario *string
	placeSeeds                                                  *string
	mult, budget                                                *float64
	places, steps                                               *int
	seed                                                        *uint64
	asJSON, progress                                            *bool
}

func newPairedFlags(fs *flag.FlagSet) pairedFlags {
	return pairedFlags{
		out:        fs.String("out", "out/paired", "output directory (created if missing)"),
		profiles:   fs.String("profiles", "pred,etl", "comma-separated profiles"),
		traces:     fs.String("traces", "taxi,intel", "comma-separated workloads: taxi, taxi-train, intel or .csv/.parquet files"),
		dir:        fs.String("trace-dir", traces.DefaultDir(), "trace data directory (env STREAMSCALE_TRACES)"),
		mult:       fs.Float64("rate-mult", 1, "arrival-rate multiplier, > 0"),
		places:     fs.Int("placements", len(paired.DefaultPlacements), "number of placement seeds, taken from 101, 102, …"),
		placeSeeds: fs.String("placement-seeds", "", "comma-separated placement seeds in place of -placements, e.g. the development ones "+joinSeeds(tune.DevelopmentPlacements)+" to choose between recipes without touching the evaluation placements 101–110"),
		ctrls:      fs.String("controllers", DefaultControllers, "comma-separated controller specs"),
		cand:       fs.String("candidate", "ppo", "controller judged against the others"),
		policies:   fs.String("policies", "policies/default", "directory of trained PPO policies: <dir>/<profile>/policy.json and .safetensors, or the seeds of <dir>/<profile>/seeds.json (train -seeds), judged by the seed-level protocol"),
		seed:       fs.Uint64("seed", 1, "root seed (episode seeds and bootstrap)"),
		steps:      fs.Int("steps", 3600, "intervals per run (0 = the full trace)"),
		scenario:   fs.String("scenario", env.Scenarios()[0], scenarioUsage),
		asJSON:     fs.Bool("json", false, "print summary.json to stdout"),
		budget:     fs.Float64("violation-budget", paired.DefaultViolationBudget, "violation rate (a fraction in (0, 1)) within which a controller meets its SLO when the best controller of a cell is named"),
		progress:   fs.Bool("progress", false, "show progress on stderr even when it is not a terminal or with -json"),
	}
}

func pairedCmd(ctx context.Context, args []string, o Options) error {
	start := time.Now()
	fs := command.NewFlagSet("eval paired")
	f := newPairedFlags(fs)
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	plan, err := f.plan(o)
	if err != nil {
		return err
	}
	if err := f.selectControllers(&plan, explicit(fs), o); err != nil {
		return err
	}
	if err := os.MkdirAll(*f.out, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	sum, err := executePaired(ctx, plan, *f.out, o, *f.asJSON, *f.progress)
	if err != nil {
		return err
	}
	js, err := writeSummary(*f.out, sum)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "eval: paired evaluation of %d runs in %.1fs wall time; artifacts in %s\n",
		len(plan.Specs()), time.Since(start).Seconds(), *f.out)
	if *f.asJSON {
		_, err = o.Stdout.Write(js)
		return err
	}
	return printVerdicts(o, sum, *f.out)
}

// plan checks the flags and builds the plan without its controllers; the
// physics must fit the episode (checked before the controllers, whose
// preflight skips the unavailable defaults).
func (f pairedFlags) plan(o Options) (paired.Plan, error) {
	if !(*f.budget > 0 && *f.budget < 1) {
		return paired.Plan{}, usagef("eval paired: -violation-budget %g, want a fraction in (0, 1)", *f.budget)
	}
	profiles, err := checkedProfiles(*f.profiles)
	if err != nil {
		return paired.Plan{}, err
	}
	traceNames, err := splitList("traces", *f.traces)
	if err != nil {
		return paired.Plan{}, err
	}
	for _, t := range traceNames {
		if err := checkTrace(t); err != nil {
			return paired.Plan{}, err
		}
	}
	if err := checkRateMult(*f.mult); err != nil {
		return paired.Plan{}, err
	}
	if err := checkRunShape(*f.places, *f.steps, *f.out); err != nil {
		return paired.Plan{}, err
	}
	scen, err := resolveScenario("scenario", *f.scenario)
	if err != nil {
		return paired.Plan{}, err
	}
	plan := paired.Plan{Profiles: profiles, Seed: *f.seed, Steps: *f.steps, RateMult: *f.mult, Scenario: *f.scenario,
		Physics: scen.Physics, Demand: scen.Demand, ViolationBudget: *f.budget}
	if *f.placeSeeds != "" {
		if plan.Placements, err = parseSeeds("paired", "placement-seeds", *f.placeSeeds); err != nil {
			return paired.Plan{}, err
		}
	} else {
		for i := range *f.places {
			plan.Placements = append(plan.Placements, 101+uint64(i))
		}
	}
	if plan.Workloads, err = loadTraces(*f.traces, *f.dir, *f.mult, *f.seed, o); err != nil {
		return paired.Plan{}, err
	}
	for _, prof := range plan.Profiles {
		for _, w := range plan.Workloads {
			sc, err := runner.Config(runner.Spec{Profile: prof, Workload: w, PlacementSeed: plan.Placements[0], Steps: plan.Steps, Physics: plan.Physics, Demand: plan.Demand})
			if err != nil {
				return paired.Plan{}, usageError(err)
			}
			if err := checkScenario(sc); err != nil {
				return paired.Plan{}, err
			}
		}
	}
	return plan, nil
}

// selectControllers parses each spec and builds it once per profile ×
// workload (a PPO policy must exist), so that a bad one fails before any
// run; entries of the default list that are not available are skipped
// with a notice.
func (f pairedFlags) selectControllers(plan *paired.Plan, set map[string]bool, o Options) error {
	ctrlSpecs, err := splitList("controllers", *f.ctrls)
	if err != nil {
		return err
	}
	sel, err := controllers.New(controllers.Options{PoliciesDir: *f.policies}).Select(controllers.SelectOptions{
		Specs: ctrlSpecs, SpecsGiven: set["controllers"],
		Candidate: *f.cand, CandidateGiven: set["candidate"],
		Check: func(c controllers.Spec) error { return preflight(c, *plan) },
	})
	if err != nil {
		return usageError(err)
	}
	for _, note := range sel.Notes {
		fmt.Fprintln(o.Stderr, note)
	}
	for _, c := range sel.Controllers {
		if len(c.Seeds()) > 0 {
			plan.Controllers = append(plan.Controllers, seeded{c})
			continue
		}
		plan.Controllers = append(plan.Controllers, c)
	}
	plan.Candidate = sel.Candidate
	if err := plan.Validate(); err != nil {
		return usageError(err)
	}
	return nil
}

// seeded is a controller spec of several seeds as eval/paired's Seeded.
type seeded struct{ controllers.Spec }

func (s seeded) Seeds() []runner.Factory {
	var out []runner.Factory
	for _, m := range s.Spec.Seeds() {
		out = append(out, m)
	}
	return out
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
func executePaired(ctx context.Context, plan paired.Plan, outDir string, o Options, quiet, force bool) (paired.Summary, error) {
	specs, labels := plan.Specs(), plan.Labels()
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
		series[i].Controller = labels[i] // a seed's runs draw as its controller's
		rows[i] = report.RunRowOf(r)
		r.Intervals = nil // written; keep only the summary
		results[i] = r
		return nil
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	bar := newProgress(o, quiet, force)
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
	width := len("controller")
	for _, c := range sum.Combinations {
		for _, cs := range c.Controllers {
			width = max(width, len(cs.Controller)+len(" (best)"))
		}
	}
	fmt.Fprintf(w, "%-6s %-8s %-*s %9s %10s %10s %10s %7s  %-3s %-3s %-3s\n", "prof", "trace", width, "controller", "viol", "p95 ms", "cpu mc", "resv mc", "servers", "H1", "H2", "H3")
	for _, c := range sum.Combinations {
		for _, cs := range c.Controllers {
			h := "  -   -   -"
			for _, cmp := range c.Comparisons {
				if cmp.Baseline == cs.Controller {
					h = fmt.Sprintf("  %-3s %-3s %-3s", yn(cmp.H1), yn(cmp.H2), yn(cmp.H3))
				}
			}
			name := cs.Controller
			switch name {
			case c.Best:
				name += " (best)"
			case c.BestRule:
				name += " (rule)"
			}
			fmt.Fprintf(w, "%-6s %-8s %-*s %9s %10s %10s %10s %7s%s\n", c.Profile, c.Trace, width, name,
				strconv.FormatFloat(100*float64(cs.ViolationRateMean), 'f', 2, 64)+"%",
				strconv.FormatFloat(float64(cs.MeanP95MS), 'f', 1, 64),
				strconv.FormatFloat(float64(cs.MeanCPU), 'f', 0, 64),
				strconv.FormatFloat(float64(cs.MeanReservedCPU), 'f', 0, 64),
				strconv.FormatFloat(float64(cs.MeanActiveServers), 'f', 2, 64), h)
		}
	}
	printTallies(w, sum)
	return w.Flush()
}

// printTallies prints, for each learned controller, its cells dominating
// and dominated by the best rule (seed-level verdicts for one of several
// seeds), and for each controller of several seeds the same against each
// rule.
func printTallies(w *bufio.Writer, sum paired.Summary) {
	for _, t := range paired.Tallies(sum) {
		if !slices.Contains(sum.Protocol.Learned, t.Controller) {
			continue
		}
		seeds := ""
		if t.Seeds > 1 {
			seeds = fmt.Sprintf(" (seeds: %d, IQM over seeds)", t.Seeds)
		}
		fmt.Fprintf(w, "%s%s against the best rule: dominates %d of %d cells, dominated in %d, neither in %d\n",
			t.Controller, seeds, t.Dominates, t.Cells, t.Dominated, t.Neither)
	}
	for _, t := range paired.RuleTallies(sum) {
		fmt.Fprintf(w, "%s (seeds: %d) against %s: dominates %d of %d cells, dominated in %d, neither in %d\n",
			t.Controller, t.Seeds, t.Rule, t.Dominates, t.Cells, t.Dominated, t.Neither)
	}
}

// progress draws a progress bar with the runs done, the elapsed time and
// an estimate of the time left on stderr: on a terminal unless quiet, or
// always when forced (-progress). It goes to stderr only, so stdout and
// the artifacts do not depend on it.
type progress struct {
	mu    sync.Mutex
	o     Options
	on    bool
	start time.Time
	drawn bool
}

// newProgress returns a progress bar for o's stderr; quiet (-json) keeps
// it off a terminal, force turns it on anywhere.
func newProgress(o Options, quiet, force bool) *progress {
	return &progress{o: o, on: force || (o.Terminal && !quiet), start: time.Now()}
}

func (p *progress) update(done, total int) {
	if !p.on || total == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	const width = 30
	n := done * width / total
	el := time.Since(p.start)
	eta := "?"
	if done > 0 {
		eta = (time.Duration(float64(el) / float64(done) * float64(total-done))).Round(time.Second).String()
	}
	end := "\r"
	if !p.o.Terminal {
		end = ""
	}
	fmt.Fprintf(p.o.Stderr, "%s[%s%s] %d/%d runs %5.1fs, about %s left", end, strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, el.Seconds(), eta)
	if !p.o.Terminal {
		fmt.Fprintln(p.o.Stderr)
	}
	p.drawn = p.o.Terminal
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
