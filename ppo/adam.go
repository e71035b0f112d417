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
	a.step++
	t := float64(a.step)
	bc1 := 1 - math.Pow(adamBeta1, t)
	bc2sqrt := math.Sqrt(1 - math.Pow(adamBeta2, t))
	stepSize := float32(lr / bc1)
	w1 := float32(1 - adamBeta1)
	b2, w2 := float32(adamBeta2), float32(1-adamBeta2)
	bc2s := float32(bc2sqrt)
	eps := float32(a.eps)
	for i, g := range grad {
		m := a.m[i] + w1*(g-a.m[i])
		v := a.v[i]*b2 + w2*(g*g)
		a.m[i], a.v[i] = m, v
		denom := float32(math.Sqrt(float64(v)))/bc2s + eps
		theta[i] += (-stepSize * m) / denom
	}
}

// clipGradNorm scales grad so that its global L2 norm is at most maxNorm,
// as torch.nn.utils.clip_grad_norm_ does: the total norm is the norm of
// the per-parameter norms, and every gradient is multiplied by
// min(1, maxNorm/(total + 1e-6)). Norms are accumulated in float64 in
// parameter order. It returns the norm before clipping.
func clipGradNorm(grad []float32, params []nn.Param, maxNorm float64) float64 {
	var total float64
	for _, p := range params {
		var s float64
		for _, g := range grad[p.Off : p.Off+p.Len()] {
			s += float64(g) * float64(g)
		}
		n := math.Sqrt(s)
		total += n * n
	}
	total = math.Sqrt(total)
	coef := maxNorm / (total + 1e-6)
	if coef < 1 {
		c := float32(coef)
		for i := range grad {
			grad[i] *= c
		}
	}
	return total
}
