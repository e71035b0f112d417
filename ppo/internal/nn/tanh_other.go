//go:build !amd64 || purego

package nn

const tanhAsm = false

func tanh32(y, x []float32) { tanh32Go(y, x) }
