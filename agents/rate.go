package agents

import (
	"fmt"
	"math"

	"streamscale/env"
)

// RateConfig configures RateRule. Start from DefaultRateConfig; NewRateRule
// checks every field and substitutes no defaults for zero values.
type RateConfig struct {
	// Target is the target utilization of a task's allocation, in (0, 1].
	// Default 0.7 (the Flink autoscaler's job.autoscaler.target.utilization).
	Target float64
	// Tolerance is the half-width of the band [Target − Tolerance, Target +
	// Tolerance] of utilization in which a task is left alone, in [0,
	// Target). Default 0.1. (Flink's utilization boundary; its default
	// 0.3 is for parallelism changes, which cost a restart; a CPU quota
	// costs nothing to change.)
	Tolerance float64
	// ScaleDownWindow is the number of steps of recommendations, this one
	// included, whose maximum bounds a scale-down, ≥ 1 (Flink's
	// scale-down interval). Default 30.
	ScaleDownWindow int
	// CatchUpSeconds is the time in which the backlog queued at a task is
	// to be worked off on top of the target rate, seconds > 0 (Flink's
	// catch-up duration). Default 10.
	CatchUpSeconds float64
	// MetricLagSteps is the observation's metric lag
	// (env.Physics.MetricLagSteps), ≥ 0: the rule sizes a task on the
	// allocation in force when its metrics were measured, as
	// ThresholdConfig.MetricLagSteps does. Default 0.
	MetricLagSteps int
	// Quantum is the allocation grid, millicores > 0; recommendations are
	// rounded up to it. Default 50.
	Quantum float64
	// MinCPU and MaxCPU bound a recommendation, millicores; MaxCPU must be
	// the scenario's (the observation normalizes by it). Defaults 500 and
	// 10,000.
	MinCPU, MaxCPU float64
	// TrendWindow is the number of steps of the sources' summed measured
	// arrival rate to which a least-squares line is fitted, 0 (off: the
	// reactive rule of Flink and DS2) or in [3, 3600]. Default 0.
	TrendWindow int
	// TrendAhead is how many steps ahead the fitted trend is projected,
	// ≥ 0, with TrendWindow set; the lead of a control loop is the
	// metric lag plus the actuation delay plus the step itself (LeadSteps).
	// Default 0.
	TrendAhead float64
	// StartCPU, when > 0, is the allocation asked for every task at an
	// episode's first step, before anything has been measured, in
	// [MinCPU, MaxCPU]: ThresholdConfig.StartCPU's cold-start headroom
	// (a Flink job is deployed at a configured parallelism before its
	// autoscaler has metrics). It does not enter the scale-down window.
	// 0 (the default) keeps the environment's Reset allocation.
	StartCPU float64
}

// MaxTrendGrowth bounds the factor by which a projected trend raises the
// sources' target rates, so that a burst in a short window cannot ask for
// more than twice the measured rate.
const MaxTrendGrowth = 2

// LeadSteps is the steps from a measurement to the interval an
// allocation sized on it first governs in physics p: the metric lag, the
// actuation delay and the step itself. It is the trend's natural horizon.
func LeadSteps(p env.Physics) int { return p.MetricLagSteps + p.ActuationDelaySteps + 1 }

// DefaultRateConfig returns the default RateConfig.
func DefaultRateConfig() RateConfig {
	return RateConfig{Target: 0.7, Tolerance: 0.1, ScaleDownWindow: 30, CatchUpSeconds: 10, Quantum: 50, MinCPU: 500, MaxCPU: 10000}
}

