package vrebalance

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"streamscale/agents"
	"streamscale/rng"

	"streamscale/bo"
	"streamscale/env"
)

// Config configures the controller. Start from
// DefaultConfig; New checks every field and does not
// substitute defaults for zero values.
type Config struct {
	// Interval is the evaluation period and measurement window, in steps
	// (simulated seconds), ≥ 1: the first allocation is held Interval
	// steps, then the optimizer is consulted once every Interval steps with
	// the objective measured over the Interval steps just ended. Default 60
	// (one simulated minute, VRebalance's period).
	Interval int
	// ExplorationEvals is each tier's exploration budget: while a tier's
	// optimizer holds fewer observations than this, a new allocation is the
	// optimizer's suggestion; afterwards it is the tier's best-so-far
	// allocation. ≥ 1. The EdgeStreamPy paper gives VRebalance "the same
	// exploration window of 5 to 16 minutes" with one evaluation a minute;
	// the original VRebalance code could not be consulted here (it is not
	// among the public material this project can read), so both readings
	// are options: Default 5, the window's lower end (BO's five random
	// initial points, then exploitation), the reading under which the
	// baseline does best (never tune a baseline down); 16, the upper end
	// per tier, is reported beside it in the README.
	ExplorationEvals int
	// HoldBandMS: no new point is proposed (the allocation is kept and the
	// window is not told to the optimizer) while the window's p95 is within
	// [SLO − HoldBandMS, SLO], milliseconds ≥ 0. Default 50, VRebalance's
	// "within 50 ms of the target".
	HoldBandMS float64
	// Objective is the latency term's form: ObjectiveSquared (the default,
	// the paper's description: the squared relative error of p95 against
	// the SLO, symmetric, so a mildly violating window can score better
	// than a compliant one at the network floor) or ObjectiveViolation
	// (compliant windows score 0, violating ones CPUWeight + 1 + the
	// squared relative excess: no violating window beats a compliant one).
	Objective string
	// CPUWeight w ≥ 0 of the CPU term of the objective (see VRebalance).
	// Default 1: the CPU term then spans [0, 1], the same range as the
	// latency term over SLO-meeting windows.
	CPUWeight float64
	// InitialCPU is every task's allocation for the first Interval steps,
	// millicores, on the Quantum grid from the scenario's MinCPU. Default
	// 500.
	InitialCPU float64
	// Quantum is the grid of candidate allocations, millicores > 0:
	// candidates are MinCPU + k·Quantum ≤ MaxCPU. Default 50.
	Quantum float64
	// TierBounds, if not empty, are the ascending sink-throughput
	// boundaries between workload tiers, messages/s: a window whose mean
	// throughput x satisfies TierBounds[i−1] ≤ x < TierBounds[i] is in
	// tier i. Default nil (use TierQuantiles).
	TierBounds []float64
	// TierQuantiles, used when TierBounds is empty, places the boundaries
	// at these quantiles (ascending, in (0, 1)) of the mean throughputs of
	// the windows measured so far in the episode (running statistics: the
	// controller never reads the workload it is evaluated on). Boundaries
	// that coincide or are ≤ 0 are dropped; an empty list gives one tier.
	// Default {1/3, 2/3}: three tiers, equally frequent so far.
	TierQuantiles []float64
	// BO configures each tier's optimizer. Default bo.DefaultConfig():
	// GP-Hedge, 5 random initial points, as VRebalance's scikit-optimize
	// setup.
	BO bo.Config
}

// Objective forms (Config.Objective).
const (
	ObjectiveSquared   = "squared"
	ObjectiveViolation = "violation"
)

// DefaultConfig returns the default Config.
func DefaultConfig() Config {
	return Config{
		Interval:         60,
		ExplorationEvals: 5,
		Objective:        ObjectiveSquared,
		HoldBandMS:       50,
		CPUWeight:        1,
		InitialCPU:       500,
		Quantum:          50,
		TierQuantiles:    []float64{1.0 / 3, 2.0 / 3},
		BO:               bo.DefaultConfig(),
	}
}

func (c Config) validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case c.Interval < 1:
		return fmt.Errorf("agents: vrebalance interval %d steps < 1", c.Interval)
	case c.ExplorationEvals < 1:
		return fmt.Errorf("agents: vrebalance exploration budget %d evaluations < 1", c.ExplorationEvals)
	case c.Objective != ObjectiveSquared && c.Objective != ObjectiveViolation:
		return fmt.Errorf("agents: vrebalance objective %q, want %q or %q", c.Objective, ObjectiveSquared, ObjectiveViolation)
	case !(c.HoldBandMS >= 0) || !finite(c.HoldBandMS):
		return fmt.Errorf("agents: vrebalance hold band %v ms, want a finite value ≥ 0", c.HoldBandMS)
	case !(c.CPUWeight >= 0) || !finite(c.CPUWeight):
		return fmt.Errorf("agents: vrebalance CPU weight %v, want a finite value ≥ 0", c.CPUWeight)
	case !(c.Quantum > 0) || !finite(c.Quantum):
		return fmt.Errorf("agents: vrebalance quantum %v millicores, want a positive number", c.Quantum)
	case !finite(c.InitialCPU):
		return fmt.Errorf("agents: vrebalance initial CPU %v millicores", c.InitialCPU)
	}
	for i, b := range c.TierBounds {
		if !finite(b) || (i > 0 && !(b > c.TierBounds[i-1])) {
			return fmt.Errorf("agents: vrebalance tier bounds %v not finite and strictly ascending", c.TierBounds)
		}
	}
	for i, q := range c.TierQuantiles {
		if !(q > 0 && q < 1) || (i > 0 && !(q > c.TierQuantiles[i-1])) {
			return fmt.Errorf("agents: vrebalance tier quantiles %v not strictly ascending in (0, 1)", c.TierQuantiles)
		}
	}
	return nil
}

// DecisionKind is what VRebalance did at an evaluation.
type DecisionKind int

const (
	// Explore: the window was told to the tier's optimizer and its
	// suggestion (uniform random for the first BO.NInitialPoints, then
	// GP-Hedge) becomes the allocation.
	Explore DecisionKind = iota
	// Exploit: the tier's exploration budget is spent (or its optimizer
	// failed); the window was told and the tier's best-so-far allocation
	// becomes the allocation.
	Exploit
	// Keep: the window's p95 was within the hold band; nothing was told
	// and the allocation is kept.
	Keep
)

func (k DecisionKind) String() string {
	switch k {
	case Explore:
		return "explore"
	case Exploit:
		return "exploit"
	case Keep:
		return "keep"
	}
	return fmt.Sprintf("DecisionKind(%d)", int(k))
}

// WindowScore is the measurement of one evaluation window and its
// objective, term by term.
type WindowScore struct {
	Steps      int     // steps in the window
	P95MS      float64 // mean per-step p95 latency, ms (each step's p95 clipped to 10·SLO by the observation)
	CPU        float64 // mean total allocation, millicores
	Throughput float64 // mean sink throughput, messages/s
	Latency    float64 // ((P95MS − SLO)/SLO)²
	CPUCost    float64 // CPUWeight·(CPU − n·MinCPU)/(n·(MaxCPU − MinCPU))
	Objective  float64 // Latency + CPUCost
}

// Decision records one evaluation of VRebalance, for explanation.
type Decision struct {
	Step       int          // steps since Reset at which it was taken (a multiple of Interval)
	Tier       int          // tier of the measured window, whose optimizer was consulted
	Kind       DecisionKind // what was done
	Random     bool         // Explore with one of the optimizer's random initial points (no GP yet)
	Score      WindowScore  // the window just measured
	Allocation []float64    // allocation for the next window, millicores
	Err        string       // the optimizer's error when it failed to suggest ("" if none)
}

// TierStats are one tier's diagnostics.
type TierStats struct {
	Low, High      float64   // sink-throughput range [Low, High), messages/s (0 and +Inf at the ends)
	Evaluations    int       // windows told to the tier's optimizer
	Explores       int       // decisions of kind Explore
	RandomPoints   int       // of which random initial points (the rest are GP-Hedge suggestions)
	Exploits       int       // decisions of kind Exploit
	Keeps          int       // decisions of kind Keep
	SuggestErrors  int       // suggestions that failed (fell back to Exploit)
	BestObjective  float64   // smallest objective told, NaN if none
	BestAllocation []float64 // allocation that achieved it, nil if none
}

