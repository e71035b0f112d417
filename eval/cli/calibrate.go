package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"streamscale/eval/controllers"
	"streamscale/eval/live"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/internal/command"
	"streamscale/internal/costfile"
	"streamscale/internal/regfile"
	"streamscale/serve/runtime"
	"streamscale/serve/runtime/cfs"
	"streamscale/serve/runtime/ops"
	"streamscale/traces"
)

// Calibration is calibration.json of `eval calibrate`.
type Calibration struct {
	Profile    string              `json:"profile"`
	Rate       float64             `json:"rate"`
	TimeScaleS float64             `json:"time_scale_s"`
	Intervals  int                 `json:"intervals"`
	CPUScale   float64             `json:"cpu_scale"`
	HighMC     float64             `json:"high_millicores"`
	LowMC      float64             `json:"low_millicores"`
	Seed       uint64              `json:"seed"`
	Operators  []live.OperatorCost `json:"operators"`
	// ActuationIntervals is how many control intervals after the
	// decision the workers first reported the new quota (0: within the
	// interval it was meant for; -1: never); ActuationMaxMS bounds the
	// delay by that count (interval length × (count + 1)).
	ActuationIntervals int     `json:"actuation_intervals"`
	ActuationMaxMS     float64 `json:"actuation_max_ms"`
	// P95 before and after the step down, ms (means over the halves).
	P95HighMS float64 `json:"p95_high_ms"`
	P95LowMS  float64 `json:"p95_low_ms"`
	// ServiceTimes are the per-execution CPU times of every operator
	// timed in process (live.ServiceTimes, ServiceInputs inputs).
	ServiceTimes  []live.ServiceDist `json:"service_times"`
	ServiceInputs int                `json:"service_inputs"`
	// ServiceCV is the work-weighted mean of the operators' per-execution
	// CVs (Σ_o work_o·CV_o / Σ_o work_o, work_o = executions × mean).
	ServiceCV float64 `json:"service_cv"`
	// CapacityJitter is the interval-to-interval CV of the CPU an event
	// costs beyond what the per-event CV explains:
	// √max(0, CV_int² − CV_event²/n) per operator (n executions per
	// interval), work-weighted over the operators.
	CapacityJitter float64 `json:"capacity_jitter"`
	// OfferedCV is the CV of the offered rate over the high phase's
	// intervals at the constant -rate (the generator's pacing).
	OfferedCV float64 `json:"offered_cv"`
	// Enforcement is Σ CPU used / Σ CPU allotted of the costliest
	// operator (EnforcementOp, the bottleneck at equal allocations) over
	// the low phase from the interval after the actuation on: 1 when the
	// quota binds exactly; EnforcementIntervals counted.
	EnforcementOp        int     `json:"enforcement_op"`
	Enforcement          float64 `json:"enforcement"`
	EnforcementIntervals int     `json:"enforcement_intervals"`
	// LowPhase is every operator's CPU per event and quota use over the
	// same intervals (the low phase from the interval after the
	// actuation): what an event costs when the quota binds, against
	// Operators' costs at the generous allocation.
	LowPhase []PhaseCost `json:"low_phase,omitempty"`
	// HopMS is the mean per-operator delay of the high phase (enqueue →
	// execution finished), ms: the per-hop latency at a generous
	// allocation.
	HopMS float64 `json:"hop_ms"`
	// HopsAfter is the dispatch latency after each forwarding task of the
	// profile (live.HopsAfter from the operators' delays), ms, in operator
	// order: the scenario's hop_ms_by_task.
	HopsAfter []live.TaskHop `json:"hops_after"`
	// HopSpread is the scenario's hop_spread (env.Physics.HopSpread): the
	// spread of the per-hop waits, fitted to the probe's end-to-end p95
	// at the generous allocation (P95HighMS) by simulating the probe
	// (fitHopSpread); HopSpreadFit lists every spread tried with the
	// simulated p95 it gave. The workers report only each operator's
	// mean delay per interval, not per record, so the spread of a single
	// hop is not observed directly: the end-to-end quantile is what the
	// per-record waits add up to.
	HopSpread    float64          `json:"hop_spread"`
	HopSpreadFit []HopSpreadPoint `json:"hop_spread_fit,omitempty"`
	// HopSpreadNote says how the fit ended (in range, or at a bound).
	HopSpreadNote string `json:"hop_spread_note,omitempty"`
	// HopCurve is the per-hop latency at the other input rates of
	// -hop-rates: at each rate a probe of its own holds every task at
	// HighMC for the whole run and measures the operators' delays as the
	// main probe's high phase does. With the main probe's point it is the
	// scenario's hop_curve (env.HopCurve): the runtime's batching waits
	// depend on how fast each queue fills.
	HopCurve []HopRatePoint `json:"hop_curve,omitempty"`
	// Rederived says which file and commits `eval calibrate -from`
	// recomputed the derived values from ("" for a live probe).
	Rederived string `json:"rederived,omitempty"`
	// CFSPeriodMS is the workers' CFS period, ms.
	CFSPeriodMS float64 `json:"cfs_period_ms"`
	// CostModel is the earlier regression probe's estimate, in files
	// written before the microbenchmark probe replaced it (never written
	// now; decoded so that -from still reads those files).
	CostModel *live.CostEstimate `json:"cost_model,omitempty"`
	// CostProbe is the cost-model microbenchmark probe's result
	// (live.ProbeCosts; nil: skipped): every term of CLASP's Eq. 1 with
	// its fit, and the model when every term was accepted.
	CostProbe *live.CostProbeResult `json:"cost_probe,omitempty"`
	// ReportedMillicores is operator 0's live quota as the workers
	// reported it, per interval; OfferedPerS the offered rate per control
	// window.
	ReportedMillicores []int     `json:"reported_millicores"`
	OfferedPerS        []float64 `json:"offered_per_s"`
	// Methods says how every quantity was measured, by key.
	Methods map[string]string `json:"methods"`
	// Uptime is the host's load before and after the probes.
	Uptime    []string `json:"uptime"`
	Commit    string   `json:"commit"`
	GoVersion string   `json:"go_version"`
}

// PhaseCost is one operator's CPU per event over a phase of the probe
// (live.Calibration.PhaseCost).
type PhaseCost struct {
	Operator      string  `json:"operator"`
	CPUUSPerEvent float64 `json:"cpu_us_per_event"`
	// QuotaUsed is Σ CPU used / Σ CPU allotted over the phase.
	QuotaUsed float64 `json:"quota_used"`
	Intervals int     `json:"intervals"`
}

// HopRatePoint is one input rate of the hop curve (Calibration.HopCurve).
type HopRatePoint struct {
	Rate float64 `json:"rate"`
	// Intervals measured (from the third to the last).
	Intervals int `json:"intervals"`
	// P95MS is the mean interval p95 over those intervals, ms.
	P95MS float64 `json:"p95_ms"`
	// Operators are the operators' costs and delays at this rate.
	Operators []live.OperatorCost `json:"operators"`
	// HopsAfter is live.HopsAfter of Operators (derived, rewritten by
	// -from).
	HopsAfter []live.TaskHop `json:"hops_after"`
	// HopSpread is the spread fitted to P95MS as the main probe's is to
	// its high phase (fitHopSpread over this point's intervals), with
	// every spread tried and a note (derived, rewritten by -from).
	HopSpread     float64          `json:"hop_spread"`
	HopSpreadFit  []HopSpreadPoint `json:"hop_spread_fit,omitempty"`
	HopSpreadNote string           `json:"hop_spread_note,omitempty"`
}

// HopSpreadPoint is one spread tried by fitHopSpread and the mean of the
// simulated probe's interval p95 over the high phase.
type HopSpreadPoint struct {
	Spread float64 `json:"spread"`
	P95MS  float64 `json:"p95_ms"`
}