func (c RateConfig) validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(c.Target > 0 && c.Target <= 1):
		return fmt.Errorf("agents: rate rule target %v outside (0, 1]", c.Target)
	case !(c.Tolerance >= 0 && c.Tolerance < c.Target):
		return fmt.Errorf("agents: rate rule tolerance %v outside [0, target %v)", c.Tolerance, c.Target)
	case c.ScaleDownWindow < 1 || c.ScaleDownWindow > 3600:
		return fmt.Errorf("agents: rate rule scale-down window %d steps outside [1, 3600]", c.ScaleDownWindow)
	case !(c.CatchUpSeconds > 0) || !finite(c.CatchUpSeconds):
		return fmt.Errorf("agents: rate rule catch-up time %v s, want a positive number", c.CatchUpSeconds)
	case c.MetricLagSteps < 0 || c.MetricLagSteps > 3600:
		return fmt.Errorf("agents: rate rule metric lag %d steps outside [0, 3600]", c.MetricLagSteps)
	case !(c.Quantum > 0) || !finite(c.Quantum):
		return fmt.Errorf("agents: rate rule quantum %v millicores, want a positive number", c.Quantum)
	case !(c.MinCPU > 0) || !(c.MaxCPU >= c.MinCPU) || !finite(c.MaxCPU):
		return fmt.Errorf("agents: rate rule CPU bounds [%v, %v] millicores invalid", c.MinCPU, c.MaxCPU)
	case c.TrendWindow != 0 && (c.TrendWindow < 3 || c.TrendWindow > 3600):
		return fmt.Errorf("agents: rate rule trend window %d steps, want 0 (off) or in [3, 3600]", c.TrendWindow)
	case !(c.TrendAhead >= 0 && c.TrendAhead <= 3600):
		return fmt.Errorf("agents: rate rule trend horizon %v steps outside [0, 3600]", c.TrendAhead)
	case c.TrendAhead > 0 && c.TrendWindow == 0:
		return fmt.Errorf("agents: rate rule trend horizon %v steps without a trend window", c.TrendAhead)
	}
	return checkStart("rate rule", c.StartCPU, c.MinCPU, c.MaxCPU)
}

// RateRule is the vertical autoscaling rule a stream-processing operator
// deploys today: the Flink Kubernetes operator's autoscaler (Apache Flink
// Kubernetes Operator documentation, "Autoscaler": true processing rate
// from busy time, target rates from the sources, target utilization,
// scale-down interval, catch-up duration) after DS2 (Kalavri et al.,
// "Three steps is all you need: fast, accurate, automatic scaling
// decisions for distributed streaming dataflows", OSDI 2018), applied to
// each task's CPU quota instead of its parallelism.
//
// Every step, for each task k in topological order:
//
//	work per event     w_k = s̄_k · c_k^meas   (millicore-seconds; s̄ the measured mean service time, busy time / processed)
//	selectivity        σ_k = out_k / processed_k, measured (the DAG's when k processed nothing)
//	target input rate  λ*_k = λ_src,k for a source (its measured arrivals), else Σ_{u→k} σ_u · λ*_u
//	recommendation     r_k = ⌈(λ*_k + q_k / CatchUpSeconds) · w_k / Target⌉_Quantum, clipped to [MinCPU, MaxCPU]
//
// where q_k is the task's queue and c_k^meas the allocation in force when
// its metrics were measured (MetricLagSteps earlier). Unlike a rule on a
// task's own input rate (Threshold), a bottleneck upstream does not hide
// the demand downstream: every task is sized for the rate the sources
// offer, in one step, as DS2 sizes every operator at once. The task is
// left alone while its utilization (λ*_k + q_k/CatchUpSeconds)·w_k / c_k
// is inside the band; a scale-up is applied at once and a scale-down is
// stabilized as Threshold's (the largest recommendation of the window). A
// task whose service time is not measured (it processed nothing) keeps its
// allocation. RateRule emits Targets; it has no randomness.
//
// With TrendWindow set the rule is predictive, our extension (Flink's
// autoscaler and DS2 are reactive): a least-squares line ŷ(t) = a + b·t is
// fitted to the last TrendWindow sums of the sources' measured arrival
// rates, and every source's target rate is multiplied by
//
//	g = clip(1 + b·TrendAhead / ŷ(now), 1, MaxTrendGrowth)
//
// — the load the trend projects TrendAhead steps on, relative to the
// fitted present, as PRESS forecasts demand before it arrives (Gong, Gu
// and Wilkes, "PRESS: PRedictive Elastic ReSource Scaling for cloud
// systems", CNSM 2010). g ≥ 1, so a falling trend never hastens a
// scale-down: that stays the stabilization window's decision.
type RateRule struct {
	cfg    RateConfig
	app    env.App
	order  []int   // topological order
	preds  [][]int // predecessors per task
	source []bool
	slo    float64 // seconds

	n      int
	hist   []float64 // n×ScaleDownWindow ring
	head   int
	filled int
	shown  []float64 // n×(MetricLagSteps+1) ring of allocations shown
	sHead  int

	rate    []float64 // λ*_k scratch
	targets []float64

	src       []float64 // TrendWindow ring of the sources' summed measured rates
	srcHead   int       // next slot
	srcFilled int
}

