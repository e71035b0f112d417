//go:build amd64 && !purego

#include "textflag.h"

// func elem8AVX(op int, z, x, y *float32, n int)
// Eight elements per iteration: op 0 z = x + y, op 1 z = x·y, op 2 z =
// y·(1 − x·x) (x the tanh output, y the upstream gradient), op 3 z = x·c
// (y points to c), each operation rounded (no fused multiply-add).
TEXT ·elem8AVX(SB), NOSPLIT, $0-40
	MOVQ op+0(FP), AX
	MOVQ z+8(FP), DI
	MOVQ x+16(FP), SI
	MOVQ y+24(FP), DX
	MOVQ n+32(FP), CX
	CMPQ AX, $1
	JEQ  mul
	CMPQ AX, $2
	JEQ  tanhgrad
	JGT  scale

add:
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNE     add
	VZEROUPPER
	RET

mul:
	VMOVUPS (SI), Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNE     mul
	VZEROUPPER
	RET

tanhgrad:
	MOVL         $0x3f800000, AX // 1.0
	MOVL         AX, X2
	VBROADCASTSS X2, Y2

tgloop:
	VMOVUPS      (SI), Y0
	VMULPS       Y0, Y0, Y0  // x·x
	VSUBPS       Y0, Y2, Y0  // 1 − x·x
	VMULPS       (DX), Y0, Y0 // ·y
	VMOVUPS      Y0, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DX
	ADDQ         $32, DI
	DECQ         CX
	JNE          tgloop
	VZEROUPPER
	RET

scale:
	VBROADCASTSS (DX), Y1

scloop:
	VMULPS  (SI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNE     scloop
	VZEROUPPER
	RET
