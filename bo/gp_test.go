package bo

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// matern52 is the Matérn-5/2 correlation at scaled distance r.
func matern52(r float64) float64 {
	return (1 + math.Sqrt(5)*r + 5*r*r/3) * math.Exp(-math.Sqrt(5)*r)
}

func TestMatern52KnownValue(t *testing.T) {
	// (1 + √5 + 5/3)·e^(−√5) = 4.902734·0.106878.
	if got, want := matern52(1), 0.523994; math.Abs(got-want) > 1e-6 {
		t.Fatalf("matern52(1) = %.7f, want %.6f", got, want)
	}
	g := &GP{Params: Params{LogLength: []float64{0}, LogSignal: 0, LogNoise: math.Log(1e-2)}}
	if err := g.Fit(mat.NewDense(1, 1, []float64{0}), []float64{0}); err != nil {
		t.Fatal(err)
	}
	s := newPredictScratch(1, 1)
	g.posterior([]float64{1}, s, nil, nil)
	if math.Abs(s.k[0]-0.523994) > 1e-6 {
		t.Errorf("k(0, 1) = %.7f, want 0.523994", s.k[0])
	}
}

// TestGPTwoPoints checks the posterior and the log marginal likelihood
// against the closed form for two 1-D points (Rasmussen & Williams 2006,
// eq. 2.25–2.26 and 2.30 with an explicit 2×2 inverse).
func TestGPTwoPoints(t *testing.T) {
	const sn2 = 0.01
	g := &GP{Params: Params{LogLength: []float64{0}, LogSignal: 0, LogNoise: math.Log(sn2)}}
	// y = (1, −1) has mean 0 and population standard deviation 1, so the
	// standardized outputs equal y.
	if err := g.Fit(mat.NewDense(2, 1, []float64{0, 1}), []float64{1, -1}); err != nil {
		t.Fatal(err)
	}
	k01 := matern52(1)
	kd := 1 + sn2
	det := kd*kd - k01*k01
	// α = K⁻¹y = (1, −1)/(kd − k01).
	wantLML := -0.5*2/(kd-k01) - 0.5*math.Log(det) - math.Log(2*math.Pi)
	if got := g.LogMarginalLikelihood(); math.Abs(got-wantLML) > 1e-12 {
		t.Errorf("log marginal likelihood %.15f, want %.15f", got, wantLML)
	}
	for _, xs := range []float64{0.25, 0.5, 1.7, -0.3} {
		a, b := matern52(math.Abs(xs)), matern52(math.Abs(xs-1))
		wantMean := (a - b) / (kd - k01)
		wantVar := 1 - (kd*(a*a+b*b)-2*k01*a*b)/det
		mean, std := g.Predict([]float64{xs})
		if math.Abs(mean-wantMean) > 1e-12 || math.Abs(std*std-wantVar) > 1e-12 {
			t.Errorf("Predict(%v) = %.12f ± %.12f, want %.12f ± %.12f", xs, mean, std, wantMean, math.Sqrt(wantVar))
		}
	}
	if g.Jitter() != 0 {
		t.Errorf("jitter %g, want 0", g.Jitter())
	}
}

// TestGPScaling checks that outputs are standardized and unstandardized:
// shifting and scaling y shifts and scales the posterior.
func TestGPScaling(t *testing.T) {
	x := mat.NewDense(3, 1, []float64{0.1, 0.5, 0.8})
	y := []float64{0.3, -1.2, 0.9}
	ys := make([]float64, len(y))
	for i, v := range y {
		ys[i] = 100 + 7*v
	}
	g1, g2 := NewGP(1, 1e-3), NewGP(1, 1e-3)
	g1.Params.LogLength[0] = math.Log(0.2)
	g2.Params.LogLength[0] = math.Log(0.2)
	if err := g1.Fit(x, y); err != nil {
		t.Fatal(err)
	}
	if err := g2.Fit(x, ys); err != nil {
		t.Fatal(err)
	}
	for _, q := range []float64{0, 0.3, 0.5, 1} {
		m1, s1 := g1.Predict([]float64{q})
		m2, s2 := g2.Predict([]float64{q})
		if math.Abs(100+7*m1-m2) > 1e-9 || math.Abs(7*s1-s2) > 1e-9 {
			t.Errorf("at %v: %v ± %v vs %v ± %v", q, m1, s1, m2, s2)
		}
	}
	// Nearly interpolates the data with small noise.
	for i := range 3 {
		m, s := g2.Predict([]float64{x.At(i, 0)})
		if math.Abs(m-ys[i]) > 0.05 || s > 0.5 {
			t.Errorf("at data point %d: %v ± %v, want ≈ %v", i, m, s, ys[i])
		}
	}
}

