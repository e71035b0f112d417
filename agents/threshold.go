package agents

import (
	"fmt"
	"math"

	"streamscale/env"
)

// Utilization selects how Threshold measures a task's utilization.
type Utilization int

const (
	// OfferedLoad is the offered load ρ = λ·s, the input rate times the
	// measured mean service time at the current allocation, clipped to
	// [0, 10] by the environment and de-normalized from the observation's
	// TaskDemandPerCPU = log(1 + ρ) (ρ = e^x − 1). It exceeds 1
	// when the task is overloaded, so one step can size the task. The
	// default.
	OfferedLoad Utilization = iota
	// ProcessedLoad is the processed rate times the service time, the share
	// of the task's capacity actually used: ρ·(processed/input), from
	// TaskDemandPerCPU and TaskThroughputRatio. Like Kubernetes' CPU
	// utilization it saturates near 1 under overload, so scaling up takes
	// several steps of at most ×1/Target each.
	ProcessedLoad
)

func (u Utilization) String() string {
	switch u {
	case OfferedLoad:
		return "offered-load"
	case ProcessedLoad:
		return "processed-load"
	}
	return fmt.Sprintf("Utilization(%d)", int(u))
}

// ThresholdConfig configures Threshold. Start from DefaultThresholdConfig;
// NewThreshold checks every field and does not substitute defaults for
// zero values.
type ThresholdConfig struct {
	// Target is the target utilization, in (0, 10). Default 0.7.
	Target float64
	// Tolerance is the half-width of the band [Target − Tolerance,
	// Target + Tolerance] in which a task is left alone, in [0, Target).
	// Default 0.1, i.e. the band [0.6, 0.8]. (Kubernetes' HPA tolerance is
	// relative instead: |u/Target − 1| ≤ 0.1.)
	Tolerance float64
	// Utilization is the utilization measure. Default OfferedLoad.
	Utilization Utilization
	// ScaleDownWindow is the number of steps (seconds) of recommendations,
	// the current one included, whose maximum bounds a scale-down, ≥ 1;
	// 1 disables stabilization. Default 30.
	ScaleDownWindow int
	// Quantum is the allocation grid, millicores > 0: recommendations are
	// rounded up to a multiple of it. Default 50.
	Quantum float64
	// MetricLagSteps, when > 0, is the observation's metric lag
	// (env.Physics.MetricLagSteps): the offered load an observation
	// reports was measured at the allocation it showed that many
	// observations earlier. The rule then sizes on that allocation —
	// the measured need is ρ·c_then, the recommendation ⌈ρ·c_then/Target⌉
	// and the band test uses ρ·c_then/c — instead of multiplying a stale
	// ρ by the allocation now. 0 (the default) sizes on the allocation
	// now, as the rule always has: under a lag it over-sizes after every
	// scale-up. A lag-aware variant, "threshold:measured" in eval.
	MetricLagSteps int
	// MinCPU and MaxCPU bound a recommendation, millicores. MaxCPU must be
	// the scenario's MaxCPU, by which the observation normalizes
	// allocations (TaskCPU = allocation/MaxCPU). Defaults 500 and 10,000,
	// the environment's.
	MinCPU, MaxCPU float64
	// StartCPU, when > 0, is the allocation asked for every task at an
	// episode's first step, before anything has been measured (the
	// observation after Reset shows no load), in [MinCPU, MaxCPU]: the
	// cold-start headroom an operator deploys a job with before its
	// autoscaler has metrics. It is not a recommendation — it does not
	// enter the scale-down window — so the first measured step sizes the
	// task at once. 0 (the default) keeps the environment's Reset
	// allocation, as the rule always has.
	StartCPU float64
}

// DefaultThresholdConfig returns the default ThresholdConfig.
func DefaultThresholdConfig() ThresholdConfig {
	return ThresholdConfig{
		Target:          0.7,
		Tolerance:       0.1,
		Utilization:     OfferedLoad,
		ScaleDownWindow: 30,
		Quantum:         50,
		MinCPU:          500,
		MaxCPU:          10000,
	}
}

