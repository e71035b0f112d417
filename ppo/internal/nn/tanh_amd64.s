//go:build amd64 && !purego

#include "textflag.h"

// Offsets of the constants in tanhConsts (32 bytes each).
#define LO 0
#define HI 32
#define P0 64
#define P1 96
#define P2 128
#define P3 160
#define P4 192
#define P5 224
#define Q0 256
#define Q1 288
#define Q2 320
#define Q3 352
#define Q4 384

// func tanh4AVX(y, x *float32, n int, c *[13][4]float64)
// For each group of four: t = min(max(x, −9), 9); t2 = t·t;
// p = ((((P5·t2 + P4)·t2 + P3)·t2 + P2)·t2 + P1)·t2 + P0;
// q = (((Q4·t2 + Q3)·t2 + Q2)·t2 + Q1)·t2 + Q0; y = float32((t·p)/q).
// Every product and sum is rounded separately, as in tanh32Go. MAXPD and
// MINPD return their second source operand when either is NaN, which is
// x (then t), so NaN stays NaN as with Go's max and min.
TEXT ·tanh4AVX(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ c+24(FP), R8
	VMOVUPD LO(R8), Y14
	VMOVUPD HI(R8), Y15

loop:
	VCVTPS2PD (SI), Y0
	VMAXPD    Y0, Y14, Y0 // t = max(−9, x), x when NaN
	VMINPD    Y0, Y15, Y0 // t = min(9, t), t when NaN
	VMULPD    Y0, Y0, Y1  // t2
	VMULPD    P5(R8), Y1, Y2
	VADDPD    P4(R8), Y2, Y2
	VMULPD    Y1, Y2, Y2
	VADDPD    P3(R8), Y2, Y2
	VMULPD    Y1, Y2, Y2
	VADDPD    P2(R8), Y2, Y2
	VMULPD    Y1, Y2, Y2
	VADDPD    P1(R8), Y2, Y2
	VMULPD    Y1, Y2, Y2
	VADDPD    P0(R8), Y2, Y2  // p
	VMULPD    Q4(R8), Y1, Y3
	VADDPD    Q3(R8), Y3, Y3
	VMULPD    Y1, Y3, Y3
	VADDPD    Q2(R8), Y3, Y3
	VMULPD    Y1, Y3, Y3
	VADDPD    Q1(R8), Y3, Y3
	VMULPD    Y1, Y3, Y3
	VADDPD    Q0(R8), Y3, Y3  // q
	VMULPD    Y2, Y0, Y2      // t·p
	VDIVPD    Y3, Y2, Y2      // (t·p)/q
	VCVTPD2PSY Y2, X2
	VMOVUPS   X2, (DI)
	ADDQ      $16, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER
	RET

// func tanh8AVX512(y, x *float32, n int, c *[13][4]float64)
// tanh4AVX eight lanes at a time (Z registers, AVX-512F): the same
// operations in the same order, each constant broadcast from its first
// lane (.BCST), so the bits are the same.
TEXT ·tanh8AVX512(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ c+24(FP), R8
	VBROADCASTSD LO(R8), Z14
	VBROADCASTSD HI(R8), Z15

loop8:
	VCVTPS2PD (SI), Z0
	VMAXPD    Z0, Z14, Z0 // t = max(−9, x), x when NaN
	VMINPD    Z0, Z15, Z0 // t = min(9, t), t when NaN
	VMULPD    Z0, Z0, Z1  // t2
	VMULPD.BCST P5(R8), Z1, Z2
	VADDPD.BCST P4(R8), Z2, Z2
	VMULPD    Z1, Z2, Z2
	VADDPD.BCST P3(R8), Z2, Z2
	VMULPD    Z1, Z2, Z2
	VADDPD.BCST P2(R8), Z2, Z2
	VMULPD    Z1, Z2, Z2
	VADDPD.BCST P1(R8), Z2, Z2
	VMULPD    Z1, Z2, Z2
	VADDPD.BCST P0(R8), Z2, Z2  // p
	VMULPD.BCST Q4(R8), Z1, Z3
	VADDPD.BCST Q3(R8), Z3, Z3
	VMULPD    Z1, Z3, Z3
	VADDPD.BCST Q2(R8), Z3, Z3
	VMULPD    Z1, Z3, Z3
	VADDPD.BCST Q1(R8), Z3, Z3
	VMULPD    Z1, Z3, Z3
	VADDPD.BCST Q0(R8), Z3, Z3  // q
	VMULPD    Z2, Z0, Z2      // t·p
	VDIVPD    Z3, Z2, Z2      // (t·p)/q
	VCVTPD2PS Z2, Y2
	VMOVUPS   Y2, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop8
	VZEROUPPER
	RET
