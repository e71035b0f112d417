//go:build amd64 && !purego

package nn

import (
	"math"

	"golang.org/x/sys/cpu"
)

// expAsm reports whether ExpSlice runs the AVX-512 kernel: it reproduces
// math.Exp's AVX+FMA path, which Go takes where the CPU has AVX and FMA.
var expAsm = cpu.X86.HasAVX512F && cpu.X86.HasAVX && cpu.X86.HasFMA

// expConsts are the kernel's constants: those of math/exp_amd64.s, then
// the bounds of the inputs the kernel computes and the exponent bias.
var expConsts = [16]uint64{
	math.Float64bits(1.4426950408889634073599246810018920),                  // log2(e)
	math.Float64bits(0.69314718055966295651160180568695068359375),           // upper half of ln 2
	math.Float64bits(0.28235290563031577122588448175013436025525412068e-12), // lower half of ln 2
	math.Float64bits(0.0625),
	math.Float64bits(2.4801587301587301587e-5),
	math.Float64bits(1.9841269841269841270e-4),
	math.Float64bits(1.3888888888888888889e-3),
	math.Float64bits(8.3333333333333333333e-3),
	math.Float64bits(4.1666666666666666667e-2),
	math.Float64bits(1.6666666666666666667e-1),
	math.Float64bits(0.5),
	math.Float64bits(1.0),
	math.Float64bits(2.0),
	math.Float64bits(expLo),
	math.Float64bits(expHi),
	1023,
}

// exp8AVX512FMA sets dst[i] = math.Exp(src[i]) for the first 8k elements
// and returns k: the n blocks of eight, or the first whose inputs are not
// all in [expLo, expHi].
//
//go:noescape
func exp8AVX512FMA(dst, src *float64, n int, c *[16]uint64) int

// ExpSlice sets dst[i] = math.Exp(src[i]), bit for bit, for every i of
// src (dst and src may be the same slice).
func ExpSlice(dst, src []float64) {
	dst = dst[:len(src)]
	if expAsm {
		for len(src) >= 8 {
			n := len(src) / 8
			k := exp8AVX512FMA(&dst[0], &src[0], n, &expConsts)
			dst, src = dst[8*k:], src[8*k:]
			if k == n {
				break
			}
			for i, v := range src[:8] { // a block the kernel left to math.Exp
				dst[i] = math.Exp(v)
			}
			dst, src = dst[8:], src[8:]
		}
	}
	for i, v := range src {
		dst[i] = math.Exp(v)
	}
}
