//go:build amd64 && !purego

#include "textflag.h"

// Offsets of the constants in expConsts (8 bytes each), passed as c.
#define LOG2E 0
#define LN2U 8
#define LN2L 16
#define SIXTEENTH 24
#define C8 32
#define C7 40
#define C6 48
#define C5 56
#define C4 64
#define C3 72
#define HALF 80
#define ONE 88
#define TWO 96
#define LO 104
#define HI 112
#define BIAS 120

// func exp8AVX512FMA(dst, src *float64, n int, c *[16]uint64) int
// dst[i] = math.Exp(src[i]) for the 8n elements of src, eight lanes at a
// time, with the operations of the AVX+FMA path of Go's math.Exp on amd64
// (math/exp_amd64.s) in its order: k = int32(round(x·log2e)); the
// argument reduced by two fused steps, x − k·ln2U, then − k·ln2L; ×1/16;
// the fused Horner polynomial; four rounds of r·(r+2), the last fused
// with +1; the result times 2^k built from the exponent bits. A block
// with a lane outside [LO, HI] (or NaN), where math.Exp takes another
// path, is not computed: the function returns the number of blocks done
// before it, and the caller computes that block with math.Exp.
TEXT ·exp8AVX512FMA(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ c+24(FP), R8
	XORQ AX, AX
	TESTQ CX, CX
	JZ   done
	VBROADCASTSD LO(R8), Z14
	VBROADCASTSD HI(R8), Z15

loop:
	VMOVUPD (SI), Z0
	VCMPPD  $0x1d, Z14, Z0, K1 // x ≥ LO (false for NaN)
	VCMPPD  $0x12, Z15, Z0, K2 // x ≤ HI (false for NaN)
	KANDW   K1, K2, K1
	KMOVW   K1, BX
	CMPQ    BX, $0xff
	JNE     done                // some lane is outside
	VMULPD.BCST LOG2E(R8), Z0, Z1 // x·log2e
	VCVTPD2DQ Z1, Y2             // k (round to nearest even)
	VCVTDQ2PD Y2, Z1             // float64(k)
	VBROADCASTSD LN2U(R8), Z3
	VFNMADD231PD Z3, Z1, Z0      // x − k·ln2U, fused
	VBROADCASTSD LN2L(R8), Z3
	VFNMADD231PD Z3, Z1, Z0      // − k·ln2L, fused
	VMULPD.BCST SIXTEENTH(R8), Z0, Z0
	VBROADCASTSD C8(R8), Z1
	VFMADD213PD.BCST C7(R8), Z0, Z1 // p = p·x + c, fused
	VFMADD213PD.BCST C6(R8), Z0, Z1
	VFMADD213PD.BCST C5(R8), Z0, Z1
	VFMADD213PD.BCST C4(R8), Z0, Z1
	VFMADD213PD.BCST C3(R8), Z0, Z1
	VFMADD213PD.BCST HALF(R8), Z0, Z1
	VFMADD213PD.BCST ONE(R8), Z0, Z1
	VMULPD  Z1, Z0, Z0           // r = x·p
	VADDPD.BCST TWO(R8), Z0, Z1
	VMULPD  Z1, Z0, Z0           // r·(r+2)
	VADDPD.BCST TWO(R8), Z0, Z1
	VMULPD  Z1, Z0, Z0
	VADDPD.BCST TWO(R8), Z0, Z1
	VMULPD  Z1, Z0, Z0
	VADDPD.BCST TWO(R8), Z0, Z1
	VFMADD213PD.BCST ONE(R8), Z1, Z0 // r·(r+2) + 1, fused
	VPMOVSXDQ Y2, Z2             // k as int64
	VPADDQ.BCST BIAS(R8), Z2, Z2 // k + 1023
	VPSLLQ  $52, Z2, Z2          // 2^k
	VMULPD  Z2, Z0, Z0
	VMOVUPD Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	INCQ    AX
	CMPQ    AX, CX
	JLT     loop

done:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET
