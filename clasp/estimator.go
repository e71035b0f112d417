package clasp

import "math"

// SaturationConfig says when a worker counts as saturated (paper §4.1).
type SaturationConfig struct {
	// GrowSteps is the number of consecutive observations (seconds) in
	// which the worker's queue Q_w grew, ≥ 1. Default 3.
	GrowSteps int
	// GrowFrac is how much the queue must grow over those steps, as a
	// fraction of the executions in them, ≥ 0: a queue that creeps up by a
	// few requests while a pipeline fills is not a saturated worker.
	// Default 0.05.
	GrowFrac float64
	// DelayS is the queuing-delay threshold, seconds > 0: a worker whose
	// queue would take longer than this to serve at its current execution
	// rate, Q_w / Σ_o N_{w,o} > DelayS, is saturated. Default 0.5.
	DelayS float64
}

// DefaultSaturationConfig returns GrowSteps 3, GrowFrac 0.05, DelayS 0.5 s.
func DefaultSaturationConfig() SaturationConfig {
	return SaturationConfig{GrowSteps: 3, GrowFrac: 0.05, DelayS: 0.5}
}

func (c SaturationConfig) validate() error {
	if c.GrowSteps < 1 || !nonNegative(c.GrowFrac) || !positive(c.DelayS) {
		return invalidf("saturation: grow steps %d (want ≥ 1), growth fraction %v (want ≥ 0), delay %v s (want > 0)", c.GrowSteps, c.GrowFrac, c.DelayS)
	}
	return nil
}

// satHist is one worker's queue history: the last observation (t, q) and
// the current run of growing observations — its length, the queue before
// it (q0) and the executions during it.
type satHist struct {
	t, q     float64
	grow     int
	q0, exec float64
}

// saturation tracks queue growth per worker ID. The map is only indexed,
// never iterated into an output.
type saturation struct {
	cfg  SaturationConfig
	hist map[int]satHist
}

func newSaturation(cfg SaturationConfig) *saturation {
	return &saturation{cfg: cfg, hist: map[int]satHist{}}
}

// observe updates the queue histories and returns, per worker of ws, whether
// it is saturated. A worker is saturated when its queue grew in GrowSteps
// consecutive observations, by more than GrowFrac of the executions over
// them, or its queuing delay Q_w/Σ_o N_{w,o} exceeds
// DelayS. A worker that executes nothing is never a sample (Eq. 1 would
// read its budget as zero), nor is a worker on its first observation.
func (s *saturation) observe(now float64, ws []WorkerObs) []bool {
	out := make([]bool, len(ws))
	seen := make(map[int]bool, len(ws))
	for i, w := range ws {
		seen[w.ID] = true
		var rate float64
		for _, n := range w.Exec {
			rate += n
		}
		h, ok := s.hist[w.ID]
		switch {
		case !ok:
			h = satHist{t: now, q: w.Queue}
		case now > h.t:
			if w.Queue > h.q {
				if h.grow == 0 {
					h.q0, h.exec = h.q, 0
				}
				h.grow++
				h.exec += rate * (now - h.t)
			} else {
				h.grow = 0
			}
			h.t, h.q = now, w.Queue
		}
		s.hist[w.ID] = h
		if rate <= 0 || !ok {
			continue // idle, or first seen: its second may be a start-up transient
		}
		grew := h.grow >= s.cfg.GrowSteps && w.Queue-h.q0 > s.cfg.GrowFrac*h.exec
		out[i] = grew || w.Queue/rate > s.cfg.DelayS
	}
	for id := range s.hist { // forget departed workers; order irrelevant
		if !seen[id] {
			delete(s.hist, id)
		}
	}
	return out
}

// Sample is one saturated worker's second, the regression row of Eq. 1.
type Sample struct {
	ExecWork    float64 // Σ_o N_{w,o}·τ̄_{w,o}, µs/s
	LocalRate   float64 // R^l_w, requests/s
	RemoteRate  float64 // R^r_w, requests/s
	RemoteDests float64 // δ_w
}

