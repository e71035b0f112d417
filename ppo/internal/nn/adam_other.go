//go:build !amd64 || purego

package nn

const adamAsm = false

func adam8AVX(theta, grad, m, v *float32, n int, s *AdamScalars) { panic("nn: no assembly") }
