//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// tanhAsm reports whether tanh32 runs the AVX kernel.
var tanhAsm = cpu.X86.HasAVX

// tanhConsts are the kernel's constants, each in four lanes: the clamp
// bounds −tanhClamp and tanhClamp, then tanhP[0..5], then tanhQ[0..4].
var tanhConsts = func() (c [2 + len(tanhP) + len(tanhQ)][4]float64) {
	vals := append(append([]float64{-tanhClamp, tanhClamp}, tanhP[:]...), tanhQ[:]...)
	for i, v := range vals {
		c[i] = [4]float64{v, v, v, v}
	}
	return c
}()

// tanh4AVX writes tanh of x[0:4n] into y[0:4n], four float32 at a time
// widened to float64, with tanh32Go's operations in its order (no fused
// multiply-add).
//
//go:noescape
func tanh4AVX(y, x *float32, n int, c *[2 + len(tanhP) + len(tanhQ)][4]float64)

func tanh32(y, x []float32) {
	y = y[:len(x)]
	n := len(x) / 4
	if tanhAsm && n > 0 {
		tanh4AVX(&y[0], &x[0], n, &tanhConsts)
		x, y = x[4*n:], y[4*n:]
	}
	tanh32Go(y, x)
}
