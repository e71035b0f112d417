package liveclasp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"streamscale/clasp"
	"streamscale/eval/claspexp"
	"streamscale/eval/hpaired"
	"streamscale/eval/live"
	"streamscale/eval/runner"
	"streamscale/internal/command"
	"streamscale/internal/costfile"
	"streamscale/serve/runtime/ops"
	"streamscale/traces"
)

// ControllerRun is one horizontal controller's live run in summary.json: its
// key, the interval means (runner.Summary) and the CLASP figures
// (live.HInfo: workers, migrations, planner ms, worker pauses,
// delivered, p50/p95).
type ControllerRun struct {
	runner.Key
	runner.Summary
	live.HInfo
	TrajectorySHA256 string `json:"trajectory_sha256"`
}

// Summary is summary.json of `eval live` with a horizontal profile: Run's
// record of every controller on every seed.
type Summary struct {
	Profile        string          `json:"profile"`
	Trace          string          `json:"trace"`
	TraceSource    string          `json:"trace_source"`
	Intervals      int             `json:"intervals"`
	TimeScaleS     float64         `json:"time_scale_s"`
	RateMult       float64         `json:"rate_mult"`
	PeakRate       float64         `json:"peak_rate,omitempty"`
	InitialWorkers int             `json:"initial_workers"`
	MaxWorkers     int             `json:"max_workers"`
	TaskMillicores int             `json:"task_millicores"`
	WorkerBudget   int             `json:"worker_budget_millicores,omitempty"`
	BudgetProcess  bool            `json:"worker_budget_process,omitempty"`
	Seed           uint64          `json:"seed"`
	SLOMS          float64         `json:"slo_ms"`
	Tasks          []string        `json:"tasks"`
	Planner        string          `json:"planner,omitempty"`
	Runs           []ControllerRun `json:"runs"`
	command.Build

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

// Paired judges a horizontal live summary's runs, paired by seed:
// its first controller against every other (hpaired.Analyze). Outputs
// older than -seeds hold one seed.
func Paired(s Summary) (hpaired.Summary, error) {
	runs := make([]hpaired.Run, len(s.Runs))
	for i, r := range s.Runs {
		runs[i] = hpaired.Run{Controller: r.Controller, Seed: r.Key.Seed, MeanWorkers: r.HInfo.MeanWorkers, ViolationShare: r.ViolationRate,
			P95MS: r.HInfo.P95MS, Delivered: r.HInfo.Delivered}
	}
	ps, err := hpaired.Analyze(s.Seed, s.Profile, s.Trace, s.SLOMS, runs)
	if err != nil {
		return ps, fmt.Errorf("liveclasp: %s on %s: %w", s.Profile, s.Trace, err)
	}
	return ps, nil
}

// Markdown is report.md of a horizontal live run.
func Markdown(s Summary) []byte {
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
		b.WriteString("| controller | seed | delivered | p50 ms | p95 ms | violation rate | throughput /s | offered /s | workers mean | peak | final | migrations | planner ms max | worker pause ms max | dropped | unfinished | CPU used (cores) |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	} else {
		b.WriteString("| controller | delivered | p50 ms | p95 ms | violation rate | throughput /s | offered /s | workers mean | peak | final | migrations | planner ms max | worker pause ms max | dropped | unfinished | CPU used (cores) |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	}
	for _, r := range s.Runs {
		fmt.Fprintf(&b, "| %s |", r.Controller)
		if seeds {
			fmt.Fprintf(&b, " %d |", r.Key.Seed)
		}
		fmt.Fprintf(&b, " %.3f | %.1f | %.1f | %.3f | %.1f | %.1f | %.2f | %d | %d | %d | %.1f | %.2f | %d | %d | %.3f |\n",
			r.Delivered, r.P50MS, r.P95MS, r.ViolationRate, r.MeanThroughput, r.MeanOffered, r.HInfo.MeanWorkers, r.PeakWorkers,
			r.FinalWorkers, r.Migrations, r.PlannerMSMax, r.WorkerPauseMSMax, r.HInfo.Dropped, r.HInfo.Unfinished, r.MeanCPUUsedCores)
	}
	fmt.Fprintf(&b, "\n![workers and p95 per interval, first seed](%s)\n", claspexp.FigModes)
	if s.Paired != nil {
		b.WriteString("\n## Paired: `" + s.Paired.Candidate + "` against each baseline\n\n")
		b.WriteString(hpaired.Markdown(*s.Paired))
	}
	return []byte(b.String())
}

// Controller is one horizontal controller of a run: a planner (CLASP or
// a baseline behind CLASP's triggers) or a fixed worker count.
type Controller struct {
	Name string // the spec recorded, e.g. "clasp" or "fixed:2"
	// NewPlacer builds the planner; nil for a fixed count.
	NewPlacer func() (clasp.Planner, error)
	// Fixed is the worker count of a fixed controller (even shares); 0
	// for a planner.
	Fixed int
}

// Config is one horizontal live evaluation: every controller in turn on
// each seed's trace, the planner's placement loop deciding workers and
// placement with migration (live.RunHorizontal).
type Config struct {
	App ops.App // the CLASP application
	// Trace is the trace's name as given (eval live's -trace) and
	// TraceSource where it came from; Traces holds one trace per seed
	// (seed Seed+k for Traces[k]) and Intervals the intervals run on each.
	Trace       string
	TraceSource string
	Traces      []*traces.Trace
	Intervals   []int
	// Step is the control interval (wall time per trace point).
	Step time.Duration
	Seed uint64
	// PeakRate is recorded for the load modes (inputs/s; 0: none).
	PeakRate float64
	// Workers is the initial worker count, MaxWorkers the most a planner
	// may use; TaskMillicores every task's CFS quota in every worker;
	// WorkerBudget the millicores a worker's tasks share (0: none), the
	// kernel's quota on the whole process with WorkerBudgetProcess.
	Workers, MaxWorkers, TaskMillicores, WorkerBudget int
	WorkerBudgetProcess                               bool
	// SLOMS is the p95 an interval must stay under, ms.
	SLOMS float64
	// Controllers run in this order on every seed; with two or more the
	// first is paired against every other (Paired).
	Controllers []Controller
	// WorkerArgs start the worker processes (live.HConfig.WorkerArgs);
	// Planner and PlannerToken attach to a planner service instead.
	WorkerArgs            []string
	Planner, PlannerToken string
	// CostModel is the cost model the planners use, recorded.
	CostModel *costfile.Used
	// Log receives the runtime's events (nil: none); Progress one line
	// as every run starts and ends (nil: none).
	Log, Progress io.Writer
	// Build is recorded in summary.json.
	Build command.Build
}

// validate checks what Run relies on.
func (c Config) validate() error {
	switch {
	case len(c.Traces) == 0 || len(c.Traces) != len(c.Intervals):
		return fmt.Errorf("liveclasp: %d traces for %d interval counts, want one per seed and at least one", len(c.Traces), len(c.Intervals))
	case len(c.Controllers) == 0:
		return errors.New("liveclasp: no controller")
	case c.Step <= 0:
		return fmt.Errorf("liveclasp: step %v, want > 0", c.Step)
	}
	for k, n := range c.Intervals {
		if n < 1 || c.Traces[k] == nil {
			return fmt.Errorf("liveclasp: seed %d: %d intervals of trace %v, want ≥ 1 of a trace", c.Seed+uint64(k), n, c.Traces[k])
		}
	}
	return nil
}

// Run runs c: on each seed every controller in turn on the same trace
// slice and seed, each a live.RunHorizontal of its own; with two or more
// controllers the first is judged against every other, paired by seed
// (package hpaired: a horizontal run has no scenario placement to pair by,
// as the vertical runs do). It returns the summary and every run's
// intervals, in run order. Runs are sequential; every process a run
// starts has stopped when it returns. A live run is not reproducible (real
// time on a shared machine): the summary records the configuration.
func Run(ctx context.Context, c Config) (Summary, []runner.Result, error) {
	if err := c.validate(); err != nil {
		return Summary{}, nil, err
	}
	seeds := len(c.Traces)
	sum := Summary{Profile: c.App.Name, Trace: c.Trace, TraceSource: c.TraceSource, Intervals: c.Intervals[0], TimeScaleS: c.Step.Seconds(),
		RateMult: c.Traces[0].Mult, InitialWorkers: c.Workers, MaxWorkers: c.MaxWorkers, TaskMillicores: c.TaskMillicores, WorkerBudget: c.WorkerBudget,
		BudgetProcess: c.WorkerBudgetProcess, Seed: c.Seed, SLOMS: c.SLOMS, PeakRate: c.PeakRate, Build: c.Build, CostModel: c.CostModel}
	if seeds > 1 {
		sum.SeedIntervals = c.Intervals
		for k := range seeds {
			sum.Seeds = append(sum.Seeds, c.Seed+uint64(k))
		}
	}
	for _, op := range c.App.Operators {
		sum.Tasks = append(sum.Tasks, op.Name)
	}
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	var results []runner.Result
	for k, tr := range c.Traces {
		seed, n := c.Seed+uint64(k), c.Intervals[k]
		for _, r := range c.Controllers {
			cfg := live.HConfig{App: c.App, Trace: tr, Step: c.Step, Intervals: n, Seed: seed, Workers: c.Workers, MaxWorkers: c.MaxWorkers,
				TaskMillicores: c.TaskMillicores, WorkerBudget: c.WorkerBudget, WorkerBudgetProcess: c.WorkerBudgetProcess, SLOMS: c.SLOMS, Name: r.Name,
				NewPlacer: r.NewPlacer, WorkerArgs: c.WorkerArgs, Planner: c.Planner, PlannerToken: c.PlannerToken, Log: c.Log}
			if r.Fixed > 0 {
				cfg.Workers = r.Fixed
			}
			fmt.Fprintf(progress, "eval: live %s / %s, seed %d: %s for %d intervals of %v\n", c.App.Name, c.Trace, seed, r.Name, n, c.Step)
			res, info, err := live.RunHorizontal(ctx, cfg)
			if err != nil {
				return Summary{}, nil, fmt.Errorf("liveclasp: live %s: %w", r.Name, err)
			}
			res.Trace = c.Trace
			results = append(results, res)
			sum.Runs = append(sum.Runs, ControllerRun{Key: res.Key, Summary: res.Summary, HInfo: info, TrajectorySHA256: res.TrajectorySHA256})
			fmt.Fprintf(progress, "eval: %s: delivered %.3f, p50 %.1f ms, p95 %.1f ms, workers mean %.2f peak %d, %d migrations (planner ≤ %.1f ms, pause ≤ %.2f ms)\n",
				r.Name, info.Delivered, info.P50MS, info.P95MS, info.MeanWorkers, info.PeakWorkers, info.Migrations, info.PlannerMSMax, info.WorkerPauseMSMax)
		}
	}
	if len(c.Controllers) > 1 {
		ps, err := Paired(sum)
		if err != nil {
			return Summary{}, nil, err
		}
		sum.Paired = &ps
	}
	return sum, results, nil
}

// ModeReport is eval clasp's report of load-mode runs (claspexp.Report's
// ModeRuns, for claspexp.Figures' FigModes: per app and trace, workers in
// use and p95 per interval of every controller on every seed) built from
// horizontal live summaries; empty when they hold no run.
func ModeReport(sums []Summary) claspexp.Report {
	var r claspexp.Report
	for _, s := range sums {
		for _, run := range s.Runs {
			r.ModeRuns = append(r.ModeRuns, claspexp.ModeRow{App: s.Profile, Mode: s.Trace, Method: run.Controller, Seed: run.Key.Seed,
				Workers: run.WorkersPerStep, StepP95MS: run.P95PerStep, Rates: run.OfferedPerStep})
		}
	}
	return r
}
