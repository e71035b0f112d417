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
	"streamscale/eval/live"
	"streamscale/eval/liveclasp"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/internal/command"
	"streamscale/internal/costfile"
	"streamscale/internal/regfile"
	"streamscale/serve/runtime/ops"
	"streamscale/traces"
)

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
func isHorizontalProfile(profile string) bool { return live.IsHorizontal(profile) }

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

// hlive runs `eval live` with a horizontal profile (liveclasp.Run): it
// checks the flags, builds the controllers and every seed's trace, runs
// them and writes the outputs.
func hlive(ctx context.Context, f hliveFlags, o Options) error {
	app, err := ops.AppByName(f.profile)
	if err != nil {
		return usageError(err)
	}
	if err := f.check(); err != nil {
		return err
	}
	methods, used, err := hliveMethods(f.costModel, f.planner, f.maxWorkers)
	if err != nil {
		return err
	}
	var ctrls []liveclasp.Controller
	for _, s := range f.specs {
		np, k, err := horizontalPlacer(s, f.maxWorkers, methods)
		if err != nil {
			return err
		}
		ctrls = append(ctrls, liveclasp.Controller{Name: s, NewPlacer: np, Fixed: k})
	}
	cfg, err := f.config(app, o)
	if err != nil {
		return err
	}
	cfg.Controllers, cfg.CostModel = ctrls, used
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	sum, results, err := liveclasp.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	return writeHLive(f, sum, results, o)
}

// check refuses the horizontal flags out of range (usage errors naming
// the flag).
func (f hliveFlags) check() error {
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
	return nil
}

// config is the run's liveclasp.Config without its controllers and cost
// model: every seed's trace (horizontalTrace) and interval count.
func (f hliveFlags) config(app ops.App, o Options) (liveclasp.Config, error) {
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
			return liveclasp.Config{}, err
		}
		n := tr.Len()
		if f.durSet || (f.trace != "burst" && f.trace != "gradual" && !strings.HasPrefix(f.trace, "levels:")) {
			n = int(f.dur / step)
		}
		if n < 1 {
			return liveclasp.Config{}, usagef("eval: -duration %v holds no -time-scale %v", f.dur, step)
		}
		trs[k], ns[k] = tr, n
	}
	cfg := liveclasp.Config{App: app, Trace: f.trace, TraceSource: trs[0].Origin(), Traces: trs, Intervals: ns, Step: step, Seed: f.seed,
		Workers: f.workers, MaxWorkers: f.maxWorkers, TaskMillicores: f.taskMC, WorkerBudget: f.budget, WorkerBudgetProcess: bool(f.budgetProcess),
		SLOMS: f.sloMS, WorkerArgs: []string{"live-worker"}, Planner: f.planner, PlannerToken: f.plannerToken, Progress: o.Stderr,
		Build: command.Build{Commit: o.Commit, GoVersion: o.GoVersion}}
	if f.trace == "burst" || f.trace == "gradual" {
		cfg.PeakRate = f.peak
	}
	if f.verbose {
		cfg.Log = o.Stderr
	}
	return cfg, nil
}

// writeHLive writes intervals.parquet, summary.json, report.md and the
// figure of eval clasp's load modes (hliveFigures).
func writeHLive(f hliveFlags, sum liveclasp.Summary, results []runner.Result, o Options) error {
	if err := writeLiveIntervals(filepath.Join(f.out, FileIntervals), results); err != nil {
		return err
	}
	if err := hliveFigures(f.out, []liveclasp.Summary{sum}); err != nil {
		return err
	}
	b, err := report.MarshalJSON(sum)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(f.out, FileSummary), b, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	md := liveclasp.Markdown(sum)
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

// hliveFigures draws eval clasp's load-mode figure (claspexp.FigModes)
// of horizontal live summaries into dir (liveclasp.ModeReport); nothing
// without runs.
func hliveFigures(dir string, sums []liveclasp.Summary) error {
	r := liveclasp.ModeReport(sums)
	if len(r.ModeRuns) == 0 {
		return nil
	}
	if _, err := claspexp.Figures(dir, &r); err != nil {
		return fmt.Errorf("eval: figures: %w", err)
	}
	return nil
}

// costModelUsage is the -cost-model flag's usage.
const costModelUsage = "CLASP's cost model (α, β, γ, W of Eq. 1) from a calibration.json or scenario.json of eval calibrate, for CLASP and the baselines' triggers (default: the paper's)"

// hliveMethods returns the horizontal planners of a live run and the cost
// model they use: claspexp.Methods (the paper's model) without a file, or
// costfile.Methods with the file's model. A file with an attached planner
// service is refused: the service builds its own planners (serve planner
// -cost-model).
func hliveMethods(file, plannerAddr string, maxWorkers int) ([]clasp.Method, *costfile.Used, error) {
	if file == "" {
		u := costfile.Paper()
		return claspexp.Methods(maxWorkers), &u, nil
	}
	if plannerAddr != "" {
		return nil, nil, usagef("eval: -cost-model with -planner: the planner service runs its own controller (give serve planner -cost-model)")
	}
	u, err := costfile.Load(file, regfile.Reader(env.MaxScenarioFile)) // a model file or a scenario file with one
	if err != nil {
		return nil, nil, usagef("eval: -cost-model: %v", err)
	}
	ms, err := costfile.Methods(maxWorkers, u.Model)
	if err != nil {
		return nil, nil, usagef("eval: -cost-model %s: %v", file, err)
	}
	return ms, &u, nil
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
