package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
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

	"streamscale/eval/liveclasp"
	"streamscale/eval/report"
	"streamscale/internal/command"
	"streamscale/serve/runtime/ops"
)

// liveclaspFlags are the flags of `eval liveclasp`.
type liveclaspFlags struct {
	apps          *string
	maxWorkers    *int
	taskMC        *int
	budget        *int
	sloMS         *float64
	seed          *uint64
	out           *string
	analyze       *bool
	verbose       *bool
	modesFlag     *string
	modeSeeds     *int
	resume        *bool
	costModel     *string
	budgetProcess budgetMode
}

// appTop is one -apps entry: a CLASP application and its top rate T.
type appTop struct {
	name string
	top  float64
}

// addLiveclaspFlags defines the flags of `eval liveclasp` on fs.
func addLiveclaspFlags(fs *flag.FlagSet) *liveclaspFlags {
	f := &liveclaspFlags{}
	f.apps = fs.String("apps", "syn:200,wc:16000,sd:32000", "APP:TOP[,…]: applications and their top rate T, inputs/s (transitions at 20/60/100% of T, ramp 25…125%)")
	f.maxWorkers = fs.Int("max-workers", 4, "most workers a controller may use (and the largest fixed count)")
	f.taskMC = fs.Int("task-mc", 1000, "CFS quota of every task in every worker, millicores")
	f.budget = fs.Int("worker-budget", 0, "CPU budget, millicores, that every worker's tasks share on top of -task-mc (a worker's budget W in CLASP's model; 0: none)")
	fs.Var(&f.budgetProcess, "worker-budget-mode", budgetModeHelp)
	f.sloMS = fs.Float64("slo-ms", 1000, "a sustained level's p95 at its end stays at or under this, ms")
	f.seed = fs.Uint64("seed", 1, "seed of the input source")
	f.out = fs.String("out", "out/liveclasp", "output directory: one subdirectory per run, claims.json and claims.md")
	f.analyze = fs.Bool("analyze", false, "only judge the runs already in -out")
	f.verbose = fs.Bool("v", false, "log the runtime's events to stderr")
	f.modesFlag = fs.String("modes", "", "CLASP load modes also run per app (burst, gradual; comma-separated; \"\": none): every method on each, peak = the app's top rate, ≈ 150 s per method, mode and seed")
	f.modeSeeds = fs.Int("mode-seeds", 3, "seeds -seed … -seed+N-1 of the load-mode runs (the pairs of their paired verdicts)")
	f.resume = fs.Bool("resume", false, "skip a run whose directory already holds its summary.json (same trace, peak and seeds)")
	f.costModel = fs.String("cost-model", "", costModelUsage)
	return f
}

// liveclaspCmd runs (unless -analyze) and judges the live CLASP protocol
// (package liveclasp).
func liveclaspCmd(ctx context.Context, args []string, o Options) error {
	fs := command.NewFlagSet("eval liveclasp")
	f := addLiveclaspFlags(fs)
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	list, modes, err := f.check()
	if err != nil {
		return err
	}
	claims := liveclasp.Claims{MaxWorkers: *f.maxWorkers, SLOMS: *f.sloMS, TaskMC: *f.taskMC, Budget: *f.budget, BudgetProc: bool(f.budgetProcess),
		Apps: map[string]*liveclasp.AppClaims{}, Build: command.Build{Commit: o.Commit, GoVersion: o.GoVersion}}
	for _, a := range list {
		runs := liveclasp.ClaimRuns(a.name, a.top, *f.maxWorkers)
		runs = append(runs, liveclasp.ModeRuns(a.name, a.top, modes, *f.seed, *f.modeSeeds)...)
		if !*f.analyze {
			if err := f.runAll(ctx, a.name, runs, o); err != nil {
				return err
			}
		}
		sums, err := readClaimRuns(*f.out, runs)
		if err != nil {
			return err
		}
		ac, err := liveclasp.JudgeApp(a.name, a.top, runs, sums, *f.maxWorkers, *f.sloMS)
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		claims.Apps[a.name] = ac
	}
	return f.writeClaims(claims, list, modes, o)
}

