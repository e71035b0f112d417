package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"streamscale/eval/calibrate"
	"streamscale/internal/command"
	"streamscale/serve/runtime"
)

// calibrateFlags are the flags of `eval calibrate`.
type calibrateFlags struct {
	profile           *string
	rate              *float64
	scale             *time.Duration
	dur               *time.Duration
	cpuScale          *float64
	high              *float64
	low               *float64
	seed              *uint64
	out               *string
	asJSON            *bool
	costDur           *time.Duration
	costMC            *int
	costBudget        *int
	costRate          *float64
	costBudgetApp     *string
	costBudgetRate    *float64
	costMinR2         *float64
	costZero          *bool
	svcInputs         *int
	from              *string
	costBudgetProcess budgetMode
	hopRates          rateList
}

// addCalibrateFlags defines the flags of `eval calibrate` on fs.
func addCalibrateFlags(fs *flag.FlagSet) *calibrateFlags {
	f := &calibrateFlags{}
	f.profile = fs.String("profile", "pred", "application profile: pred or etl (the vertical probes and the cost-model probe), or a CLASP application (wc, sd, aa, pl, nwm, syn: the cost-model probe only)")
	// The default rate is eval live's mean offered rate (taxi points
	// 0–59 × 0.75 ≈ 2,960 inputs/s): the workers' per-hop delay is their
	// batching wait (a batch leaves at 64 records or after 20 ms), so it
	// falls with the rate, and hops probed at another rate misstate the
	// live latency (etl's static:4000 p95 was 89.6 ms live at ≈ 1,975
	// inputs/s and 59.9 ms at ≈ 2,960).
	f.rate = fs.Float64("rate", 3000, "constant input rate, inputs/s (default: eval live's mean offered rate)")
	f.scale = fs.Duration("time-scale", 250*time.Millisecond, "control interval (and the workers' report interval)")
	f.dur = fs.Duration("duration", 10*time.Second, "probe length; the allocation steps down from -high to -low half way")
	f.cpuScale = fs.Float64("cpu-scale", 0.01, "live CFS millicores per scenario millicore")
	f.high = fs.Float64("high", 10000, "scenario millicores per task in the first half")
	f.low = fs.Float64("low", 500, "scenario millicores per task in the second half")
	f.seed = fs.Uint64("seed", 1, "seed of the input source")
	f.out = fs.String("out", "out/calibrate", "output directory (created if missing)")
	f.asJSON = fs.Bool("json", false, "print calibration.json to stdout")
	f.costDur = fs.Duration("cost-duration", 3*time.Second, "load per run of the cost-model probe (15 runs: the chain application in 14 layouts, the budget application saturated once; see live.ProbeCosts); 0 skips it")
	f.costMC = fs.Int("cost-millicores", 1000, "live CFS millicores of every task in the cost-model probe (W is the budget at this quota: eval live's -task-mc)")
	f.costBudget = fs.Int("cost-worker-budget", 0, "CPU budget, millicores, every worker's tasks share in the cost-model probe (eval live's -worker-budget; 0: none)")
	fs.Var(&f.costBudgetProcess, "cost-worker-budget-mode", "eval live's -worker-budget-mode for the cost-model probe: "+budgetModeHelp)
	f.costRate = fs.Float64("cost-rate", 4000, "input rate of the cost-model probe's chain runs, inputs/s (the γ runs also at half of it)")
	f.costBudgetApp = fs.String("cost-budget-app", "syn", "application the cost-model probe saturates on one worker for the budget W")
	f.costBudgetRate = fs.Float64("cost-budget-rate", 1500, "input rate of the budget run, inputs/s (above one worker's capacity)")
	f.costMinR2 = fs.Float64("cost-min-r2", calibrate.DefaultCostFitConfig().MinR2, "least R² of a term's line for the term to be written")
	f.costZero = fs.Bool("cost-zero-unresolved", false, "write as 0 a term of α, β, γ refused for a negative estimate or a poor fit whose 95% CI includes 0 (below the probe's resolution) instead of writing no model")
	f.svcInputs = fs.Int("service-inputs", 3000, "inputs of the in-process per-execution timing (service-time distribution)")
	fs.Var(&f.hopRates, "hop-rates", "further constant input rates, inputs/s, comma-separated, each probed with every task at -high for -duration: the per-hop latencies and batching waits at each rate become the scenario's hop_curve with -rate's (empty: fixed hops)")
	f.from = fs.String("from", "", "an earlier probe's calibration.json: recompute its derived values (per-task hops, methods) and the scenario with this commit, without live runs (the probe flags are ignored)")
	return f
}

