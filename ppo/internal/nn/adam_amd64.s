//go:build amd64 && !purego

#include "textflag.h"

// func adam8AVX(theta, grad, m, v *float32, n int, s *AdamScalars)
// Eight elements per iteration, adamGo's operations in its order, each
// rounded (no fused multiply-add). The scalars are broadcast from s:
// Scale 0, −StepSize 4 (the caller negates it), W1 8, B2 12, W2 16, BC2S 20, Eps 24.
TEXT ·adam8AVX(SB), NOSPLIT, $0-48
	MOVQ theta+0(FP), DI
	MOVQ grad+8(FP), DX
	MOVQ m+16(FP), R9
	MOVQ v+24(FP), R10
	MOVQ n+32(FP), CX
	MOVQ s+40(FP), R8
	VBROADCASTSS 0(R8), Y8   // Scale
	VBROADCASTSS 4(R8), Y14  // −StepSize (negated by the caller)
	VBROADCASTSS 8(R8), Y9   // W1
	VBROADCASTSS 12(R8), Y10 // B2
	VBROADCASTSS 16(R8), Y11 // W2
	VBROADCASTSS 20(R8), Y12 // BC2S
	VBROADCASTSS 24(R8), Y13 // Eps

loop:
	VMOVUPS (DX), Y0
	VMULPS  Y8, Y0, Y0   // g·Scale
	VMOVUPS Y0, (DX)
	VMOVUPS (R9), Y1
	VSUBPS  Y1, Y0, Y2   // g − m
	VMULPS  Y2, Y9, Y2   // W1·(g − m)
	VADDPS  Y2, Y1, Y1   // m
	VMOVUPS Y1, (R9)
	VMOVUPS (R10), Y3
	VMULPS  Y10, Y3, Y3  // v·B2
	VMULPS  Y0, Y0, Y4   // g·g
	VMULPS  Y4, Y11, Y4  // W2·g²
	VADDPS  Y4, Y3, Y3   // v
	VMOVUPS Y3, (R10)
	VSQRTPS Y3, Y5       // √v
	VDIVPS  Y12, Y5, Y5  // √v / BC2S
	VADDPS  Y13, Y5, Y5  // + Eps
	VMULPS  Y1, Y14, Y6  // −StepSize·m
	VDIVPS  Y5, Y6, Y6   // / denom
	VADDPS  (DI), Y6, Y6 // θ +
	VMOVUPS Y6, (DI)
	ADDQ    $32, DI
	ADDQ    $32, DX
	ADDQ    $32, R9
	ADDQ    $32, R10
	DECQ    CX
	JNE     loop
	VZEROUPPER
	RET
