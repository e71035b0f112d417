// Package sgemm is the single-precision matrix multiply behind ppo's
// training graph and policy inference: C = α·op(A)·op(B) + β·C, row-major,
// with BLAS semantics (β = 0 never reads C).
//
// op(A) and op(B) are packed into zero-padded panels (6 rows of op(A), 16
// columns of op(B), k-major) and each 6×16 tile of C is computed by a
// micro-kernel: AVX2+FMA assembly on amd64 CPUs that have it, plain Go
// elsewhere. Every element of C is a sequential sum over k, so results are
// deterministic for a given kernel; the assembly kernel fuses multiply and
// add (one rounding), the Go kernel does not, so the two differ in the last
// bits. On the PPO update's shapes gonum's pure-Go Sgemm manages about
// 6–10 GFLOP/s, this kernel 50–65 (BenchmarkSgemm).
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
