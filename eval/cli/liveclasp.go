package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"streamscale/eval/claspexp"
	"streamscale/eval/report"
	"streamscale/internal/command"
	"streamscale/serve/runtime/ops"
)

// The live CLASP protocol (`eval liveclasp`): per application with top
// rate T, three kinds of horizontal live runs, then the CLASP paper's
// figures computed from their summary.json files.
var (
	claimFractions = []float64{0.2, 0.6, 1}              // transition levels, × T
	claimRamp      = []float64{0.25, 0.5, 0.75, 1, 1.25} // ramp levels, × T
	claimMethods   = []string{"clasp", "faasflow", "zhang24"}
	claimModes     = []string{"burst", "gradual"} // claspexp.ModeTraces
)

const (
	claimWarm, claimAfter = 10, 6 // transition points at the source and at the target
	claimFixedPoints      = 6     // points per level of the fixed-count runs
	claimRampPoints       = 4     // points per ramp level
	claimSkip             = 2     // points of a level not judged (the change settling)
	claimRatio            = 0.95  // throughput a sustained level delivers, × its rate
)

// ClaspClaims is claims.json of `eval liveclasp`: per application the live
// observed optimal worker counts, and per method the worker-count error,
// the ramp and the migrations.
type ClaspClaims struct {
	MaxWorkers int                   `json:"max_workers"`
	SLOMS      float64               `json:"slo_ms"`
	TaskMC     int                   `json:"task_millicores"`
	Budget     int                   `json:"worker_budget_millicores,omitempty"`
	BudgetProc bool                  `json:"worker_budget_process,omitempty"`
	Apps       map[string]*AppClaims `json:"apps"`
	Commit     string                `json:"commit"`
	GoVersion  string                `json:"go_version"`
}

// AppClaims is one application's figures.
type AppClaims struct {
	Top float64 `json:"top_rate"`
	// OOWC is, per transition level (inputs/s, as text), the fewest fixed
	// workers that sustained it (MaxWorkers+1: none).
	OOWC    map[string]int           `json:"oowc"`
	Methods map[string]*MethodClaims `json:"methods"`
	Rows    []TransitionClaim        `json:"transitions"`
	// Modes are the load-mode runs (-modes), by mode; absent without.
	Modes map[string]*ModeClaims `json:"modes,omitempty"`
}

// TransitionClaim is one method's worker count after one transition.
type TransitionClaim struct {
	Method    string  `json:"method"`
	From      float64 `json:"from"`
	To        float64 `json:"to"`
	Needed    int     `json:"needed"`
	Workers   int     `json:"workers"`
	Intervals int     `json:"intervals"`
	Delivered float64 `json:"delivered"`
}

// MethodClaims is one method's figures on one application.
type MethodClaims struct {
	WorkerError       float64 `json:"worker_error"`
	Transitions       int     `json:"transitions"`
	DeliveredMean     float64 `json:"transition_delivered_mean"`
	RampSustained     float64 `json:"ramp_sustained"` // highest level sustained, inputs/s (0: none)
	RampAll           bool    `json:"ramp_all_levels"`
	RampDelivered     float64 `json:"ramp_delivered"`
	RampP50MS         float64 `json:"ramp_p50_ms"`
	RampP95MS         float64 `json:"ramp_p95_ms"`
	RampMeanWorkers   float64 `json:"ramp_mean_workers"`
	Migrations        int     `json:"migrations"`
	PlannerMSMedian   float64 `json:"migration_planner_ms_median"`
	PlannerMSMax      float64 `json:"migration_planner_ms_max"`
	PauseMSMedian     float64 `json:"migration_worker_pause_ms_median"`
	PauseMSMax        float64 `json:"migration_worker_pause_ms_max"`
	Failovers         int     `json:"failovers"`
	plannerMS, pauses []float64
}

