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
// # Seeds
//
// A learned controller may stand for several policies trained from one
// recipe with different seeds (a Seeded factory; eval/controllers makes
// one of a `train -seeds` directory). Its N members run side by side on
// every placement of every cell, on the cell's episode seed, in seed
// order. Its placement-level figures (ControllerStats, Comparisons,
// Versus.Violation and .CPU) are those of the mean over its seeds on each
// placement, judged as above. Its verdict against the best rule uses the
// seed-level protocol instead (Agarwal et al., "Deep RL at the Edge of the
// Statistical Precipice", NeurIPS 2021): for seed s and placement p the
// paired difference d[s][p] from the rule on that placement (violation
// rate in percentage points, CPU in percent of the rule's), each seed's
// mean over the P placements m_s = Σ_p d[s][p]/P, and the estimate
//
//	θ = IQM(m_1, …, m_N),
//
// the mean of the m_s left after cutting ⌊N/4⌋ from each end of their
// sorted list (stats.IQM; with 5 seeds the middle 3). Its 95% interval is
// the percentile bootstrap of stats.BootstrapSeedIQM: each of the 10,000
// resamples draws P placements with replacement (the same for every seed,
// so every pair stays a pair) and N whole seeds with replacement, and
// takes θ of the drawn seeds over the drawn placements. The resampling is
// stratified by cell (each profile × workload alone); within a cell seeds
// are resampled whole rather than within each placement, since one seed's
// policy plays every placement (see stats.BootstrapSeedIQM). The verdict
// (Dominates, Dominated, Neither) applies the dominance margins to these
// intervals; Versus.SeedLevel records them and the verdict the
// placement-level protocol gives, and Tallies counts each controller's
// cells dominated and lost. Combination.SeedVsRules judges the same way
// against every rule of the cell, and RuleTallies counts those. A controller's own seed-level figures
// (ControllerStats.SeedLevel) are θ of its violation rate and mean CPU.
// The intervals use the streams
// "eval/seed-bootstrap/<profile>/<trace>/<controller>[/<rule>]". The
// best controller and best rule of a cell are picked on the seed means.
// With one seed θ is the placement mean and the interval the placement
// bootstrap's, bit for bit.
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
