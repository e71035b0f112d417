package sgemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMulPackedMatchesGemm: a product with a pre-packed B has exactly the
// bits of Gemm on the unpacked B, for every row count (tile rows, one-row
// rows and both), column counts around the 16- and 64-column panel
// edges, both B layouts and both kernels.
func TestMulPackedMatchesGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, kern := range kernels() {
		restore := setKernel(kern)
		for _, nk := range [][2]int{{1, 1}, {1, 64}, {16, 3}, {17, 5}, {45, 64}, {64, 181}, {65, 7}, {130, 33}, {5, 0}} {
			n, k := nk[0], nk[1]
			for _, transB := range []bool{false, true} {
				ldb := n + 1
				if transB {
					ldb = k + 2
				}
				b := randSlice(r, max(n, k)*ldb)
				pb := Pack(transB, n, k, b, ldb)
				for _, m := range []int{1, 2, 5, 6, 7, 13, 24, 25} {
					lda, ldc := k+3, n+2
					a := randSlice(r, m*lda)
					want, got := make([]float32, m*ldc), make([]float32, m*ldc)
					for i := range got {
						got[i] = float32(math.NaN()) // C is never read
					}
					Gemm(false, transB, m, n, k, 1, a, lda, b, ldb, 0, want, ldc)
					MulPacked(m, a, lda, pb, got, ldc)
					for i := range m {
						for j := range n {
							if g, w := got[i*ldc+j], want[i*ldc+j]; math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("%s transB=%v %d×%d×%d: c[%d,%d] = %v, Gemm gives %v", kern, transB, m, n, k, i, j, g, w)
							}
						}
						for j := n; j < ldc && i*ldc+j < len(got); j++ {
							if !math.IsNaN(float64(got[i*ldc+j])) {
								t.Fatalf("padding c[%d,%d] written", i, j)
							}
						}
					}
				}
			}
		}
		restore()
	}
}

func TestMulPackedDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pb := Pack(false, 64, 181, randSlice(r, 181*64), 64)
	for _, m := range []int{1, 7} {
		a, c := randSlice(r, m*181), make([]float32, m*64)
		MulPacked(m, a, 181, pb, c, 64)
		if n := testing.AllocsPerRun(100, func() { MulPacked(m, a, 181, pb, c, 64) }); n != 0 {
			t.Errorf("m=%d: %v allocations per call", m, n)
		}
	}
}

// BenchmarkOneRow is the first layer of one actor forward pass for a
// single observation (1×181 by 181×64): Gemm repacks B, MulPacked does not.
func BenchmarkOneRow(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, w, c := randSlice(r, 181), randSlice(r, 181*64), make([]float32, 64)
	b.Run("Gemm", func(b *testing.B) {
		for b.Loop() {
			Gemm(false, false, 1, 64, 181, 1, x, 181, w, 64, 0, c, 64)
		}
	})
	pw := Pack(false, 64, 181, w, 64)
	b.Run("MulPacked", func(b *testing.B) {
		for b.Loop() {
			MulPacked(1, x, 181, pw, c, 64)
		}
	})
}
