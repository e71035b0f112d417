//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// adamAsm reports whether Adam runs the AVX kernel.
var adamAsm = cpu.X86.HasAVX

// adam8AVX applies adamGo's step to 8n elements, eight at a time.
//
//go:noescape
func adam8AVX(theta, grad, m, v *float32, n int, s *AdamScalars)
