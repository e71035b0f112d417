// Package runner runs one evaluation episode: a controller against one
// scenario (profile, placement, workload) from Reset to the requested number
// of one-second intervals, recording every interval and summarising them.
// Both `eval run` and `eval paired` use it, so a run and the same cell of a
// paired evaluation give the same numbers.
//
// Units: latencies in milliseconds, CPU in millicores, offered load and
// throughput in source messages per second, rewards unitless.
//
// Determinism: Run is a pure function of its Spec. Means are summed in step
// order; the trajectory hash (TrajectorySHA256) covers the IEEE-754 bits of
// every recorded field of every interval in a fixed order, so two runs agree
// on it exactly when they agree on every bit. Run reads no clock and does
// no I/O of its own (building a PPO controller reads its policy file).
//
// Concurrency: Run owns its environment and controller; any number of Runs
// may proceed at once on a shared, read-only Workload.
package runner