// Controller is the VRebalance baseline (Kang et al.: Bayesian optimization,
// with scikit-optimize, of the CPU allocation of the tasks of an Apache
// Storm topology), reimplemented for the simulator as the EdgeStreamPy
// paper (arXiv 2609.12975) did; where that paper is silent this follows the
// original code and the choices are documented here and on
// Config. It searches the allocation
// vector x ∈ {MinCPU + k·Quantum}^n (one CPU value per task) with a
// Gaussian-process Bayesian optimizer (package bo: Matérn-5/2 GP,
// GP-Hedge, 5 random initial points) that minimizes, per measured window,
//
//	f(x) = ((p95 − SLO)/SLO)² + w·(C − n·MinCPU)/(n·(MaxCPU − MinCPU)),
//
// p95 and C the window means of the per-step p95 latency and total
// allocation, w = CPUWeight. The first term is VRebalance's squared
// relative error of tail latency against its target; it is symmetric, so
// it also penalizes latency far below the SLO (over-provisioning), and it
// lies in [0, 1] over SLO-meeting windows. The second term is the CPU in
// use, normalized to [0, w]. Removing CPU from an SLO-meeting allocation
// raises its p95 toward the SLO, lowering both terms, so among
// SLO-meeting allocations of similar latency the one with less CPU wins;
// w = 1 weights the whole CPU range like the whole SLO-meeting latency
// range, and a violation by more than the SLO (p95 > 2·SLO) outweighs any
// CPU saving.
//
// Schedule. Every task starts at InitialCPU (500 millicores), held for
// Interval (60) steps. At every step that is a multiple of Interval the
// window just ended is scored and:
//
//   - its mean sink throughput selects a workload tier (TierBounds, by
//     default the tertiles of the window throughputs measured so far);
//     each tier has
//     its own optimizer and history (VRebalance keeps one model per
//     workload level, since the best allocation depends on the load);
//   - if the window's p95 is within [SLO − HoldBandMS, SLO] the
//     allocation is kept and the optimizer is not told (VRebalance
//     proposed no new point while every application was within 50 ms of
//     its target);
//   - otherwise the window is told to the tier's optimizer, and the next
//     allocation is its suggestion while the tier has fewer than
//     ExplorationEvals observations, then the tier's best-so-far. The
//     initial allocation's window is the first observation, so 4 random
//     points complete BO's 5 initial points before the GP suggests.
//
// The tier measured is also the tier assumed for the next window (the
// load changes slowly compared with a window). Throughput, not the offered
// rate, selects the tier, as in VRebalance: an overloaded window is
// assigned the tier of what it delivered.
//
// Feasibility. A suggestion may over-commit a server. On a server whose
// tasks ask for more than its capacity K, each task keeps MinCPU and the
// rest, K − m·MinCPU for its m tasks, is shared in proportion to the
// demand above the minimum, rounded down to the grid:
//
//	a_k = MinCPU + ⌊(x_k − MinCPU)·(K − m·MinCPU)/Σ_j (x_j − MinCPU)⌋_Quantum.
//
// The emitted Targets are therefore feasible and the environment applies
// them unchanged; the optimizer is told the applied allocation a, which is
// what was measured.
//
// Randomness comes only from the Reset seed: tier i's optimizer draws from
// rng.Source(seed, rng.AgentsVRebalanceTier+"<i>"). Cost: a GP suggestion
// takes about 10–30 ms (bo.BenchmarkSuggest), made at most once per
// Interval; a 3,600-step episode makes about 30 (BenchmarkEpisode).
type Controller struct {
	cfg    Config
	n      int
	slo    float64 // ms
	minCPU float64
	maxCPU float64
	host   []int     // server of each task
	cap    []float64 // CPU capacity of each server, millicores
	bounds []float64 // tier boundaries in use, messages/s
	fixed  bool      // bounds from Config.TierBounds (else running quantiles)
	dims   []bo.Dim

	// Episode state.
	started   bool
	calls     int       // Act calls since Reset
	cur       []float64 // allocation in force
	out       []float64 // returned Targets
	win       window
	tiers     []tier
	decisions []Decision
	scratch   []float64 // per-server sums
	seen      []float64 // mean throughput of every window measured (running tiers)
}

