//go:build amd64 && !purego

package sgemm

import "golang.org/x/sys/cpu"

// Assembly reports whether an assembly micro-kernel (AVX2+FMA, and AVX-512
// for 32-column tiles where the CPU has it) is in use. Both fuse multiply
// and add, so they give the same bits as each other, and differ from the
// plain-Go kernel in the last bits.
var Assembly = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// avx512 reports whether 32-column tiles run the AVX-512 kernel (tests turn
// it off to hold it against the AVX2 kernel).
var avx512 = Assembly && cpu.X86.HasAVX512F

// Kernel names the micro-kernel in use: "avx512", "avx2" or "go".
func Kernel() string {
	switch {
	case Assembly && avx512:
		return "avx512"
	case Assembly:
		return "avx2"
	}
	return "go"
}

// kernel16AVX2 computes a 6×16 tile; kernel32AVX512 a 6×32 one whose
// columns 16–31 are read bps bytes after columns 0–15. Strides are in
// bytes: A element (i, l) at a + i·ars + l·acs, B row l at b + l·bls, C
// row i at c + i·ldc.
//
//go:noescape
func kernel16AVX2(k int, a *float32, ars, acs int, b *float32, bls int, c *float32, ldc int)

//go:noescape
func kernel32AVX512(k int, a *float32, ars, acs int, b *float32, bls, bps int, c *float32, ldc int)

//go:noescape
func gemv4AVX2(k int, x, b *float32, ps int, c *float32)

// tile computes the 6×w tile (w = 16 or 32) c[i·ldc + j] = Σ_l a[i·ars +
// l·acs]·B(l, j), B(l, j) = b[l·bls + j] for j < 16 and b[bps + l·bls + j
// − 16] beyond, every element summed from zero in l order; k > 0. Strides
// are in elements.
func tile(w, k int, a []float32, ars, acs int, b []float32, bls, bps int, c []float32, ldc int) {
	if !Assembly {
		kernelGo(k, a, ars, acs, b, bls, c, ldc)
		if w > nr {
			kernelGo(k, a, ars, acs, b[bps:], bls, c[nr:], ldc)
		}
		return
	}
	// What the assembly reads and writes, checked once here.
	_ = a[(mr-1)*ars+(k-1)*acs]
	_ = b[(k-1)*bls+nr-1]
	_ = c[(mr-1)*ldc+w-1]
	if w > nr {
		_ = b[bps+(k-1)*bls+nr-1]
		if avx512 {
			kernel32AVX512(k, &a[0], 4*ars, 4*acs, &b[0], 4*bls, 4*bps, &c[0], 4*ldc)
			return
		}
		kernel16AVX2(k, &a[0], 4*ars, 4*acs, &b[bps], 4*bls, &c[nr], 4*ldc)
	}
	kernel16AVX2(k, &a[0], 4*ars, 4*acs, &b[0], 4*bls, &c[0], 4*ldc)
}

// gemv is the one-row kernel over four panels ps floats apart; k > 0.
func gemv(k int, x, b []float32, ps int, acc *[gemvPanels * nr]float32) {
	if Assembly {
		_ = b[(gemvPanels-1)*ps+k*nr-1] // the assembly reads this far
		_ = x[k-1]
		gemv4AVX2(k, &x[0], &b[0], ps*4, &acc[0])
		return
	}
	gemvGo(k, x, b, ps, acc)
}