// liveclaspCmd runs (unless -analyze) and judges the live CLASP protocol.
func liveclaspCmd(ctx context.Context, args []string, o Options) error {
	fs := command.NewFlagSet("eval liveclasp")
	apps := fs.String("apps", "syn:200,wc:16000,sd:32000", "APP:TOP[,…]: applications and their top rate T, inputs/s (transitions at 20/60/100% of T, ramp 25…125%)")
	maxWorkers := fs.Int("max-workers", 4, "most workers a controller may use (and the largest fixed count)")
	taskMC := fs.Int("task-mc", 1000, "CFS quota of every task in every worker, millicores")
	budget := fs.Int("worker-budget", 0, "CPU budget, millicores, that every worker's tasks share on top of -task-mc (a worker's budget W in CLASP's model; 0: none)")
	var budgetProcess budgetMode
	fs.Var(&budgetProcess, "worker-budget-mode", budgetModeHelp)
	sloMS := fs.Float64("slo-ms", 1000, "a sustained level's p95 at its end stays at or under this, ms")
	seed := fs.Uint64("seed", 1, "seed of the input source")
	out := fs.String("out", "out/liveclasp", "output directory: one subdirectory per run, claims.json and claims.md")
	analyze := fs.Bool("analyze", false, "only judge the runs already in -out")
	verbose := fs.Bool("v", false, "log the runtime's events to stderr")
	modesFlag := fs.String("modes", "", "CLASP load modes also run per app (burst, gradual; comma-separated; \"\": none): every method on each, peak = the app's top rate, ≈ 150 s per method, mode and seed")
	modeSeeds := fs.Int("mode-seeds", 3, "seeds -seed … -seed+N-1 of the load-mode runs (the pairs of their paired verdicts)")
	resume := fs.Bool("resume", false, "skip a run whose directory already holds its summary.json (same trace, peak and seeds)")
	costModel := fs.String("cost-model", "", costModelUsage)
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	if _, _, err := hliveMethods(*costModel, "", *maxWorkers); err != nil {
		return err
	}
	var modes []string
	if *modesFlag != "" {
		var err error
		if modes, err = splitList("modes", *modesFlag); err != nil {
			return err
		}
		for _, m := range modes {
			if !slices.Contains(claimModes, m) {
				return usagef("eval: -modes entry %q, want %s", m, strings.Join(claimModes, " or "))
			}
		}
	}
	switch {
	case *modeSeeds < 1 || *modeSeeds > 100:
		return usagef("eval: -mode-seeds %d, want 1..100", *modeSeeds)
	case *seed > math.MaxUint64-uint64(*modeSeeds-1):
		return usagef("eval: -seed %d with -mode-seeds %d overflows", *seed, *modeSeeds)
	}
	type appTop struct {
		name string
		top  float64
	}
	var list []appTop
	for _, s := range strings.Split(*apps, ",") {
		a, t, ok := strings.Cut(strings.TrimSpace(s), ":")
		top, err := strconv.ParseFloat(t, 64)
		if !ok || err != nil || !(top > 0 && top <= 1e6) || !isHorizontalProfile(a) {
			return usagef("eval: -apps entry %q, want APP:TOP with APP a CLASP application (%s) and 0 < TOP ≤ 1e6", s, strings.Join(horizontalApps(), ", "))
		}
		list = append(list, appTop{a, top})
	}
	switch {
	case *maxWorkers < 1 || *maxWorkers > 16:
		return usagef("eval: -max-workers %d, want 1..16", *maxWorkers)
	case *taskMC < 1 || *taskMC > 64000:
		return usagef("eval: -task-mc %d, want 1..64000", *taskMC)
	case *budget < 0 || *budget > 64000:
		return usagef("eval: -worker-budget %d, want 0 (none) or 1..64000", *budget)
	case bool(budgetProcess) && *budget == 0:
		return usagef("eval: -worker-budget-mode process needs -worker-budget > 0")
	case !(*sloMS > 0):
		return usagef("eval: -slo-ms %v, want > 0", *sloMS)
	}
	claims := ClaspClaims{MaxWorkers: *maxWorkers, SLOMS: *sloMS, TaskMC: *taskMC, Budget: *budget, BudgetProc: bool(budgetProcess), Apps: map[string]*AppClaims{}, Commit: o.Commit, GoVersion: o.GoVersion}
	for _, a := range list {
		runs := claimRuns(a.name, a.top, *maxWorkers)
		runs = append(runs, modeRuns(a.name, a.top, modes, *seed, *modeSeeds)...)
		if !*analyze {
			for _, r := range runs {
				hf := hliveFlags{profile: a.name, trace: r.trace, out: filepath.Join(*out, r.dir), specs: r.specs, scale: time.Second,
					scaleSet: true, mult: 1, sloMS: *sloMS, workers: 1, maxWorkers: *maxWorkers, taskMC: *taskMC, budget: *budget, budgetProcess: budgetProcess, seed: *seed, verbose: *verbose, costModel: *costModel}
				hf.seeds = 1
				if r.kind == "mode" {
					hf.peak, hf.seeds = r.peak, len(r.seeds)
				}
				if *resume {
					if s, err := readHLive(hf.out); err == nil && r.matches(s) == nil && s.TaskMillicores == *taskMC && s.WorkerBudget == *budget && s.BudgetProcess == bool(budgetProcess) {
						fmt.Fprintf(o.Stderr, "eval: liveclasp: %s already run, skipped (-resume)\n", hf.out)
						continue
					}
				}
				quiet := o
				quiet.Stdout = io.Discard
				if err := hlive(ctx, hf, quiet); err != nil {
					return err
				}
			}
		}
		ac, err := judgeApp(*out, a.name, a.top, runs, *maxWorkers, *sloMS)
		if err != nil {
			return err
		}
		claims.Apps[a.name] = ac
	}
	var modeSums []HLiveSummary
	for _, a := range list {
		for _, r := range modeRuns(a.name, a.top, modes, *seed, *modeSeeds) {
			s, err := readHLive(filepath.Join(*out, r.dir))
			if err != nil {
				return err
			}
			modeSums = append(modeSums, s)
		}
	}
	if err := hliveFigures(*out, modeSums); err != nil {
		return err
	}
	b, err := report.MarshalJSON(claims)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "claims.json"), b, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	md := claimsMarkdown(claims, list[0].name)
	for _, a := range list[1:] {
		md = append(md, claimsMarkdown(claims, a.name)...)
	}
	if err := os.WriteFile(filepath.Join(*out, "claims.md"), md, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	_, err = o.Stdout.Write(md)
	return err
}

