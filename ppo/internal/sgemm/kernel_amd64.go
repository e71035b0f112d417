//go:build amd64 && !purego

package sgemm

import "golang.org/x/sys/cpu"

// Assembly reports whether the AVX2+FMA micro-kernel is in use.
var Assembly = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func kernelAVX2(k int, a, b, c *float32)

//go:noescape
func gemv4AVX2(k int, x, b *float32, ps int, c *float32)

func kernel(k int, a, b []float32, c *[mr * nr]float32) {
	if Assembly && k > 0 {
		kernelAVX2(k, &a[0], &b[0], &c[0])
		return
	}
	kernelGo(k, a, b, c)
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
