package bo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// ErrNotPositiveDefinite is returned (wrapped) when a covariance matrix cannot
// be factorized even after adding the largest allowed jitter.
var ErrNotPositiveDefinite = errors.New("bo: covariance matrix not positive definite")

const (
	sqrt5 = 2.23606797749979 // √5

	// Jitter added to the diagonal of a covariance matrix whose Cholesky
	// factorization fails starts at jitterStart times the mean diagonal and is
	// multiplied by 10 up to jitterMax times the mean diagonal.
	jitterStart = 1e-10
	jitterMax   = 1e-4
)

// Bounds of the log-hyperparameters enforced by Tune. Length scales are in
// units of the unit cube; variances are relative to the variance of the
// observed outputs (outputs are standardized before fitting).
var (
	logLengthMin, logLengthMax = math.Log(1e-2), math.Log(1e2)
	logSignalMin, logSignalMax = math.Log(1e-2), math.Log(1e2)
	logNoiseMin, logNoiseMax   = math.Log(1e-6), math.Log(1)
)

// Params are the hyperparameters of a GP, in log space.
type Params struct {
	LogLength []float64 // log ℓ_i, one ARD length scale per input dimension (unit-cube units)
	LogSignal float64   // log σ_f², signal variance (standardized output units)
	LogNoise  float64   // log σ_n², noise variance (standardized output units)
}

// DefaultParams returns the hyperparameters used as the first starting point
// of a fit: ℓ_i = 1, σ_f² = 1 and σ_n² = noise.
func DefaultParams(dim int, noise float64) Params {
	return Params{
		LogLength: make([]float64, max(dim, 0)),
		LogSignal: 0,
		LogNoise:  math.Log(noise),
	}
}

func (p Params) theta() []float64 {
	t := make([]float64, len(p.LogLength)+2)
	copy(t, p.LogLength)
	t[len(p.LogLength)] = p.LogSignal
	t[len(p.LogLength)+1] = p.LogNoise
	return t
}

func paramsFromTheta(t []float64) Params {
	d := len(t) - 2
	return Params{
		LogLength: append([]float64(nil), t[:d]...),
		LogSignal: t[d],
		LogNoise:  t[d+1],
	}
}

// thetaBounds returns the lower and upper bounds of θ = (log ℓ, log σ_f², log σ_n²).
func thetaBounds(d int) (lo, hi []float64) {
	lo = make([]float64, d+2)
	hi = make([]float64, d+2)
	for i := range d {
		lo[i], hi[i] = logLengthMin, logLengthMax
	}
	lo[d], hi[d] = logSignalMin, logSignalMax
	lo[d+1], hi[d+1] = logNoiseMin, logNoiseMax
	return lo, hi
}

// GP is Gaussian-process regression with a Matérn-5/2 ARD kernel and
// Gaussian noise,
//
//	k(x, x') = σ_f² (1 + √5 r + 5r²/3) exp(−√5 r),  r² = Σ_i (x_i − x'_i)²/ℓ_i²,
//	y = f(x) + ε,  ε ~ N(0, σ_n²)
//
// (Rasmussen & Williams 2006, eq. 4.17 with ν = 5/2, and §5.1 for ARD).
// Outputs are standardized to zero mean and unit variance before fitting;
// Predict undoes the scaling. Inputs are used as given; the Optimizer maps its
// box onto the unit cube, for which the hyperparameter bounds are chosen
// (ℓ ∈ [0.01, 100], σ_f² ∈ [0.01, 100], σ_n² ∈ [1e-6, 1]).
//
// The zero value has no Params; use NewGP or set Params before Fit.
// A GP is not safe for concurrent use.
type GP struct {
	Params Params // current hyperparameters

	n, d  int
	x     []float64 // n×d inputs, row-major
	y     []float64 // standardized outputs
	yMean float64
	yStd  float64

	invL2  []float64 // 1/ℓ_i²
	sf2    float64   // σ_f²
	u      []float64 // n×n upper Cholesky factor of K + σ_n² I (+ jitter), row-major
	alpha  []float64 // (K + σ_n² I)⁻¹ y
	jitter float64
	lml    float64
	ok     bool // conditioned on data
}

// NewGP returns a GP on dim inputs with DefaultParams(dim, noise).
func NewGP(dim int, noise float64) *GP {
	return &GP{Params: DefaultParams(dim, noise)}
}

