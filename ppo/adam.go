package ppo

import (
	"math"

	"streamscale/ppo/internal/nn"
)

// Adam's moment decay rates (PyTorch defaults, which SB3 keeps).
const (
	adamBeta1 = 0.9
	adamBeta2 = 0.999
)

// adam is PyTorch's single-tensor Adam (torch.optim.Adam, no weight decay,
// no amsgrad) over a flat float32 parameter vector (Kingma & Ba 2015,
// Algorithm 1, with PyTorch's placement of ε):
//
//	m ← m + (1−β₁)(g − m)                     (torch's lerp_)
//	v ← β₂·v + (1−β₂)·g²
//	θ ← θ − (lr / (1−β₁ᵗ)) · m / (√v / √(1−β₂ᵗ) + ε)
//
// Element arithmetic is float32; the bias corrections and step size are
// float64 scalars, as in PyTorch.
type adam struct {
	eps  float64
	m, v []float32
	step int64
}

func newAdam(n int, eps float64) *adam {
	return &adam{eps: eps, m: make([]float32, n), v: make([]float32, n)}
}

func (a *adam) update(theta, grad []float32, lr float64) {
	s := a.begin(lr)
	a.apply(s, theta, grad, 0, len(grad))
}

// adamStep is one step's scalars, computed once by begin and shared by
// every range apply updates.
type adamStep struct {
	stepSize, w1, b2, w2, bc2s, eps float32
}

// begin counts a step and computes its scalars (float64, as PyTorch).
func (a *adam) begin(lr float64) adamStep {
	a.step++
	t := float64(a.step)
	bc1 := 1 - math.Pow(adamBeta1, t)
	bc2sqrt := math.Sqrt(1 - math.Pow(adamBeta2, t))
	return adamStep{
		stepSize: float32(lr / bc1),
		w1:       float32(1 - adamBeta1),
		b2:       float32(adamBeta2), w2: float32(1 - adamBeta2),
		bc2s: float32(bc2sqrt),
		eps:  float32(a.eps),
	}
}

// apply updates θ[lo:hi] from grad[lo:hi]. The update is element-wise, so
// disjoint ranges may be applied on different goroutines in any order
// with the same result as one pass.
func (a *adam) apply(s adamStep, theta, grad []float32, lo, hi int) {
	a.applyScaled(s, 1, theta, grad, lo, hi)
}

// applyScaled is apply after scaling grad[lo:hi] by c in place (global-norm
// clipping), in one pass over the range (nn.Adam: c·g rounded, then the
// step, as scaleGrad followed by apply computes it).
func (a *adam) applyScaled(s adamStep, c float32, theta, grad []float32, lo, hi int) {
	sc := nn.AdamScalars{Scale: c, StepSize: s.stepSize, W1: s.w1, B2: s.b2, W2: s.w2, BC2S: s.bc2s, Eps: s.eps}
	nn.Adam(theta[lo:hi], grad[lo:hi], a.m[lo:hi], a.v[lo:hi], &sc)
}

// clipGradNorm scales grad so that its global L2 norm is at most maxNorm,
// as torch.nn.utils.clip_grad_norm_ does: the total norm is the norm of
// the per-parameter norms, and every gradient is multiplied by
// min(1, maxNorm/(total + 1e-6)). Norms are accumulated in float64 in
// parameter order. It returns the norm before clipping.
func clipGradNorm(grad []float32, params []nn.Param, maxNorm float64) float64 {
	sums := make([]float64, len(params))
	for i, p := range params {
		sums[i] = sumSquares(grad[p.Off : p.Off+p.Len()])
	}
	total, c, clip := clipCoef(sums, maxNorm)
	if clip {
		scaleGrad(grad, c)
	}
	return total
}

// sumSquares is Σ g², accumulated in float64 in index order: one
// parameter's term of clipGradNorm.
func sumSquares(g []float32) float64 {
	var s float64
	for _, v := range g {
		s += float64(v) * float64(v)
	}
	return s
}

// sumSquares2 continues the chain sa over a and starts one over b, for
// equally long a and b, in one loop: sa + Σ a², Σ b², each in index order.
func sumSquares2(a []float32, sa float64, b []float32) (float64, float64) {
	b = b[:len(a)]
	var sb float64
	for i, v := range a {
		sa += float64(v) * float64(v)
		sb += float64(b[i]) * float64(b[i])
	}
	return sa, sb
}

// clipCoef combines the parameters' sums of squares, in parameter order,
// into the global norm and reports whether and by what factor clipping
// scales the gradient.
func clipCoef(sums []float64, maxNorm float64) (total float64, c float32, clip bool) {
	for _, s := range sums {
		n := math.Sqrt(s)
		total += n * n
	}
	total = math.Sqrt(total)
	coef := maxNorm / (total + 1e-6)
	return total, float32(coef), coef < 1
}

// scaleGrad multiplies g by c, element-wise.
func scaleGrad(g []float32, c float32) {
	for i := range g {
		g[i] *= c
	}
}
