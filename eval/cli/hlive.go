package cli

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"streamscale/clasp"
	"streamscale/env"
	"streamscale/eval/claspexp"
	"streamscale/eval/hpaired"
	"streamscale/eval/live"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/internal/costfile"
	"streamscale/serve/runtime/ops"
	"streamscale/traces"
)

// HLiveRun is one horizontal controller's live run in summary.json: its
// key, the interval means (runner.Summary) and the CLASP figures
// (live.HInfo: workers, migrations, planner ms, worker pauses,
// delivered, p50/p95).
type HLiveRun struct {
	runner.Key
	runner.Summary
	live.HInfo
	TrajectorySHA256 string `json:"trajectory_sha256"`
}

// HLiveSummary is summary.json of `eval live` with a horizontal profile.
type HLiveSummary struct {
	Profile        string     `json:"profile"`
	Trace          string     `json:"trace"`
	TraceSource    string     `json:"trace_source"`
	Intervals      int        `json:"intervals"`
	TimeScaleS     float64    `json:"time_scale_s"`
	RateMult       float64    `json:"rate_mult"`
	PeakRate       float64    `json:"peak_rate,omitempty"`
	InitialWorkers int        `json:"initial_workers"`
	MaxWorkers     int        `json:"max_workers"`
	TaskMillicores int        `json:"task_millicores"`
	WorkerBudget   int        `json:"worker_budget_millicores,omitempty"`
	BudgetProcess  bool       `json:"worker_budget_process,omitempty"`
	Seed           uint64     `json:"seed"`
	SLOMS          float64    `json:"slo_ms"`
	Tasks          []string   `json:"tasks"`
	Planner        string     `json:"planner,omitempty"`
	Runs           []HLiveRun `json:"runs"`
	Commit         string     `json:"commit"`
	GoVersion      string     `json:"go_version"`

	// Seeds are the seeds every controller ran on, in run order (-seeds
	// N: Seed … Seed+N−1); SeedIntervals the intervals of each (the load
	// modes' length varies by seed; Intervals is the first seed's).
	// Absent with one seed and in outputs older than -seeds.
	Seeds         []uint64 `json:"seeds,omitempty"`
	SeedIntervals []int    `json:"seed_intervals,omitempty"`
	// Paired is the first controller against every other, paired by
	// seed (package hpaired); absent with one controller.
	Paired *hpaired.Summary `json:"paired,omitempty"`
	// CostModel is the cost model CLASP and the baselines' triggers used
	// (-cost-model; default the paper's).
	CostModel *costfile.Used `json:"cost_model,omitempty"`
}

// hliveFlags are the flags of `eval live` a horizontal run reads.
type hliveFlags struct {
	profile, trace, dir, out string
	specs                    []string
	scale, dur               time.Duration
	scaleSet, durSet         bool
	mult, peak, sloMS        float64
	multSet                  bool
	workers, maxWorkers      int
	taskMC                   int
	budget                   int
	budgetProcess            budgetMode // -worker-budget-mode
	seed                     uint64
	seeds                    int // seeds seed … seed+seeds−1, each a pair
	asJSON, verbose          bool
	planner, plannerToken    string
	costModel                string // -cost-model FILE ("": the paper's)
}

// isHorizontalProfile reports whether profile is a runtime application
// without a vertical scenario (the CLASP applications).
func isHorizontalProfile(profile string) bool {
	return !slices.Contains(env.Profiles(), profile) && slices.Contains(ops.AppNames(), profile)
}

// horizontalPlacer returns the planner constructor of a horizontal
// controller spec: a method of eval clasp, or fixed:N (nil constructor, N
// workers with even shares).
func horizontalPlacer(spec string, maxWorkers int, methods []clasp.Method) (newPlacer func() (clasp.Planner, error), fixed int, err error) {
	if n, ok := strings.CutPrefix(spec, "fixed:"); ok {
		k, err := strconv.Atoi(n)
		if err != nil || k < 1 || k > maxWorkers {
			return nil, 0, usagef("eval: controller %q, want fixed:N with N in 1..%d (-max-workers)", spec, maxWorkers)
		}
		return nil, k, nil
	}
	var names []string
	for _, m := range methods {
		if m.Name == spec {
			return m.New, 0, nil
		}
		names = append(names, m.Name)
	}
	return nil, 0, usagef("eval: controller %q for a horizontal profile, want fixed:N or one of %s", spec, strings.Join(names, ", "))
}