// check refuses flag values out of range (usage errors naming the flag)
// and returns the applications and the load modes.
func (f *liveclaspFlags) check() ([]appTop, []string, error) {
	if _, _, err := hliveMethods(*f.costModel, "", *f.maxWorkers); err != nil {
		return nil, nil, err
	}
	var modes []string
	if *f.modesFlag != "" {
		var err error
		if modes, err = splitList("modes", *f.modesFlag); err != nil {
			return nil, nil, err
		}
		for _, m := range modes {
			if !slices.Contains(liveclasp.Modes(), m) {
				return nil, nil, usagef("eval: -modes entry %q, want %s", m, strings.Join(liveclasp.Modes(), " or "))
			}
		}
	}
	switch {
	case *f.modeSeeds < 1 || *f.modeSeeds > 100:
		return nil, nil, usagef("eval: -mode-seeds %d, want 1..100", *f.modeSeeds)
	case *f.seed > math.MaxUint64-uint64(*f.modeSeeds-1):
		return nil, nil, usagef("eval: -seed %d with -mode-seeds %d overflows", *f.seed, *f.modeSeeds)
	}
	var list []appTop
	for _, s := range strings.Split(*f.apps, ",") {
		a, t, ok := strings.Cut(strings.TrimSpace(s), ":")
		top, err := strconv.ParseFloat(t, 64)
		if !ok || err != nil || !(top > 0 && top <= 1e6) || !isHorizontalProfile(a) {
			return nil, nil, usagef("eval: -apps entry %q, want APP:TOP with APP a CLASP application (%s) and 0 < TOP ≤ 1e6", s, strings.Join(horizontalApps(), ", "))
		}
		list = append(list, appTop{a, top})
	}
	switch {
	case *f.maxWorkers < 1 || *f.maxWorkers > 16:
		return nil, nil, usagef("eval: -max-workers %d, want 1..16", *f.maxWorkers)
	case *f.taskMC < 1 || *f.taskMC > 64000:
		return nil, nil, usagef("eval: -task-mc %d, want 1..64000", *f.taskMC)
	case *f.budget < 0 || *f.budget > 64000:
		return nil, nil, usagef("eval: -worker-budget %d, want 0 (none) or 1..64000", *f.budget)
	case bool(f.budgetProcess) && *f.budget == 0:
		return nil, nil, usagef("eval: -worker-budget-mode process needs -worker-budget > 0")
	case !(*f.sloMS > 0):
		return nil, nil, usagef("eval: -slo-ms %v, want > 0", *f.sloMS)
	}
	return list, modes, nil
}

// runAll runs the protocol's runs of one application (eval live's
// horizontal runs, one output directory each), skipping with -resume a
// run whose summary is already the protocol's.
func (f *liveclaspFlags) runAll(ctx context.Context, app string, runs []liveclasp.ClaimRun, o Options) error {
	for _, r := range runs {
		hf := hliveFlags{profile: app, trace: r.Trace, out: filepath.Join(*f.out, r.Dir), specs: r.Specs, scale: time.Second,
			scaleSet: true, mult: 1, sloMS: *f.sloMS, workers: 1, maxWorkers: *f.maxWorkers, taskMC: *f.taskMC, budget: *f.budget, budgetProcess: f.budgetProcess, seed: *f.seed, verbose: *f.verbose, costModel: *f.costModel}
		hf.seeds = 1
		if r.Kind == "mode" {
			hf.peak, hf.seeds = r.Peak, len(r.Seeds)
		}
		if *f.resume {
			if s, err := readHLive(hf.out); err == nil && r.Matches(s) == nil && s.TaskMillicores == *f.taskMC && s.WorkerBudget == *f.budget && s.BudgetProcess == bool(f.budgetProcess) {
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
	return nil
}

// readClaimRuns reads the summaries of runs from their directories under
// out, each checked to be the protocol's run.
func readClaimRuns(out string, runs []liveclasp.ClaimRun) ([]liveclasp.Summary, error) {
	sums := make([]liveclasp.Summary, len(runs))
	for i, r := range runs {
		s, err := readHLive(filepath.Join(out, r.Dir))
		if err != nil {
			if r.Kind == "mode" && errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("eval: liveclasp: no %s run in %s (outputs older than -modes have none): judge them without -modes, or add the runs with -resume", r.Trace, filepath.Join(out, r.Dir))
			}
			return nil, err
		}
		if err := r.Matches(s); err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		sums[i] = s
	}
	return sums, nil
}

// writeClaims draws the load-mode figure of every mode run and writes
// claims.json and claims.md into -out, printing claims.md.
func (f *liveclaspFlags) writeClaims(claims liveclasp.Claims, list []appTop, modes []string, o Options) error {
	var modeSums []liveclasp.Summary
	for _, a := range list {
		for _, r := range liveclasp.ModeRuns(a.name, a.top, modes, *f.seed, *f.modeSeeds) {
			s, err := readHLive(filepath.Join(*f.out, r.Dir))
			if err != nil {
				return err
			}
			modeSums = append(modeSums, s)
		}
	}
	if err := hliveFigures(*f.out, modeSums); err != nil {
		return err
	}
	b, err := report.MarshalJSON(claims)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*f.out, "claims.json"), b, 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	var md []byte
	for _, a := range list {
		md = append(md, liveclasp.ClaimsMarkdown(claims, a.name)...)
	}
	if err := os.WriteFile(filepath.Join(*f.out, "claims.md"), md, 0o644); err != nil {
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

// readHLive reads dir's summary.json of a horizontal live run.
func readHLive(dir string) (liveclasp.Summary, error) {
	var s liveclasp.Summary
	b, err := os.ReadFile(filepath.Join(dir, FileSummary))
	if err != nil {
		return s, fmt.Errorf("eval: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("eval: %s: %w", dir, err)
	}
	return s, nil
}
