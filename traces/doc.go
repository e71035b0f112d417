// Package traces owns the arrival-rate traces that the simulator replays:
// reading them from CSV or Parquet, the named traces of the paper's
// experiments, and the seeded synthetic stand-ins used when a named trace's
// file is absent.
//
// # Units
//
// A trace is a series of counts, one per 5-minute window of the source data
// (taxi passengers, or Intel Lab sensor readings). The simulator replays one
// window per simulated second, so step i of a trace arrives at
//
//	Rate(i) = Counts[i mod Len] × Scale × Mult   events per second,
//
// where Scale (events/s per window count) is fixed per named trace and Mult is
// the caller's rate multiplier (2 gives the paper's doubled training variant).
//
// # Named traces
//
//   - "taxi": 3,600 windows of NYC taxi passengers from 2015-01-01 00:00, the
//     evaluation trace. Scale 1.
//   - "taxi-train": 352 windows from 2014-12-30 00:00, ending before "taxi"
//     begins, the training trace. Scale 1.
//   - "intel": the first 1,056 windows of the Intel Berkeley Research Lab
//     readings, replayed cyclically to 3,600 steps. No source states a
//     scale for them, so the package sets one by a rule: the same peak rate
//     as the taxi evaluation trace, Scale = peak(taxi rate) / peak(the
//     1,056 replayed counts), computed at Load from the files (or their
//     synthetic stand-ins, which keep both peaks). With the shipped files
//     that is 5,117 / 362 ≈ 14.135 events/s per count (mean 4,550/s).
//   - "intel-train": the remaining 384 Intel windows (1,056–1,439, from
//     2004-03-07 16:00), not replayed, at intel's Scale (4,130–6,050/s). Not
//     a trace of the paper: a training trace for the ablation that trains
//     on intel-like workloads, disjoint from "intel".
//
// The data files and how they were derived are described in
// shared/data/traces/SOURCES.md. [DefaultDir] finds them.
//
// # Synthetic fallback
//
// When a named trace's file does not exist, [Load] logs one line and builds a
// stand-in of the same length: a daily cycle of 288 windows (the real trace's
// first Fourier harmonics), a slowly wandering day-to-day level, smooth noise
// and, for taxi, occasional decaying bursts, mapped monotonically onto whole
// counts with the real trace's minimum, maximum and mean. It is for running
// without the data, not for reporting results.
//
// # Determinism
//
// Reading a file is a pure function of its bytes. The synthetic fallback draws
// from its own math/rand/v2 PCG stream, seeded with (Options.Seed, FNV-1a of
// "traces/synthetic/<name>"), so one seed gives identical counts on every run
// and platform and no other consumer of the root seed is shifted. The package
// never uses the global rand source or the clock.
//
// # Concurrency
//
// A [Trace] is not modified after [Load] returns it; any number of goroutines
// may call its methods at once. Load and the readers share no state.
//
// # Errors
//
// Errors start with "traces: ", name the file and the line (CSV, counting the
// header as line 1) or row (Parquet, 1-based), and wrap their cause. A named
// trace whose file is missing falls back to a synthetic trace instead; a
// missing path is an error that satisfies errors.Is(err, fs.ErrNotExist).
// No input makes the package panic.
package traces
