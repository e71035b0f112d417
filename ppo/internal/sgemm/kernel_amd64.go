package sgemm

import "golang.org/x/sys/cpu"

// Assembly reports whether the AVX2+FMA micro-kernel is in use.
var Assembly = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func kernelAVX2(k int, a, b, c *float32)

func kernel(k int, a, b []float32, c *[mr * nr]float32) {
	if Assembly && k > 0 {
		kernelAVX2(k, &a[0], &b[0], &c[0])
		return
	}
	kernelGo(k, a, b, c)
}
