//go:build !amd64 || purego

package sgemm

// Assembly reports whether an assembly micro-kernel is in use.
const Assembly = false

func kernel(k int, a, b []float32, c *[mr * nr]float32) { kernelGo(k, a, b, c) }

func gemv(k int, x, b []float32, ps int, acc *[gemvPanels * nr]float32) { gemvGo(k, x, b, ps, acc) }