func horizontalApps() []string {
	var out []string
	for _, a := range ops.AppNames() {
		if isHorizontalProfile(a) {
			out = append(out, a)
		}
	}
	return out
}

// claimRun is one command of the protocol.
type claimRun struct {
	kind   string // ramp, fixed, transition
	dir    string
	trace  string
	specs  []string
	levels []float64 // rates, inputs/s
	points []int
	// A load-mode run (kind "mode", trace burst or gradual): its peak
	// rate, inputs/s, and its seeds.
	peak  float64
	seeds []uint64
}

// matches reports whether s is this run's summary: its trace, and for a
// load mode its peak and seeds.
func (r claimRun) matches(s HLiveSummary) error {
	if s.Trace != r.trace {
		return fmt.Errorf("eval: %s ran %s, the protocol's run is %s", r.dir, s.Trace, r.trace)
	}
	if r.kind != "mode" {
		return nil
	}
	seeds := s.Seeds
	if len(seeds) == 0 {
		seeds = []uint64{s.Seed}
	}
	if s.PeakRate != r.peak || !slices.Equal(seeds, r.seeds) {
		return fmt.Errorf("eval: %s ran %s at peak %g on seeds %v, the protocol's run is peak %g on seeds %v (-seed, -mode-seeds)", r.dir, s.Trace,
			s.PeakRate, seeds, r.peak, r.seeds)
	}
	return nil
}

// modeRuns lists the load-mode runs of one application: every method on
// each mode, peak top, seeds seed … seed+n−1.
func modeRuns(app string, top float64, modes []string, seed uint64, n int) []claimRun {
	var seeds []uint64
	for k := range n {
		seeds = append(seeds, seed+uint64(k))
	}
	var runs []claimRun
	for _, m := range modes {
		runs = append(runs, claimRun{kind: "mode", dir: app + "-" + m, trace: m, specs: claimMethods, peak: top, seeds: seeds})
	}
	return runs
}

func level(f, top float64) float64 { return math.Round(f * top) }

func levelsTrace(rates []float64, points []int) string {
	parts := make([]string, len(rates))
	for i := range rates {
		parts[i] = strconv.FormatFloat(rates[i], 'f', -1, 64) + "x" + strconv.Itoa(points[i])
	}
	return "levels:" + strings.Join(parts, ",")
}