// horizontalTrace builds the trace of a horizontal run: the CLASP paper's
// load modes (burst, gradual: claspexp.ModeTraces with peak rate),
// levels:R×N[,R×N…] (rate R inputs/s held N points), or a named or file
// trace times the rate multiplier.
func horizontalTrace(f hliveFlags, o Options) (*traces.Trace, error) {
	switch {
	case f.trace == "burst" || f.trace == "gradual":
		if !(f.peak > 0) || f.peak > 1e6 {
			return nil, usagef("eval: -peak %v, want > 0 and ≤ 1e6 inputs/s", f.peak)
		}
		m := claspexp.ModeTraces(f.peak, f.seed)[f.trace]
		return &traces.Trace{Name: f.trace, Source: "synthetic", Counts: slices.Clone(m), Scale: 1, Mult: f.synthMult()}, nil
	case strings.HasPrefix(f.trace, "levels:"):
		c, err := live.ParseLevels(strings.TrimPrefix(f.trace, "levels:"))
		if err != nil {
			return nil, usageError(fmt.Errorf("eval: -trace: %w", err))
		}
		return &traces.Trace{Name: f.trace, Source: "synthetic", Counts: c, Scale: 1, Mult: f.synthMult()}, nil
	}
	if err := checkTrace(f.trace); err != nil {
		return nil, err
	}
	return loadTrace(f.trace, f.dir, f.mult, f.seed, o)
}

// synthMult is the rate multiplier of a synthetic trace (its rates are
// given in inputs/s): -rate-mult only when set explicitly.
func (f hliveFlags) synthMult() float64 {
	if f.multSet {
		return f.mult
	}
	return 1
}