// EstimatorConfig configures the online estimation of α, β, γ and W.
type EstimatorConfig struct {
	// Initial is the RLS starting point, which also fixes the scaling (see
	// Estimator). Default the paper's start for its end-to-end runs,
	// α₀ = 38.5 µs, β₀ = 275 µs, γ₀ = 51,500 µs, with W₀ = 850,000 µs/s
	// (DefaultCostModel); every field > 0.
	Initial CostModel
	// Fallback is the model used until MinSamples saturated samples were
	// absorbed. Default DefaultCostModel (the paper's measurements).
	Fallback CostModel
	// PriorVar is the initial covariance of each scaled parameter, > 0.
	// Default 100 (a standard deviation of 10× the initial value: weak).
	PriorVar float64
	// Forget is the RLS forgetting factor, in (0, 1]. Default 0.995
	// (memory of about 200 samples).
	Forget float64
	// SmoothW is the EWMA weight η of W̄ ← (1−η)·W̄ + η·Ŵ, in (0, 1].
	// Default 0.2.
	SmoothW float64
	// MinSamples is the number of samples before the estimates replace
	// Fallback, ≥ 1. Default 8.
	MinSamples int
	// Saturation says which workers are samples.
	Saturation SaturationConfig
}

// DefaultEstimatorConfig returns the defaults documented on the fields.
func DefaultEstimatorConfig() EstimatorConfig {
	return EstimatorConfig{
		Initial:    DefaultCostModel(),
		Fallback:   DefaultCostModel(),
		PriorVar:   100,
		Forget:     0.995,
		SmoothW:    0.2,
		MinSamples: 8,
		Saturation: DefaultSaturationConfig(),
	}
}

func (c EstimatorConfig) validate() error {
	i := c.Initial
	if !positive(i.Alpha) || !positive(i.Beta) || !positive(i.Gamma) || !positive(i.Budget) {
		return invalidf("estimator: initial model %+v, want every field > 0", i)
	}
	if err := c.Fallback.validate(); err != nil {
		return err
	}
	if !positive(c.PriorVar) || !(c.Forget > 0 && c.Forget <= 1) || !(c.SmoothW > 0 && c.SmoothW <= 1) || c.MinSamples < 1 {
		return invalidf("estimator: prior variance %v, forget %v, smoothing %v, min samples %d out of range", c.PriorVar, c.Forget, c.SmoothW, c.MinSamples)
	}
	return c.Saturation.validate()
}

// Estimator estimates the capacity model online (paper §4.1) by recursive
// least squares, pooled over the saturated workers. A saturated worker works
// at its budget, so Eq. 1 holds with equality and is linear in θ = (W, α,
// β, γ):
//
//	Σ_o N_{w,o}·τ̄_{w,o} = W − α·R^l_w − β·R^r_w − γ·δ_w.
//
// This levels form with an intercept W is equivalent to the paper's
// differenced Eq. 2 (consecutive saturated samples, W cancels) followed by
// Eq. 3 (W from the estimated α, β, γ) when W is constant; a test checks it.
//
// Scaling: the regression runs on θ̃_j = θ_j/θ₀_j, each parameter divided by
// its initial value θ₀ = (W₀, α₀, β₀, γ₀) (by default the paper's start
// (850,000, 38.5, 275, 51,500)), with
// response y/W₀ and regressors (1, −R^l·α₀, −R^r·β₀, −δ·γ₀)/W₀. All scaled
// parameters start at 1 with the same prior variance, and at typical rates
// (10³–10⁴ requests/s, a few destinations) every regressor is O(0.1–1), so
// the covariance stays well conditioned. RLS uses forgetting factor Forget;
// its covariance trace is capped at its initial value (no wind-up).
//
// W̄, the budget the planner packs to, is the EWMA of Ŵ with weight SmoothW,
// W̄ ← (1−η)·W̄ + η·Ŵ, updated once per observation that has samples and
// started at Fallback's budget, so a few early, poorly excited samples
// cannot swing it. Until MinSamples samples have been absorbed the
// estimator reports Fallback.
//
// Identifiability: the four parameters are recovered only from samples
// whose request mixes (R^l, R^r, δ) differ. Along directions the samples do
// not excite, RLS keeps its prior (the initial values); a single bottleneck
// worker saturating with the same mix every second pins down one linear
// combination only.
type Estimator struct {
	cfg     EstimatorConfig
	sat     *saturation
	theta   [4]float64
	p       [4][4]float64
	n       int
	wBar    float64
	started bool
}

// NewEstimator returns an Estimator or an error for a bad configuration.
func NewEstimator(cfg EstimatorConfig) (*Estimator, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Estimator{cfg: cfg}
	e.Reset()
	return e, nil
}

