package sgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// oldGemm is the driver that trained the committed policies, kept as the
// reference for the layouts: op(A) and op(B) both packed into zero-padded
// panels, one 6×16 tile at a time into a buffer, then copied (α = 1, β =
// 0). Gemm must give its bits exactly, with every kernel.
func oldGemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	mp, np := (m+mr-1)/mr, (n+nr-1)/nr
	ap, bp := make([]float32, mp*mr*k), make([]float32, np*nr*k)
	packA(ap, transA, m, k, a, lda)
	packB(bp, transB, n, k, b, ldb)
	var t [mr * nr]float32
	for jp := range np {
		j0 := jp * nr
		jn := min(nr, n-j0)
		for ip := range mp {
			i0 := ip * mr
			tile(nr, k, ap[ip*mr*k:], 1, mr, bp[jp*nr*k:], nr, 0, t[:], nr)
			for i := range min(mr, m-i0) {
				copy(c[(i0+i)*ldc+j0:(i0+i)*ldc+j0+jn], t[i*nr:i*nr+jn])
			}
		}
	}
}

// refGo is the plain-Go kernel's arithmetic written out per element: a
// sum from zero in l order, each product rounded to float32 before the
// add (the conversion forbids fusing).
func refGo(tA, tB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float32
			for l := range k {
				av, bv := a[i*lda+l], b[l*ldb+j]
				if tA {
					av = a[l*lda+i]
				}
				if tB {
					bv = b[j*ldb+l]
				}
				s += float32(av * bv)
			}
			c[i*ldc+j] = s
		}
	}
}

// TestKernelsAgree holds the kernels against each other on random shapes
// with ragged edges (rows not a multiple of 6, columns not of 16 or 32,
// both transposes): AVX-512 and AVX2 give the same bits (both one fused
// chain per element), every kernel gives the old driver's bits, and the
// Go kernel gives refGo's.
func TestKernelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	shapes := [][3]int{{6, 32, 5}, {5, 31, 7}, {13, 33, 1}, {256, 64, 181}, {64, 45, 256}, {181, 64, 256}, {256, 1, 64}, {7, 48, 3}, {12, 80, 9}}
	for range 12 {
		shapes = append(shapes, [3]int{1 + r.IntN(40), 1 + r.IntN(100), 1 + r.IntN(70)})
	}
	for _, sz := range shapes {
		m, n, k := sz[0], sz[1], sz[2]
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			lda, ldb, ldc := k+r.IntN(3), n+r.IntN(3), n+r.IntN(3)
			if tr[0] {
				lda = m + r.IntN(3)
			}
			if tr[1] {
				ldb = k + r.IntN(3)
			}
			a, b := randSlice(r, max(m, k)*lda), randSlice(r, max(n, k)*ldb)
			var first []float32
			var firstKern string
			for _, kern := range kernels() {
				restore := setKernel(kern)
				got, old := make([]float32, m*ldc), make([]float32, m*ldc)
				Gemm(tr[0], tr[1], m, n, k, 1, a, lda, b, ldb, 0, got, ldc)
				oldGemm(tr[0], tr[1], m, n, k, a, lda, b, ldb, old, ldc)
				restore()
				name := fmt.Sprintf("%s %v %d×%d×%d", kern, tr, m, n, k)
				if i := firstDiff(got, old); i >= 0 {
					t.Fatalf("%s: c[%d] = %v, old driver %v", name, i, got[i], old[i])
				}
				if kern == "go" {
					ref := make([]float32, m*ldc)
					refGo(tr[0], tr[1], m, n, k, a, lda, b, ldb, ref, ldc)
					if i := firstDiff(got, ref); i >= 0 {
						t.Fatalf("%s: c[%d] = %v, per-element reference %v", name, i, got[i], ref[i])
					}
					continue
				}
				if first == nil {
					first, firstKern = got, kern
				} else if i := firstDiff(got, first); i >= 0 {
					t.Fatalf("%s: c[%d] = %v, %s gives %v", name, i, got[i], firstKern, first[i])
				}
			}
		}
	}
}

func firstDiff(x, y []float32) int {
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			return i
		}
	}
	return -1
}