// hlive runs `eval live` with a horizontal profile: on each seed every
// controller in turn on the same trace slice and seed, the planner's
// placement loop deciding workers and placement with migration. With two
// or more controllers the first is judged against every other, paired by
// seed (package hpaired: a horizontal run has no scenario placement to
// pair by, as the vertical runs do).
func hlive(ctx context.Context, f hliveFlags, o Options) error {
	app, err := ops.AppByName(f.profile)
	if err != nil {
		return usageError(err)
	}
	switch {
	case f.maxWorkers < 1 || f.maxWorkers > 16:
		return usagef("eval: -max-workers %d, want 1..16", f.maxWorkers)
	case f.workers > f.maxWorkers:
		return usagef("eval: -workers %d above -max-workers %d", f.workers, f.maxWorkers)
	case f.taskMC < 1 || f.taskMC > 64000:
		return usagef("eval: -task-mc %d, want 1..64000", f.taskMC)
	case f.budget < 0 || f.budget > 64000:
		return usagef("eval: -worker-budget %d, want 0 (none) or 1..64000", f.budget)
	case bool(f.budgetProcess) && f.budget == 0:
		return usagef("eval: -worker-budget-mode process needs -worker-budget > 0")
	case f.budget > 0 && f.planner != "":
		return usagef("eval: -worker-budget with -planner: the planner service starts its own workers")
	case !(f.sloMS > 0) || f.sloMS > 1e7:
		return usagef("eval: -slo-ms %v, want > 0", f.sloMS)
	case f.seeds < 1 || f.seeds > 100:
		return usagef("eval: -seeds %d, want 1..100", f.seeds)
	case f.seed > math.MaxUint64-uint64(f.seeds-1):
		return usagef("eval: -seed %d with -seeds %d overflows", f.seed, f.seeds)
	}
	type run struct {
		name   string
		placer func() (clasp.Planner, error)
		fixed  int
	}
	methods, used, err := hliveMethods(f.costModel, f.planner, f.maxWorkers)
	if err != nil {
		return err
	}
	var runs []run
	for _, s := range f.specs {
		np, k, err := horizontalPlacer(s, f.maxWorkers, methods)
		if err != nil {
			return err
		}
		runs = append(runs, run{s, np, k})
	}
	step := f.scale
	if !f.scaleSet {
		step = time.Second // CLASP's triggers count seconds
	}
	trs := make([]*traces.Trace, f.seeds)
	ns := make([]int, f.seeds)
	for k := range f.seeds {
		fk := f
		fk.seed = f.seed + uint64(k)
		tr, err := horizontalTrace(fk, o)
		if err != nil {
			return err
		}
		n := tr.Len()
		if f.durSet || (f.trace != "burst" && f.trace != "gradual" && !strings.HasPrefix(f.trace, "levels:")) {
			n = int(f.dur / step)
		}
		if n < 1 {
			return usagef("eval: -duration %v holds no -time-scale %v", f.dur, step)
		}
		trs[k], ns[k] = tr, n
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	sum := HLiveSummary{Profile: app.Name, Trace: f.trace, TraceSource: trs[0].Origin(), Intervals: ns[0], TimeScaleS: step.Seconds(),
		RateMult: trs[0].Mult, InitialWorkers: f.workers, MaxWorkers: f.maxWorkers, TaskMillicores: f.taskMC, WorkerBudget: f.budget, BudgetProcess: bool(f.budgetProcess), Seed: f.seed, SLOMS: f.sloMS,
		Commit: o.Commit, GoVersion: o.GoVersion, CostModel: used}
	if f.seeds > 1 {
		sum.SeedIntervals = ns
		for k := range f.seeds {
			sum.Seeds = append(sum.Seeds, f.seed+uint64(k))
		}
	}
	if f.trace == "burst" || f.trace == "gradual" {
		sum.PeakRate = f.peak
	}
	for _, op := range app.Operators {
		sum.Tasks = append(sum.Tasks, op.Name)
	}
	var results []runner.Result
	for k, tr := range trs {
		seed, n := f.seed+uint64(k), ns[k]
		for _, r := range runs {
			cfg := live.HConfig{App: app, Trace: tr, Step: step, Intervals: n, Seed: seed, Workers: f.workers, MaxWorkers: f.maxWorkers,
				TaskMillicores: f.taskMC, WorkerBudget: f.budget, WorkerBudgetProcess: bool(f.budgetProcess), SLOMS: f.sloMS, Name: r.name, NewPlacer: r.placer, WorkerArgs: []string{"live-worker"},
				Planner: f.planner, PlannerToken: f.plannerToken}
			if r.fixed > 0 {
				cfg.Workers = r.fixed
			}
			if f.verbose {
				cfg.Log = o.Stderr
			}
			fmt.Fprintf(o.Stderr, "eval: live %s / %s, seed %d: %s for %d intervals of %v\n", app.Name, f.trace, seed, r.name, n, step)
			res, info, err := live.RunHorizontal(ctx, cfg)
			if err != nil {
				return fmt.Errorf("eval: live %s: %w", r.name, err)
			}
			res.Trace = f.trace
			results = append(results, res)
			sum.Runs = append(sum.Runs, HLiveRun{Key: res.Key, Summary: res.Summary, HInfo: info, TrajectorySHA256: res.TrajectorySHA256})
			fmt.Fprintf(o.Stderr, "eval: %s: delivered %.3f, p50 %.1f ms, p95 %.1f ms, workers mean %.2f peak %d, %d migrations (planner ≤ %.1f ms, pause ≤ %.2f ms)\n",
				r.name, info.Delivered, info.P50MS, info.P95MS, info.MeanWorkers, info.PeakWorkers, info.Migrations, info.PlannerMSMax, info.WorkerPauseMSMax)
		}
	}
	if len(runs) > 1 {
		ps, err := hlivePaired(sum)
		if err != nil {
			return err
		}
		sum.Paired = &ps
	}
	return writeHLive(f, sum, results, o)
}

// hlivePaired judges a horizontal live summary's runs, paired by seed:
// its first controller against every other (hpaired.Analyze). Outputs
// older than -seeds hold one seed.
func hlivePaired(s HLiveSummary) (hpaired.Summary, error) {
	runs := make([]hpaired.Run, len(s.Runs))
	for i, r := range s.Runs {
		runs[i] = hpaired.Run{Controller: r.Controller, Seed: r.Key.Seed, MeanWorkers: r.HInfo.MeanWorkers, ViolationShare: r.ViolationRate,
			P95MS: r.HInfo.P95MS, Delivered: r.HInfo.Delivered}
	}
	ps, err := hpaired.Analyze(s.Seed, s.Profile, s.Trace, s.SLOMS, runs)
	if err != nil {
		return ps, fmt.Errorf("eval: %s on %s: %w", s.Profile, s.Trace, err)
	}
	return ps, nil
}

// writeHLive writes intervals.parquet, summary.json, report.md and the
// figure of eval clasp's load modes (hliveFigures).
func writeHLive(f hliveFlags, sum HLiveSummary, results []runner.Result, o Options) error {
	if err := writeLiveIntervals(filepath.Join(f.out, FileIntervals), results); err != nil {
		return err
	}
	if err := hliveFigures(f.out, []HLiveSummary{sum}); err != nil {
		return err
	}
	b, err := report.MarshalJSON(sum)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(f.out, FileSummary), b, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	md := hliveMarkdown(sum)
	if err := os.WriteFile(filepath.Join(f.out, FileReport), md, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if f.asJSON {
		_, err = o.Stdout.Write(b)
	} else {
		_, err = o.Stdout.Write(md)
	}
	return err
}

// hliveMarkdown is report.md of a horizontal live run.
func hliveMarkdown(s HLiveSummary) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Live horizontal evaluation: %s on %s\n\n", s.Profile, s.Trace)
	fmt.Fprintf(&b, "%d intervals of %.3g s (rate × %g", s.Intervals, s.TimeScaleS, s.RateMult)
	if s.PeakRate > 0 {
		fmt.Fprintf(&b, ", peak %g inputs/s", s.PeakRate)
	}
	seedText := fmt.Sprintf("seed %d", s.Seed)
	if n := len(s.Seeds); n > 1 {
		seedText = fmt.Sprintf("seeds %d … %d (intervals %v)", s.Seeds[0], s.Seeds[n-1], s.SeedIntervals)
	}
	fmt.Fprintf(&b, "), %d initial worker(s), at most %d, %d mc of CFS quota per task per worker, %s, SLO %g ms. Live runs are not reproducible (real time on a shared machine).\n\n",
		s.InitialWorkers, s.MaxWorkers, s.TaskMillicores, seedText, s.SLOMS)
	if m := s.CostModel; m != nil {
		fmt.Fprintf(&b, "Cost model: α %.4g µs, β %.4g µs, γ %.4g µs, W %.4g µs/s from %s.\n\n", m.AlphaUS, m.BetaUS, m.GammaUS, m.BudgetUSPerS, m.Source)
	}
	seeds := len(s.Seeds) > 1
	if seeds {
		b.WriteString("| controller | seed | delivered | p50 ms | p95 ms | violation rate | throughput /s | offered /s | workers mean | peak | final | migrations | planner ms max | worker pause ms max | lost | CPU used (cores) |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	} else {
		b.WriteString("| controller | delivered | p50 ms | p95 ms | violation rate | throughput /s | offered /s | workers mean | peak | final | migrations | planner ms max | worker pause ms max | lost | CPU used (cores) |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	}
	for _, r := range s.Runs {
		fmt.Fprintf(&b, "| %s |", r.Controller)
		if seeds {
			fmt.Fprintf(&b, " %d |", r.Key.Seed)
		}
		fmt.Fprintf(&b, " %.3f | %.1f | %.1f | %.3f | %.1f | %.1f | %.2f | %d | %d | %d | %.1f | %.2f | %d | %.3f |\n",
			r.Delivered, r.P50MS, r.P95MS, r.ViolationRate, r.MeanThroughput, r.MeanOffered, r.HInfo.MeanWorkers, r.PeakWorkers,
			r.FinalWorkers, r.Migrations, r.PlannerMSMax, r.WorkerPauseMSMax, r.Lost, r.MeanCPUUsedCores)
	}
	fmt.Fprintf(&b, "\n![workers and p95 per interval, first seed](%s)\n", claspexp.FigModes)
	if s.Paired != nil {
		b.WriteString("\n## Paired: `" + s.Paired.Candidate + "` against each baseline\n\n")
		b.WriteString(hpaired.Markdown(*s.Paired))
	}
	return []byte(b.String())
}

// hliveFigures draws eval clasp's load-mode figure (claspexp.FigModes:
// per app and trace, workers in use and p95 per interval of every
// controller on the first seed) from horizontal live summaries into dir.
func hliveFigures(dir string, sums []HLiveSummary) error {
	var r claspexp.Report
	for _, s := range sums {
		for _, run := range s.Runs {
			r.ModeRuns = append(r.ModeRuns, claspexp.ModeRow{App: s.Profile, Mode: s.Trace, Method: run.Controller, Seed: run.Key.Seed,
				Workers: run.WorkersPerStep, StepP95MS: run.P95PerStep, Rates: run.OfferedPerStep})
		}
	}
	if len(r.ModeRuns) == 0 {
		return nil
	}
	if _, err := claspexp.Figures(dir, &r); err != nil {
		return fmt.Errorf("eval: figures: %w", err)
	}
	return nil
}

// budgetModeHelp is the help of -worker-budget-mode (and of calibrate's
// -cost-worker-budget-mode).
const budgetModeHelp = "what the worker budget caps: tasks (the in-process CFS quota the tasks' executions share) or process (the kernel's CFS quota on the whole worker process, as a container CPU limit: transport, decoding and dispatch too; needs root)"

// budgetMode is a -worker-budget-mode flag: "tasks" (false, the default)
// or "process" (true: live.HConfig.WorkerBudgetProcess).
type budgetMode bool

func (m *budgetMode) String() string {
	if m != nil && bool(*m) {
		return "process"
	}
	return "tasks"
}

func (m *budgetMode) Set(s string) error {
	switch s {
	case "tasks", "process":
		*m = s == "process"
		return nil
	}
	return fmt.Errorf("%q, want tasks or process", s)
}