type window struct {
	steps          int
	p95, cpu, thrp float64 // sums
}

type tier struct {
	opt   *bo.Optimizer
	stats TierStats
}

// New returns a VRebalance controller for scenario, whose
// placement, server capacities, CPU bounds, SLO and (for the default tier
// boundaries) workload it uses.
func New(cfg Config, scenario env.Config) (*Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e, err := env.New(scenario) // validates and fills the defaults
	if err != nil {
		return nil, fmt.Errorf("agents: vrebalance: %w", err)
	}
	sc := e.Config()
	v := &Controller{
		cfg:    cfg,
		n:      len(sc.App.Tasks),
		slo:    sc.App.SLOMS,
		minCPU: sc.MinCPU,
		maxCPU: sc.MaxCPU,
		host:   slices.Clone(sc.Placement),
		cap:    make([]float64, len(sc.Servers)),
	}
	v.cfg.TierBounds = slices.Clone(cfg.TierBounds)
	v.cfg.TierQuantiles = slices.Clone(cfg.TierQuantiles)
	for i, s := range sc.Servers {
		v.cap[i] = s.CPU
	}
	if !(v.maxCPU-v.minCPU >= cfg.Quantum) {
		return nil, fmt.Errorf("agents: vrebalance: CPU range [%v, %v] narrower than the quantum %v", v.minCPU, v.maxCPU, cfg.Quantum)
	}
	if k := (cfg.InitialCPU - v.minCPU) / cfg.Quantum; cfg.InitialCPU < v.minCPU || cfg.InitialCPU > v.maxCPU || math.Abs(k-math.Round(k)) > 1e-9 {
		return nil, fmt.Errorf("agents: vrebalance: initial CPU %v not on the grid %v + k·%v ≤ %v", cfg.InitialCPU, v.minCPU, cfg.Quantum, v.maxCPU)
	}
	v.scratch = make([]float64, len(v.cap))
	v.cur = make([]float64, v.n)
	for k := range v.cur {
		v.cur[k] = cfg.InitialCPU
	}
	if v.share(v.cur, v.cur) {
		return nil, fmt.Errorf("agents: vrebalance: initial allocation %v per task exceeds a server's capacity", cfg.InitialCPU)
	}
	v.out = make([]float64, v.n)
	v.dims = make([]bo.Dim, v.n)
	for k := range v.dims {
		v.dims[k] = bo.Dim{Low: v.minCPU, High: v.maxCPU, Step: cfg.Quantum}
	}
	v.fixed = len(cfg.TierBounds) > 0
	if v.fixed {
		v.bounds = slices.Clone(cfg.TierBounds)
	}
	// Check the optimizer settings once, so that Reset cannot fail on them.
	if _, err := bo.New(v.dims, cfg.BO, rng.Source(0, rng.AgentsVRebalanceCheck)); err != nil {
		return nil, fmt.Errorf("agents: vrebalance: %w", err)
	}
	return v, nil
}

// quantileBounds returns the boundaries at quantiles qs (linear
// interpolation between order statistics at h = q·(n − 1), Hyndman and
// Fan's definition 7, as NumPy's default) of xs, dropping boundaries ≤ 0
// or not above the previous one. Not gonum's stat.Quantile, whose
// LinInterp is definition 4 (h = q·n) and Empirical the nearest rank:
// either would move the tiers (and the policies' results); one sort
// serves every q here, too. A non-finite or negative value counts as
// 0. xs is not modified.
func quantileBounds(xs []float64, qs []float64) []float64 {
	if len(qs) == 0 || len(xs) == 0 {
		return nil
	}
	r := make([]float64, len(xs))
	for t, x := range xs {
		if !(x >= 0) || math.IsInf(x, 0) {
			x = 0
		}
		r[t] = x
	}
	slices.Sort(r)
	var b []float64
	for _, q := range qs {
		pos := q * float64(len(r)-1)
		i := int(pos)
		x := r[i]
		if i+1 < len(r) {
			x += (pos - float64(i)) * (r[i+1] - r[i])
		}
		if x > 0 && (len(b) == 0 || x > b[len(b)-1]) {
			b = append(b, x)
		}
	}
	return b
}

