// Package sgemm is the single-precision matrix multiply behind ppo's
// training graph and policy inference: C = α·op(A)·op(B) + β·C, row-major,
// with BLAS semantics (β = 0 never reads C).
//
// Micro-kernels compute tiles of 6 rows of C: 16 columns (AVX2+FMA
// assembly, or plain Go) or 32 columns (AVX-512 assembly where the CPU
// has AVX-512F, chosen at run time through golang.org/x/sys/cpu; the
// purego build tag selects plain Go everywhere). They read op(A) in place
// through a row and a column stride (so neither A nor Aᵀ is packed, but
// for a last group of fewer than 6 rows), op(B) in place when B is not
// transposed, and write whole tiles of C in place; only Bᵀ and ragged
// edges are packed into zero-padded panels (k-major, 16 columns).
//
// Every element of C is a sequential sum over k from zero, whatever the
// layout, the tile width or the kernel: the lanes of a vector are
// independent elements. The assembly kernels fuse multiply and add (one
// rounding), so AVX-512 and AVX2 give the same bits; the Go kernel does
// not, so it differs from them in the last bits (TestKernelsAgree holds
// all three against each other and against the previous driver, which
// packed both operands). On the PPO update's shapes (BenchmarkSgemm) the
// AVX-512 path is about 1.8× the AVX2 path with packing.
//
// For a right-hand matrix used many times (a layer's weights at
// inference), Pack packs op(B) once and MulPacked multiplies by it without
// repacking: whole 6-row groups through the micro-kernel, remaining rows
// through a one-row kernel over four panels at a time. Its results equal
// Gemm's bit for bit (same sequential sum, same arithmetic per kernel).
//
// Gemm and MulPacked are safe for concurrent use; scratch panels come from
// a sync.Pool, and a Packed is immutable.
package sgemm
