package calibrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"streamscale/env"
	"streamscale/eval/live"
	"streamscale/eval/runner"
	"streamscale/eval/stats"
	"streamscale/internal/command"
	"streamscale/serve/runtime/cfs"
	"streamscale/serve/runtime/ops"
	"streamscale/traces"
)

// Calibration is calibration.json of `eval calibrate`: what Probe measured
// and, after Derive, the values derived from it.
type Calibration struct {
	Profile    string         `json:"profile"`
	Rate       float64        `json:"rate"`
	TimeScaleS float64        `json:"time_scale_s"`
	Intervals  int            `json:"intervals"`
	CPUScale   float64        `json:"cpu_scale"`
	HighMC     float64        `json:"high_millicores"`
	LowMC      float64        `json:"low_millicores"`
	Seed       uint64         `json:"seed"`
	Operators  []OperatorCost `json:"operators"`
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
	// timed in process (ServiceTimes, ServiceInputs inputs).
	ServiceTimes  []ServiceDist `json:"service_times"`
	ServiceInputs int           `json:"service_inputs"`
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
	// profile (HopsAfter from the operators' delays), ms, in operator
	// order: the scenario's hop_ms_by_task.
	HopsAfter []TaskHop `json:"hops_after"`
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
	CostModel *CostEstimate `json:"cost_model,omitempty"`
	// CostProbe is the cost-model microbenchmark probe's result
	// (ProbeCosts; nil: skipped): every term of CLASP's Eq. 1 with
	// its fit, and the model when every term was accepted.
	CostProbe *CostProbeResult `json:"cost_probe,omitempty"`
	// ReportedMillicores is operator 0's live quota as the workers
	// reported it, per interval; OfferedPerS the offered rate per control
	// window.
	ReportedMillicores []int     `json:"reported_millicores"`
	OfferedPerS        []float64 `json:"offered_per_s"`
	// Methods says how every quantity was measured, by key.
	Methods map[string]string `json:"methods"`
	// Uptime is the host's load before and after the probes (the
	// command's reading; Probe leaves it empty).
	Uptime []string `json:"uptime"`
	command.Build
}

// PhaseCost is one operator's CPU per event over a phase of the probe
// (Recorder.PhaseCost).
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
	Operators []OperatorCost `json:"operators"`
	// HopsAfter is HopsAfter of Operators (derived, rewritten by
	// -from).
	HopsAfter []TaskHop `json:"hops_after"`
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

// ErrPlan is wrapped by every error of a plan (or a recorded file's
// configuration) that cannot be probed or derived, before anything runs:
// the caller's input was wrong.
var ErrPlan = errors.New("bad plan")

// Plan is one run of the probes. Validate checks it; Probe runs it.
type Plan struct {
	// Profile is pred or etl (the vertical probes, and the cost-model
	// probe unless Cost is nil) or a CLASP application (wc, sd, aa, pl,
	// nwm, syn: the cost-model probe and the service times only).
	Profile string
	// Rate is the step probe's constant input rate, inputs/s, in (0, 1e6].
	Rate float64
	// Interval is the control interval and the workers' report interval,
	// 10 ms .. 1 min.
	Interval time.Duration
	// Duration is the step probe's length, at least 8 intervals and at
	// most 1 h; the allocation steps from HighMC to LowMC half way.
	Duration time.Duration
	// CPUScale is the live CFS millicores per scenario millicore, in
	// (0, 1000].
	CPUScale float64
	// HighMC and LowMC are the scenario millicores of every task in the
	// first and the second half, each in [500, 10000].
	HighMC, LowMC float64
	// Seed seeds the input source (and the cost probe's layout order).
	Seed uint64
	// ServiceInputs is the inputs of the in-process per-execution timing,
	// 1 .. 100000.
	ServiceInputs int
	// HopRates are further constant input rates (vertical profiles only),
	// each probed with every task at HighMC for Duration: the hop curve.
	// None may be Rate.
	HopRates []float64
	// Cost is the cost-model probe (ProbeCosts); nil skips it, which a
	// CLASP application does not allow (it is its only probe).
	Cost *CostProbe
	// WorkerArgs are the arguments the worker processes are started
	// with (live.Config.WorkerArgs).
	WorkerArgs []string
	// Build is recorded in calibration.json.
	Build command.Build
}