// Reset forgets every sample and queue history.
func (e *Estimator) Reset() {
	e.sat = newSaturation(e.cfg.Saturation)
	e.theta = [4]float64{1, 1, 1, 1}
	e.p = [4][4]float64{}
	for i := range 4 {
		e.p[i][i] = e.cfg.PriorVar
	}
	e.n, e.wBar, e.started = 0, e.cfg.Fallback.Budget, false
}

// Observe detects the saturated workers of ob, absorbs each as a Sample (in
// worker order) and returns how many it absorbed. The observation must be
// valid.
func (e *Estimator) Observe(now float64, ob *Observation) int {
	sat := e.sat.observe(now, ob.Workers)
	k := 0
	for i, w := range ob.Workers {
		if !sat[i] {
			continue
		}
		var work float64
		for o := range w.Exec {
			work += w.Exec[o] * at(w.ExecUS, o)
		}
		e.update(Sample{ExecWork: work, LocalRate: w.LocalRate, RemoteRate: w.RemoteRate, RemoteDests: w.RemoteDests})
		k++
	}
	if k > 0 {
		e.smooth()
	}
	return k
}

// Absorb adds samples directly (all taken as saturated) and updates W̄ once.
func (e *Estimator) Absorb(samples ...Sample) error {
	for _, s := range samples {
		if !nonNegative(s.ExecWork) || !nonNegative(s.LocalRate) || !nonNegative(s.RemoteRate) || !nonNegative(s.RemoteDests) {
			return invalidf("sample %+v has a negative or non-finite field", s)
		}
	}
	for _, s := range samples {
		e.update(s)
	}
	if len(samples) > 0 {
		e.smooth()
	}
	return nil
}

func (e *Estimator) update(s Sample) {
	i := e.cfg.Initial
	x := [4]float64{1, -s.LocalRate * i.Alpha / i.Budget, -s.RemoteRate * i.Beta / i.Budget, -s.RemoteDests * i.Gamma / i.Budget}
	y := s.ExecWork / i.Budget
	lam := e.cfg.Forget
	var px [4]float64
	for r := range 4 {
		for c := range 4 {
			px[r] += e.p[r][c] * x[c]
		}
	}
	den := lam
	for r := range 4 {
		den += x[r] * px[r]
	}
	var pred float64
	for r := range 4 {
		pred += x[r] * e.theta[r]
	}
	for r := range 4 {
		e.theta[r] += px[r] / den * (y - pred)
	}
	var tr float64
	for r := range 4 {
		for c := range 4 {
			e.p[r][c] = (e.p[r][c] - px[r]*px[c]/den) / lam
		}
	}
	for r := range 4 {
		for c := r + 1; c < 4; c++ {
			m := (e.p[r][c] + e.p[c][r]) / 2
			e.p[r][c], e.p[c][r] = m, m
		}
		tr += e.p[r][r]
	}
	if limit := 4 * e.cfg.PriorVar; tr > limit {
		for r := range 4 {
			for c := range 4 {
				e.p[r][c] *= limit / tr
			}
		}
	}
	e.n++
}

func (e *Estimator) smooth() {
	e.wBar = (1-e.cfg.SmoothW)*e.wBar + e.cfg.SmoothW*e.raw().Budget
	e.started = e.n >= e.cfg.MinSamples
}

// raw returns the current RLS estimate in model units (unclamped).
func (e *Estimator) raw() CostModel {
	i := e.cfg.Initial
	return CostModel{Budget: e.theta[0] * i.Budget, Alpha: e.theta[1] * i.Alpha, Beta: e.theta[2] * i.Beta, Gamma: e.theta[3] * i.Gamma}
}

// Raw returns the current RLS estimate of (α, β, γ, W) itself, unclamped and
// unsmoothed, even before MinSamples.
func (e *Estimator) Raw() CostModel { return e.raw() }

// Samples is the number of samples absorbed since the last Reset.
func (e *Estimator) Samples() int { return e.n }

// Model returns the model the planner uses: Fallback before MinSamples
// samples; afterwards the estimates α̂, β̂, γ̂ (clamped at 0) with budget W̄
// (falling back to Fallback's budget should W̄ not be positive).
func (e *Estimator) Model() CostModel {
	if !e.started {
		return e.cfg.Fallback
	}
	r := e.raw()
	m := CostModel{Alpha: math.Max(0, r.Alpha), Beta: math.Max(0, r.Beta), Gamma: math.Max(0, r.Gamma), Budget: e.wBar}
	if !positive(m.Budget) {
		m.Budget = e.cfg.Fallback.Budget
	}
	return m
}