// NewRateRule returns a RateRule for app.
func NewRateRule(cfg RateConfig, app env.App) (*RateRule, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := len(app.Tasks)
	if n == 0 || !(app.SLOMS > 0) {
		return nil, fmt.Errorf("agents: rate rule needs an application with tasks and an SLO")
	}
	r := &RateRule{cfg: cfg, app: app, preds: make([][]int, n), source: make([]bool, n), slo: app.SLOMS / 1000}
	indeg := make([]int, n)
	for _, e := range app.Edges {
		if e.From < 0 || e.From >= n || e.To < 0 || e.To >= n {
			return nil, fmt.Errorf("agents: rate rule: edge %d→%d outside the %d tasks", e.From, e.To, n)
		}
		r.preds[e.To] = append(r.preds[e.To], e.From)
		indeg[e.To]++
	}
	// Kahn's algorithm, lowest index first among the ready tasks.
	for len(r.order) < n {
		next := -1
		for k := range n {
			if indeg[k] == 0 {
				next = k
				break
			}
		}
		if next < 0 {
			return nil, fmt.Errorf("agents: rate rule: the application's edges have a cycle")
		}
		indeg[next] = -1
		r.order = append(r.order, next)
		for _, e := range app.Edges {
			if e.From == next {
				indeg[e.To]--
			}
		}
	}
	for _, s := range app.Sources {
		r.source[s] = true
	}
	return r, nil
}

// Reset implements Controller: it forgets the recommendation history.
func (r *RateRule) Reset(uint64) error {
	r.n, r.head, r.filled, r.sHead = 0, 0, 0, 0
	r.srcHead, r.srcFilled = 0, 0
	return nil
}

// Act implements Controller.
func (r *RateRule) Act(obs env.Observation) (env.Action, error) {
	n, err := TaskRows(obs, r.n)
	if err != nil {
		return env.Action{}, err
	}
	if n != len(r.app.Tasks) {
		return env.Action{}, fmt.Errorf("agents: rate rule: observation has %d tasks, the application %d", n, len(r.app.Tasks))
	}
	for _, f := range []struct {
		i    int
		name string
	}{{env.TaskCPU, "TaskCPU"}, {env.TaskInputRate, "TaskInputRate"}, {env.TaskThroughput, "TaskThroughput"},
		{env.TaskQueue, "TaskQueue"}, {env.TaskProcLatency, "TaskProcLatency"}, {env.TaskIORatio, "TaskIORatio"}} {
		if err := finiteTaskFeature(obs, f.i, f.name); err != nil {
			return env.Action{}, err
		}
	}
	c := r.cfg
	w, l := c.ScaleDownWindow, c.MetricLagSteps
	if r.n == 0 {
		r.n = n
		r.hist = grow(r.hist, n*w)
		r.shown = grow(r.shown, n*(l+1))
		r.rate = grow(r.rate, n)
		r.targets = grow(r.targets, n)
	}
	feat := func(k, f int) float64 { return obs.Task[k*env.TaskFeatures+f] }
	// The allocations shown, newest at sHead; before anything was measured
	// every row is the first one shown.
	rows := 1
	if r.filled == 0 {
		r.sHead, rows = 0, l+1
	} else {
		r.sHead = (r.sHead + 1) % (l + 1)
	}
	for j := range rows {
		row := r.shown[((r.sHead+j)%(l+1))*n:]
		for k := range n {
			row[k] = snapToGrid(feat(k, env.TaskCPU)*c.MaxCPU, c.Quantum)
		}
	}
	// Target input rates along the DAG.
	g := r.trend(feat)
	for _, k := range r.order {
		if r.source[k] {
			r.rate[k] = g * math.Expm1(feat(k, env.TaskInputRate))
			continue
		}
		sum := 0.0
		for _, u := range r.preds[k] {
			sum += r.selectivity(u, feat) * r.rate[u]
		}
		r.rate[k] = sum
	}
	filled := min(r.filled+1, w)
	for k := range n {
		cur := snapToGrid(feat(k, env.TaskCPU)*c.MaxCPU, c.Quantum)
		meas := r.shown[((r.sHead+1)%(l+1))*n+k]
		svc := feat(k, env.TaskProcLatency) * r.slo // s̄, seconds per event at meas
		rec := cur
		if svc > 0 && meas > 0 {
			need := (r.rate[k] + math.Expm1(feat(k, env.TaskQueue))/c.CatchUpSeconds) * svc * meas // millicores at full utilization
			if u := need / max(cur, 1); math.Abs(u-c.Target) > c.Tolerance+bandSlack {
				rec = min(max(ceilToGrid(need/c.Target, c.Quantum), c.MinCPU), c.MaxCPU)
			}
		}
		ring := r.hist[k*w : (k+1)*w]
		ring[r.head] = rec
		wmax := rec
		for j := 1; j < filled; j++ {
			wmax = max(wmax, ring[(r.head-j+w)%w])
		}
		switch {
		case rec > cur:
			r.targets[k] = rec
		case wmax < cur:
			r.targets[k] = wmax
		default:
			r.targets[k] = cur
		}
		if r.filled == 0 {
			r.targets[k], _ = coldStart(r.targets[k], c.StartCPU, c.Quantum, c.MaxCPU)
		}
	}
	r.head = (r.head + 1) % w
	r.filled = filled
	return env.Action{Targets: r.targets[:n]}, nil
}