// Validate checks p; its errors wrap ErrPlan.
func (p Plan) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("calibrate: %w: "+format, append([]any{ErrPlan}, args...)...)
	}
	horizontal := live.IsHorizontal(p.Profile)
	switch {
	case !horizontal && !slices.Contains(env.Profiles(), p.Profile):
		return bad("profile %q, want pred, etl or a CLASP application", p.Profile)
	case !(p.Rate > 0) || p.Rate > 1e6:
		return bad("rate %v, want 0 < rate ≤ 1e6 inputs/s", p.Rate)
	case p.Interval < 10*time.Millisecond || p.Interval > time.Minute:
		return bad("interval %v, want 10ms..1m", p.Interval)
	case p.Duration < 8*p.Interval || p.Duration > time.Hour:
		return bad("duration %v, want at least 8 intervals (%v) and at most 1h", p.Duration, 8*p.Interval)
	case !(p.CPUScale > 0) || p.CPUScale > 1000:
		return bad("cpu scale %v, want > 0 and ≤ 1000", p.CPUScale)
	case !(p.HighMC >= 500 && p.HighMC <= 10000) || !(p.LowMC >= 500 && p.LowMC <= 10000):
		return bad("high %v and low %v, want scenario millicores in [500, 10000]", p.HighMC, p.LowMC)
	case p.ServiceInputs < 1 || p.ServiceInputs > 100000:
		return bad("service inputs %d, want 1..100000", p.ServiceInputs)
	case horizontal && p.Cost == nil:
		return bad("no cost-model probe: the only probe of a CLASP application (%s)", p.Profile)
	case horizontal && len(p.HopRates) > 0:
		return bad("hop rates apply to pred and etl (the vertical probes), not %s", p.Profile)
	case len(p.HopRates) > 16:
		return bad("%d hop rates, want at most 16", len(p.HopRates))
	}
	for i, r := range p.HopRates {
		if !(r > 0 && r <= 1e6) || r == p.Rate || slices.Contains(p.HopRates[:i], r) {
			return bad("hop rate %v, want (0, 1e6] inputs/s, once each, not the main rate %v", r, p.Rate)
		}
	}
	return nil
}

// Probe validates p and runs its probes: for pred and etl the step probe,
// one probe per hop rate, the cost-model probe (unless p.Cost is nil) and
// the in-process service times; for a CLASP application the cost-model
// probe and the service times. The result holds the measurements only:
// Derive computes the derived values and renders the files. The probes
// run one after the other and every process they start has stopped when
// Probe returns.
func Probe(ctx context.Context, p Plan) (Calibration, error) {
	if err := p.Validate(); err != nil {
		return Calibration{}, err
	}
	if live.IsHorizontal(p.Profile) {
		return probeCosts(ctx, p)
	}
	return probeVertical(ctx, p)
}

// probeCosts is the probe of a CLASP application: the cost-model probe
// (ProbeCosts: the runtime's chain application and the budget
// application) and the application's per-execution times in process.
func probeCosts(ctx context.Context, p Plan) (Calibration, error) {
	app, err := ops.AppByName(p.Profile)
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate: %w: %w", ErrPlan, err)
	}
	cp, err := ProbeCosts(ctx, *p.Cost)
	if err != nil {
		return Calibration{}, err
	}
	svc, err := ServiceTimes(app, p.Seed, p.ServiceInputs)
	if err != nil {
		return Calibration{}, err
	}
	c := Calibration{Profile: p.Profile, Rate: p.Cost.Rate, TimeScaleS: p.Cost.Report.Seconds(), Seed: p.Seed, CostProbe: &cp, ServiceTimes: svc,
		ServiceInputs: p.ServiceInputs, Build: p.Build}
	c.ServiceCV, _ = serviceCV(svc, nil)
	return c, nil
}