func (c ThresholdConfig) validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(c.Target > 0 && c.Target < 10):
		return fmt.Errorf("agents: threshold target %v outside (0, 10)", c.Target)
	case !(c.Tolerance >= 0 && c.Tolerance < c.Target):
		return fmt.Errorf("agents: threshold tolerance %v outside [0, target %v)", c.Tolerance, c.Target)
	case c.Utilization != OfferedLoad && c.Utilization != ProcessedLoad:
		return fmt.Errorf("agents: unknown utilization measure %d", int(c.Utilization))
	case c.MetricLagSteps < 0 || c.MetricLagSteps > 3600:
		return fmt.Errorf("agents: threshold metric lag %d steps outside [0, 3600]", c.MetricLagSteps)
	case c.ScaleDownWindow < 1:
		return fmt.Errorf("agents: threshold scale-down window %d steps < 1", c.ScaleDownWindow)
	case !(c.Quantum > 0) || !finite(c.Quantum):
		return fmt.Errorf("agents: threshold quantum %v millicores, want a positive number", c.Quantum)
	case !(c.MinCPU > 0) || !(c.MaxCPU >= c.MinCPU) || !finite(c.MaxCPU):
		return fmt.Errorf("agents: threshold CPU bounds [%v, %v] millicores invalid", c.MinCPU, c.MaxCPU)
	}
	return checkStart("threshold", c.StartCPU, c.MinCPU, c.MaxCPU)
}

// ScaleReason says why Threshold chose a task's target.
type ScaleReason int

const (
	// Hold: no change (utilization inside the band, or the recommendation
	// rounds to the current allocation).
	Hold ScaleReason = iota
	// ScaleUp: the recommendation exceeds the allocation and is applied at
	// once.
	ScaleUp
	// ScaleDown: the largest recommendation of the window is below the
	// allocation and is applied.
	ScaleDown
	// Stabilized: the utilization is below the band but a larger
	// recommendation within the window holds the allocation.
	Stabilized
	// ColdStart: the episode's first step, nothing measured yet; the
	// configured start allocation (ThresholdConfig.StartCPU) is asked.
	ColdStart
)

func (r ScaleReason) String() string {
	switch r {
	case Hold:
		return "hold"
	case ScaleUp:
		return "scale-up"
	case ScaleDown:
		return "scale-down"
	case Stabilized:
		return "stabilized"
	case ColdStart:
		return "cold-start"
	}
	return fmt.Sprintf("ScaleReason(%d)", int(r))
}

// ThresholdDecision explains one task's target in one step.
type ThresholdDecision struct {
	Utilization    float64     // measured utilization u
	Current        float64     // observed allocation, millicores
	Recommendation float64     // this step's recommendation, millicores (Current inside the band)
	WindowMax      float64     // largest recommendation over the scale-down window, millicores
	Target         float64     // emitted target, millicores
	Reason         ScaleReason // why
}

// Threshold is a per-task utilization-band autoscaler that follows the
// Kubernetes Horizontal Pod Autoscaler's algorithm (Kubernetes
// documentation, "Horizontal Pod Autoscaling",
// kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/,
// sections "Algorithm details" and "Stabilization window"), applied to a
// task's CPU allocation
// instead of a replica count, as a vertical autoscaler would. For each task
// with allocation c and utilization u:
//
//	recommendation r = c                                   if |u − Target| ≤ Tolerance,
//	                 = clip(⌈c·u/Target⌉_Quantum, Min, Max) otherwise
//
// (HPA's desiredReplicas = ⌈currentReplicas·currentMetric/desiredMetric⌉,
// rounded up to the allocation grid as HPA rounds replicas up). As HPA's
// default behaviour does, a scale-up is applied at once and a scale-down is
// stabilized: the target is the largest recommendation of the last
// ScaleDownWindow steps, so the allocation falls only after the load has
// stayed low for the whole window:
//
//	target = r           if r > c,
//	       = max_window r otherwise (≤ c).
//
// Threshold emits Targets; the environment clips them and projects them
// onto server capacity. It has no randomness.
type Threshold struct {
	cfg ThresholdConfig
	n   int // tasks, fixed by the first Act after Reset; 0 before

	hist   []float64 // n×ScaleDownWindow ring of recommendations
	head   int       // ring slot of the next recommendation
	filled int       // valid ring entries per task

	// shown is an n×(MetricLagSteps+1) ring of the allocations the
	// observations showed (MetricLagSteps > 0 only), newest at shownHead.
	shown     []float64
	shownHead int

	targets []float64
	last    []ThresholdDecision
}

// NewThreshold returns a Threshold controller.
func NewThreshold(cfg ThresholdConfig) (*Threshold, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Threshold{cfg: cfg}, nil
}

// Config returns the configuration.
func (t *Threshold) Config() ThresholdConfig { return t.cfg }

