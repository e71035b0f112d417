// Package hpaired judges paired live runs of horizontal controllers (the
// CLASP applications of `eval live` and `eval liveclasp`) the way package
// paired judges the vertical ones: a candidate controller against each
// baseline, paired differences with percentile-bootstrap intervals
// (eval/stats), and verdicts that hold only when an interval says so.
//
// # The pair
//
// A vertical paired evaluation pairs runs by scenario placement (every
// controller on the same placement, trace slice and seed). A horizontal
// run has no scenario placement: the controller under test decides the
// placement itself. The pair is therefore the seed: every controller runs
// in turn on the same trace slice with the same seed (the input source's,
// and for the CLASP load modes the stage draw of claspexp.ModeTraces), and
// `-seeds N` repeats that on seeds S … S+N−1. One pair is one seed's two
// runs; its differences are of run-level figures. Intervals within a run
// are autocorrelated (a backlog or a migration spans several), so they are
// not taken as pairs.
//
// # Metrics and verdicts
//
// Per run: mean workers in use over the intervals (the cost of a
// horizontal controller), the violation share (the share of intervals
// whose p95 exceeds the latency rule — CLASP's 1 s sustained-level rule,
// `-slo-ms`, default 1000 ms), the run's p95 over every input, ms, and
// the delivered share (completed ÷ offered inputs). For candidate A and
// baseline B, with n seeds as pairs:
//
//   - workers: A uses fewer workers at no more violations — the CI of the
//     mean paired difference of mean workers A − B lies entirely below 0,
//     and the CI of the violation-share difference does not lie entirely
//     above 0 (the vertical H2's form, workers for CPU).
//   - violations: A violates less — the CI of the violation-share
//     difference A − B (percentage points) lies entirely below 0 (the
//     vertical H1).
//   - no more violations: A violates in no more intervals — the upper
//     bound of the violation-share CI is below +paired.NonInferiorityMargin
//     (5 points; non-inferiority, the vertical H3's form).
//   - p95: A's p95 is lower — the CI of the relative p95 difference
//     (A − B)/B × 100 lies entirely below 0.
//   - delivered: A delivers no less — the lower bound of the CI of the
//     delivered-share difference A − B (percentage points) exceeds
//     −paired.NonInferiorityMargin (5 points; the vertical H3's form).
//
// A verdict needs at least two pairs; with one the differences are
// reported (the CI is null) and no verdict holds. Resamples, level and
// margin are package paired's (10,000, 95%, 5).
//
// # Determinism
//
// Analyze is a pure function of its inputs. Each comparison resamples
// from a fresh copy of its own stream,
// rng.EvalBootstrap + "horizontal/<app>/<trace>/<candidate>/<baseline>",
// for every metric, so the metrics share resampled indices and adding a
// baseline shifts nothing. Comparisons come in baseline order.
package hpaired