// constant is the probes' workload: rate inputs/s, constant.
func constant(rate float64) *traces.Trace {
	return &traces.Trace{Name: "constant", Source: "synthetic", Counts: []float64{rate}, Scale: 1}
}

// probeSetup is the scenario, the application and its operators' names of
// a vertical probe of n intervals at rate.
func probeSetup(profile string, rate float64, n int) (probeScenario, error) {
	sc, err := runner.Config(runner.Spec{Profile: profile, Workload: constant(rate), PlacementSeed: 101, Steps: n})
	if err != nil {
		return probeScenario{}, fmt.Errorf("calibrate: %w: %w", ErrPlan, err)
	}
	app, err := ops.AppByName(profile)
	if err != nil {
		return probeScenario{}, fmt.Errorf("calibrate: %w: %w", ErrPlan, err)
	}
	ps := probeScenario{sc: sc, app: app}
	for _, s := range app.Operators {
		ps.names = append(ps.names, s.Name)
	}
	for _, t := range sc.App.Tasks {
		ps.tasks = append(ps.tasks, t.Name)
	}
	return ps, nil
}

// probeVertical runs the step probe of pred or etl, the hop-rate probes,
// the cost-model probe and the service times.
func probeVertical(ctx context.Context, p Plan) (Calibration, error) {
	n := int(p.Duration / p.Interval)
	at := n / 2
	ps, err := probeSetup(p.Profile, p.Rate, n)
	if err != nil {
		return Calibration{}, err
	}
	step, err := NewStepController(len(ps.sc.App.Tasks), p.HighMC, p.LowMC, at)
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate: %w: %w", ErrPlan, err)
	}
	rec := NewRecorder(ps.names)
	rec.IntervalS = p.Interval.Seconds()
	cfg := live.Config{Scenario: ps.sc, App: ps.app, Trace: constant(p.Rate), Step: p.Interval, Intervals: n, Seed: p.Seed, CPUScale: p.CPUScale,
		Controller: step, Name: fmt.Sprintf("step:%g→%g@%d", p.HighMC, p.LowMC, at), WorkerArgs: p.WorkerArgs, Tap: rec.Tap(2, at)}
	res, _, err := live.Run(ctx, cfg)
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate: %w", err)
	}
	lowMC := max(1, int(p.LowMC*p.CPUScale+0.5))
	c := Calibration{Profile: p.Profile, Rate: p.Rate, TimeScaleS: p.Interval.Seconds(), Intervals: n, CPUScale: p.CPUScale, HighMC: p.HighMC, LowMC: p.LowMC,
		Seed: p.Seed, Operators: rec.Costs(), ActuationIntervals: rec.ActuationIntervals(at, lowMC), Build: p.Build}
	if c.ActuationIntervals >= 0 {
		c.ActuationMaxMS = float64(c.ActuationIntervals+1) * p.Interval.Seconds() * 1000
	}
	for i, iv := range res.Intervals {
		if i < at {
			c.P95HighMS += iv.P95MS / float64(at)
		} else {
			c.P95LowMS += iv.P95MS / float64(len(res.Intervals)-at)
		}
	}
	for _, r := range p.HopRates {
		pt, err := probeHops(ctx, p, r, n, ps)
		if err != nil {
			return Calibration{}, fmt.Errorf("calibrate: hop rate %g: %w", r, err)
		}
		c.HopCurve = append(c.HopCurve, pt)
	}
	slices.SortFunc(c.HopCurve, func(a, b HopRatePoint) int { return cmp.Compare(a.Rate, b.Rate) })
	if p.Cost != nil {
		cp, err := ProbeCosts(ctx, *p.Cost)
		if err != nil {
			return Calibration{}, err
		}
		c.CostProbe = &cp
	}
	svc, err := ServiceTimes(ps.app, p.Seed, p.ServiceInputs)
	if err != nil {
		return Calibration{}, err
	}
	c.ServiceTimes, c.ServiceInputs = svc, p.ServiceInputs
	c.ServiceCV, c.CapacityJitter = serviceCV(svc, c.Operators)
	recordPhases(&c, rec, res.Intervals, at, n)
	return c, nil
}