// Config returns the configuration.
func (v *Controller) Config() Config {
	c := v.cfg
	c.TierBounds = slices.Clone(c.TierBounds)
	c.TierQuantiles = slices.Clone(c.TierQuantiles)
	return c
}

// TierBounds returns the sink-throughput boundaries between tiers in use,
// messages/s (at most one fewer than the tiers; with running quantiles,
// those of the windows measured so far).
func (v *Controller) TierBounds() []float64 { return slices.Clone(v.bounds) }

// Reset implements agents.Controller: every task back at InitialCPU, fresh
// optimizers (seeded from seed) and empty histories for every tier.
func (v *Controller) Reset(seed uint64) error {
	n := len(v.cfg.TierQuantiles) + 1
	if v.fixed {
		n = len(v.bounds) + 1
	} else {
		v.bounds = nil
	}
	v.seen = v.seen[:0]
	tiers := make([]tier, n)
	for i := range tiers {
		opt, err := bo.New(v.dims, v.cfg.BO, rng.Source(seed, rng.AgentsVRebalanceTier+strconv.Itoa(i)))
		if err != nil {
			return fmt.Errorf("agents: vrebalance: %w", err)
		}
		tiers[i] = tier{opt: opt, stats: TierStats{BestObjective: math.NaN()}}
	}
	v.tiers = tiers
	v.tierRanges()
	for k := range v.cur {
		v.cur[k] = v.cfg.InitialCPU
	}
	v.calls, v.win, v.decisions, v.started = 0, window{}, nil, true
	return nil
}

// Act implements agents.Controller. It returns the allocation in force, which
// changes only at steps that are multiples of Interval.
func (v *Controller) Act(obs env.Observation) (env.Action, error) {
	if !v.started {
		return env.Action{}, errors.New("agents: vrebalance: Act before Reset")
	}
	if _, err := agents.TaskRows(obs, v.n); err != nil {
		return env.Action{}, err
	}
	for _, f := range []struct {
		i    int
		name string
	}{{env.AppP95Latency, "AppP95Latency"}, {env.AppMeanCPU, "AppMeanCPU"}, {env.AppThroughput, "AppThroughput"}} {
		if err := agents.FiniteAppFeature(obs, f.i, f.name); err != nil {
			return env.Action{}, err
		}
	}
	if v.calls > 0 { // the observation after Reset measures nothing
		v.win.steps++
		v.win.p95 += obs.App[env.AppP95Latency] * v.slo
		v.win.cpu += obs.App[env.AppMeanCPU] * float64(v.n) * v.maxCPU
		v.win.thrp += math.Expm1(obs.App[env.AppThroughput])
		if v.calls%v.cfg.Interval == 0 {
			v.evaluate()
		}
	}
	v.calls++
	copy(v.out, v.cur)
	return env.Action{Targets: v.out}, nil
}

// score returns the measurement and objective of the current window.
func (v *Controller) score() WindowScore {
	m := float64(v.win.steps)
	s := WindowScore{Steps: v.win.steps, P95MS: v.win.p95 / m, CPU: v.win.cpu / m, Throughput: v.win.thrp / m}
	rel := (s.P95MS - v.slo) / v.slo
	switch {
	case v.cfg.Objective == ObjectiveViolation && rel <= 0:
		s.Latency = 0
	case v.cfg.Objective == ObjectiveViolation:
		s.Latency = v.cfg.CPUWeight + 1 + rel*rel
	default:
		s.Latency = rel * rel
	}
	n := float64(v.n)
	s.CPUCost = v.cfg.CPUWeight * max(s.CPU-n*v.minCPU, 0) / (n * (v.maxCPU - v.minCPU))
	s.Objective = s.Latency + s.CPUCost
	return s
}

