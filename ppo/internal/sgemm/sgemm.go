package sgemm

import (
	"fmt"
	"sync"
)

// Tile sizes of the micro-kernel.
const (
	mr = 6  // rows of op(A) per panel
	nr = 16 // columns of op(B) per panel
)

var pool = sync.Pool{New: func() any { s := make([]float32, 0, 1<<16); return &s }}

func grow(p *[]float32, n int) []float32 {
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	return (*p)[:n]
}

// Gemm computes C = α·op(A)·op(B) + β·C where op(A) is m×k, op(B) is k×n
// and C is m×n, all row-major with leading dimensions lda, ldb, ldc; op(X)
// is Xᵀ when the flag is set. It panics on inconsistent sizes, as BLAS does.
func Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("sgemm: negative size %d×%d×%d", m, n, k))
	}
	if m == 0 || n == 0 {
		return
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	check := func(name string, s []float32, rows, cols, ld int) {
		if ld < max(1, cols) || (rows > 0 && len(s) < (rows-1)*ld+cols) {
			panic(fmt.Sprintf("sgemm: %s is %d long with ld %d, want %d×%d", name, len(s), ld, rows, cols))
		}
	}
	check("a", a, ar, ac, lda)
	check("b", b, br, bc, ldb)
	check("c", c, m, n, ldc)

	if k == 0 || alpha == 0 {
		scale(m, n, beta, c, ldc)
		return
	}

	gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemm is Gemm after the checks, for k > 0 and α ≠ 0. The micro-kernels
// read op(A) in place (element (i, l) at a[i·ars + l·acs]); only a last
// group of fewer than 6 rows is packed, zero-padded. op(B) is read in
// place where B is not transposed and a 16-column panel is full, and
// packed otherwise (Bᵀ, the last ragged panel). Whole tiles of C with
// α = 1, β = 0 are written in place; the others go through a tile buffer.
// None of this changes what is summed or in which order: every element
// of C is Σ_l op(A)[i][l]·op(B)[l][j] accumulated from zero in l order by
// the kernel's arithmetic, whatever the layout it was read from.
func gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ars, acs := lda, 1
	if transA {
		ars, acs = 1, lda
	}
	np := (n + nr - 1) / nr
	first := 0 // the first packed panel of op(B); the ones before it are read in place
	if !transB {
		first = n / nr
	}
	pb := pool.Get().(*[]float32)
	defer pool.Put(pb)
	var bp []float32
	if first < np {
		bp = grow(pb, (np-first)*nr*k)
		if transB {
			packB(bp, true, n, k, b, ldb)
		} else {
			packB(bp, false, n-first*nr, k, b[first*nr:], ldb)
		}
	}
	var edge []float32 // the last rows of op(A) if fewer than 6, packed
	full := m / mr * mr
	if full < m {
		pe := pool.Get().(*[]float32)
		defer pool.Put(pe)
		edge = grow(pe, mr*k)
		if transA {
			packA(edge, true, m-full, k, a[full:], lda)
		} else {
			packA(edge, false, m-full, k, a[full*lda:], lda)
		}
	}

	var buf [mr * 2 * nr]float32
	for jp := 0; jp < np; {
		w := nr
		if jp+1 < np && (jp+1 < first || jp >= first) { // two panels of one layout: a 32-column tile
			w = 2 * nr
		}
		j0 := jp * nr
		jn := min(w, n-j0)
		bs, bls, bps := b[j0:], ldb, nr
		if jp >= first {
			bs, bls, bps = bp[(jp-first)*nr*k:], nr, nr*k
		}
		for i0 := 0; i0 < m; i0 += mr {
			as, rs, cs := a[i0*ars:], ars, acs
			if i0 == full {
				as, rs, cs = edge, 1, mr
			}
			in := min(mr, m-i0)
			if in == mr && jn == w && alpha == 1 && beta == 0 {
				tile(w, k, as, rs, cs, bs, bls, bps, c[i0*ldc+j0:], ldc)
				continue
			}
			tile(w, k, as, rs, cs, bs, bls, bps, buf[:], w)
			for i := range in {
				row := c[(i0+i)*ldc+j0 : (i0+i)*ldc+j0+jn]
				t := buf[i*w : i*w+jn]
				switch {
				case beta == 0 && alpha == 1:
					copy(row, t)
				case beta == 0:
					for j := range row {
						row[j] = alpha * t[j]
					}
				default:
					for j := range row {
						row[j] = alpha*t[j] + beta*row[j]
					}
				}
			}
		}
		jp += w / nr
	}
}