// Fit conditions the GP on the rows of x and the outputs y with the current
// Params (which it does not change; see Tune). It computes the Cholesky
// factor of K + σ_n² I (Rasmussen & Williams 2006, Algorithm 2.1); if the
// factorization fails, jitter is added to the diagonal, ten-fold each time,
// up to 1e-4 of the mean diagonal, and then ErrNotPositiveDefinite is
// returned. On error the GP is unchanged.
func (g *GP) Fit(x mat.Matrix, y []float64) error {
	if x == nil {
		return errors.New("bo: nil input matrix")
	}
	n, d := x.Dims()
	xs := make([]float64, 0, n*d)
	for i := range n {
		for j := range d {
			xs = append(xs, x.At(i, j))
		}
	}
	saved := *g
	if err := g.setData(xs, y, n, d); err != nil {
		*g = saved
		return err
	}
	if err := g.condition(); err != nil {
		*g = saved
		return err
	}
	return nil
}

// setData validates and stores the data and standardizes y. It does not
// factorize.
func (g *GP) setData(x, y []float64, n, d int) error {
	switch {
	case n < 1 || d < 1:
		return fmt.Errorf("bo: input matrix is %d×%d, want at least 1×1", n, d)
	case len(y) != n:
		return fmt.Errorf("bo: %d outputs for %d inputs", len(y), n)
	case len(g.Params.LogLength) != d:
		return fmt.Errorf("bo: %d length scales for %d input dimensions", len(g.Params.LogLength), d)
	}
	for _, v := range g.Params.theta() {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("bo: non-finite hyperparameter")
		}
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("bo: input %d,%d is %v", i/d, i%d, v)
		}
	}
	var mean float64
	for i, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("bo: output %d is %v", i, v)
		}
		mean += v
	}
	mean /= float64(n)
	var ss float64
	for _, v := range y {
		ss += (v - mean) * (v - mean)
	}
	std := math.Sqrt(ss / float64(n))
	if !(std > 1e-12*math.Max(1, math.Abs(mean))) {
		std = 1
	}
	g.n, g.d = n, d
	g.x = append([]float64(nil), x...)
	g.y = make([]float64, n)
	for i, v := range y {
		g.y[i] = (v - mean) / std
	}
	g.yMean, g.yStd = mean, std
	g.ok = false
	return nil
}

// condition factorizes the covariance at g.Params and caches what Predict
// needs.
func (g *GP) condition() error {
	w := newLMLWork(g.n, g.d)
	lml, err := g.lmlGrad(w, g.Params.theta(), nil)
	if err != nil {
		return err
	}
	var u mat.TriDense
	w.chol.UTo(&u)
	raw := u.RawTriangular()
	g.u = make([]float64, g.n*g.n)
	for i := range g.n {
		copy(g.u[i*g.n+i:(i+1)*g.n], raw.Data[i*raw.Stride+i:i*raw.Stride+g.n])
	}
	g.alpha = append(g.alpha[:0], w.alpha.RawVector().Data...)
	g.invL2 = append(g.invL2[:0], w.invL2...)
	g.sf2 = math.Exp(g.Params.LogSignal)
	g.jitter = w.jitter
	g.lml = lml
	g.ok = true
	return nil
}

// Len returns the number of points the GP is conditioned on.
func (g *GP) Len() int {
	if !g.ok {
		return 0
	}
	return g.n
}

// Jitter returns the diagonal jitter the last factorization needed, in
// standardized output units (0 if none).
func (g *GP) Jitter() float64 { return g.jitter }

// LogMarginalLikelihood returns the log marginal likelihood of the
// standardized outputs at the current Params (Rasmussen & Williams 2006,
// eq. 2.30, evaluated as in Algorithm 2.1),
//
//	log p(y | X, θ) = −½ yᵀ(K + σ_n² I)⁻¹y − ½ log|K + σ_n² I| − (n/2) log 2π.
//
// It returns NaN if the GP has not been fitted.
func (g *GP) LogMarginalLikelihood() float64 {
	if !g.ok {
		return math.NaN()
	}
	return g.lml
}