// claimRuns lists the protocol's commands for one application.
func claimRuns(app string, top float64, maxWorkers int) []claimRun {
	var runs []claimRun
	var rl []float64
	var rp []int
	for _, f := range claimRamp {
		rl, rp = append(rl, level(f, top)), append(rp, claimRampPoints)
	}
	runs = append(runs, claimRun{kind: "ramp", dir: app + "-ramp", trace: levelsTrace(rl, rp), specs: claimMethods, levels: rl, points: rp})
	var fl []float64
	var fp []int
	for _, f := range claimFractions {
		fl, fp = append(fl, level(f, top)), append(fp, claimFixedPoints)
	}
	var fixed []string
	for n := 1; n <= maxWorkers; n++ {
		fixed = append(fixed, "fixed:"+strconv.Itoa(n))
	}
	runs = append(runs, claimRun{kind: "fixed", dir: app + "-fixed", trace: levelsTrace(fl, fp), specs: fixed, levels: fl, points: fp})
	for _, a := range claimFractions {
		for _, b := range claimFractions {
			if a == b {
				continue
			}
			l, p := []float64{level(a, top), level(b, top)}, []int{claimWarm, claimAfter}
			runs = append(runs, claimRun{kind: "transition", dir: fmt.Sprintf("%s-tr-%g-%g", app, a, b), trace: levelsTrace(l, p), specs: claimMethods, levels: l, points: p})
		}
	}
	return runs
}

// sustained reports, per level of a run, whether it was sustained: the
// mean throughput over the level's points after the first claimSkip is at
// least claimRatio × the rate, and the p95 of its last recorded point is
// at most sloMS.
func sustained(r HLiveRun, levels []float64, points []int, sloMS float64) []bool {
	out := make([]bool, len(levels))
	i := 0
	for k, rate := range levels {
		lo, hi := i+claimSkip, min(i+points[k], len(r.ThroughputPerStep))
		i += points[k]
		if hi <= lo {
			continue
		}
		sum := 0.0
		for j := lo; j < hi; j++ {
			sum += r.ThroughputPerStep[j]
		}
		out[k] = sum/float64(hi-lo) >= claimRatio*rate && r.P95PerStep[hi-1] <= sloMS
	}
	return out
}

func readHLive(dir string) (HLiveSummary, error) {
	var s HLiveSummary
	b, err := os.ReadFile(filepath.Join(dir, FileSummary))
	if err != nil {
		return s, fmt.Errorf("eval: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("eval: %s: %w", dir, err)
	}
	return s, nil
}

// judgeApp computes one application's figures from its runs' summaries.
func judgeApp(out, app string, top float64, runs []claimRun, maxWorkers int, sloMS float64) (*AppClaims, error) {
	ac := &AppClaims{Top: top, OOWC: map[string]int{}, Methods: map[string]*MethodClaims{}}
	for _, m := range claimMethods {
		ac.Methods[m] = &MethodClaims{}
	}
	key := func(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }
	sums := make([]HLiveSummary, len(runs))
	for i, r := range runs {
		s, err := readHLive(filepath.Join(out, r.dir))
		if err != nil {
			if r.kind == "mode" && errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("eval: liveclasp: no %s run in %s (outputs older than -modes have none): judge them without -modes, or add the runs with -resume", r.trace, filepath.Join(out, r.dir))
			}
			return nil, err
		}
		if err := r.matches(s); err != nil {
			return nil, err
		}
		sums[i] = s
	}
	for i, r := range runs {
		if r.kind != "fixed" {
			continue
		}
		for _, l := range r.levels {
			ac.OOWC[key(l)] = maxWorkers + 1
		}
		for _, run := range sums[i].Runs {
			n, err := strconv.Atoi(strings.TrimPrefix(run.Controller, "fixed:"))
			if err != nil {
				return nil, fmt.Errorf("eval: %s: run %q is not fixed:N", r.dir, run.Controller)
			}
			for k, ok := range sustained(run, r.levels, r.points, sloMS) {
				if ok && n < ac.OOWC[key(r.levels[k])] {
					ac.OOWC[key(r.levels[k])] = n
				}
			}
		}
	}
	var (
		simTop float64
		sim    map[string]map[string]claspexp.ModeSummary
	)
	for _, r := range runs {
		if r.kind == "mode" {
			var err error
			if simTop, sim, err = simModes(app, r.seeds); err != nil {
				return nil, err
			}
			break
		}
	}
	for i, r := range runs {
		if r.kind == "mode" {
			mcl, err := judgeMode(app, r, sums[i], simTop, sim)
			if err != nil {
				return nil, err
			}
			if ac.Modes == nil {
				ac.Modes = map[string]*ModeClaims{}
			}
			ac.Modes[r.trace] = mcl
			continue
		}
		for _, run := range sums[i].Runs {
			mc := ac.Methods[run.Controller]
			if mc == nil {
				continue
			}
			for _, m := range run.MigrationLog {
				mc.plannerMS = append(mc.plannerMS, m.PlannerMS)
				mc.pauses = append(mc.pauses, m.PauseMSMax)
				if m.Reason == "failover" {
					mc.Failovers++
				}
			}
			switch r.kind {
			case "transition":
				need := ac.OOWC[key(r.levels[1])]
				final := 0
				if n := len(run.WorkersPerStep); n > 0 {
					final = run.WorkersPerStep[n-1]
				}
				ac.Rows = append(ac.Rows, TransitionClaim{Method: run.Controller, From: r.levels[0], To: r.levels[1], Needed: need, Workers: final,
					Intervals: len(run.WorkersPerStep), Delivered: run.Delivered})
				mc.WorkerError += math.Abs(float64(final - need))
				mc.DeliveredMean += run.Delivered
				mc.Transitions++
			case "ramp":
				ok := sustained(run, r.levels, r.points, sloMS)
				mc.RampAll = !slices.Contains(ok, false)
				for k := range ok {
					if ok[k] {
						mc.RampSustained = r.levels[k]
					}
				}
				mc.RampDelivered, mc.RampP50MS, mc.RampP95MS, mc.RampMeanWorkers = run.Delivered, run.P50MS, run.P95MS, run.MeanWorkers
			}
		}
	}
	for _, mc := range ac.Methods {
		if mc.Transitions > 0 {
			mc.WorkerError /= float64(mc.Transitions)
			mc.DeliveredMean /= float64(mc.Transitions)
		}
		mc.Migrations = len(mc.plannerMS)
		mc.PlannerMSMedian, mc.PlannerMSMax = median(mc.plannerMS), slices.Max(append(mc.plannerMS, 0))
		mc.PauseMSMedian, mc.PauseMSMax = median(mc.pauses), slices.Max(append(mc.pauses, 0))
	}
	return ac, nil
}

