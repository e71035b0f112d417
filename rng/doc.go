// Package rng is the one seam through which streamscale draws randomness:
// every random stream is derived from the run's root seed and a stream
// name (Source, New, Derive), so that adding a consumer never shifts an
// existing sequence and no two consumers share one by accident. The names
// in use are the constants of names.go, the one place that lists them.
//
// Nothing here reads the clock or global state; the same (seed, name)
// always gives the same sequence, on every machine.
package rng
