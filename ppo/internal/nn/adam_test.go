package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAdamAssemblyMatchesGo holds Adam (the AVX kernel where the CPU has
// it, the Go loop for the tail) against adamGo bit for bit, on lengths
// around the 8-lane edge, with and without scaling, a zero step size and
// special values (±0, subnormal, huge gradients).
func TestAdamAssemblyMatchesGo(t *testing.T) {
	if !adamAsm {
		t.Skip("no assembly kernel on this build")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 7, 8, 9, 16, 61, 1000} {
		for _, s := range []AdamScalars{
			{Scale: 1, StepSize: 3e-4, W1: 0.1, B2: 0.999, W2: 0.001, BC2S: 0.03, Eps: 1e-5},
			{Scale: 0.37, StepSize: 1e-2, W1: 0.1, B2: 0.999, W2: 0.001, BC2S: 0.9, Eps: 1e-8},
			{Scale: 1, StepSize: 0, W1: 0.1, B2: 0.999, W2: 0.001, BC2S: 0.5, Eps: 1e-5},
		} {
			vals := func(special bool) []float32 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64())
					if special && i%5 == 0 {
						x[i] = []float32{0, float32(math.Copysign(0, -1)), 1e-41, 3e30, -2e-38}[i/5%5]
					}
				}
				return x
			}
			th, g, m, v := vals(true), vals(true), vals(false), vals(false)
			for i := range v {
				v[i] = float32(math.Abs(float64(v[i])))
			}
			th2, g2, m2, v2 := clone(th), clone(g), clone(m), clone(v)
			Adam(th, g, m, v, &s)
			adamGo(th2, g2, m2, v2, &s)
			for name, p := range map[string][2][]float32{"θ": {th, th2}, "g": {g, g2}, "m": {m, m2}, "v": {v, v2}} {
				for i := range p[0] {
					if math.Float32bits(p[0][i]) != math.Float32bits(p[1][i]) {
						t.Fatalf("n=%d %+v: %s[%d] = %v, Go gives %v", n, s, name, i, p[0][i], p[1][i])
					}
				}
			}
		}
	}
}

func clone(x []float32) []float32 { return append([]float32(nil), x...) }

// TestElemAssemblyMatchesGo holds Add, Mul, TanhGrad and Scale (AVX2 where the
// CPU has it, Go for the tail) against elemGo bit for bit, in place and
// not, on lengths around the 8-lane edge and special values.
func TestElemAssemblyMatchesGo(t *testing.T) {
	if !elemAsm {
		t.Skip("no assembly kernel on this build")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 7, 8, 9, 45, 64, 1000} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			if i%7 == 0 {
				x[i] = []float32{0, float32(math.Copysign(0, -1)), 1e-41, 3e30, 1, -1, float32(math.Inf(1))}[i/7%7]
			}
		}
		scale := func(z, x, y []float32) { Scale(z, x, y[0]) }
		for op, f := range []func(z, x, y []float32){Add, Mul, TanhGrad, scale} {
			for _, inPlace := range []bool{false, true} {
				z, want := make([]float32, n), make([]float32, n)
				xs := x
				if inPlace {
					xs = clone(x)
					z = xs
				}
				if op == elemScale {
					for i, v := range x {
						want[i] = v * y[0]
					}
				} else {
					elemGo(op, want, x, y)
				}
				f(z, xs, y)
				for i := range z {
					if math.Float32bits(z[i]) != math.Float32bits(want[i]) {
						t.Fatalf("op %d n=%d in place %v: [%d] = %v, Go gives %v", op, n, inPlace, i, z[i], want[i])
					}
				}
			}
		}
	}
}
