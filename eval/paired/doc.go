// Package paired runs the project's main evaluation protocol and judges
// it: every controller on every profile × workload × placement cell, all
// controllers of a cell on the same episode seed, then paired bootstrap
// comparisons of a candidate controller against each baseline.
//
// # Protocol
//
// Cells are ordered profile, workload, placement, controller (the order of
// the Plan's slices). Placement seeds default to DefaultPlacements
// (101…110), disjoint from the training placements 42 and 37. The episode
// seed of a cell is the first Uint64 of the stream
// "eval/episode/<profile>/<trace>/<placement>" of the root seed, shared by
// every controller of the cell.
//
// For each profile × workload and each baseline B, with candidate A and the
// n placements as pairs:
//
//   - H1, fewer violations: the 95% bootstrap CI of the mean paired
//     violation-rate difference A − B (percentage points) lies entirely
//     below 0.
//   - H2, less CPU at no more violations: the CI of the mean paired
//     relative CPU difference (A − B)/B × 100 lies entirely below 0, and the
//     violation-rate CI does not lie entirely above 0.
//   - H3, throughput non-inferiority: the lower bound of the CI of the mean
//     paired relative throughput difference (A − B)/B × 100 exceeds
//     −NonInferiorityMargin (5%).
//
// Every comparison also reports, without a verdict, the footprint
// differences: the mean paired relative reserved-CPU difference
// (A − B)/B × 100 and the mean paired difference in active servers A − B
// (runner.Footprint), with their bootstrap CIs. H1–H3 are judged the same
// way for every baseline, horizontal (clasp) or not; a horizontal baseline
// runs on the horizontal counterpart of the cell's scenario (see package
// horizontal), which the protocol records (Protocol.Horizontal).
//
// A verdict needs at least two pairs; with fewer, or when a difference is
// undefined (a zero baseline), it does not hold and its estimates are null.
//
// Each comparison resamples the pairs from its own stream,
// "eval/bootstrap/<profile>/<trace>/<candidate>/<baseline>", so its five
// metrics share their resampled indices and adding a comparison never
// shifts another; a controller's own intervals use
// "eval/bootstrap/<profile>/<trace>/<controller>".
//
// Units: violation rates as shares in [0, 1] (differences in percentage
// points), latency in ms, CPU and reserved CPU in millicores, active
// servers as a mean count, throughput and offered load in messages/s.
//
// Concurrency and determinism: Execute runs cells on a bounded pool of
// goroutines but hands results to its callback one at a time, in cell
// order, so nothing downstream sees completion order. Analyze is a pure
// function of its inputs.
package paired
