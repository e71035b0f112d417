//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// elemAsm reports whether Add, Mul and TanhGrad run the AVX2 kernel.
var elemAsm = cpu.X86.HasAVX2

// elem8AVX applies elemGo's op to 8n elements, eight at a time.
//
//go:noescape
func elem8AVX(op int, z, x, y *float32, n int)
