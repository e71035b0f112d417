package bo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// Dim is one dimension of the search box, in the caller's units.
type Dim struct {
	Low, High float64 // inclusive bounds, Low < High
	Step      float64 // grid step from Low; suggestions are Low + k·Step ≤ High; 0 = continuous
}

// Config holds the optimizer settings. Start from DefaultConfig; New checks
// every field and does not substitute defaults for zero values.
type Config struct {
	NInitialPoints int     // observations before the GP is used; earlier suggestions are uniform random; default 5 (skopt, VRebalance)
	Acquisition    string  // GPHedge, EI, PI or LCB; default GPHedge
	Xi             float64 // EI and PI improvement margin ξ ≥ 0, in units of y; default 0.01 (skopt)
	Kappa          float64 // LCB exploration weight κ ≥ 0; default 1.96 (skopt)
	Eta            float64 // GP-Hedge softmax inverse temperature η > 0, gains in units of y; default 1 (skopt)
	NCandidates    int     // uniform random candidates at which the acquisition is evaluated; default 2000
	NPolish        int     // best candidates per acquisition refined by L-BFGS; default 3
	NRestarts      int     // random restarts of the hyperparameter fit, besides a warm start from the previous fit; default 2
	Noise          float64 // initial GP noise variance relative to the variance of y, in (0, 1]; fitted afterwards; default 0.01
}

// DefaultConfig returns the default Config.
func DefaultConfig() Config {
	return Config{
		NInitialPoints: 5,
		Acquisition:    GPHedge,
		Xi:             DefaultXi,
		Kappa:          DefaultKappa,
		Eta:            DefaultEta,
		NCandidates:    2000,
		NPolish:        3,
		NRestarts:      2,
		Noise:          0.01,
	}
}

func (c Config) validate() error {
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
	switch {
	case c.NInitialPoints < 1:
		return fmt.Errorf("bo: NInitialPoints %d < 1", c.NInitialPoints)
	case c.Acquisition != GPHedge && c.Acquisition != EI && c.Acquisition != PI && c.Acquisition != LCB:
		return fmt.Errorf("bo: unknown acquisition %q", c.Acquisition)
	case bad(c.Xi) || c.Xi < 0:
		return fmt.Errorf("bo: Xi %v not a finite value ≥ 0", c.Xi)
	case bad(c.Kappa) || c.Kappa < 0:
		return fmt.Errorf("bo: Kappa %v not a finite value ≥ 0", c.Kappa)
	case bad(c.Eta) || c.Eta <= 0:
		return fmt.Errorf("bo: Eta %v not a finite value > 0", c.Eta)
	case c.NCandidates < 1:
		return fmt.Errorf("bo: NCandidates %d < 1", c.NCandidates)
	case c.NPolish < 0:
		return fmt.Errorf("bo: NPolish %d < 0", c.NPolish)
	case c.NRestarts < 0:
		return fmt.Errorf("bo: NRestarts %d < 0", c.NRestarts)
	case bad(c.Noise) || c.Noise <= 0 || c.Noise > 1:
		return fmt.Errorf("bo: Noise %v not in (0, 1]", c.Noise)
	}
	return nil
}

// Optimizer minimizes a black-box function over a box by Bayesian
// optimization with an ask/tell interface: Suggest a point, evaluate it,
// Observe the result. It is not safe for concurrent use.
type Optimizer struct {
	dims []Dim
	cfg  Config
	src  rand.Source
	rng  *rand.Rand
	gp   *GP

	x    [][]float64 // observed points, caller's units
	y    []float64
	best int // index of the smallest y, −1 if none

	next []float64 // cached suggestion, caller's units; nil after Observe

	// GP-Hedge state: cumulative gains of EI, PI, LCB and their last
	// proposals (unit cube), awaiting the next GP update.
	gains   [3]float64
	pending [][]float64
}