func randomData(rng *rand.Rand, n, d int) (*mat.Dense, []float64) {
	x := mat.NewDense(n, d, nil)
	y := make([]float64, n)
	for i := range n {
		var s float64
		for j := range d {
			v := rng.Float64()
			x.Set(i, j, v)
			s += math.Sin(3*v + float64(j))
		}
		y[i] = s + 0.1*rng.NormFloat64()
	}
	return x, y
}

// TestLMLGradient holds the analytic gradient (R&W eq. 5.9) against central
// finite differences.
func TestLMLGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 5 {
		n, d := 6+3*trial, 1+trial
		x, y := randomData(rng, n, d)
		g := NewGP(d, 0.1)
		if err := g.Fit(x, y); err != nil {
			t.Fatal(err)
		}
		theta := make([]float64, d+2)
		for i := range d {
			theta[i] = -1.5 + 2*rng.Float64()
		}
		theta[d] = -1 + 2*rng.Float64()
		theta[d+1] = -5 + 3*rng.Float64()
		w := newLMLWork(n, d)
		grad := make([]float64, d+2)
		if _, err := g.lmlGrad(w, theta, grad); err != nil {
			t.Fatal(err)
		}
		const h = 1e-5
		for i := range theta {
			tp := append([]float64(nil), theta...)
			tm := append([]float64(nil), theta...)
			tp[i] += h
			tm[i] -= h
			fp, err1 := g.lmlGrad(w, tp, nil)
			fm, err2 := g.lmlGrad(w, tm, nil)
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			fd := (fp - fm) / (2 * h)
			if math.Abs(fd-grad[i]) > 1e-5*math.Max(1, math.Abs(fd)) {
				t.Errorf("trial %d, θ[%d]: analytic %.9g, finite difference %.9g", trial, i, grad[i], fd)
			}
		}
	}
}