// trend records the sources' summed measured rate and returns the factor
// g by which the fitted trend raises the sources' target rates (1 when
// the trend is off, not yet fitted on 3 points, or falling).
func (r *RateRule) trend(feat func(k, f int) float64) float64 {
	w := r.cfg.TrendWindow
	if w == 0 {
		return 1
	}
	if len(r.src) != w {
		r.src = make([]float64, w)
	}
	sum := 0.0
	for k, s := range r.source {
		if s {
			sum += math.Expm1(feat(k, env.TaskInputRate))
		}
	}
	r.src[r.srcHead] = sum
	r.srcHead = (r.srcHead + 1) % w
	r.srcFilled = min(r.srcFilled+1, w)
	m := r.srcFilled
	if m < 3 || r.cfg.TrendAhead == 0 {
		return 1
	}
	// Points x = 0…m−1, oldest first; the slope and the fit at x = m−1.
	xm := float64(m-1) / 2
	var ym float64
	for j := range m {
		ym += r.src[(r.srcHead-m+j+w)%w]
	}
	ym /= float64(m)
	var sxy, sxx float64
	for j := range m {
		dx := float64(j) - xm
		sxy += dx * (r.src[(r.srcHead-m+j+w)%w] - ym)
		sxx += dx * dx
	}
	b := sxy / sxx
	now := ym + b*xm
	if !(now > 0) || !(b > 0) {
		return 1
	}
	return min(1+b*r.cfg.TrendAhead/now, MaxTrendGrowth)
}

// Config returns the rule's configuration.
func (r *RateRule) Config() RateConfig { return r.cfg }

// selectivity is task u's measured output events per processed event:
// from TaskIORatio = out/(in + out), out/in = x/(1 − x), times in/processed.
// It falls back on the application's selectivity when u processed nothing
// or the ratio is degenerate.
func (r *RateRule) selectivity(u int, feat func(k, f int) float64) float64 {
	x := feat(u, env.TaskIORatio)
	in, done := math.Expm1(feat(u, env.TaskInputRate)), math.Expm1(feat(u, env.TaskThroughput))
	if !(done > 0) || !(in > 0) || !(x > 0 && x < 1) {
		return r.app.Tasks[u].Selectivity
	}
	return x / (1 - x) * in / done
}