func scale(m, n int, beta float32, c []float32, ldc int) {
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		for j := range row {
			if beta == 0 {
				row[j] = 0
			} else {
				row[j] *= beta
			}
		}
	}
}

// packA writes op(A) (m×k) as ⌈m/6⌉ panels, each k groups of 6 row values.
func packA(dst []float32, trans bool, m, k int, a []float32, lda int) {
	for ip := 0; ip*mr < m; ip++ {
		p := dst[ip*mr*k : (ip+1)*mr*k]
		i0 := ip * mr
		in := min(mr, m-i0)
		if trans && in == mr { // op(A)[i][l] = A[l][i]: six contiguous values of row l, assigned (a copy call per six values costs more)
			for l := range k {
				q := p[l*mr : l*mr+mr : l*mr+mr]
				r := a[l*lda+i0 : l*lda+i0+mr : l*lda+i0+mr]
				q[0], q[1], q[2], q[3], q[4], q[5] = r[0], r[1], r[2], r[3], r[4], r[5]
			}
			continue
		}
		if trans {
			for l := range k {
				q := p[l*mr : l*mr+mr]
				copy(q, a[l*lda+i0:l*lda+i0+in])
				clear(q[in:])
			}
			continue
		}
		if in == mr { // six rows read in step, the panel written in order
			r0 := a[i0*lda : i0*lda+k]
			r1 := a[(i0+1)*lda : (i0+1)*lda+k]
			r2 := a[(i0+2)*lda : (i0+2)*lda+k]
			r3 := a[(i0+3)*lda : (i0+3)*lda+k]
			r4 := a[(i0+4)*lda : (i0+4)*lda+k]
			r5 := a[(i0+5)*lda : (i0+5)*lda+k]
			for l := range k {
				q := p[l*mr : l*mr+mr : l*mr+mr]
				q[0], q[1], q[2], q[3], q[4], q[5] = r0[l], r1[l], r2[l], r3[l], r4[l], r5[l]
			}
			continue
		}
		clear(p)
		for r := range in {
			row := a[(i0+r)*lda : (i0+r)*lda+k]
			for l, v := range row {
				p[l*mr+r] = v
			}
		}
	}
}

// packB writes op(B) (k×n) as ⌈n/16⌉ panels, each k groups of 16 column values.
func packB(dst []float32, trans bool, n, k int, b []float32, ldb int) {
	for jp := 0; jp*nr < n; jp++ {
		p := dst[jp*nr*k : (jp+1)*nr*k]
		j0 := jp * nr
		jn := min(nr, n-j0)
		if !trans {
			for l := range k {
				q := p[l*nr : l*nr+nr]
				copy(q, b[l*ldb+j0:l*ldb+j0+jn])
				clear(q[jn:])
			}
			continue
		}
		// op(B)[l][j] = B[j][l]
		for l := range k {
			q := p[l*nr : l*nr+nr]
			for j := range jn {
				q[j] = b[(j0+j)*ldb+l]
			}
			clear(q[jn:])
		}
	}
}

// kernelGo computes the 6×16 tile c[i·ldc + j] = Σ_l a[i·ars + l·acs]·
// b[l·bls + j], each element summed from zero in l order with a separate
// multiply and add (two roundings).
func kernelGo(k int, a []float32, ars, acs int, b []float32, bls int, c []float32, ldc int) {
	var t [mr * nr]float32
	for l := range k {
		bv := b[l*bls : l*bls+nr]
		for i := range mr {
			x := a[i*ars+l*acs]
			row := t[i*nr : i*nr+nr]
			for j, y := range bv {
				row[j] += x * y
			}
		}
	}
	for i := range mr {
		copy(c[i*ldc:i*ldc+nr], t[i*nr:i*nr+nr])
	}
}
