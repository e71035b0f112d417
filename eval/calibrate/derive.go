package calibrate

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/eval/live"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/traces"
)

// Output is what Derive makes of a calibration: the calibration with its
// derived values and the files of `eval calibrate`.
type Output struct {
	Calibration Calibration
	// Scenario is scenario.json (nil for a CLASP application: the
	// simulator's vertical scenarios are pred's and etl's).
	Scenario []byte
	// JSON is calibration.json, Markdown calibration.md.
	JSON, Markdown []byte
}

// Derive computes the derived values of c from its measurements and
// renders the files. For pred and etl: the mean per-hop delay, the hops
// after every task (HopsAfter, also per hop-curve point), the methods,
// the hop spreads fitted by simulating the probe (fitHopSpread) and the
// calibrated scenario; for a CLASP application the methods only. Derive
// is deterministic: the same calibration gives the same bytes (the
// spread fits simulate with c's seed). Only the simulator runs; ctx ends
// the fits early.
func Derive(ctx context.Context, c Calibration) (Output, error) {
	if live.IsHorizontal(c.Profile) {
		return deriveCosts(c)
	}
	ps, err := probeSetup(c.Profile, c.Rate, c.Intervals)
	if err != nil {
		return Output{}, err
	}
	c.HopMS = 0
	for _, oc := range c.Operators {
		c.HopMS += oc.DelayMS / float64(len(c.Operators))
	}
	if c.HopsAfter, err = HopsAfter(ps.app, c.Operators, ps.tasks); err != nil {
		return Output{}, err
	}
	for i := range c.HopCurve {
		if c.HopCurve[i].HopsAfter, err = HopsAfter(ps.app, c.HopCurve[i].Operators, ps.tasks); err != nil {
			return Output{}, fmt.Errorf("calibrate: hop curve at %g inputs/s: %w", c.HopCurve[i].Rate, err)
		}
	}
	c.HopSpread, c.HopSpreadFit, c.HopSpreadNote = 0, nil, ""
	for i := range c.HopCurve {
		c.HopCurve[i].HopSpread, c.HopCurve[i].HopSpreadFit, c.HopCurve[i].HopSpreadNote = 0, nil, ""
	}
	c.Methods = calibrationMethods(c)
	scen, err := calibratedScenario(c, ps.sc)
	if err != nil {
		return Output{}, fmt.Errorf("calibrate: %w", err)
	}
	if err := fitSpreads(ctx, &c, scen); err != nil {
		return Output{}, err
	}
	c.Methods = calibrationMethods(c)
	if scen, err = calibratedScenario(c, ps.sc); err != nil {
		return Output{}, fmt.Errorf("calibrate: %w", err)
	}
	sb, err := scen.MarshalFile()
	if err != nil {
		return Output{}, fmt.Errorf("calibrate: %w", err)
	}
	b, err := report.MarshalJSON(c)
	if err != nil {
		return Output{}, err
	}
	return Output{Calibration: c, Scenario: sb, JSON: b, Markdown: calibrationMarkdown(c)}, nil
}

// fitSpreads fits every hop spread of c in scen, the scenario without
// spreads, each at its own rate, where the curve's hops are that rate's
// measured ones.
func fitSpreads(ctx context.Context, c *Calibration, scen env.Scenario) error {
	var err error
	if c.HopSpread, c.HopSpreadFit, c.HopSpreadNote, err = fitHopSpread(ctx, *c, scen, c.Rate, c.P95HighMS, 0, c.Intervals/2); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	for i := range c.HopCurve {
		pt := &c.HopCurve[i]
		if pt.HopSpread, pt.HopSpreadFit, pt.HopSpreadNote, err = fitHopSpread(ctx, *c, scen, pt.Rate, pt.P95MS, 2, c.Intervals); err != nil {
			return fmt.Errorf("calibrate: hop curve at %g inputs/s: %w", pt.Rate, err)
		}
	}
	return nil
}

// deriveCosts is Derive of a CLASP application: the methods and the two
// files (no scenario).
func deriveCosts(c Calibration) (Output, error) {
	if c.CostProbe == nil {
		return Output{}, fmt.Errorf("calibrate: %w: %s calibration without a cost probe", ErrPlan, c.Profile)
	}
	c.Methods = map[string]string{
		"cost_model": costProbeMethod(*c.CostProbe),
		"service_cv": fmt.Sprintf("every operator's Process timed in this process over %d inputs of the application's source (live.ServiceTimes, outliers above %d× the median dropped), CVs weighted by work", c.ServiceInputs, OutlierFactor),
	}
	b, err := report.MarshalJSON(c)
	if err != nil {
		return Output{}, err
	}
	return Output{Calibration: c, JSON: b, Markdown: costMarkdown(c)}, nil
}

// static is the spread fit's controller: every task at a fixed number of
// scenario millicores (agents.Static), recorded as eval's controller
// registry spells it ("static:10000").
type static float64

func (s static) String() string { return "static:" + strconv.FormatFloat(float64(s), 'f', -1, 64) }

func (static) Horizontal() bool { return false }

func (static) Config(base env.Config) (env.Config, error) { return base, nil }

func (s static) Build(env.Config) (agents.Actor, error) {
	c, err := agents.NewStatic(float64(s))
	if err != nil {
		return agents.Actor{}, err
	}
	return agents.Vertical(c), nil
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
		"service_cv":            fmt.Sprintf("every operator's Process timed in this process over %d inputs of the profile's source (live.ServiceTimes, outliers above %d× the median dropped), CVs weighted by work", c.ServiceInputs, OutlierFactor),
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

// costProbeMethod says how the cost-model probe measured each term.
func costProbeMethod(cp CostProbeResult) string {
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
		cp.Rate, quota, cp.LoadS, cp.ReportS, cp.ChainInputs, cp.Rate/2, cp.Rate, cp.BudgetApp, cp.BudgetRate, CostSaturationS, cp.MinR2, zeroNote(cp.ZeroUnresolved))
}

func zeroNote(on bool) string {
	if on {
		return " (with -cost-zero-unresolved such a term whose 95% CI includes 0 is written as 0)"
	}
	return ""
}

// serviceCV returns the work-weighted per-execution CV of the operators
// and the capacity jitter (Calibration.ServiceCV, CapacityJitter): the
// in-process distribution svc gives the per-event CV, the workers'
// per-interval costs costs the interval-to-interval CV.
func serviceCV(svc []ServiceDist, costs []OperatorCost) (cv, jitter float64) {
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
	sp := static(c.HighMC)
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
// after each forwarding task (HopsAfter) and the wait at each task of
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
