package sgemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// naive is the obviously-correct reference, accumulated in float64.
func naive(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float64
			for l := range k {
				av := a[i*lda+l]
				if tA {
					av = a[l*lda+i]
				}
				bv := b[l*ldb+j]
				if tB {
					bv = b[j*ldb+l]
				}
				s += float64(av) * float64(bv)
			}
			v := float64(alpha) * s
			if beta != 0 {
				v += float64(beta) * float64(c[i*ldc+j])
			}
			c[i*ldc+j] = float32(v)
		}
	}
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func TestGemmMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, kern := range kernels() {
		restore := setKernel(kern)
		for _, sz := range [][3]int{{1, 1, 1}, {6, 16, 1}, {7, 17, 3}, {256, 64, 181}, {181, 64, 256}, {5, 45, 64}, {13, 1, 64}, {3, 3, 0}} {
			m, n, k := sz[0], sz[1], sz[2]
			for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				for _, ab := range [][2]float32{{1, 0}, {0.5, 1}, {-2, 0.25}} {
					lda, ldb, ldc := k+2, n+1, n+3
					if tr[0] {
						lda = m + 2
					}
					if tr[1] {
						ldb = k + 1
					}
					a := randSlice(r, max(m, k)*lda)
					b := randSlice(r, max(n, k)*ldb)
					c := randSlice(r, m*ldc)
					want := append([]float32(nil), c...)
					if ab[1] == 0 {
						for i := range c {
							c[i] = float32(math.NaN()) // β = 0 must not read C
						}
					}
					Gemm(tr[0], tr[1], m, n, k, ab[0], a, lda, b, ldb, ab[1], c, ldc)
					naive(tr[0], tr[1], m, n, k, ab[0], a, lda, b, ldb, ab[1], want, ldc)
					for i := range m {
						for j := range n {
							g, w := c[i*ldc+j], want[i*ldc+j]
							if math.Abs(float64(g-w)) > 1e-4*math.Sqrt(float64(k)+1)*(1+math.Abs(float64(w))) {
								t.Fatalf("%s %v %dx%dx%d α=%v β=%v: c[%d,%d] = %v, want %v", kern, tr, m, n, k, ab[0], ab[1], i, j, g, w)
							}
						}
						for j := n; j < ldc && i*ldc+j < len(c); j++ { // padding untouched
							if c[i*ldc+j] != want[i*ldc+j] && !(ab[1] == 0 && math.IsNaN(float64(c[i*ldc+j]))) {
								t.Fatalf("padding c[%d,%d] changed", i, j)
							}
						}
					}
				}
			}
		}
		restore()
	}
}

// TestGemmDeterministic: same inputs, same bits.
func TestGemmDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a, b := randSlice(r, 256*181), randSlice(r, 181*64)
	c1, c2 := make([]float32, 256*64), make([]float32, 256*64)
	Gemm(false, false, 256, 64, 181, 1, a, 181, b, 64, 0, c1, 64)
	Gemm(false, false, 256, 64, 181, 1, a, 181, b, 64, 0, c2, 64)
	for i := range c1 {
		if math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
			t.Fatalf("element %d differs: %v vs %v", i, c1[i], c2[i])
		}
	}
}

// BenchmarkSgemm runs the eight products of one actor forward+backward at
// B = 256, obs 181, twice (45 MFLOP per op, GFLOP/s reported).
func BenchmarkSgemm(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const B = 256
	x, w1, w2, w3 := randSlice(r, B*181), randSlice(r, 181*64), randSlice(r, 64*64), randSlice(r, 64*45)
	h1, h2, o := randSlice(r, B*64), randSlice(r, B*64), randSlice(r, B*45)
	dw1, dw2, dw3, dh, dh1 := randSlice(r, 181*64), randSlice(r, 64*64), randSlice(r, 64*45), randSlice(r, B*64), randSlice(r, B*64)
	type gemmFn func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	gon := func(tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		ta, tb := blas.NoTrans, blas.NoTrans
		if tA {
			ta = blas.Trans
		}
		if tB {
			tb = blas.Trans
		}
		gonum.Implementation{}.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	for _, impl := range []struct {
		name string
		f    gemmFn
	}{{"this", Gemm}, {"gonum", gon}} {
		b.Run(impl.name, func(b *testing.B) {
			g := impl.f
			for b.Loop() {
				for range 2 {
					g(false, false, B, 64, 181, 1, x, 181, w1, 64, 0, h1, 64)
					g(false, false, B, 64, 64, 1, h1, 64, w2, 64, 0, h2, 64)
					g(false, false, B, 45, 64, 1, h2, 64, w3, 45, 0, o, 45)
					g(true, false, 64, 45, B, 1, h2, 64, o, 45, 0, dw3, 45)
					g(false, true, B, 64, 45, 1, o, 45, w3, 45, 0, dh, 64)
					g(true, false, 64, 64, B, 1, h1, 64, dh, 64, 0, dw2, 64)
					g(false, true, B, 64, 64, 1, dh, 64, w2, 64, 0, dh1, 64)
					g(true, false, 181, 64, B, 1, x, 181, dh1, 64, 0, dw1, 64)
				}
			}
			flops := 2 * 2 * B * float64(181*64+64*64+64*45+64*45+64*45+64*64+64*64+181*64)
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
