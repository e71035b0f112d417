//go:build amd64 && !purego

#include "textflag.h"

// The micro-kernels compute a tile of C = op(A)·op(B) for six rows of
// op(A): every element is one chain of fused multiply-adds from zero over
// l = 0, 1, …, k−1 (VFMADD231PS, one rounding each), whether the tile is
// 16 columns wide (AVX2, two Y accumulators per row) or 32 (AVX-512, two Z
// accumulators per row). Lanes are independent elements of C, so the
// width does not change any sum: the kernels give the same bits.
//
// Operands are strided (bytes): A element (i, l) at a + i·ars + l·acs, so
// A is read in place, row-major (ars = 4·lda, acs = 4) or transposed (ars
// = 4, acs = 4·lda); row l of the B panel at b + l·bls; C row i at c +
// i·ldc. Row addresses of A: a, a+ars, a+2ars, a+3ars (R9), a+4ars,
// a+5ars (R10).

// func kernel16AVX2(k int, a *float32, ars, acs int, b *float32, bls int, c *float32, ldc int)
TEXT ·kernel16AVX2(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ ars+16(FP), R8
	MOVQ acs+24(FP), R11
	MOVQ b+32(FP), DX
	MOVQ bls+40(FP), R12
	MOVQ c+48(FP), DI
	MOVQ ldc+56(FP), AX
	LEAQ (R8)(R8*2), R9
	LEAQ (R8)(R8*4), R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

loop16:
	VMOVUPS      (DX), Y12
	VMOVUPS      32(DX), Y13
	VBROADCASTSS (SI), Y14
	VFMADD231PS  Y12, Y14, Y0
	VFMADD231PS  Y13, Y14, Y1
	VBROADCASTSS (SI)(R8*1), Y15
	VFMADD231PS  Y12, Y15, Y2
	VFMADD231PS  Y13, Y15, Y3
	VBROADCASTSS (SI)(R8*2), Y14
	VFMADD231PS  Y12, Y14, Y4
	VFMADD231PS  Y13, Y14, Y5
	VBROADCASTSS (SI)(R9*1), Y15
	VFMADD231PS  Y12, Y15, Y6
	VFMADD231PS  Y13, Y15, Y7
	VBROADCASTSS (SI)(R8*4), Y14
	VFMADD231PS  Y12, Y14, Y8
	VFMADD231PS  Y13, Y14, Y9
	VBROADCASTSS (SI)(R10*1), Y15
	VFMADD231PS  Y12, Y15, Y10
	VFMADD231PS  Y13, Y15, Y11
	ADDQ         R11, SI
	ADDQ         R12, DX
	DECQ         CX
	JNE          loop16

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    AX, DI
	VMOVUPS Y2, (DI)
	VMOVUPS Y3, 32(DI)
	ADDQ    AX, DI
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	ADDQ    AX, DI
	VMOVUPS Y6, (DI)
	VMOVUPS Y7, 32(DI)
	ADDQ    AX, DI
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, 32(DI)
	ADDQ    AX, DI
	VMOVUPS Y10, (DI)
	VMOVUPS Y11, 32(DI)
	VZEROUPPER
	RET

// func kernel32AVX512(k int, a *float32, ars, acs int, b *float32, bls, bps int, c *float32, ldc int)
// Columns 0–15 of B row l at b + l·bls, columns 16–31 bps bytes further.
TEXT ·kernel32AVX512(SB), NOSPLIT, $0-72
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ ars+16(FP), R8
	MOVQ acs+24(FP), R11
	MOVQ b+32(FP), DX
	MOVQ bls+40(FP), R12
	MOVQ bps+48(FP), R13
	MOVQ c+56(FP), DI
	MOVQ ldc+64(FP), AX
	LEAQ (R8)(R8*2), R9
	LEAQ (R8)(R8*4), R10
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11

loop32:
	VMOVUPS      (DX), Z12
	VMOVUPS      (DX)(R13*1), Z13
	VBROADCASTSS (SI), Z14
	VFMADD231PS  Z12, Z14, Z0
	VFMADD231PS  Z13, Z14, Z1
	VBROADCASTSS (SI)(R8*1), Z15
	VFMADD231PS  Z12, Z15, Z2
	VFMADD231PS  Z13, Z15, Z3
	VBROADCASTSS (SI)(R8*2), Z16
	VFMADD231PS  Z12, Z16, Z4
	VFMADD231PS  Z13, Z16, Z5
	VBROADCASTSS (SI)(R9*1), Z17
	VFMADD231PS  Z12, Z17, Z6
	VFMADD231PS  Z13, Z17, Z7
	VBROADCASTSS (SI)(R8*4), Z18
	VFMADD231PS  Z12, Z18, Z8
	VFMADD231PS  Z13, Z18, Z9
	VBROADCASTSS (SI)(R10*1), Z19
	VFMADD231PS  Z12, Z19, Z10
	VFMADD231PS  Z13, Z19, Z11
	ADDQ         R11, SI
	ADDQ         R12, DX
	DECQ         CX
	JNE          loop32

	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    AX, DI
	VMOVUPS Z2, (DI)
	VMOVUPS Z3, 64(DI)
	ADDQ    AX, DI
	VMOVUPS Z4, (DI)
	VMOVUPS Z5, 64(DI)
	ADDQ    AX, DI
	VMOVUPS Z6, (DI)
	VMOVUPS Z7, 64(DI)
	ADDQ    AX, DI
	VMOVUPS Z8, (DI)
	VMOVUPS Z9, 64(DI)
	ADDQ    AX, DI
	VMOVUPS Z10, (DI)
	VMOVUPS Z11, 64(DI)
	VZEROUPPER
	RET

// func gemv4AVX2(k int, x, b *float32, ps int, c *float32)
// c[0:64] = Σ_l x[l]·(b panels 0–3)[l][0:16]; x is k floats, each panel
// k×16 packed, panels ps bytes apart. One FMA chain per element, in l
// order, as kernelAVX2 sums, so each row's bits match the 6-row kernel.
TEXT ·gemv4AVX2(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ ps+24(FP), R8
	MOVQ c+32(FP), DI
	LEAQ (DX)(R8*2), R9
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

gloop:
	VBROADCASTSS (SI), Y8
	VFMADD231PS  (DX), Y8, Y0
	VFMADD231PS  32(DX), Y8, Y1
	VFMADD231PS  (DX)(R8*1), Y8, Y2
	VFMADD231PS  32(DX)(R8*1), Y8, Y3
	VFMADD231PS  (R9), Y8, Y4
	VFMADD231PS  32(R9), Y8, Y5
	VFMADD231PS  (R9)(R8*1), Y8, Y6
	VFMADD231PS  32(R9)(R8*1), Y8, Y7
	ADDQ         $4, SI
	ADDQ         $64, DX
	ADDQ         $64, R9
	DECQ         CX
	JNE          gloop

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VMOVUPS Y4, 128(DI)
	VMOVUPS Y5, 160(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y7, 224(DI)
	VZEROUPPER
	RET
