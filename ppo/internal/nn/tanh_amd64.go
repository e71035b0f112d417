//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// tanhAsm reports whether tanh32 runs the AVX kernel; tanhAVX512 whether
// it runs the AVX-512 one first (eight lanes).
var (
	tanhAsm    = cpu.X86.HasAVX
	tanhAVX512 = cpu.X86.HasAVX512F
)

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

//go:noescape
func tanh8AVX512(y, x *float32, n int, c *[2 + len(tanhP) + len(tanhQ)][4]float64)

func tanh32(y, x []float32) {
	y = y[:len(x)]
	if n := len(x) / 8; tanhAVX512 && n > 0 {
		tanh8AVX512(&y[0], &x[0], n, &tanhConsts)
		x, y = x[8*n:], y[8*n:]
	}
	n := len(x) / 4
	if tanhAsm && n > 0 {
		tanh4AVX(&y[0], &x[0], n, &tanhConsts)
		x, y = x[4*n:], y[4*n:]
	}
	tanh32Go(y, x)
}