func calibrateCmd(ctx context.Context, args []string, o Options) error {
	fs := command.NewFlagSet("eval calibrate")
	profile := fs.String("profile", "pred", "application profile: pred or etl (the vertical probes and the cost-model probe), or a CLASP application (wc, sd, aa, pl, nwm, syn: the cost-model probe only)")
	// The default rate is eval live's mean offered rate (taxi points
	// 0–59 × 0.75 ≈ 2,960 inputs/s): the workers' per-hop delay is their
	// batching wait (a batch leaves at 64 records or after 20 ms), so it
	// falls with the rate, and hops probed at another rate misstate the
	// live latency (etl's static:4000 p95 was 89.6 ms live at ≈ 1,975
	// inputs/s and 59.9 ms at ≈ 2,960).
	rate := fs.Float64("rate", 3000, "constant input rate, inputs/s (default: eval live's mean offered rate)")
	scale := fs.Duration("time-scale", 250*time.Millisecond, "control interval (and the workers' report interval)")
	dur := fs.Duration("duration", 10*time.Second, "probe length; the allocation steps down from -high to -low half way")
	cpuScale := fs.Float64("cpu-scale", 0.01, "live CFS millicores per scenario millicore")
	high := fs.Float64("high", 10000, "scenario millicores per task in the first half")
	low := fs.Float64("low", 500, "scenario millicores per task in the second half")
	seed := fs.Uint64("seed", 1, "seed of the input source")
	out := fs.String("out", "out/calibrate", "output directory (created if missing)")
	asJSON := fs.Bool("json", false, "print calibration.json to stdout")
	costDur := fs.Duration("cost-duration", 3*time.Second, "load per run of the cost-model probe (15 runs: the chain application in 14 layouts, the budget application saturated once; see live.ProbeCosts); 0 skips it")
	costMC := fs.Int("cost-millicores", 1000, "live CFS millicores of every task in the cost-model probe (W is the budget at this quota: eval live's -task-mc)")
	costBudget := fs.Int("cost-worker-budget", 0, "CPU budget, millicores, every worker's tasks share in the cost-model probe (eval live's -worker-budget; 0: none)")
	var costBudgetProcess budgetMode
	fs.Var(&costBudgetProcess, "cost-worker-budget-mode", "eval live's -worker-budget-mode for the cost-model probe: "+budgetModeHelp)
	costRate := fs.Float64("cost-rate", 4000, "input rate of the cost-model probe's chain runs, inputs/s (the γ runs also at half of it)")
	costBudgetApp := fs.String("cost-budget-app", "syn", "application the cost-model probe saturates on one worker for the budget W")
	costBudgetRate := fs.Float64("cost-budget-rate", 1500, "input rate of the budget run, inputs/s (above one worker's capacity)")
	costMinR2 := fs.Float64("cost-min-r2", live.DefaultCostFitConfig().MinR2, "least R² of a term's line for the term to be written")
	costZero := fs.Bool("cost-zero-unresolved", false, "write as 0 a term of α, β, γ refused for a negative estimate or a poor fit whose 95% CI includes 0 (below the probe's resolution) instead of writing no model")
	svcInputs := fs.Int("service-inputs", 3000, "inputs of the in-process per-execution timing (service-time distribution)")
	var hopRates rateList
	fs.Var(&hopRates, "hop-rates", "further constant input rates, inputs/s, comma-separated, each probed with every task at -high for -duration: the per-hop latencies and batching waits at each rate become the scenario's hop_curve with -rate's (empty: fixed hops)")
	from := fs.String("from", "", "an earlier probe's calibration.json: recompute its derived values (per-task hops, methods) and the scenario with this commit, without live runs (the probe flags are ignored)")
	if err := parseFlags(fs, args, o); err != nil {
		return err
	}
	if *from != "" {
		return rederive(ctx, *from, *out, *asJSON, o)
	}
	horizontal := isHorizontalProfile(*profile)
	if !horizontal {
		if err := checkProfile(*profile); err != nil {
			return err
		}
	}
	switch {
	case !(*rate > 0) || *rate > 1e6:
		return usagef("eval: -rate %v, want 0 < rate ≤ 1e6 inputs/s", *rate)
	case *scale < 10*time.Millisecond || *scale > time.Minute:
		return usagef("eval: -time-scale %v, want 10ms..1m", *scale)
	case *dur < 8**scale || *dur > time.Hour:
		return usagef("eval: -duration %v, want at least 8 intervals (%v) and at most 1h", *dur, 8**scale)
	case !(*cpuScale > 0) || *cpuScale > 1000:
		return usagef("eval: -cpu-scale %v, want > 0 and ≤ 1000", *cpuScale)
	case !(*high >= 500 && *high <= 10000) || !(*low >= 500 && *low <= 10000):
		return usagef("eval: -high %v and -low %v, want scenario millicores in [500, 10000]", *high, *low)
	case *costDur < 0 || *costDur > 10*time.Minute || (*costDur > 0 && *costDur < time.Second+4**scale):
		return usagef("eval: -cost-duration %v, want 0 (skip) or 1 s + 4 intervals (%v) .. 10m", *costDur, time.Second+4**scale)
	case horizontal && *costDur == 0:
		return usagef("eval: -cost-duration 0 skips the only probe of a CLASP application (%s)", *profile)
	case *costMC < 1 || *costMC > 64000:
		return usagef("eval: -cost-millicores %d, want 1..64000", *costMC)
	case *costBudget < 0 || *costBudget > 64000:
		return usagef("eval: -cost-worker-budget %d, want 0 (none) or 1..64000", *costBudget)
	case bool(costBudgetProcess) && *costBudget == 0:
		return usagef("eval: -cost-worker-budget-mode process needs -cost-worker-budget > 0")
	case !(*costRate >= 10 && *costRate <= 1e6) || !(*costBudgetRate > 0 && *costBudgetRate <= 1e6):
		return usagef("eval: -cost-rate %v and -cost-budget-rate %v, want 10..1e6 and (0, 1e6] inputs/s", *costRate, *costBudgetRate)
	case !(*costMinR2 >= 0 && *costMinR2 <= 1):
		return usagef("eval: -cost-min-r2 %v, want [0, 1]", *costMinR2)
	case *svcInputs < 1 || *svcInputs > 100000:
		return usagef("eval: -service-inputs %d, want 1..100000", *svcInputs)
	case slices.Contains(hopRates, *rate):
		return usagef("eval: -hop-rates lists -rate %v, which the main probe measures", *rate)
	case len(hopRates) > 0 && horizontal:
		return usagef("eval: -hop-rates applies to pred and etl (the vertical probes), not %s", *profile)
	}
	budgetApp, err := runtime.Apps(*costBudgetApp)
	if err != nil {
		return usagef("eval: -cost-budget-app: %v", err)
	}
	costProbe := live.CostProbe{Rate: *costRate, Load: *costDur, Report: *scale, TaskMillicores: *costMC, WorkerBudget: *costBudget, WorkerBudgetProcess: bool(costBudgetProcess), BudgetApp: budgetApp, BudgetRate: *costBudgetRate,
		Fit: &live.CostFitConfig{MinR2: *costMinR2, ZeroUnresolved: *costZero}, Seed: *seed, WorkerArgs: []string{"live-worker"}, Log: o.Stderr}
	var uptime []string
	if u := hostLoad(); u != "" {
		uptime = append(uptime, "before: "+u)
	}
	if horizontal {
		return calibrateCosts(ctx, *profile, costProbe, *seed, *svcInputs, *out, *asJSON, uptime, o)
	}
	n := int(*dur / *scale)
	at := n / 2
	tr := &traces.Trace{Name: "constant", Source: "synthetic", Counts: []float64{*rate}, Scale: 1}
	sc, err := runner.Config(runner.Spec{Profile: *profile, Workload: tr, PlacementSeed: 101, Steps: n})
	if err != nil {
		return usageError(err)
	}
	app, err := ops.AppByName(*profile)
	if err != nil {
		return usageError(err)
	}
	probe, err := live.NewStepController(len(sc.App.Tasks), *high, *low, at)
	if err != nil {
		return usageError(err)
	}
	var names []string
	for _, s := range app.Operators {
		names = append(names, s.Name)
	}
	cal := live.NewCalibration(names)
	cal.IntervalS = scale.Seconds()
	cfg := live.Config{Scenario: sc, App: app, Trace: tr, Step: *scale, Intervals: n, Seed: *seed, CPUScale: *cpuScale,
		Controller: probe, Name: fmt.Sprintf("step:%g→%g@%d", *high, *low, at), WorkerArgs: []string{"live-worker"}, Tap: cal.Tap(2, at)}
	res, _, err := live.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("eval: calibrate: %w", err)
	}
	lowMC := max(1, int(*low**cpuScale+0.5))
	c := Calibration{Profile: *profile, Rate: *rate, TimeScaleS: scale.Seconds(), Intervals: n, CPUScale: *cpuScale, HighMC: *high, LowMC: *low,
		Seed: *seed, Operators: cal.Costs(), ActuationIntervals: cal.ActuationIntervals(at, lowMC), Commit: o.Commit, GoVersion: o.GoVersion}
	if c.ActuationIntervals >= 0 {
		c.ActuationMaxMS = float64(c.ActuationIntervals+1) * scale.Seconds() * 1000
	}
	for i, iv := range res.Intervals {
		if i < at {
			c.P95HighMS += iv.P95MS / float64(at)
		} else {
			c.P95LowMS += iv.P95MS / float64(len(res.Intervals)-at)
		}
	}
	for _, r := range hopRates {
		pt, err := probeHops(ctx, *profile, r, *scale, n, *seed, *cpuScale, *high, app, names)
		if err != nil {
			return fmt.Errorf("eval: calibrate: -hop-rates %g: %w", r, err)
		}
		c.HopCurve = append(c.HopCurve, pt)
	}
	slices.SortFunc(c.HopCurve, func(a, b HopRatePoint) int { return cmp.Compare(a.Rate, b.Rate) })
	if *costDur > 0 {
		cp, err := live.ProbeCosts(ctx, costProbe)
		if err != nil {
			return fmt.Errorf("eval: calibrate: %w", err)
		}
		c.CostProbe = &cp
	}
	svc, err := live.ServiceTimes(app, *seed, *svcInputs)
	if err != nil {
		return fmt.Errorf("eval: calibrate: %w", err)
	}
	c.ServiceTimes, c.ServiceInputs = svc, *svcInputs
	c.ServiceCV, c.CapacityJitter = serviceCV(svc, c.Operators)
	var off []float64
	for i := 2; i < at && i < len(res.Intervals); i++ {
		off = append(off, res.Intervals[i].Offered)
	}
	c.OfferedCV = cvOf(off)
	c.ReportedMillicores = cal.Reported
	for _, iv := range res.Intervals {
		c.OfferedPerS = append(c.OfferedPerS, iv.Offered)
	}
	actAt := at + max(c.ActuationIntervals, 0) + 1
	// The bottleneck at equal allocations: the costliest operator.
	for o, oc := range c.Operators {
		if oc.CPUUSPerEvent > c.Operators[c.EnforcementOp].CPUUSPerEvent {
			c.EnforcementOp = o
		}
	}
	c.Enforcement, c.EnforcementIntervals = cal.Enforcement(c.EnforcementOp, actAt, n)
	for o, oc := range c.Operators {
		us, q, k := cal.PhaseCost(o, actAt, n)
		c.LowPhase = append(c.LowPhase, PhaseCost{Operator: oc.Operator, CPUUSPerEvent: us, QuotaUsed: q, Intervals: k})
	}
	c.CFSPeriodMS = float64(cfs.DefaultPeriod) / float64(time.Millisecond)
	if u := hostLoad(); u != "" {
		uptime = append(uptime, "after: "+u)
	}
	c.Uptime = uptime
	return writeCalibration(ctx, &c, sc, app, *out, *asJSON, o)
}