// median is the median of xs (mean of the middle two; 0 when empty).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// claimsMarkdown is one application's table of claims.md.
func claimsMarkdown(c ClaspClaims, app string) []byte {
	ac := c.Apps[app]
	var b strings.Builder
	var oowc []string
	for _, f := range claimFractions {
		l := level(f, ac.Top)
		oowc = append(oowc, fmt.Sprintf("%g: %d", l, ac.OOWC[strconv.FormatFloat(l, 'f', -1, 64)]))
	}
	quota := fmt.Sprintf("%d mc per task", c.TaskMC)
	if c.Budget > 0 {
		quota += fmt.Sprintf(", a budget of %d mc per worker", c.Budget)
		if c.BudgetProc {
			quota += " (the kernel's quota on the whole worker process)"
		}
	}
	fmt.Fprintf(&b, "## %s (top %g inputs/s, at most %d workers, %s)\n\nOOWC by level (inputs/s: workers; %d = none sustained): %s\n\n", app, ac.Top, c.MaxWorkers, quota, c.MaxWorkers+1, strings.Join(oowc, ", "))
	b.WriteString("| method | worker error | transitions | delivered (transitions) | ramp sustained /s | ramp delivered | ramp p50 / p95 ms | ramp workers | migrations | planner ms median / max | pause ms median / max | failovers |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, m := range claimMethods {
		mc := ac.Methods[m]
		ramp := fmt.Sprintf("%g", mc.RampSustained)
		if mc.RampAll {
			ramp = "≥ " + ramp
		}
		fmt.Fprintf(&b, "| %s | %.2f | %d | %.3f | %s | %.3f | %.0f / %.0f | %.2f | %d | %.1f / %.1f | %.2f / %.2f | %d |\n", m, mc.WorkerError, mc.Transitions,
			mc.DeliveredMean, ramp, mc.RampDelivered, mc.RampP50MS, mc.RampP95MS, mc.RampMeanWorkers, mc.Migrations, mc.PlannerMSMedian, mc.PlannerMSMax,
			mc.PauseMSMedian, mc.PauseMSMax, mc.Failovers)
	}
	b.WriteString("\n")
	b.Write(modesMarkdown(app, ac))
	return []byte(b.String())
}