// tierRanges sets every tier's throughput range from the bounds in use.
func (v *Controller) tierRanges() {
	for i := range v.tiers {
		lo, hi := 0.0, math.Inf(1)
		if i > 0 && i-1 < len(v.bounds) {
			lo = v.bounds[i-1]
		}
		if i < len(v.bounds) {
			hi = v.bounds[i]
		}
		if i > len(v.bounds) { // bounds coincided: an unused tier
			lo = hi
		}
		v.tiers[i].stats.Low, v.tiers[i].stats.High = lo, hi
	}
}

// tierOf returns the tier of a sink throughput, messages/s.
func (v *Controller) tierOf(thrp float64) int {
	i := 0
	for i < len(v.bounds) && thrp >= v.bounds[i] {
		i++
	}
	return i
}

// evaluate scores the window just ended and chooses the next allocation.
func (v *Controller) evaluate() {
	s := v.score()
	v.win = window{}
	if !v.fixed {
		// Running tiers: the quantiles of the windows measured so far,
		// this one included.
		v.seen = append(v.seen, s.Throughput)
		v.bounds = quantileBounds(v.seen, v.cfg.TierQuantiles)
		v.tierRanges()
	}
	ti := v.tierOf(s.Throughput)
	t := &v.tiers[ti]
	d := Decision{Step: v.calls, Tier: ti, Score: s}

	if s.P95MS >= v.slo-v.cfg.HoldBandMS && s.P95MS <= v.slo {
		d.Kind = Keep
		t.stats.Keeps++
	} else {
		// cur lies in the box (it is clipped and shared), so Observe
		// cannot fail on it; objectives are finite (p95 is clipped).
		if err := t.opt.Observe(v.cur, s.Objective); err == nil {
			t.stats.Evaluations++
		}
		if x, y, ok := t.opt.Best(); ok {
			t.stats.BestObjective, t.stats.BestAllocation = y, x
		}
		d.Kind = Exploit
		if t.opt.Len() < v.cfg.ExplorationEvals {
			d.Random = t.opt.Len() < v.cfg.BO.NInitialPoints
			x, err := t.opt.Suggest()
			if err == nil {
				d.Kind = Explore
				v.share(x, v.cur)
			} else {
				d.Random = false
				d.Err = err.Error()
				t.stats.SuggestErrors++
			}
		}
		if d.Kind == Exploit {
			if x, _, ok := t.opt.Best(); ok {
				copy(v.cur, x)
			}
		}
		if d.Kind == Explore {
			t.stats.Explores++
			if d.Random {
				t.stats.RandomPoints++
			}
		} else {
			t.stats.Exploits++
		}
	}
	d.Allocation = slices.Clone(v.cur)
	v.decisions = append(v.decisions, d)
}

// share writes into a the allocation x made feasible: clipped to
// [MinCPU, MaxCPU] and, on each over-committed server, every task at
// MinCPU plus a share of the remaining capacity in proportion to its
// demand above MinCPU, rounded down to the grid (see VRebalance). It
// reports whether any server was over-committed. a may be x.
func (v *Controller) share(x, a []float64) bool {
	lo, q := v.minCPU, v.cfg.Quantum
	total := v.scratch
	clear(total)
	for k := range x {
		a[k] = min(max(x[k], lo), v.maxCPU)
		total[v.host[k]] += a[k]
	}
	over := false
	for s, c := range v.cap {
		if total[s] <= c {
			continue
		}
		over = true
		m, excess := 0.0, 0.0
		for k, h := range v.host {
			if h == s {
				m++
				excess += a[k] - lo
			}
		}
		rest := max(c-m*lo, 0)
		for k, h := range v.host {
			if h == s {
				a[k] = lo + math.Floor((a[k]-lo)*rest/excess/q+1e-9)*q
			}
		}
	}
	return over
}

// Tiers returns a copy of every tier's diagnostics.
func (v *Controller) Tiers() []TierStats {
	out := make([]TierStats, len(v.tiers))
	for i, t := range v.tiers {
		out[i] = t.stats
		out[i].BestAllocation = slices.Clone(t.stats.BestAllocation)
	}
	return out
}

// Decisions returns a copy of the evaluations of the current episode, in
// order.
func (v *Controller) Decisions() []Decision {
	out := make([]Decision, len(v.decisions))
	for i, d := range v.decisions {
		out[i] = d
		out[i].Allocation = slices.Clone(d.Allocation)
	}
	return out
}