// probeHops measures the operators' delays at the constant input rate
// with every task at high scenario millicores for n intervals (the first
// two left out, as the main probe's warm-up): one point of the hop curve.
func probeHops(ctx context.Context, profile string, rate float64, scale time.Duration, n int, seed uint64, cpuScale, high float64, app ops.App, names []string) (HopRatePoint, error) {
	tr := &traces.Trace{Name: "constant", Source: "synthetic", Counts: []float64{rate}, Scale: 1}
	sc, err := runner.Config(runner.Spec{Profile: profile, Workload: tr, PlacementSeed: 101, Steps: n})
	if err != nil {
		return HopRatePoint{}, err
	}
	probe, err := live.NewStepController(len(sc.App.Tasks), high, high, n)
	if err != nil {
		return HopRatePoint{}, err
	}
	cal := live.NewCalibration(names)
	cal.IntervalS = scale.Seconds()
	cfg := live.Config{Scenario: sc, App: app, Trace: tr, Step: scale, Intervals: n, Seed: seed, CPUScale: cpuScale,
		Controller: probe, Name: fmt.Sprintf("static:%g@%g/s", high, rate), WorkerArgs: []string{"live-worker"}, Tap: cal.Tap(2, n)}
	res, _, err := live.Run(ctx, cfg)
	if err != nil {
		return HopRatePoint{}, err
	}
	pt := HopRatePoint{Rate: rate, Intervals: max(n-2, 0), Operators: cal.Costs()}
	for i := 2; i < len(res.Intervals); i++ {
		pt.P95MS += res.Intervals[i].P95MS / float64(len(res.Intervals)-2)
	}
	return pt, nil
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

// calibrateCosts is `eval calibrate` of a CLASP application: the
// cost-model probe (live.ProbeCosts, the runtime's chain application and
// the budget application) and the application's per-execution times in
// process; calibration.json and calibration.md, no scenario (the
// simulator's vertical scenarios are pred's and etl's).
func calibrateCosts(ctx context.Context, profile string, p live.CostProbe, seed uint64, svcInputs int, out string, asJSON bool, uptime []string, o Options) error {
	app, err := ops.AppByName(profile)
	if err != nil {
		return usageError(err)
	}
	cp, err := live.ProbeCosts(ctx, p)
	if err != nil {
		return fmt.Errorf("eval: calibrate: %w", err)
	}
	svc, err := live.ServiceTimes(app, seed, svcInputs)
	if err != nil {
		return fmt.Errorf("eval: calibrate: %w", err)
	}
	if u := hostLoad(); u != "" {
		uptime = append(uptime, "after: "+u)
	}
	c := Calibration{Profile: profile, Rate: p.Rate, TimeScaleS: p.Report.Seconds(), Seed: seed, CostProbe: &cp, ServiceTimes: svc, ServiceInputs: svcInputs,
		Uptime: uptime, Commit: o.Commit, GoVersion: o.GoVersion}
	c.ServiceCV, _ = serviceCV(svc, nil)
	c.Methods = map[string]string{
		"cost_model": costProbeMethod(cp),
		"service_cv": fmt.Sprintf("every operator's Process timed in this process over %d inputs of the application's source (live.ServiceTimes, outliers above %d× the median dropped), CVs weighted by work", svcInputs, live.OutlierFactor),
	}
	b, err := report.MarshalJSON(c)
	if err != nil {
		return err
	}
	md := costMarkdown(c)
	return writeOutputs(o, out, asJSON, b, md, outFile{"calibration.json", b}, outFile{"calibration.md", md})
}

// costProbeMethod says how the cost-model probe measured each term.
func costProbeMethod(cp live.CostProbeResult) string {
	quota := fmt.Sprintf("%d mc", cp.TaskMillicores)
	if cp.WorkerBudget > 0 {
		quota += fmt.Sprintf(" and every worker's tasks sharing a budget of %d mc", cp.WorkerBudget)
		if cp.BudgetProcess {
			quota = fmt.Sprintf("%d mc and every worker process under the kernel's CFS quota of %d mc (transport, decoding and dispatch included)", cp.TaskMillicores, cp.WorkerBudget)
		}
	}
	return fmt.Sprintf("microbenchmarks (live.ProbeCosts, CLASP §4.1): the runtime's chain application (ten no-op operators) at %g inputs/s with every task at %s, "+
		"%g s of load per run (report interval %g s); each worker process's CPU time per second from its process CPU clock over the load (its start to the last report within it), less the layout's executions times the chain operators' execution time in process (%d inputs); the request rates are the layout's at the input rate (keys stay with an input along the chain). "+
		"Every chain run has a reference worker owning nothing, whose CPU r (a worker idling on the host at that moment) is subtracted. "+
		"α: layouts cutting the chain once at K = 1, 3, 5, 7, 9 (two workers), per run the downstream worker's CPU − exec less the upstream one's against the difference of their local request rates (slope α). "+
		"β: those and layouts cutting 3, 5 and 9 of the nine edges, both workers' Σ (CPU − exec − r − γ̂·δ) against Σ R^r (slope β − α; β includes the receiver's decoding, charged to the sender as Eq. 1 does). "+
		"γ: the first half on one worker sending to the second half spread over 1, 2, 3 workers at %g and %g inputs/s, the sender's CPU − exec − r against δ, one intercept per rate (slope γ, µs per destination per second). "+
		"W: %s on one worker at %g inputs/s, the mean over its saturated intervals ((Q_w + Q_p)/Σ N > %g s) of Σ N·τ̄ + α̂·R^l + β̂·R^r + γ̂·δ. "+
		"A term is refused when its line is not identified, its estimate is negative or R² < %g%s; the model is written only when every term is accepted",
		cp.Rate, quota, cp.LoadS, cp.ReportS, cp.ChainInputs, cp.Rate/2, cp.Rate, cp.BudgetApp, cp.BudgetRate, live.CostSaturationS, cp.MinR2, zeroNote(cp.ZeroUnresolved))
}

func zeroNote(on bool) string {
	if on {
		return " (with -cost-zero-unresolved such a term whose 95% CI includes 0 is written as 0)"
	}
	return ""
}

// costProbeMarkdown is the cost-model probe's section of calibration.md.
func costProbeMarkdown(b *strings.Builder, cp live.CostProbeResult) {
	fmt.Fprintf(b, "\nCost model (CLASP Eq. 1) by microbenchmarks (live.ProbeCosts, %.1f s):\n\n| term | value | 95%% CI ± | unit | fit: slope, R², points (groups) | accepted |\n|---|---:|---:|---|---|---|\n", cp.WallS)
	for _, t := range cp.Terms {
		fit := fmt.Sprintf("mean of %d saturated intervals", t.Samples)
		if t.Fit != nil {
			fit = fmt.Sprintf("%.4g, %.3f, %d (%d)", t.Fit.Slope, t.Fit.R2, t.Fit.N, t.Fit.Groups)
		}
		acc := "yes"
		switch {
		case !t.Accepted:
			acc = "no: " + t.Reason
		case t.Reason != "":
			acc = "yes, " + t.Reason
		}
		fmt.Fprintf(b, "| %s | %.4g | %.3g | %s | %s | %s |\n", t.Name, t.Value, t.CI95, t.Unit, fit, acc)
	}
	if m := cp.Model; m != nil {
		fmt.Fprintf(b, "\nWritten: α %.4g µs, β %.4g µs, γ %.4g µs, W %.4g µs/s (the paper's: 38.5, 275, 51,500, 850,000).\n", m.AlphaUS, m.BetaUS, m.GammaUS, m.BudgetUSPerS)
	} else {
		fmt.Fprintf(b, "\nNo cost model written: %s\n", cp.Refused)
	}
	b.WriteString("\n| run | rate /s | worker | CPU µs/s | window s | exec µs/s | R^l /s | R^r /s | δ | completed /s | saturated |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range cp.Points {
		w := strconv.Itoa(p.Worker)
		if p.Reference {
			w += " (reference)"
		}
		fmt.Fprintf(b, "| %s | %g | %s | %.0f | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f | %d/%d |\n", p.Layout, p.Rate, w, p.CPUUS, p.WindowS, p.ExecUS, p.LocalRate, p.RemoteRate, p.Dests, p.Throughput, p.Saturated, p.Intervals)
	}
}

// costMarkdown is calibration.md of a CLASP application.
func costMarkdown(c Calibration) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Cost-model calibration for %s\n", c.Profile)
	if c.CostProbe != nil {
		costProbeMarkdown(&b, *c.CostProbe)
	}
	fmt.Fprintf(&b, "\nPer-execution CPU time of %s in process (%d inputs):\n\n| operator | executions | mean µs | CV | p50 µs | p99 µs |\n|---|---:|---:|---:|---:|---:|\n", c.Profile, c.ServiceInputs)
	for _, d := range c.ServiceTimes {
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.2f | %.3f | %.3f |\n", d.Operator, d.N, d.MeanUS, d.CV, d.P50US, d.P99US)
	}
	for _, u := range c.Uptime {
		fmt.Fprintf(&b, "\nuptime %s", u)
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// writeCalibration derives the hops and the methods of c from its
// measurements and writes scenario.json, calibration.json and
// calibration.md to out (and one of the last two to stdout).
func writeCalibration(ctx context.Context, c *Calibration, sc env.Config, app ops.App, out string, asJSON bool, o Options) error {
	c.HopMS = 0
	for _, oc := range c.Operators {
		c.HopMS += oc.DelayMS / float64(len(c.Operators))
	}
	var taskNames []string
	for _, t := range sc.App.Tasks {
		taskNames = append(taskNames, t.Name)
	}
	var err error
	if c.HopsAfter, err = live.HopsAfter(app, c.Operators, taskNames); err != nil {
		return fmt.Errorf("eval: calibrate: %w", err)
	}
	for i := range c.HopCurve {
		if c.HopCurve[i].HopsAfter, err = live.HopsAfter(app, c.HopCurve[i].Operators, taskNames); err != nil {
			return fmt.Errorf("eval: calibrate: hop curve at %g inputs/s: %w", c.HopCurve[i].Rate, err)
		}
	}
	c.HopSpread, c.HopSpreadFit, c.HopSpreadNote = 0, nil, ""
	for i := range c.HopCurve {
		c.HopCurve[i].HopSpread, c.HopCurve[i].HopSpreadFit, c.HopCurve[i].HopSpreadNote = 0, nil, ""
	}
	c.Methods = calibrationMethods(*c)
	scen, err := calibratedScenario(*c, sc)
	if err != nil {
		return fmt.Errorf("eval: calibrate: %w", err)
	}
	// Every spread is fitted in the scenario without spreads, each at its
	// own rate, where the curve's hops are that rate's measured ones.
	if c.HopSpread, c.HopSpreadFit, c.HopSpreadNote, err = fitHopSpread(ctx, *c, scen, c.Rate, c.P95HighMS, 0, c.Intervals/2); err != nil {
		return fmt.Errorf("eval: calibrate: %w", err)
	}
	for i := range c.HopCurve {
		pt := &c.HopCurve[i]
		if pt.HopSpread, pt.HopSpreadFit, pt.HopSpreadNote, err = fitHopSpread(ctx, *c, scen, pt.Rate, pt.P95MS, 2, c.Intervals); err != nil {
			return fmt.Errorf("eval: calibrate: hop curve at %g inputs/s: %w", pt.Rate, err)
		}
	}
	c.Methods = calibrationMethods(*c)
	if scen, err = calibratedScenario(*c, sc); err != nil {
		return fmt.Errorf("eval: calibrate: %w", err)
	}
	sb, err := scen.MarshalFile()
	if err != nil {
		return fmt.Errorf("eval: calibrate: %w", err)
	}
	b, err := report.MarshalJSON(c)
	if err != nil {
		return err
	}
	md := calibrationMarkdown(*c)
	return writeOutputs(o, out, asJSON, b, md, outFile{"scenario.json", sb}, outFile{"calibration.json", b}, outFile{"calibration.md", md})
}

// outFile is one file a calibration writes.
type outFile struct {
	name string
	data []byte
}

// writeOutputs writes files into out (created if missing) and prints
// js (-json) or md on stdout.
func writeOutputs(o Options, out string, asJSON bool, js, md []byte, files ...outFile) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(out, f.name), f.data, 0o644); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	var err error
	if asJSON {
		_, err = o.Stdout.Write(js)
	} else {
		_, err = o.Stdout.Write(md)
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
	c, err := parseCalibration(data)
	if err != nil {
		return usagef("eval: -from %s: %v", path, err)
	}
	sc, err := runner.Config(runner.Spec{Profile: c.Profile, Workload: &traces.Trace{Name: "constant", Source: "synthetic", Counts: []float64{c.Rate}, Scale: 1},
		PlacementSeed: 101, Steps: c.Intervals})
	if err != nil {
		return usagef("eval: -from %s: %v", path, err)
	}
	app, err := ops.AppByName(c.Profile)
	if err != nil {
		return usagef("eval: -from %s: %v", path, err)
	}
	c.Rederived = fmt.Sprintf("from %s (probe commit %s) by commit %s", path, c.Commit, o.Commit)
	return writeCalibration(ctx, &c, sc, app, out, asJSON, o)
}

// parseCalibration decodes a calibration.json strictly (unknown fields
// and trailing data refused) and checks what writeCalibration relies on:
// the operators are the profile application's, in order, every measured
// number finite and in range, one service-time entry per operator.
func parseCalibration(data []byte) (Calibration, error) {
	var c Calibration
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Calibration{}, fmt.Errorf("calibration.json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Calibration{}, errors.New("calibration.json: data after the JSON value")
	}
	if !slices.Contains(env.Profiles(), c.Profile) {
		return Calibration{}, fmt.Errorf("calibration.json: profile %q, want %s", c.Profile, strings.Join(env.Profiles(), " or "))
	}
	app, err := ops.AppByName(c.Profile)
	if err != nil {
		return Calibration{}, err
	}
	fin := func(x, lo, hi float64) bool { return x >= lo && x <= hi }
	switch {
	case !fin(c.Rate, 1e-9, 1e6) || !fin(c.TimeScaleS, 1e-3, 3600) || !fin(c.CPUScale, 1e-9, 1000):
		return Calibration{}, fmt.Errorf("calibration.json: rate %v, time_scale_s %v, cpu_scale %v out of range", c.Rate, c.TimeScaleS, c.CPUScale)
	case !fin(c.HighMC, 500, 10000) || !fin(c.LowMC, 500, 10000) || !fin(c.P95HighMS, 0, 1e7) || !fin(c.P95LowMS, 0, 1e7):
		return Calibration{}, fmt.Errorf("calibration.json: high_millicores %v, low_millicores %v (want 500..10000), p95_high_ms %v or p95_low_ms %v out of range", c.HighMC, c.LowMC, c.P95HighMS, c.P95LowMS)
	case c.Intervals < 8 || c.Intervals > 1e6:
		return Calibration{}, fmt.Errorf("calibration.json: intervals %d, want 8..1e6", c.Intervals)
	case c.ActuationIntervals < -1 || c.ActuationIntervals >= c.Intervals:
		return Calibration{}, fmt.Errorf("calibration.json: actuation_intervals %d, want -1..%d", c.ActuationIntervals, c.Intervals-1)
	case !fin(c.ServiceCV, 0, 1e3) || !fin(c.CapacityJitter, 0, 1e3) || !fin(c.CFSPeriodMS, 0, 1000) || !fin(c.Enforcement, 0, 1e3):
		return Calibration{}, fmt.Errorf("calibration.json: service_cv %v, capacity_jitter %v, cfs_period_ms %v or enforcement %v out of range", c.ServiceCV, c.CapacityJitter, c.CFSPeriodMS, c.Enforcement)
	case len(c.Operators) != len(app.Operators) || len(c.ServiceTimes) != len(app.Operators):
		return Calibration{}, fmt.Errorf("calibration.json: %d operators and %d service times, want %d (the operators of %s)", len(c.Operators), len(c.ServiceTimes), len(app.Operators), c.Profile)
	case c.EnforcementOp < 0 || c.EnforcementOp >= len(app.Operators):
		return Calibration{}, fmt.Errorf("calibration.json: enforcement_op %d, want 0..%d", c.EnforcementOp, len(app.Operators)-1)
	}
	for i, oc := range c.Operators {
		if oc.Operator != app.Operators[i].Name || c.ServiceTimes[i].Operator != oc.Operator {
			return Calibration{}, fmt.Errorf("calibration.json: operators[%d] %q (service times %q), want %q", i, oc.Operator, c.ServiceTimes[i].Operator, app.Operators[i].Name)
		}
		if !fin(oc.CPUUSPerEvent, 0, 1e6) || !fin(oc.CV, 0, 1e3) || !fin(oc.DelayMS, 0, 1e7) || !fin(oc.ExecsPerInterval, 0, 1e12) || oc.Intervals < 0 {
			return Calibration{}, fmt.Errorf("calibration.json: operator %s: a value out of range (%+v)", oc.Operator, oc)
		}
		if e := oc.EmptyShare; e != nil && !fin(*e, 0, 1) {
			return Calibration{}, fmt.Errorf("calibration.json: operator %s: empty_share %v, want a share in [0, 1]", oc.Operator, *e)
		}
		if s := c.ServiceTimes[i]; !fin(s.MeanUS, 0, 1e9) || !fin(s.CV, 0, 1e3) || s.N < 0 {
			return Calibration{}, fmt.Errorf("calibration.json: service time of %s: a value out of range (%+v)", oc.Operator, s)
		}
	}
	if len(c.LowPhase) != 0 && len(c.LowPhase) != len(app.Operators) {
		return Calibration{}, fmt.Errorf("calibration.json: %d low_phase rows, want 0 or %d (the operators of %s)", len(c.LowPhase), len(app.Operators), c.Profile)
	}
	for i, lc := range c.LowPhase {
		if lc.Operator != app.Operators[i].Name || !fin(lc.CPUUSPerEvent, 0, 1e6) || !fin(lc.QuotaUsed, 0, 1e3) || lc.Intervals < 0 {
			return Calibration{}, fmt.Errorf("calibration.json: low_phase[%d]: want operator %q and values in range, got %+v", i, app.Operators[i].Name, lc)
		}
	}
	for i, pt := range c.HopCurve {
		if !fin(pt.Rate, 1e-9, 1e6) || pt.Rate == c.Rate || (i > 0 && !(pt.Rate > c.HopCurve[i-1].Rate)) || !fin(pt.P95MS, 0, 1e7) || pt.Intervals < 0 {
			return Calibration{}, fmt.Errorf("calibration.json: hop_curve[%d]: rate %v (want (0, 1e6], increasing, not the main rate %v), p95_ms %v, intervals %d", i, pt.Rate, c.Rate, pt.P95MS, pt.Intervals)
		}
		if len(pt.Operators) != len(app.Operators) {
			return Calibration{}, fmt.Errorf("calibration.json: hop_curve[%d]: %d operators, want %d (the operators of %s)", i, len(pt.Operators), len(app.Operators), c.Profile)
		}
		for j, oc := range pt.Operators {
			if oc.Operator != app.Operators[j].Name || !fin(oc.DelayMS, 0, 1e7) || !fin(oc.ExecsPerInterval, 0, 1e12) || !fin(oc.CPUUSPerEvent, 0, 1e6) || !fin(oc.CV, 0, 1e3) || oc.Intervals < 0 {
				return Calibration{}, fmt.Errorf("calibration.json: hop_curve[%d] operators[%d]: want operator %q and values in range, got %+v", i, j, app.Operators[j].Name, oc)
			}
			if e := oc.EmptyShare; e != nil && !fin(*e, 0, 1) {
				return Calibration{}, fmt.Errorf("calibration.json: hop_curve[%d] operators[%d] (%s): empty_share %v, want a share in [0, 1]", i, j, oc.Operator, *e)
			}
		}
	}
	if cp := c.CostProbe; cp != nil && cp.Model != nil {
		if err := cp.Model.Check(); err != nil {
			return Calibration{}, fmt.Errorf("calibration.json: cost_probe.model: %w", err)
		}
	}
	if ce := c.CostModel; ce != nil && len(ce.Samples) != len(ce.Mixes) {
		return Calibration{}, fmt.Errorf("calibration.json: cost model with %d sample counts for %d mixes", len(ce.Samples), len(ce.Mixes))
	}
	return c, nil
}

func calibrationMarkdown(c Calibration) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Live calibration: %s at %g inputs/s\n\n", c.Profile, c.Rate)
	fmt.Fprintf(&b, "%d intervals of %.3g s; every task at %g scenario mc (cpu scale %g) until interval %d, then %g mc. Costs and delays from intervals 2..%d (the high phase).\n\n",
		c.Intervals, c.TimeScaleS, c.HighMC, c.CPUScale, c.Intervals/2, c.LowMC, c.Intervals/2-1)
	b.WriteString("| operator | CPU µs per event | CV (between intervals) | delay ms (enqueue → done) | intervals | hop after it ms (simulator) | hop from |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, oc := range c.Operators {
		hop, from := "–", ""
		for _, h := range c.HopsAfter {
			if h.Task == oc.Operator {
				hop, from = fmt.Sprintf("%.2f", h.MS), strings.Join(h.From, " + ")
			}
		}
		fmt.Fprintf(&b, "| %s | %.3f | %.2f | %.2f | %d | %s | %s |\n", oc.Operator, oc.CPUUSPerEvent, oc.CV, oc.DelayMS, oc.Intervals, hop, from)
	}
	if len(c.LowPhase) > 0 {
		fmt.Fprintf(&b, "\nAt %g mc (the low phase, from the interval after the actuation):\n\n| operator | CPU µs per event | share of the quota used | intervals |\n|---|---:|---:|---:|\n", c.LowMC)
		for _, lc := range c.LowPhase {
			fmt.Fprintf(&b, "| %s | %.3f | %.2f | %d |\n", lc.Operator, lc.CPUUSPerEvent, lc.QuotaUsed, lc.Intervals)
		}
	}
	fmt.Fprintf(&b, "\nActuation: the workers reported the new quota %d interval(s) after the decision (≤ %.0f ms). Mean p95: %.1f ms at %g mc, %.1f ms at %g mc.\n",
		c.ActuationIntervals, c.ActuationMaxMS, c.P95HighMS, c.HighMC, c.P95LowMS, c.LowMC)
	if len(c.ServiceTimes) > 0 {
		fmt.Fprintf(&b, "\nPer-execution CPU time in process (%d inputs):\n\n| operator | executions | mean µs | CV | p50 µs | p99 µs | outliers (> %d× median) |\n|---|---:|---:|---:|---:|---:|---:|\n", c.ServiceInputs, live.OutlierFactor)
		for _, d := range c.ServiceTimes {
			fmt.Fprintf(&b, "| %s | %d | %.3f | %.2f | %.3f | %.3f | %d |\n", d.Operator, d.N, d.MeanUS, d.CV, d.P50US, d.P99US, d.Outliers)
		}
		fmt.Fprintf(&b, "\nService CV (work-weighted) %.2f; capacity jitter %.3f; offered-rate CV between intervals %.4f; quota enforcement (used/allotted, low phase, %d intervals) %.2f; mean per-hop delay %.2f ms; CFS period %g ms.\n",
			c.ServiceCV, c.CapacityJitter, c.OfferedCV, c.EnforcementIntervals, c.Enforcement, c.HopMS, c.CFSPeriodMS)
	}
	if len(c.HopSpreadFit) > 0 {
		fmt.Fprintf(&b, "\nHops end to end (no simulated propagation on top); hop spread %.2f, fitted to the high phase's mean p95 %.1f ms (%s):\n\n| hop_spread | simulated p95 ms |\n|---:|---:|\n",
			c.HopSpread, c.P95HighMS, c.HopSpreadNote)
		for _, p := range c.HopSpreadFit {
			fmt.Fprintf(&b, "| %.2f | %.1f |\n", p.Spread, p.P95MS)
		}
	}
	if ce := c.CostModel; ce != nil {
		fmt.Fprintf(&b, "\nCost model (CLASP Eq. 1, clasp.Estimator over %v saturated samples per mix): α %.3g µs, β %.3g µs, γ %.4g µs, W %.4g µs/s, W̄ %.4g µs/s.\n\n| mix | samples | R^l /s | R^r /s | δ | Σ N·τ̄ µs/s |\n|---|---:|---:|---:|---:|---:|\n",
			ce.Samples, ce.Model.Alpha, ce.Model.Beta, ce.Model.Gamma, ce.Model.Budget, ce.Smoothed)
		for i, m := range ce.Mixes {
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.2f | %.0f |\n", m.Name, ce.Samples[i], m.LocalRate, m.RemoteRate, m.RemoteDests, m.ExecWorkUS)
		}
	}
	if len(c.HopCurve) > 0 {
		hopCurveMarkdown(&b, c)
	}
	if c.CostProbe != nil {
		costProbeMarkdown(&b, *c.CostProbe)
	}
	for _, u := range c.Uptime {
		fmt.Fprintf(&b, "\nuptime %s", u)
	}
	if c.Rederived != "" {
		fmt.Fprintf(&b, "\n\nDerived values recomputed %s.", c.Rederived)
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// hopCurveMarkdown writes the operators' delays at every probed rate
// (the scenario's hop_curve).
func hopCurveMarkdown(b *strings.Builder, c Calibration) {
	cols := c.hopPoints()
	fmt.Fprintf(b, "\nDelay enqueue → execution finished by input rate, ms (every task at %g mc; the scenario's hop_curve):\n\n| operator |", c.HighMC)
	for _, k := range cols {
		fmt.Fprintf(b, " %g/s |", k.Rate)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(cols)) + "\n")
	for o, oc := range c.Operators {
		fmt.Fprintf(b, "| %s |", oc.Operator)
		for _, k := range cols {
			fmt.Fprintf(b, " %.2f |", k.Operators[o].DelayMS)
		}
		b.WriteString("\n")
	}
	b.WriteString("| mean p95 |")
	for _, k := range cols {
		fmt.Fprintf(b, " %.1f |", k.P95MS)
	}
	b.WriteString("\n| hop spread (fitted to the p95) |")
	for _, k := range cols {
		fmt.Fprintf(b, " %.2f |", k.HopSpread)
	}
	b.WriteString("\n")
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

// serviceCV returns the work-weighted per-execution CV of the operators
// and the capacity jitter (Calibration.ServiceCV, CapacityJitter): the
// in-process distribution svc gives the per-event CV, the workers'
// per-interval costs costs the interval-to-interval CV.
func serviceCV(svc []live.ServiceDist, costs []live.OperatorCost) (cv, jitter float64) {
	var w, wj float64
	for o, d := range svc {
		work := float64(d.N) * d.MeanUS
		cv += work * d.CV
		w += work
		if o < len(costs) && costs[o].Intervals > 0 && costs[o].CPUUSPerEvent > 0 {
			oc := costs[o]
			perIv := oc.ExecsPerInterval
			v := oc.CV * oc.CV
			if perIv > 0 {
				v -= d.CV * d.CV / perIv
			}
			jitter += work * math.Sqrt(max(0, v))
			wj += work
		}
	}
	if w > 0 {
		cv /= w
	}
	if wj > 0 {
		jitter /= wj
	}
	return cv, jitter
}

// cvOf is the sample coefficient of variation of xs (0 for fewer than two
// or a zero mean).
func cvOf(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m, ss := 0.0, 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	if m == 0 {
		return 0
	}
	return math.Sqrt(ss/float64(len(xs)-1)) / m
}

// calibrationMethods says how each quantity of c was measured.
func calibrationMethods(c Calibration) map[string]string {
	half := c.Intervals / 2
	m := calibrationMethodsVertical(c, half)
	switch {
	case c.CostProbe != nil:
		m["cost_model"] = costProbeMethod(*c.CostProbe)
	case c.CostModel != nil:
		m["cost_model"] = "three live runs (1 worker; 2 workers even; 2 workers, operators split in halves) at the calibration rate with every task at -cost-millicores live mc; every control interval each worker whose queue exceeds 0.5 s of its execution rate is one sample of CLASP Eq. 1 for clasp.Estimator (RLS from the paper's start, pooled); W̄ is its EWMA (the earlier probe)"
	}
	return m
}

func calibrationMethodsVertical(c Calibration, half int) map[string]string {
	return map[string]string{
		"cpu_us_per_event":      fmt.Sprintf("workers' reports, Σ CPU / Σ executions per operator over intervals 2..%d at %g scenario mc per task (cpu scale %g), constant %g inputs/s", half-1, c.HighMC, c.CPUScale, c.Rate),
		"service_cv":            fmt.Sprintf("every operator's Process timed in this process over %d inputs of the profile's source (live.ServiceTimes, outliers above %d× the median dropped), CVs weighted by work", c.ServiceInputs, live.OutlierFactor),
		"capacity_jitter":       "interval-to-interval CV of each operator's CPU per event (workers' reports, high phase) less the per-event CV's share CV_event²/executions per interval, work-weighted: the host's co-located load",
		"arrivals":              fmt.Sprintf("the planner's open-loop generator spaces inputs at k/rate (planner.generate); measured: the offered rate per control window has CV %.4f at the constant rate (the windows' own jitter on the loaded host included)", c.OfferedCV),
		"cfs_period_ms":         fmt.Sprintf("the workers enforce allocations with cfs.Quota at cfs.DefaultPeriod (%g ms); measured Σ used / Σ allotted of the bottleneck %s over %d intervals at %g mc: %.2f", c.CFSPeriodMS, c.Operators[c.EnforcementOp].Operator, c.EnforcementIntervals, c.LowMC, c.Enforcement),
		"cfs_threads":           "a task runs on at most one executor slot at a time (serve/runtime/worker): one thread",
		"low_phase":             fmt.Sprintf("workers' reports, Σ CPU / Σ executions and Σ CPU / Σ allotted per operator from the interval after the actuation to the end, at %g scenario mc: what an event costs when the quota binds, beside cpu_us_per_event at %g; the scenario's demand stays cpu_us_per_event", c.LowMC, c.HighMC),
		"actuation_delay_steps": fmt.Sprintf("step of every task from %g to %g mc at interval %d; the workers reported the new quota %d interval(s) later", c.HighMC, c.LowMC, half, c.ActuationIntervals),
		"metric_noise":          "the live observation is built from the workers' exact counters (eval/live), so no measurement noise is added",
		"hop_ms":                fmt.Sprintf("mean over operators of the workers' mean delay enqueue → execution finished, high phase: %.2f ms (the workers' 20 ms batching timer dominates), written as physics hop_ms (the mean latency after every forwarding task, spread by hop_spread; at the generous allocation queueing adds almost nothing, so the mean is the dispatch latency); hop_ms_by_task overrides it for every task it lists", c.HopMS),
		"hop_ms_by_task":        "per forwarding task (live.HopsAfter): the workers' mean delay enqueue → execution finished at its successors that are tasks of the profile, high phase, weighted by their executions (the batching wait is paid at the receiving queue: 64 records or 20 ms); the single source also carries its own input wait and the delay of every operator the profile lacks (etl's Sink), which the simulator has no other place for, so each path's hops sum to the live delays along it",
		"demand":                fmt.Sprintf("cpu_us_per_event per task with the cpu scale %g; env.ScenarioDemand maps it to MI per event on the placed server", c.CPUScale),
		"hops_end_to_end":       "the hops are the workers' delays measured end to end on the probe's deployment (one worker process: no network between tasks), so they hold every delay between two tasks and the simulated network's propagation is not added on top",
		"hop_spread":            hopSpreadMethod(c),
	}
}

// hopSpreadMethod says how c's hop_spread was obtained.
func hopSpreadMethod(c Calibration) string {
	var pts []string
	for _, p := range c.HopSpreadFit {
		pts = append(pts, fmt.Sprintf("%.2f → %.1f ms", p.Spread, p.P95MS))
	}
	return fmt.Sprintf("fitted: the probe simulated (this scenario, every task at %g mc, constant %g inputs/s, placement 101, seed %d) at hop_spread 0, 0.05, …, 1; the spread whose mean interval p95 over the high phase is nearest the live %.1f ms (%s); %s",
		c.HighMC, c.Rate, c.Seed, c.P95HighMS, strings.Join(pts, ", "), c.HopSpreadNote)
}

// hopSpreadGrid is the number of steps of fitHopSpread's grid over [0, 1]
// (the uniform spreads); the grid goes on to 2 (Physics.HopSpread's
// exponential mixtures) at the same step.
const hopSpreadGrid = 20

// fitHopSpread fits the scenario's hop_spread to the probe: it simulates
// the probe's high phase (every task at c.HighMC, the constant c.Rate,
// placement 101, seed c.Seed, the probe's intervals) in scen with
// hop_spread on a grid over [0, 1] and returns the spread whose mean
// interval p95 over the first c.Intervals/2 intervals is nearest the live
// one (c.P95HighMS, the same mean over the same intervals), the grid's
// points and a note. Without hops, or without a live p95, the spread is 0.
// The simulated p95 grows with the spread (the hops' upper quantiles),
// so the nearest point is the crossing when the live p95 is in range.
func fitHopSpread(ctx context.Context, c Calibration, scen env.Scenario, rate, target float64, from, to int) (float64, []HopSpreadPoint, string, error) {
	p := scen.Physics
	if !(p.HopMS > 0) && p.HopMSByTask.Len() == 0 && p.HopCurve.Len() == 0 {
		return 0, nil, "no hops measured: no spread", nil
	}
	if !(target > 0) {
		return 0, nil, "no live p95 in the high phase: no spread", nil
	}
	if from < 0 || to > c.Intervals || from >= to {
		return 0, nil, "", fmt.Errorf("spread fit over intervals [%d, %d) of %d", from, to, c.Intervals)
	}
	sp, err := controllers.New(controllers.Options{}).Parse(fmt.Sprintf("static:%g", c.HighMC))
	if err != nil {
		return 0, nil, "", err
	}
	tr := &traces.Trace{Name: "constant", Source: "synthetic", Counts: []float64{rate}, Scale: 1}
	var pts []HopSpreadPoint
	best := -1
	for i := 0; i <= 2*hopSpreadGrid; i++ {
		p.HopSpread = float64(i) / hopSpreadGrid
		res, err := runner.Run(ctx, runner.Spec{Profile: c.Profile, TraceName: "constant", Workload: tr, PlacementSeed: 101, Seed: c.Seed,
			Steps: c.Intervals, Controller: sp, Physics: p, Demand: scen.Demand})
		if err != nil {
			return 0, nil, "", err
		}
		m := 0.0
		for _, iv := range res.Intervals[from:to] {
			m += iv.P95MS / float64(to-from)
		}
		pts = append(pts, HopSpreadPoint{Spread: p.HopSpread, P95MS: round3(m)})
		if best < 0 || math.Abs(m-target) < math.Abs(pts[best].P95MS-target) {
			best = len(pts) - 1
		}
	}
	note := "in range"
	switch {
	case target < pts[0].P95MS:
		note = "live p95 below the fixed hops' (spread 0): at the bound"
	case target > pts[len(pts)-1].P95MS:
		note = "live p95 above the exponential hops' (spread 2): at the bound, the live waits are heavier-tailed than exponential"
	}
	return pts[best].Spread, pts, note, nil
}

// calibratedScenario builds the scenario file of c: the realistic preset
// with every measured physics option replaced, and the measured demands.
// sc is the probe's scenario (its task names).
func calibratedScenario(c Calibration, sc env.Config) (env.Scenario, error) {
	p, err := env.ScenarioPhysics(env.ScenarioRealistic)
	if err != nil {
		return env.Scenario{}, err
	}
	m := c.Methods
	notes := map[string]string{
		"service_cv": m["service_cv"], "capacity_jitter": m["capacity_jitter"], "cfs_period_ms": m["cfs_period_ms"],
		"cfs_threads": m["cfs_threads"], "metric_noise": m["metric_noise"], "demand": m["demand"],
		"arrivals": m["arrivals"], "rate_cv": "the generator has no sub-interval rate modulation (planner.generate)",
		"metric_lag_steps": "0 by construction: eval live observes the window that has just ended (the workers' reports of the interval, planner.TakeWindow) before it acts, as env does with no lag",
	}
	// The live observation pipeline has no lag: a realistic preset's lag
	// kept here made the simulated controllers react one interval later
	// than the same controllers live (the threshold rule's start-up
	// transient in eval simgap).
	p.MetricLagSteps = 0
	p.Arrivals, p.ArrivalCV, p.RateCV = env.ArrivalsUniform, 0, 0
	p.ServiceCV = round3(c.ServiceCV)
	p.CapacityJitter = round3(c.CapacityJitter)
	p.CFSPeriodMS, p.CFSThreads = c.CFSPeriodMS, 1
	p.MetricNoise = 0
	if c.HopMS > 0 && c.HopMS <= 1000 {
		p.HopMS = round3(c.HopMS)
		notes["hop_ms"] = m["hop_ms"]
	}
	if len(c.HopsAfter) > 0 {
		byTask := map[string]float64{}
		var dropped []string
		for _, h := range c.HopsAfter {
			if v := round3(h.MS); v >= 0 && v <= 1000 {
				byTask[h.Task] = v
			} else {
				dropped = append(dropped, fmt.Sprintf("%s %.3g ms", h.Task, h.MS))
			}
		}
		hops, err := env.NewTaskHops(byTask)
		if err != nil {
			return env.Scenario{}, err
		}
		p.HopMSByTask = hops
		notes["hop_ms_by_task"] = m["hop_ms_by_task"]
		if len(dropped) > 0 {
			notes["hop_ms_by_task"] += "; not written (outside 0..1,000 ms, hop_ms applies): " + strings.Join(dropped, ", ")
		}
	}
	if len(c.HopCurve) > 0 {
		curve, note, err := hopCurveOf(c, sc)
		if err != nil {
			return env.Scenario{}, err
		}
		p.HopCurve = curve
		notes["hop_curve"] = note
	}
	if p.HopMS > 0 || p.HopMSByTask.Len() > 0 || p.HopCurve.Len() > 0 {
		p.HopsEndToEnd = true
		notes["hops_end_to_end"] = m["hops_end_to_end"]
		p.HopSpread = c.HopSpread
		notes["hop_spread"] = m["hop_spread"]
	}
	if c.ActuationIntervals >= 0 {
		p.ActuationDelaySteps = c.ActuationIntervals
		notes["actuation_delay_steps"] = m["actuation_delay_steps"]
	} else {
		notes["actuation_delay_steps"] = "the new quota was never reported in the probe: kept from the realistic preset"
	}
	d := &env.ScenarioDemand{Profile: c.Profile, CPUScale: c.CPUScale}
	for o, oc := range c.Operators {
		if o >= len(sc.App.Tasks) || sc.App.Tasks[o].Name != oc.Operator || !(oc.CPUUSPerEvent > 0) {
			continue // ETL's Sink is not a task of the profile; an idle operator has no cost
		}
		d.Tasks = append(d.Tasks, env.MeasuredDemand{Task: oc.Operator, CPUUSPerEvent: round3(oc.CPUUSPerEvent),
			Comment: fmt.Sprintf("%.3f µs per execution (interval CV %.2f) over %d intervals; in process %.3f µs", oc.CPUUSPerEvent, oc.CV, oc.Intervals, c.ServiceTimes[o].MeanUS)})
	}
	s := env.Scenario{Base: env.ScenarioRealistic, Physics: p, Notes: notes,
		Comment: fmt.Sprintf("eval calibrate -profile %s (commit %s): the live runtime at %g inputs/s, cpu scale %g, %d intervals of %g s; see calibration.json", c.Profile, c.Commit, c.Rate, c.CPUScale, c.Intervals, c.TimeScaleS)}
	if len(d.Tasks) > 0 {
		s.Demand = d
	}
	if cp := c.CostProbe; cp != nil {
		if m := cp.Model; m != nil {
			s.CostModel = &env.ScenarioCostModel{AlphaUS: m.AlphaUS, BetaUS: m.BetaUS, GammaUS: m.GammaUS, BudgetUSPerS: m.BudgetUSPerS, Samples: cp.Terms[len(cp.Terms)-1].Samples}
			notes["cost_model"] = c.Methods["cost_model"]
		} else {
			notes["cost_model"] = "not written: " + cp.Refused
		}
	} else if ce := c.CostModel; ce != nil {
		total := 0
		for _, n := range ce.Samples {
			total += n
		}
		m := ce.Model
		if total > 0 && m.Alpha >= 0 && m.Beta >= 0 && m.Gamma >= 0 && ce.Smoothed > 0 {
			s.CostModel = &env.ScenarioCostModel{AlphaUS: round3(m.Alpha), BetaUS: round3(m.Beta), GammaUS: round3(m.Gamma), BudgetUSPerS: round3(ce.Smoothed), Samples: total}
			notes["cost_model"] = c.Methods["cost_model"]
		} else {
			notes["cost_model"] = fmt.Sprintf("not written: the probe gave %d saturated samples and α=%.3g β=%.3g γ=%.3g µs, W̄=%.4g µs/s (a negative or missing estimate is not a cost model)", total, m.Alpha, m.Beta, m.Gamma, ce.Smoothed)
		}
	}
	return s, nil
}

// hopPoints returns the main probe's point (its rate, high-phase p95,
// operators, hops and spread) with the hop curve's, in increasing rate.
func (c Calibration) hopPoints() []HopRatePoint {
	pts := []HopRatePoint{{Rate: c.Rate, P95MS: c.P95HighMS, Operators: c.Operators, HopsAfter: c.HopsAfter, HopSpread: c.HopSpread}}
	pts = append(pts, c.HopCurve...)
	slices.SortFunc(pts, func(a, b HopRatePoint) int { return cmp.Compare(a.Rate, b.Rate) })
	return pts
}

// hopCurveOf builds the scenario's hop curve from the main probe's point
// (c.Rate, c.HopsAfter, c.Operators) and c.HopCurve's: per rate, the hop
// after each forwarding task (live.HopsAfter) and the wait at each task of
// the profile (its operator's mean delay enqueue → execution finished at
// the generous allocation, where queueing adds almost nothing, so the
// delay is the batching wait). A task enters the curve only if every point
// measured it (interpolation needs each value at every rate); the note says
// which were left out.
func hopCurveOf(c Calibration, sc env.Config) (env.HopCurve, string, error) {
	pts := c.hopPoints()
	isTask := func(name string) bool {
		return slices.ContainsFunc(sc.App.Tasks, func(t env.Task) bool { return t.Name == name })
	}
	hopOK, waitOK, emptyOK := map[string]int{}, map[string]int{}, map[string]int{}
	for _, p := range pts {
		for _, oc := range p.Operators {
			if oc.EmptyShare != nil {
				emptyOK[oc.Operator]++
			}
		}
		for _, h := range p.HopsAfter {
			if v := round3(h.MS); v >= 0 && v <= 1000 {
				hopOK[h.Task]++
			}
		}
		for _, oc := range p.Operators {
			if v := round3(oc.DelayMS); isTask(oc.Operator) && oc.ExecsPerInterval > 0 && v >= 0 && v <= 1000 {
				waitOK[oc.Operator]++
			}
		}
	}
	var left []string
	for _, m := range []map[string]int{hopOK, waitOK} {
		for name, k := range m {
			if k < len(pts) {
				left = append(left, name)
			}
		}
	}
	slices.Sort(left)
	left = slices.Compact(left)
	var out []env.HopPoint
	var desc []string
	for _, p := range pts {
		hops, waits, empties := map[string]float64{}, map[string]float64{}, map[string]float64{}
		for _, h := range p.HopsAfter {
			if hopOK[h.Task] == len(pts) {
				hops[h.Task] = round3(h.MS)
			}
		}
		for _, oc := range p.Operators {
			if waitOK[oc.Operator] == len(pts) {
				waits[oc.Operator] = round3(oc.DelayMS)
				// The snapshots' empty share, for a waiting task every
				// point measured it at (files older than it have none).
				if emptyOK[oc.Operator] == len(pts) {
					empties[oc.Operator] = round3(*oc.EmptyShare)
				}
			}
		}
		h, err := env.NewTaskHops(hops)
		if err != nil {
			return env.HopCurve{}, "", err
		}
		w, err := env.NewTaskHops(waits)
		if err != nil {
			return env.HopCurve{}, "", err
		}
		em, err := env.NewTaskHops(empties)
		if err != nil {
			return env.HopCurve{}, "", err
		}
		out = append(out, env.HopPoint{Rate: p.Rate, Hops: h, Waits: w, Spread: p.HopSpread, Empty: em})
		mean := 0.0
		for _, v := range waits {
			mean += v / float64(len(waits))
		}
		d := fmt.Sprintf("%g/s: mean wait %.2f ms, spread %.2f", p.Rate, mean, p.HopSpread)
		if len(empties) > 0 {
			lo, hi := 1.0, 0.0
			for _, v := range empties {
				lo, hi = min(lo, v), max(hi, v)
			}
			d += fmt.Sprintf(", queues reported empty %.2f–%.2f", lo, hi)
		}
		desc = append(desc, d)
	}
	curve, err := env.NewHopCurve(out)
	if err != nil {
		return env.HopCurve{}, "", err
	}
	note := fmt.Sprintf("one probe per input rate with every task at %g scenario mc (the main probe's high phase at %g inputs/s, and -hop-rates), the same delays as hop_ms_by_task per rate; waits: each task's own mean delay enqueue → execution finished (its batching wait at the generous allocation), the records it holds are in × wait in the observation's queue; hop_spread per rate: fitted to that probe's mean interval p95 as hop_spread is to the main probe's (calibration.json hop_curve[].hop_spread_fit); %s", c.HighMC, c.Rate, strings.Join(desc, ", "))
	if len(left) > 0 {
		note += "; left out (not measured at every rate): " + strings.Join(left, ", ")
	}
	return curve, note, nil
}

// round3 rounds to three significant decimals for a readable file.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

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
