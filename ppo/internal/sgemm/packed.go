package sgemm

import "fmt"

// gemvPanels is how many 16-column panels the one-row kernel covers per
// call (64 columns, eight AVX2 accumulators).
const gemvPanels = 4

// Packed is a k×n right-hand matrix packed once into the kernel's panel
// layout, for repeated products with the same matrix (a layer's weights
// at inference). The panel count is rounded up to a multiple of four with
// zero panels so the one-row kernel always covers 64 columns. A Packed is
// immutable and safe for concurrent use.
type Packed struct {
	n, k int
	data []float32 // ⌈n/64⌉·4 panels, each k groups of 16 column values
}

// Pack packs op(B) (k×n, row-major with leading dimension ldb; Bᵀ when
// transB is set) for MulPacked. It panics on inconsistent sizes.
func Pack(transB bool, n, k int, b []float32, ldb int) *Packed {
	if n < 0 || k < 0 {
		panic(fmt.Sprintf("sgemm: negative size %d×%d", k, n))
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if ldb < max(1, bc) || (br > 0 && len(b) < (br-1)*ldb+bc) {
		panic(fmt.Sprintf("sgemm: b is %d long with ld %d, want %d×%d", len(b), ldb, br, bc))
	}
	groups := (n + gemvPanels*nr - 1) / (gemvPanels * nr)
	p := &Packed{n: n, k: k, data: make([]float32, groups*gemvPanels*nr*k)}
	packB(p.data, transB, n, k, b, ldb)
	return p
}

// MulPacked computes C = A·B for A m×k (row-major, leading dimension
// lda), B packed by Pack, and C m×n (leading dimension ldc). It gives
// exactly the bits of Gemm(false, false, m, n, k, 1, a, lda, b, ldb, 0, c,
// ldc) on the unpacked B: every element is the same sequential sum over k
// in the same kernel arithmetic. Whole groups of 6 rows go through the
// 6×16 micro-kernel; the remaining rows (all of them for a single
// observation) through a one-row kernel that reads the panels directly,
// so nothing is repacked. It does not allocate.
func MulPacked(m int, a []float32, lda int, b *Packed, c []float32, ldc int) {
	n, k := b.n, b.k
	if m < 0 {
		panic(fmt.Sprintf("sgemm: negative size %d×%d×%d", m, n, k))
	}
	if m == 0 || n == 0 {
		return
	}
	if lda < max(1, k) || len(a) < (m-1)*lda+k {
		panic(fmt.Sprintf("sgemm: a is %d long with ld %d, want %d×%d", len(a), lda, m, k))
	}
	if ldc < max(1, n) || len(c) < (m-1)*ldc+n {
		panic(fmt.Sprintf("sgemm: c is %d long with ld %d, want %d×%d", len(c), ldc, m, n))
	}
	if k == 0 {
		scale(m, n, 0, c, ldc)
		return
	}
	full := m / mr * mr
	if full > 0 {
		mulTiles(full, a, lda, b, c, ldc)
	}
	var acc [gemvPanels * nr]float32
	width := gemvPanels * nr
	for i := full; i < m; i++ {
		x := a[i*lda : i*lda+k]
		row := c[i*ldc : i*ldc+n]
		for j0 := 0; j0 < n; j0 += width {
			gemv(k, x, b.data[j0*k:], nr*k, &acc)
			copy(row[j0:min(j0+width, n)], acc[:])
		}
	}
}

// mulTiles runs the micro-kernels over the m (a multiple of 6) rows,
// reading A in place and the packed panels two at a time (a Packed
// always has an even number of panels).
func mulTiles(m int, a []float32, lda int, b *Packed, c []float32, ldc int) {
	n, k := b.n, b.k
	var buf [mr * 2 * nr]float32
	const w = 2 * nr
	for j0 := 0; j0 < n; j0 += w {
		jn := min(w, n-j0)
		bpanel := b.data[j0*k:]
		for i0 := 0; i0 < m; i0 += mr {
			if jn == w {
				tile(w, k, a[i0*lda:], lda, 1, bpanel, nr, nr*k, c[i0*ldc+j0:], ldc)
				continue
			}
			tile(w, k, a[i0*lda:], lda, 1, bpanel, nr, nr*k, buf[:], w)
			for i := range mr {
				copy(c[(i0+i)*ldc+j0:(i0+i)*ldc+j0+jn], buf[i*w:i*w+jn])
			}
		}
	}
}

// gemvGo computes acc[p·16+j] = Σ_l x[l]·b[p·ps + l·16 + j] for the four
// panels p starting at b, ps apart, summing in kernelGo's order.
func gemvGo(k int, x, b []float32, ps int, acc *[gemvPanels * nr]float32) {
	*acc = [gemvPanels * nr]float32{}
	for p := range gemvPanels {
		out := acc[p*nr : p*nr+nr]
		panel := b[p*ps : p*ps+k*nr]
		for l, xv := range x[:k] {
			bv := panel[l*nr : l*nr+nr]
			for j, y := range bv {
				out[j] += xv * y
			}
		}
	}
}