// TestPosteriorGradient holds the gradients of the posterior mean and
// variance and of the acquisition functions against finite differences.
func TestPosteriorGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, d = 12, 3
	x, y := randomData(rng, n, d)
	g := NewGP(d, 0.01)
	g.Params.LogLength = []float64{-1, -0.5, 0}
	if err := g.Fit(x, y); err != nil {
		t.Fatal(err)
	}
	s := newPredictScratch(n, d)
	dmu, dvar := make([]float64, d), make([]float64, d)
	grad := make([]float64, d)
	const h = 1e-6
	for range 5 {
		q := []float64{rng.Float64(), rng.Float64(), rng.Float64()}
		g.posterior(q, s, dmu, dvar)
		for i := range d {
			qp := append([]float64(nil), q...)
			qm := append([]float64(nil), q...)
			qp[i] += h
			qm[i] -= h
			mp, vp := g.posterior(qp, s, nil, nil)
			mm, vm := g.posterior(qm, s, nil, nil)
			if fd := (mp - mm) / (2 * h); math.Abs(fd-dmu[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
				t.Errorf("∂μ/∂x[%d] = %.9g, finite difference %.9g", i, dmu[i], fd)
			}
			if fd := (vp - vm) / (2 * h); math.Abs(fd-dvar[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
				t.Errorf("∂σ²/∂x[%d] = %.9g, finite difference %.9g", i, dvar[i], fd)
			}
		}
		for _, kind := range []acqKind{kindEI, kindPI, kindLCB} {
			a := acquirer{kind: kind, gp: g, target: -0.5, kappa: DefaultKappa, s: s}
			a.at(q, grad, dmu, dvar)
			for i := range d {
				qp := append([]float64(nil), q...)
				qm := append([]float64(nil), q...)
				qp[i] += h
				qm[i] -= h
				fd := (a.at(qp, nil, nil, nil) - a.at(qm, nil, nil, nil)) / (2 * h)
				if math.Abs(fd-grad[i]) > 1e-5*math.Max(1, math.Abs(fd)) {
					t.Errorf("acquisition %d: ∂/∂x[%d] = %.9g, finite difference %.9g", kind, i, grad[i], fd)
				}
			}
		}
	}
}

// TestJitter checks that a singular covariance (a duplicated input and
// negligible noise) is rescued by diagonal jitter.
func TestJitter(t *testing.T) {
	g := &GP{Params: Params{LogLength: []float64{-1}, LogSignal: 0, LogNoise: -60}}
	x := mat.NewDense(3, 1, []float64{0.3, 0.3, 0.7})
	if err := g.Fit(x, []float64{1, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if j := g.Jitter(); !(j > 0 && j <= jitterMax*(1+math.Exp(-60))) {
		t.Errorf("jitter %g, want in (0, %g]", j, jitterMax)
	}
	if m, _ := g.Predict([]float64{0.3}); math.Abs(m-1) > 1e-3 {
		t.Errorf("mean at duplicated point %v, want ≈ 1", m)
	}
}

// TestFactorizeFailure checks that an indefinite matrix, which no allowed
// jitter can fix, is reported.
func TestFactorizeFailure(t *testing.T) {
	k := mat.NewSymDense(2, []float64{1, 2, 2, 1}) // eigenvalues −1 and 3
	var chol mat.Cholesky
	if _, ok := factorize(&chol, k); ok {
		t.Fatal("factorize succeeded on an indefinite matrix")
	}
	if got := k.At(0, 0); math.Abs(got-1) > 2*jitterMax {
		t.Errorf("diagonal %v after jitter, want ≈ 1 (jitter capped at %g)", got, jitterMax)
	}
	nd := mat.NewSymDense(2, []float64{-1, 0, 0, -1})
	if _, ok := factorize(&chol, nd); ok {
		t.Fatal("factorize succeeded with a negative diagonal")
	}
}

func TestFitErrorsLeaveStateUnchanged(t *testing.T) {
	g := NewGP(1, 0.01)
	if err := g.Fit(mat.NewDense(2, 1, []float64{0, 1}), []float64{1, -1}); err != nil {
		t.Fatal(err)
	}
	m0, s0 := g.Predict([]float64{0.4})
	for _, tc := range []struct {
		name string
		x    mat.Matrix
		y    []float64
	}{
		{"nil", nil, nil},
		{"length", mat.NewDense(2, 1, []float64{0, 1}), []float64{1}},
		{"dims", mat.NewDense(2, 2, []float64{0, 1, 2, 3}), []float64{1, 2}},
		{"NaN x", mat.NewDense(2, 1, []float64{0, math.NaN()}), []float64{1, 2}},
		{"Inf y", mat.NewDense(2, 1, []float64{0, 1}), []float64{1, math.Inf(1)}},
	} {
		err := g.Fit(tc.x, tc.y)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if m, s := g.Predict([]float64{0.4}); m != m0 || s != s0 || g.Len() != 2 {
			t.Errorf("%s: state changed", tc.name)
		}
	}
	var empty GP
	if m, s := empty.Predict([]float64{0}); !math.IsNaN(m) || !math.IsNaN(s) {
		t.Error("Predict on unfitted GP not NaN")
	}
	if !math.IsNaN(empty.LogMarginalLikelihood()) {
		t.Error("LogMarginalLikelihood on unfitted GP not NaN")
	}
	if err := empty.Tune(0, nil); err == nil {
		t.Error("Tune before Fit: no error")
	}
	if m, _ := g.Predict([]float64{0, 1}); !math.IsNaN(m) {
		t.Error("Predict with wrong length not NaN")
	}
}

// TestTune checks that tuning increases the log marginal likelihood, keeps
// the hyperparameters in bounds and is deterministic in its source.
func TestTune(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x, y := randomData(rng, 25, 3)
	tune := func(seed uint64) *GP {
		g := NewGP(3, 0.01)
		if err := g.Fit(x, y); err != nil {
			t.Fatal(err)
		}
		before := g.LogMarginalLikelihood()
		if err := g.Tune(2, rand.NewPCG(seed, 0)); err != nil {
			t.Fatal(err)
		}
		if after := g.LogMarginalLikelihood(); !(after > before) {
			t.Errorf("log marginal likelihood %v after Tune, %v before", after, before)
		}
		lo, hi := thetaBounds(3)
		for i, v := range g.Params.theta() {
			if v < lo[i] || v > hi[i] {
				t.Errorf("θ[%d] = %v outside [%v, %v]", i, v, lo[i], hi[i])
			}
		}
		return g
	}
	a, b := tune(1), tune(1)
	if a.LogMarginalLikelihood() != b.LogMarginalLikelihood() {
		t.Error("same source gave different fits")
	}
}

func TestAcquisitionValues(t *testing.T) {
	// Standard normal: EI(0, 1, 0, 0) = φ(0) = 1/√(2π), PI = ½.
	if got, want := ExpectedImprovement(0, 1, 0, 0), 1/math.Sqrt(2*math.Pi); math.Abs(got-want) > 1e-15 {
		t.Errorf("EI = %v, want %v", got, want)
	}
	if got := ProbabilityOfImprovement(0, 1, 0, 0); got != 0.5 {
		t.Errorf("PI = %v, want 0.5", got)
	}
	// z = (1 − 0.5 − 0)/2 = 0.25: EI = 0.5·Φ(0.25) + 2·φ(0.25).
	if got, want := ExpectedImprovement(0, 2, 1, 0.5), 0.5*0.598706325682924+2*0.386668116802849; math.Abs(got-want) > 1e-12 {
		t.Errorf("EI = %v, want %v", got, want)
	}
	if got := ExpectedImprovement(3, 0, 1, 0); got != 0 {
		t.Errorf("EI with no improvement and std 0 = %v, want 0", got)
	}
	if got := ExpectedImprovement(0, 0, 1, 0.25); got != 0.75 {
		t.Errorf("EI with std 0 = %v, want 0.75", got)
	}
	if got := LowerConfidenceBound(1, 2, DefaultKappa); got != 1-2*1.96 {
		t.Errorf("LCB = %v", got)
	}
}
