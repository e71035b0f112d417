// Package stats holds the paired-comparison statistics of the evaluation:
// per-pair differences of two controllers run on the same placement and
// episode seed, and the percentile-bootstrap confidence interval of their
// mean; and two descriptive statistics the live experiments report, the
// median (Median) and the sample coefficient of variation (CV).
//
// # Method
//
// For n pairs (a_i, b_i) the paired difference is d_i = a_i − b_i, or the
// relative difference d_i = (a_i − b_i)/b_i × 100 (percent). The
// percentile bootstrap (Efron & Tibshirani, An Introduction to the
// Bootstrap, 1993, §13.3) draws B resamples of n differences with
// replacement, takes the mean of each, and reports the α/2 and 1 − α/2
// empirical quantiles of the B means as the 100(1 − α)% interval. The
// evaluation uses B = 10,000 and α = 0.05.
//
// # Spread and ranking
//
// SampleSD is the sample standard deviation (n − 1 in the denominator)
// and StdErr the standard error of the mean, SampleSD/√n, both 0 for
// fewer than two values. GroupMeans, Order and Discordant rank named
// groups by the means of lexicographic keys (the simulator gap ranks
// controllers by violation rate, then CPU): a pair is discordant between
// two rankings when they order it in opposite directions, and a pair tied
// on every key in either is never discordant.
//
// Units: whatever the inputs carry; relative differences are in percent.
//
// Determinism: randomness enters only through the rand.Source a caller
// passes (the evaluation derives it from the root seed and a stream named
// "eval/bootstrap/…"), and sums are taken in a fixed order, so one source
// state gives bit-identical intervals. Means are computed as
// x_0 + Σ(x_i − x_0)/n, which is exact for constant data.
//
// Concurrency: the functions keep no state; a rand.Source must not be
// shared between goroutines.
//
// Expected numeric failures (too few pairs, a zero baseline, a non-finite
// value) return ok = false rather than an error; the descriptive
// statistics return NaN where they are undefined (an empty sample, a CV of
// fewer than two values or a zero mean); no input panics.
package stats