// Reset implements Controller: it forgets the recommendation history.
func (t *Threshold) Reset(uint64) error {
	t.n, t.head, t.filled = 0, 0, 0
	t.last = t.last[:0]
	return nil
}

// Act implements Controller.
func (t *Threshold) Act(obs env.Observation) (env.Action, error) {
	n, err := TaskRows(obs, t.n)
	if err != nil {
		return env.Action{}, err
	}
	if err := finiteTaskFeature(obs, env.TaskCPU, "TaskCPU"); err != nil {
		return env.Action{}, err
	}
	if err := finiteTaskFeature(obs, env.TaskDemandPerCPU, "TaskDemandPerCPU"); err != nil {
		return env.Action{}, err
	}
	if t.cfg.Utilization == ProcessedLoad {
		if err := finiteTaskFeature(obs, env.TaskThroughputRatio, "TaskThroughputRatio"); err != nil {
			return env.Action{}, err
		}
	}
	if t.n == 0 {
		t.n = n
		w := t.cfg.ScaleDownWindow
		t.hist = grow(t.hist, n*w)
		t.targets = grow(t.targets, n)
		t.last = make([]ThresholdDecision, n)
		t.shown = grow(t.shown, n*(t.cfg.MetricLagSteps+1))
	}
	if l := t.cfg.MetricLagSteps; l > 0 {
		// The allocations shown, newest at shownHead; before anything was
		// measured every row is the first one shown (the environment's
		// Reset allocation).
		rows := 1
		if t.filled == 0 {
			t.shownHead, rows = 0, l+1
		} else {
			t.shownHead = (t.shownHead + 1) % (l + 1)
		}
		for j := 0; j < rows; j++ {
			row := t.shown[((t.shownHead+j)%(l+1))*n:]
			for k := 0; k < n; k++ {
				row[k] = snapToGrid(obs.Task[k*env.TaskFeatures+env.TaskCPU]*t.cfg.MaxCPU, t.cfg.Quantum)
			}
		}
	}

	c := t.cfg
	w := c.ScaleDownWindow
	first := t.filled == 0
	filled := min(t.filled+1, w)
	for k := 0; k < n; k++ {
		row := obs.Task[k*env.TaskFeatures : (k+1)*env.TaskFeatures]
		cur := snapToGrid(row[env.TaskCPU]*c.MaxCPU, c.Quantum)
		u := math.Expm1(row[env.TaskDemandPerCPU]) // TaskDemandPerCPU = log(1 + ρ)
		if c.Utilization == ProcessedLoad {
			u *= row[env.TaskThroughputRatio]
		}
		at := cur // the allocation u was measured at
		if l := c.MetricLagSteps; l > 0 {
			if at = t.shown[((t.shownHead+1)%(l+1))*n+k]; cur > 0 {
				u *= at / cur
			}
		}
		rec := cur
		if math.Abs(u-c.Target) > c.Tolerance+bandSlack {
			rec = min(max(ceilToGrid(cur*u/c.Target, c.Quantum), c.MinCPU), c.MaxCPU)
		}
		ring := t.hist[k*w : (k+1)*w]
		ring[t.head] = rec
		wmax := rec
		for j := 1; j < filled; j++ {
			wmax = max(wmax, ring[(t.head-j+w)%w])
		}
		d := ThresholdDecision{Utilization: u, Current: cur, Recommendation: rec, WindowMax: wmax, Target: cur}
		switch {
		case rec > cur:
			d.Target, d.Reason = rec, ScaleUp
		case wmax < cur:
			d.Target, d.Reason = wmax, ScaleDown
		case rec < cur:
			d.Reason = Stabilized
		}
		if first {
			if x, ok := coldStart(d.Target, c.StartCPU, c.Quantum, c.MaxCPU); ok {
				d.Target, d.Reason = x, ColdStart
			}
		}
		t.targets[k] = d.Target
		t.last[k] = d
	}
	t.head = (t.head + 1) % w
	t.filled = filled
	return env.Action{Targets: t.targets[:n]}, nil
}

// Decisions returns a copy of the per-task explanation of the last Act
// (nil before the first Act of an episode).
func (t *Threshold) Decisions() []ThresholdDecision {
	if t.n == 0 {
		return nil
	}
	return append([]ThresholdDecision(nil), t.last...)
}

// bandSlack absorbs rounding in the band test, so that a utilization of
// exactly Target ± Tolerance counts as inside the band.
const bandSlack = 1e-12

// grow returns s resliced or reallocated to length n.
func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}