// Predict returns the posterior mean and standard deviation of the latent
// function f at x, in the units of the outputs passed to Fit (Rasmussen &
// Williams 2006, eq. 2.25–2.26):
//
//	mean = k*ᵀ (K + σ_n² I)⁻¹ y,  var = k(x, x) − k*ᵀ (K + σ_n² I)⁻¹ k*.
//
// The noise variance is not included in std. Predict returns NaN, NaN if the
// GP has not been fitted or len(x) is wrong.
func (g *GP) Predict(x []float64) (mean, std float64) {
	if !g.ok || len(x) != g.d {
		return math.NaN(), math.NaN()
	}
	s := newPredictScratch(g.n, g.d)
	mu, v := g.posterior(x, s, nil, nil)
	return g.yMean + g.yStd*mu, g.yStd * math.Sqrt(v)
}

// predictScratch holds buffers for posterior.
type predictScratch struct {
	k, v, w, gf []float64
}

func newPredictScratch(n, d int) *predictScratch {
	return &predictScratch{
		k:  make([]float64, n),
		v:  make([]float64, n),
		w:  make([]float64, n),
		gf: make([]float64, n),
	}
}

// posterior returns the standardized posterior mean and variance of f at x.
// If dmu and dvar are non-nil they receive the gradients of the mean and of
// the variance with respect to x, using
//
//	∂k(x, x_j)/∂x_i = −(5/3) σ_f² (1 + √5 r) exp(−√5 r) (x_i − x_ji)/ℓ_i².
func (g *GP) posterior(x []float64, s *predictScratch, dmu, dvar []float64) (mu, v float64) {
	n, d := g.n, g.d
	for j := range n {
		xj := g.x[j*d : (j+1)*d]
		var r2 float64
		for i, xi := range x {
			t := xi - xj[i]
			r2 += t * t * g.invL2[i]
		}
		r := math.Sqrt(r2)
		e := math.Exp(-sqrt5 * r)
		s.k[j] = g.sf2 * (1 + sqrt5*r + 5*r2/3) * e
		s.gf[j] = 5.0 / 3 * g.sf2 * (1 + sqrt5*r) * e
		mu += s.k[j] * g.alpha[j]
	}
	// Solve Uᵀ v = k* by forward substitution (U is row-major upper).
	copy(s.v, s.k)
	for j := range n {
		row := g.u[j*n : (j+1)*n]
		s.v[j] /= row[j]
		vj := s.v[j]
		for i := j + 1; i < n; i++ {
			s.v[i] -= row[i] * vj
		}
	}
	var vv float64
	for _, t := range s.v {
		vv += t * t
	}
	v = math.Max(g.sf2-vv, 0)
	if dmu == nil && dvar == nil {
		return mu, v
	}
	// w = (K + σ_n² I)⁻¹ k* = U⁻¹ v by back substitution.
	for i := n - 1; i >= 0; i-- {
		row := g.u[i*n : (i+1)*n]
		t := s.v[i]
		for j := i + 1; j < n; j++ {
			t -= row[j] * s.w[j]
		}
		s.w[i] = t / row[i]
	}
	for i := range d {
		var gm, gv float64
		for j := range n {
			dk := -s.gf[j] * (x[i] - g.x[j*d+i]) * g.invL2[i]
			gm += dk * g.alpha[j]
			gv += dk * s.w[j]
		}
		if dmu != nil {
			dmu[i] = gm
		}
		if dvar != nil {
			dvar[i] = -2 * gv
		}
	}
	return mu, v
}

// lmlWork holds buffers for lmlGrad.
type lmlWork struct {
	k, kinv *mat.SymDense
	chol    mat.Cholesky
	y       *mat.VecDense
	alpha   *mat.VecDense
	invL2   []float64
	r, e    []float64 // per pair i < j at i*n+j: scaled distance and exp(−√5 r)
	jitter  float64
}

func newLMLWork(n, d int) *lmlWork {
	return &lmlWork{
		k:     mat.NewSymDense(n, nil),
		kinv:  mat.NewSymDense(n, nil),
		y:     mat.NewVecDense(n, nil),
		alpha: mat.NewVecDense(n, nil),
		invL2: make([]float64, d),
		r:     make([]float64, n*n),
		e:     make([]float64, n*n),
	}
}

