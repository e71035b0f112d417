// Package sweep runs the static-allocation sweep of `eval sweep`: every
// task held at one CPU allocation, for each allocation of a grid, over one
// profile, workload and physics scenario on a few placements, and
// summarises how the SLO violation rate and the p95 latency fall as the
// allocation grows. The curve shows whether latency still answers to CPU
// where the SLO is met (the static policy has headroom to trade), which a
// learned controller needs in order to save CPU at all.
//
// # Method
//
// Runs are ordered grid point, then placement. Placement seeds are
// 101, 102, …; a placement's episode seed is paired.EpisodeSeed of the
// root seed, profile, trace and placement, so every grid point of a
// placement replays the same episode (and the same one as the cell of
// `eval paired`). For grid point c (millicores per task) over placements
// j = 1…m with per-interval p95 latencies p_jt:
//
//   - violation rate: the mean over placements of each run's share of
//     intervals with p95 above the SLO;
//   - median p95: the median of all p_jt of all placements (the mean of the
//     two middle values for an even count);
//   - mean p95: the mean of all p_jt, summed in placement and step order;
//   - relative median p95: the median of all p_jt / f_j, where the floor
//     f_j is placement j's median p95 at the largest grid point.
//   - busy relative median p95: the same over each placement's busiest
//     intervals only (BusyShare, the top 10% by offered rate, the same
//     intervals at every grid point), with f_j taken over them too
//     (BusyMedianRel): where a static allocation sized for the peaks runs
//     closest to its capacity, and so where latency answers to CPU first.
//
// The smallest compliant allocation is the smallest grid point whose
// violation rate is at most ComplianceTarget (5%); its p95 ratio is its
// relative median p95, the factor by which latency still falls between
// just compliant and lavish, and the summary lists each placement's own
// ratio (its median p95 there over f_j) beside it.
//
// Why relative: placements put the tasks on different servers, so their
// network floors differ (PRED 30 / 40 / 30 ms and ETL 70 / 110 / 90 ms on
// placements 101–103). The median of the pooled p_jt is then whichever
// placement's floor lies in the middle, and it moves between placements
// as their spreads change: on the realistic preset the pooled ratio read
// 1.32 on PRED because the pooled median at 1,250 mc fell on placement
// 102's 40 ms floor while at 10,000 it fell on the other two's 30 ms,
// although no placement's own median rose by more than 23%. Dividing
// each interval by its own placement's floor compares like with like.
//
// Units: CPU in millicores per task (the runs' mean CPU in millicores in
// total), latencies in ms, violation rates as shares in [0, 1].
//
// Determinism and concurrency: Execute runs the specs on a bounded pool of
// goroutines (paired.Execute) and collects results in spec order; every
// reduction is in grid, placement and step order; no clock or map order
// reaches a result, so the same plan gives identical rows, points and
// file bytes.
package sweep
