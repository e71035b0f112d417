package nn

import "math"

// AdamScalars are one Adam step's float32 scalars (see Adam); Scale is
// the gradient-clipping factor, 1 for none.
type AdamScalars struct {
	Scale, StepSize, W1, B2, W2, BC2S, Eps float32
	_                                      float32 // pads to 32 bytes for the assembly
}

// Adam applies one step of PyTorch's single-tensor Adam to θ from the
// gradient g, moments m and v (Kingma & Ba 2015, Algorithm 1, with
// PyTorch's placement of ε), element by element in float32, each
// operation rounded on its own:
//
//	g ← g·Scale (written back, as clipping scales the gradient in place)
//	m ← m + W1·(g − m)
//	v ← v·B2 + W2·(g·g)
//	θ ← θ + (−StepSize·m) / (√v / BC2S + Eps)
//
// √v is the correctly rounded float32 square root (the float64 root
// rounded to float32 is the same value: double rounding is innocuous for
// the square root when 53 ≥ 2·24 + 2). With AVX it runs eight lanes at a
// time in assembly with these operations in this order, so the bits are
// the same (TestAdamAssemblyMatchesGo). All slices have len(g) elements.
func Adam(theta, g, m, v []float32, s *AdamScalars) {
	theta, m, v = theta[:len(g)], m[:len(g)], v[:len(g)]
	n := len(g) / 8
	if adamAsm && n > 0 {
		neg := *s
		neg.StepSize = -s.StepSize
		adam8AVX(&theta[0], &g[0], &m[0], &v[0], n, &neg)
		theta, g, m, v = theta[8*n:], g[8*n:], m[8*n:], v[8*n:]
	}
	adamGo(theta, g, m, v, s)
}

// adamGo is Adam in Go. The explicit float32 conversions keep the compiler
// from fusing a multiply and an add (it may, on GOAMD64=v3), so the bits
// do not depend on the target.
func adamGo(theta, g, m, v []float32, s *AdamScalars) {
	theta, m, v = theta[:len(g)], m[:len(g)], v[:len(g)]
	for i, gi := range g {
		gi *= s.Scale
		g[i] = gi
		mi := m[i] + float32(s.W1*(gi-m[i]))
		vi := float32(v[i]*s.B2) + float32(s.W2*(gi*gi))
		m[i], v[i] = mi, vi
		denom := float32(math.Sqrt(float64(vi)))/s.BC2S + s.Eps
		theta[i] += (-s.StepSize * mi) / denom
	}
}