// lmlGrad returns the log marginal likelihood at θ = (log ℓ, log σ_f², log σ_n²)
// and, if grad is non-nil, stores its gradient with respect to θ in grad
// (Rasmussen & Williams 2006, eq. 5.9),
//
//	∂/∂θ_j log p(y | X, θ) = ½ tr((ααᵀ − K⁻¹) ∂K/∂θ_j),  α = K⁻¹y,
//
// with, for the Matérn-5/2 kernel,
//
//	∂k/∂log ℓ_i = (5/3) σ_f² (1 + √5 r) exp(−√5 r) (x_i − x'_i)²/ℓ_i²,
//	∂k/∂log σ_f² = k,  ∂K/∂log σ_n² = σ_n² I.
//
// The jitter, if any, is treated as a constant.
func (g *GP) lmlGrad(w *lmlWork, theta, grad []float64) (float64, error) {
	n, d := g.n, g.d
	for i := range d {
		w.invL2[i] = math.Exp(-2 * theta[i])
	}
	sf2, sn2 := math.Exp(theta[d]), math.Exp(theta[d+1])
	k := w.k.RawSymmetric()
	for i := range n {
		xi := g.x[i*d : (i+1)*d]
		k.Data[i*k.Stride+i] = sf2 + sn2
		for j := i + 1; j < n; j++ {
			xj := g.x[j*d : (j+1)*d]
			var r2 float64
			for l, a := range xi {
				t := a - xj[l]
				r2 += t * t * w.invL2[l]
			}
			r := math.Sqrt(r2)
			e := math.Exp(-sqrt5 * r)
			w.r[i*n+j], w.e[i*n+j] = r, e
			k.Data[i*k.Stride+j] = sf2 * (1 + sqrt5*r + 5*r2/3) * e
		}
	}
	jit, ok := factorize(&w.chol, w.k)
	if !ok {
		return math.NaN(), fmt.Errorf("%w (jitter up to %g of the mean diagonal)", ErrNotPositiveDefinite, jitterMax)
	}
	w.jitter = jit
	copy(w.y.RawVector().Data, g.y)
	if err := w.chol.SolveVecTo(w.alpha, w.y); err != nil && !isCondition(err) {
		return math.NaN(), err
	}
	alpha := w.alpha.RawVector().Data
	var ya float64
	for i, v := range g.y {
		ya += v * alpha[i]
	}
	lml := -0.5*ya - 0.5*w.chol.LogDet() - 0.5*float64(n)*math.Log(2*math.Pi)
	if math.IsNaN(lml) || math.IsInf(lml, 0) {
		return math.NaN(), errors.New("bo: non-finite log marginal likelihood")
	}
	if grad == nil {
		return lml, nil
	}
	if err := w.chol.InverseTo(w.kinv); err != nil && !isCondition(err) {
		return math.NaN(), err
	}
	kinv := w.kinv.RawSymmetric()
	for i := range grad {
		grad[i] = 0
	}
	var trW, sig float64
	for i := range n {
		xi := g.x[i*d : (i+1)*d]
		wii := alpha[i]*alpha[i] - kinv.Data[i*kinv.Stride+i]
		trW += wii
		sig += wii * sf2
		for j := i + 1; j < n; j++ {
			wij := alpha[i]*alpha[j] - kinv.Data[i*kinv.Stride+j]
			xj := g.x[j*d : (j+1)*d]
			r, e := w.r[i*n+j], w.e[i*n+j]
			sig += 2 * wij * sf2 * (1 + sqrt5*r + 5*r*r/3) * e
			gf := wij * 5.0 / 3 * sf2 * (1 + sqrt5*r) * e
			for l, a := range xi {
				t := a - xj[l]
				grad[l] += gf * t * t * w.invL2[l] // ½·2 for the symmetric pair
			}
		}
	}
	grad[d] = 0.5 * sig
	grad[d+1] = 0.5 * sn2 * trW
	return lml, nil
}

func isCondition(err error) bool {
	var c mat.Condition
	return errors.As(err, &c)
}

