//go:build !amd64 || purego

package nn

import "math"

const expAsm = false

// ExpSlice sets dst[i] = math.Exp(src[i]) for every i of src (dst and src
// may be the same slice).
func ExpSlice(dst, src []float64) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = math.Exp(v)
	}
}