// recordPhases fills what the step probe's recorder and intervals give
// beyond the costs: the offered rate and its CV, the reported quota, the
// quota enforcement of the bottleneck and the low phase's costs.
func recordPhases(c *Calibration, rec *Recorder, ivs []runner.Interval, at, n int) {
	var off []float64
	for i := 2; i < at && i < len(ivs); i++ {
		off = append(off, ivs[i].Offered)
	}
	c.OfferedCV = cvOf(off)
	c.ReportedMillicores = rec.Reported
	for _, iv := range ivs {
		c.OfferedPerS = append(c.OfferedPerS, iv.Offered)
	}
	actAt := at + max(c.ActuationIntervals, 0) + 1
	// The bottleneck at equal allocations: the costliest operator.
	for o, oc := range c.Operators {
		if oc.CPUUSPerEvent > c.Operators[c.EnforcementOp].CPUUSPerEvent {
			c.EnforcementOp = o
		}
	}
	c.Enforcement, c.EnforcementIntervals = rec.Enforcement(c.EnforcementOp, actAt, n)
	for o, oc := range c.Operators {
		us, q, k := rec.PhaseCost(o, actAt, n)
		c.LowPhase = append(c.LowPhase, PhaseCost{Operator: oc.Operator, CPUUSPerEvent: us, QuotaUsed: q, Intervals: k})
	}
	c.CFSPeriodMS = float64(cfs.DefaultPeriod) / float64(time.Millisecond)
}

// probeScenario is a vertical probe's scenario, runtime application,
// operator names (in the application's order) and task names (the
// scenario's).
type probeScenario struct {
	sc           env.Config
	app          ops.App
	names, tasks []string
}

// probeHops measures the operators' delays at the constant input rate
// with every task at p.HighMC for n intervals (the first two left out, as
// the main probe's warm-up): one point of the hop curve.
func probeHops(ctx context.Context, p Plan, rate float64, n int, ps probeScenario) (HopRatePoint, error) {
	sc, err := runner.Config(runner.Spec{Profile: p.Profile, Workload: constant(rate), PlacementSeed: 101, Steps: n})
	if err != nil {
		return HopRatePoint{}, err
	}
	step, err := NewStepController(len(sc.App.Tasks), p.HighMC, p.HighMC, n)
	if err != nil {
		return HopRatePoint{}, err
	}
	rec := NewRecorder(ps.names)
	rec.IntervalS = p.Interval.Seconds()
	cfg := live.Config{Scenario: sc, App: ps.app, Trace: constant(rate), Step: p.Interval, Intervals: n, Seed: p.Seed, CPUScale: p.CPUScale,
		Controller: step, Name: fmt.Sprintf("static:%g@%g/s", p.HighMC, rate), WorkerArgs: p.WorkerArgs, Tap: rec.Tap(2, n)}
	res, _, err := live.Run(ctx, cfg)
	if err != nil {
		return HopRatePoint{}, err
	}
	pt := HopRatePoint{Rate: rate, Intervals: max(n-2, 0), Operators: rec.Costs()}
	for i := 2; i < len(res.Intervals); i++ {
		pt.P95MS += res.Intervals[i].P95MS / float64(len(res.Intervals)-2)
	}
	return pt, nil
}

// cvOf is the sample coefficient of variation of xs (stats.CV), 0 for
// fewer than two values or a zero mean.
func cvOf(xs []float64) float64 {
	if v := stats.CV(xs); !math.IsNaN(v) {
		return v
	}
	return 0
}