// factorize computes the Cholesky factorization of k, adding jitter to its
// diagonal in place if needed (from jitterStart to jitterMax times the mean
// diagonal, ten-fold each step). It returns the jitter used and whether the
// factorization succeeded.
func factorize(chol *mat.Cholesky, k *mat.SymDense) (jitter float64, ok bool) {
	if chol.Factorize(k) {
		return 0, true
	}
	n := k.SymmetricDim()
	var mean float64
	for i := range n {
		mean += k.At(i, i)
	}
	mean /= float64(n)
	if !(mean > 0) || math.IsInf(mean, 0) {
		return 0, false
	}
	prev := 0.0
	for rel := jitterStart; rel <= jitterMax*(1+1e-9); rel *= 10 {
		jit := rel * mean
		for i := range n {
			k.SetSym(i, i, k.At(i, i)-prev+jit)
		}
		prev = jit
		if chol.Factorize(k) {
			return jit, true
		}
	}
	return 0, false
}

// Tune sets Params to maximize the log marginal likelihood (type-II maximum
// likelihood, Rasmussen & Williams 2006, §5.4.1, eq. 5.8–5.9) of the data of
// the last Fit, then refits. It runs L-BFGS with the analytic gradient from
// the current Params and from restarts further points drawn uniformly within
// the bounds from src. Bounds are enforced by clamping: the objective at θ is
// −log p(y | X, clamp(θ)) + ρ‖θ − clamp(θ)‖², so the optimizer may step
// outside but every likelihood is evaluated inside the bounds. The best
// evaluated clamp(θ) over all runs is kept. src may be nil if restarts is 0.
func (g *GP) Tune(restarts int, src rand.Source) error {
	switch {
	case g.n == 0 || len(g.x) == 0:
		return errors.New("bo: Tune before Fit")
	case restarts < 0:
		return fmt.Errorf("bo: restarts %d < 0", restarts)
	case restarts > 0 && src == nil:
		return errors.New("bo: nil source")
	}
	const rho = 100 // penalty weight outside the bounds
	d := g.d
	np := d + 2
	lo, hi := thetaBounds(d)
	w := newLMLWork(g.n, d)
	theta := make([]float64, np) // clamped
	gradT := make([]float64, np)
	best := math.Inf(-1)
	bestTheta := make([]float64, np)

	// Func computes the gradient too and caches it for the Grad call that
	// gonum makes at the same point.
	lastX := make([]float64, np)
	lastG := make([]float64, np)
	haveLast := false
	eval := func(x []float64) float64 {
		var pen float64
		for i, v := range x {
			theta[i] = math.Min(math.Max(v, lo[i]), hi[i])
			pen += (v - theta[i]) * (v - theta[i])
		}
		copy(lastX, x)
		haveLast = true
		v, err := g.lmlGrad(w, theta, gradT)
		if err != nil {
			for i := range lastG {
				lastG[i] = 0
			}
			return math.Inf(1)
		}
		if v > best {
			best = v
			copy(bestTheta, theta)
		}
		for i, t := range gradT {
			if x[i] != theta[i] {
				lastG[i] = 2 * rho * (x[i] - theta[i])
			} else {
				lastG[i] = -t
			}
		}
		return -v + rho*pen
	}
	prob := optimize.Problem{
		Func: eval,
		Grad: func(grad, x []float64) {
			if !haveLast || !equal(x, lastX) {
				eval(x)
			}
			copy(grad, lastG)
		},
	}
	settings := &optimize.Settings{
		Converger:       &optimize.FunctionConverge{Absolute: 1e-4, Relative: 1e-6, Iterations: 3},
		MajorIterations: 100,
		FuncEvaluations: 200,
	}

	var rng *rand.Rand
	if src != nil {
		rng = rand.New(src)
	}
	x0 := g.Params.theta()
	for r := 0; r <= restarts; r++ {
		for i := range x0 {
			if r > 0 {
				x0[i] = lo[i] + rng.Float64()*(hi[i]-lo[i])
			}
			x0[i] = math.Min(math.Max(x0[i], lo[i]), hi[i])
		}
		haveLast = false
		// Errors (for example a failed line search) end this start; the best
		// point seen so far is kept.
		_, _ = optimize.Minimize(prob, x0, settings, &optimize.LBFGS{})
	}
	if math.IsInf(best, -1) {
		return fmt.Errorf("bo: hyperparameter fit failed: %w", ErrNotPositiveDefinite)
	}
	saved := g.Params
	g.Params = paramsFromTheta(bestTheta)
	if err := g.condition(); err != nil {
		g.Params = saved
		return err
	}
	return nil
}

func equal(a, b []float64) bool {
	for i, v := range a {
		if v != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}
