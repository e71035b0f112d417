//go:build !amd64 || purego

package sgemm

// Assembly reports whether an assembly micro-kernel is in use.
const Assembly = false

// Kernel names the micro-kernel in use: "go" on this build.
func Kernel() string { return "go" }

func tile(w, k int, a []float32, ars, acs int, b []float32, bls, bps int, c []float32, ldc int) {
	kernelGo(k, a, ars, acs, b, bls, c, ldc)
	if w > nr {
		kernelGo(k, a, ars, acs, b[bps:], bls, c[nr:], ldc)
	}
}

func gemv(k int, x, b []float32, ps int, acc *[gemvPanels * nr]float32) { gemvGo(k, x, b, ps, acc) }