func calibrateCmd(ctx context.Context, args []string, o Options) error {
	fs := command.NewFlagSet("eval calibrate")
	f := addCalibrateFlags(fs)
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	if *f.from != "" {
		return rederive(ctx, *f.from, *f.out, *f.asJSON, o)
	}
	p, err := f.plan(o)
	if err != nil {
		return err
	}
	var uptime []string
	if u := hostLoad(); u != "" {
		uptime = append(uptime, "before: "+u)
	}
	c, err := calibrate.Probe(ctx, p)
	if err != nil {
		return calibrateError(err)
	}
	if u := hostLoad(); u != "" {
		uptime = append(uptime, "after: "+u)
	}
	c.Uptime = uptime
	res, err := calibrate.Derive(ctx, c)
	if err != nil {
		return calibrateError(err)
	}
	return writeCalibration(o, *f.out, *f.asJSON, res)
}

// calibrateError is a probe's or a derivation's error as the command
// reports it: a bad plan is bad usage.
func calibrateError(err error) error {
	if errors.Is(err, calibrate.ErrPlan) {
		return usagef("eval: %v", err)
	}
	return fmt.Errorf("eval: %w", err)
}

// check refuses flag values out of range (usage errors naming the flag).
func (f *calibrateFlags) check() error {
	horizontal := isHorizontalProfile(*f.profile)
	if !horizontal {
		if err := checkProfile(*f.profile); err != nil {
			return err
		}
	}
	switch {
	case !(*f.rate > 0) || *f.rate > 1e6:
		return usagef("eval: -rate %v, want 0 < rate ≤ 1e6 inputs/s", *f.rate)
	case *f.scale < 10*time.Millisecond || *f.scale > time.Minute:
		return usagef("eval: -time-scale %v, want 10ms..1m", *f.scale)
	case *f.dur < 8**f.scale || *f.dur > time.Hour:
		return usagef("eval: -duration %v, want at least 8 intervals (%v) and at most 1h", *f.dur, 8**f.scale)
	case !(*f.cpuScale > 0) || *f.cpuScale > 1000:
		return usagef("eval: -cpu-scale %v, want > 0 and ≤ 1000", *f.cpuScale)
	case !(*f.high >= 500 && *f.high <= 10000) || !(*f.low >= 500 && *f.low <= 10000):
		return usagef("eval: -high %v and -low %v, want scenario millicores in [500, 10000]", *f.high, *f.low)
	case *f.costDur < 0 || *f.costDur > 10*time.Minute || (*f.costDur > 0 && *f.costDur < time.Second+4**f.scale):
		return usagef("eval: -cost-duration %v, want 0 (skip) or 1 s + 4 intervals (%v) .. 10m", *f.costDur, time.Second+4**f.scale)
	case horizontal && *f.costDur == 0:
		return usagef("eval: -cost-duration 0 skips the only probe of a CLASP application (%s)", *f.profile)
	case *f.costMC < 1 || *f.costMC > 64000:
		return usagef("eval: -cost-millicores %d, want 1..64000", *f.costMC)
	case *f.costBudget < 0 || *f.costBudget > 64000:
		return usagef("eval: -cost-worker-budget %d, want 0 (none) or 1..64000", *f.costBudget)
	case bool(f.costBudgetProcess) && *f.costBudget == 0:
		return usagef("eval: -cost-worker-budget-mode process needs -cost-worker-budget > 0")
	case !(*f.costRate >= 10 && *f.costRate <= 1e6) || !(*f.costBudgetRate > 0 && *f.costBudgetRate <= 1e6):
		return usagef("eval: -cost-rate %v and -cost-budget-rate %v, want 10..1e6 and (0, 1e6] inputs/s", *f.costRate, *f.costBudgetRate)
	case !(*f.costMinR2 >= 0 && *f.costMinR2 <= 1):
		return usagef("eval: -cost-min-r2 %v, want [0, 1]", *f.costMinR2)
	case *f.svcInputs < 1 || *f.svcInputs > 100000:
		return usagef("eval: -service-inputs %d, want 1..100000", *f.svcInputs)
	case slices.Contains(f.hopRates, *f.rate):
		return usagef("eval: -hop-rates lists -rate %v, which the main probe measures", *f.rate)
	case len(f.hopRates) > 0 && horizontal:
		return usagef("eval: -hop-rates applies to pred and etl (the vertical probes), not %s", *f.profile)
	}
	return nil
}

