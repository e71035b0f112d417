// Package simgap is the simulator-gap protocol of `eval simgap`: how far
// the simulator's prediction of a controller is from the controller's
// live run on the same trace slice, seed and placement, and which
// observation features differ between the two worlds.
//
// # Goals and verdicts
//
// For each controller the runs of its placements are paired by index
// (live run i with simulated run i). The goals (issue 16) are judged on
// the means over the placements: the violation rate within
// GoalViolationPP percentage points, 100·|v̄_sim − v̄_live| ≤ 2, the mean
// CPU within GoalCPURel of live, |c̄_sim − c̄_live|/c̄_live ≤ 0.10, and the
// same ranking (Verdicts). A miss is "within noise" when the gap exceeds
// the goal by at most two standard errors of the mean per-placement gap
// (stats.StdErr). The ranking orders controllers by mean violation rate,
// then mean CPU (stats.Order); it is met when no pair is ordered one way
// in one world and the other way in the other (stats.Discordant; a pair
// either world ties on both keys is not ordered by it).
//
// # Observations
//
// With -obs every observation a controller is given is recorded in both
// worlds (ObsRun; observations.parquet, ObsRow): row t is the observation
// interval t's allocation was decided on. ObservationGaps ranks the
// features by the standardized mean difference (sim − live)/√((s²_sim +
// s²_live)/2) (Cohen's d with population variances pooled equally).
// Swap asks a trained policy again on one world's observations with a
// group of features taken from the other world (`eval obsswap`).
//
// Units: violation rates in [0, 1], differences in percentage points;
// CPU in scenario millicores; latencies in ms; throughput in inputs/s.
//
// Determinism: every function is a deterministic function of its inputs
// (sums in index order, stable sorts, controllers in order of first
// appearance); Figures draws with gonum/plot and writes PNG files, the
// only I/O.
//
// Concurrency: no state is shared; a Recorder belongs to one run.
package simgap