// New returns an Optimizer over the box dims. All randomness is drawn from
// src, so the same src state gives the same sequence of suggestions for the
// same observations.
func New(dims []Dim, cfg Config, src rand.Source) (*Optimizer, error) {
	if len(dims) == 0 {
		return nil, errors.New("bo: no dimensions")
	}
	for i, d := range dims {
		switch {
		case math.IsNaN(d.Low) || math.IsInf(d.Low, 0) || math.IsNaN(d.High) || math.IsInf(d.High, 0):
			return nil, fmt.Errorf("bo: dim %d: bounds [%v, %v] not finite", i, d.Low, d.High)
		case d.Low >= d.High:
			return nil, fmt.Errorf("bo: dim %d: low %v >= high %v", i, d.Low, d.High)
		case math.IsNaN(d.Step) || math.IsInf(d.Step, 0) || d.Step < 0:
			return nil, fmt.Errorf("bo: dim %d: step %v not a finite value >= 0", i, d.Step)
		case d.Step > d.High-d.Low:
			return nil, fmt.Errorf("bo: dim %d: step %v > range %v", i, d.Step, d.High-d.Low)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("bo: nil source")
	}
	return &Optimizer{
		dims: slices.Clone(dims),
		cfg:  cfg,
		src:  src,
		rng:  rand.New(src),
		gp:   NewGP(len(dims), cfg.Noise),
		best: -1,
	}, nil
}

// Len returns the number of observations.
func (o *Optimizer) Len() int { return len(o.y) }

// Best returns a copy of the observed point with the smallest y (the first
// one on ties), and false if there are no observations.
func (o *Optimizer) Best() (x []float64, y float64, ok bool) {
	if o.best < 0 {
		return nil, 0, false
	}
	return slices.Clone(o.x[o.best]), o.y[o.best], true
}

// Observe records that the objective at x is y. It rejects x of the wrong
// length, non-finite values and x outside the box with an error and no change
// of state. x need not be a suggested point nor lie on the grid.
func (o *Optimizer) Observe(x []float64, y float64) error {
	if len(x) != len(o.dims) {
		return fmt.Errorf("bo: x has %d entries, want %d", len(x), len(o.dims))
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return fmt.Errorf("bo: y is %v", y)
	}
	for i, v := range x {
		if d := o.dims[i]; !(v >= d.Low && v <= d.High) {
			return fmt.Errorf("bo: x[%d] = %v outside [%v, %v]", i, v, d.Low, d.High)
		}
	}
	o.x = append(o.x, slices.Clone(x))
	o.y = append(o.y, y)
	if o.best < 0 || y < o.y[o.best] {
		o.best = len(o.y) - 1
	}
	o.next = nil
	return nil
}

// Suggest returns the next point to evaluate, in the caller's units and on
// the grid of quantized dimensions. Until Observe is called again it returns
// the same point. Before NInitialPoints observations the point is uniform
// random; afterwards the GP is fitted (hyperparameters by maximum marginal
// likelihood) and the acquisition function is maximized.
//
// The acquisition is maximized by evaluating it at NCandidates uniform random
// points (snapped to the grid) and refining the NPolish best by L-BFGS with the
// analytic gradient, clamped to the box and then snapped; the best of all is
// taken. With GPHedge each of EI, PI and LCB proposes its maximizer and one is
// chosen with probability softmax(η·gains) (Hoffman, Brochu & de Freitas
// 2011, Algorithm 2); after the next GP update each gain is increased by the
// negated posterior mean, in units of y, at that acquisition's proposal.
func (o *Optimizer) Suggest() ([]float64, error) {
	if o.next == nil {
		u, err := o.propose()
		if err != nil {
			return nil, err
		}
		o.next = o.fromUnit(u)
	}
	return slices.Clone(o.next), nil
}

// propose returns the next point in the unit cube.
func (o *Optimizer) propose() ([]float64, error) {
	d := len(o.dims)
	if len(o.y) < o.cfg.NInitialPoints {
		u := make([]float64, d)
		for i := range u {
			u[i] = o.rng.Float64()
		}
		o.snap(u)
		return u, nil
	}

	// Fit the GP on the unit cube.
	n := len(o.y)
	xs := make([]float64, 0, n*d)
	for _, x := range o.x {
		xs = append(xs, o.toUnit(x)...)
	}
	if err := o.gp.setData(xs, o.y, n, d); err != nil {
		return nil, err
	}
	if err := o.gp.Tune(o.cfg.NRestarts, o.src); err != nil {
		return nil, err
	}
	gp := o.gp
	s := newPredictScratch(n, d)

	// GP-Hedge reward for the previous proposals.
	for i, p := range o.pending {
		mu, _ := gp.posterior(p, s, nil, nil)
		o.gains[i] -= gp.yMean + gp.yStd*mu
	}
	o.pending = nil

	// Candidates and their posterior.
	m := o.cfg.NCandidates
	cand := mat.NewDense(m, d, nil)
	mus := make([]float64, m)
	sds := make([]float64, m)
	for c := range m {
		row := cand.RawRowView(c)
		for i := range row {
			row[i] = o.rng.Float64()
		}
		o.snap(row)
		mu, v := gp.posterior(row, s, nil, nil)
		mus[c], sds[c] = mu, math.Sqrt(v)
	}

	a := acquirer{
		gp:     gp,
		target: (o.y[o.best] - o.cfg.Xi - gp.yMean) / gp.yStd,
		kappa:  o.cfg.Kappa,
		s:      s,
	}
	switch o.cfg.Acquisition {
	case EI:
		a.kind = kindEI
	case PI:
		a.kind = kindPI
	case LCB:
		a.kind = kindLCB
	default:
		props := make([][]float64, 3)
		for k := range props {
			a.kind = acqKind(k)
			props[k] = o.maximize(&a, cand, mus, sds)
		}
		o.pending = props
		var p [3]float64
		hi := math.Inf(-1)
		for _, g := range o.gains {
			hi = math.Max(hi, o.cfg.Eta*g)
		}
		var sum float64
		for k, g := range o.gains {
			p[k] = math.Exp(o.cfg.Eta*g - hi)
			sum += p[k]
		}
		r := o.rng.Float64() * sum
		k := 0
		for ; k < 2; k++ {
			if r < p[k] {
				break
			}
			r -= p[k]
		}
		return slices.Clone(props[k]), nil
	}
	return o.maximize(&a, cand, mus, sds), nil
}

type acqKind int

const (
	kindEI acqKind = iota
	kindPI
	kindLCB
)

// acquirer evaluates one acquisition function, to be maximized, on the
// standardized GP posterior.
type acquirer struct {
	kind   acqKind
	gp     *GP
	target float64 // (best y − ξ − mean y)/std y
	kappa  float64
	s      *predictScratch
}

func (a *acquirer) value(mu, sd float64) (v, dmu, dsd float64) {
	switch a.kind {
	case kindEI:
		return acqEI(mu, sd, a.target)
	case kindPI:
		return acqPI(mu, sd, a.target)
	default:
		return acqNegLCB(mu, sd, a.kappa)
	}
}

// at returns the acquisition at x and, if grad is non-nil, its gradient.
func (a *acquirer) at(x, grad, dmu, dvar []float64) float64 {
	if grad == nil {
		mu, v := a.gp.posterior(x, a.s, nil, nil)
		val, _, _ := a.value(mu, math.Sqrt(v))
		return val
	}
	mu, v := a.gp.posterior(x, a.s, dmu, dvar)
	sd := math.Sqrt(v)
	val, gm, gs := a.value(mu, sd)
	for i := range grad {
		grad[i] = gm * dmu[i]
		if sd > minStd {
			grad[i] += gs * dvar[i] / (2 * sd)
		}
	}
	return val
}

// maximize returns the maximizer of the acquisition over the candidates
// (whose posterior means and standard deviations are given) after polishing
// the best NPolish of them.
func (o *Optimizer) maximize(a *acquirer, cand *mat.Dense, mus, sds []float64) []float64 {
	m, _ := cand.Dims()
	vals := make([]float64, m)
	for c := range m {
		vals[c], _, _ = a.value(mus[c], sds[c])
	}
	// Indices of the best max(NPolish, 1) candidates, best first, ties by index.
	k := max(o.cfg.NPolish, 1)
	top := make([]int, 0, k)
	for c, v := range vals {
		if len(top) == k && !(v > vals[top[k-1]]) {
			continue
		}
		i := len(top)
		for i > 0 && v > vals[top[i-1]] {
			i--
		}
		if len(top) < k {
			top = append(top, 0)
		}
		copy(top[i+1:], top[i:len(top)-1])
		top[i] = c
	}
	best := slices.Clone(cand.RawRowView(top[0]))
	bestVal := vals[top[0]]
	if o.cfg.NPolish == 0 {
		return best
	}
	for _, c := range top {
		x, v := o.polish(a, cand.RawRowView(c))
		if v > bestVal {
			best, bestVal = x, v
		}
	}
	return best
}

// polish runs L-BFGS on the acquisition from x0, minimizing
// −a(clamp(u)) + ρ‖u − clamp(u)‖² so that the optimum lies in the unit cube.
// It returns the best point seen, clamped and snapped, and its acquisition.
func (o *Optimizer) polish(a *acquirer, x0 []float64) ([]float64, float64) {
	const rho = 1e3
	d := len(x0)
	xc := make([]float64, d)
	g := make([]float64, d)
	dmu := make([]float64, d)
	dvar := make([]float64, d)
	best := slices.Clone(x0)
	bestVal := math.Inf(-1)
	clamp := func(u []float64) float64 {
		var pen float64
		for i, v := range u {
			xc[i] = math.Min(math.Max(v, 0), 1)
			pen += (v - xc[i]) * (v - xc[i])
		}
		return pen
	}
	prob := optimize.Problem{
		Func: func(u []float64) float64 {
			pen := clamp(u)
			v := a.at(xc, nil, nil, nil)
			if v > bestVal {
				bestVal = v
				copy(best, xc)
			}
			return -v + rho*pen
		},
		Grad: func(grad, u []float64) {
			clamp(u)
			a.at(xc, g, dmu, dvar)
			for i, v := range u {
				if v != xc[i] {
					grad[i] = 2 * rho * (v - xc[i])
				} else {
					grad[i] = -g[i]
				}
			}
		},
	}
	settings := &optimize.Settings{
		Converger:       &optimize.FunctionConverge{Absolute: 1e-10, Relative: 1e-8, Iterations: 3},
		MajorIterations: 30,
		FuncEvaluations: 60,
	}
	_, _ = optimize.Minimize(prob, x0, settings, &optimize.LBFGS{})
	if o.snap(best) {
		bestVal = a.at(best, nil, nil, nil)
	}
	return best, bestVal
}

// toUnit maps x from the box to the unit cube.
func (o *Optimizer) toUnit(x []float64) []float64 {
	u := make([]float64, len(x))
	for i, d := range o.dims {
		u[i] = (x[i] - d.Low) / (d.High - d.Low)
	}
	return u
}

// fromUnit maps u from the unit cube to the box, exactly onto the grid of
// quantized dimensions and inside the bounds.
func (o *Optimizer) fromUnit(u []float64) []float64 {
	x := make([]float64, len(u))
	for i, d := range o.dims {
		if d.Step > 0 {
			x[i] = d.Low + float64(gridIndex(d, u[i]))*d.Step
		} else {
			x[i] = d.Low + u[i]*(d.High-d.Low)
		}
		x[i] = math.Min(math.Max(x[i], d.Low), d.High)
	}
	return x
}

// gridIndex returns the index k of the grid point Low + k·Step nearest to the
// unit-cube coordinate u, within [0, ⌊(High − Low)/Step⌋].
func gridIndex(d Dim, u float64) int {
	kmax := math.Floor((d.High-d.Low)/d.Step + 1e-9)
	k := math.Round(u * (d.High - d.Low) / d.Step)
	return int(math.Min(math.Max(k, 0), kmax))
}

// snap moves the quantized coordinates of u (unit cube) onto the grid in
// place and reports whether there are quantized dimensions.
func (o *Optimizer) snap(u []float64) bool {
	q := false
	for i, d := range o.dims {
		if d.Step > 0 {
			u[i] = float64(gridIndex(d, u[i])) * d.Step / (d.High - d.Low)
			q = true
		}
	}
	return q
}
