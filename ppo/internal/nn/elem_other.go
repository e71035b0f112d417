//go:build !amd64 || purego

package nn

const elemAsm = false

func elem8AVX(op int, z, x, y *float32, n int) { panic("nn: no assembly") }