// plan checks the flags and returns the probes' plan.
func (f *calibrateFlags) plan(o Options) (calibrate.Plan, error) {
	if err := f.check(); err != nil {
		return calibrate.Plan{}, err
	}
	budgetApp, err := runtime.Apps(*f.costBudgetApp)
	if err != nil {
		return calibrate.Plan{}, usagef("eval: -cost-budget-app: %v", err)
	}
	p := calibrate.Plan{Profile: *f.profile, Rate: *f.rate, Interval: *f.scale, Duration: *f.dur, CPUScale: *f.cpuScale, HighMC: *f.high, LowMC: *f.low,
		Seed: *f.seed, ServiceInputs: *f.svcInputs, HopRates: f.hopRates, WorkerArgs: []string{"live-worker"}, Build: command.Build{Commit: o.Commit, GoVersion: o.GoVersion}}
	if *f.costDur > 0 {
		p.Cost = &calibrate.CostProbe{Rate: *f.costRate, Load: *f.costDur, Report: *f.scale, TaskMillicores: *f.costMC, WorkerBudget: *f.costBudget,
			WorkerBudgetProcess: bool(f.costBudgetProcess), BudgetApp: budgetApp, BudgetRate: *f.costBudgetRate,
			Fit: &calibrate.CostFitConfig{MinR2: *f.costMinR2, ZeroUnresolved: *f.costZero}, Seed: *f.seed, WorkerArgs: []string{"live-worker"}, Log: o.Stderr}
	}
	return p, nil
}

// writeCalibration writes the files of res into out (created if
// missing): scenario.json (pred and etl), calibration.json and
// calibration.md; and prints calibration.json (-json) or calibration.md.
func writeCalibration(o Options, out string, asJSON bool, res calibrate.Output) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	files := []struct {
		name string
		data []byte
	}{{"scenario.json", res.Scenario}, {"calibration.json", res.JSON}, {"calibration.md", res.Markdown}}
	for _, f := range files {
		if f.data == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(out, f.name), f.data, 0o644); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	var err error
	if asJSON {
		_, err = o.Stdout.Write(res.JSON)
	} else {
		_, err = o.Stdout.Write(res.Markdown)
	}
	return err
}

// rederive is `eval calibrate -from FILE`: the outputs of an earlier
// probe's calibration.json recomputed from its measurements by this
// commit (the per-task hops, the methods and the scenario), without live
// runs.
func rederive(ctx context.Context, path, out string, asJSON bool, o Options) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return usagef("eval: -from: %v", err)
	}
	c, err := calibrate.Parse(data)
	if err != nil {
		return usagef("eval: -from %s: %v", path, err)
	}
	c.Rederived = fmt.Sprintf("from %s (probe commit %s) by commit %s", path, c.Commit, o.Commit)
	res, err := calibrate.Derive(ctx, c)
	switch {
	case errors.Is(err, calibrate.ErrPlan):
		return usagef("eval: -from %s: %v", path, err)
	case err != nil:
		return fmt.Errorf("eval: %w", err)
	}
	return writeCalibration(o, out, asJSON, res)
}

// rateList is a comma-separated list of input rates (-hop-rates), each
// in (0, 1e6] inputs/s, none twice.
type rateList []float64

func (l *rateList) String() string { return formatGrid(*l) }

func (l *rateList) Set(v string) error {
	var out []float64
	for _, f := range strings.Split(v, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(r > 0 && r <= 1e6) {
			return fmt.Errorf("rate %q, want a number in (0, 1e6] inputs/s", f)
		}
		if slices.Contains(out, r) {
			return fmt.Errorf("rate %v given twice", r)
		}
		out = append(out, r)
	}
	if len(out) > 16 {
		return fmt.Errorf("%d rates, want at most 16", len(out))
	}
	*l = out
	return nil
}

// hostLoad is the host's clock and load averages (/proc/loadavg: 1, 5
// and 15 minutes), recorded beside live measurements on the shared
// machine; "" where the file is missing.
func hostLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return time.Now().UTC().Format(time.RFC3339) + " load average " + strings.Join(f[:3], ", ")
}
