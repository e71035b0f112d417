// Package runner runs one evaluation episode: a controller against one
// scenario (profile, placement, workload) from Reset to the requested number
// of one-second intervals, recording every interval and summarising them.
// Both `eval run` and `eval paired` use it, so a run and the same cell of a
// paired evaluation give the same numbers.
//
// The controller comes from a Factory (eval/controllers' registry, which
// only the command layer imports) and plays through agents.RunEpisode.
// Two kinds of controller run through that loop and record the same
// Interval and Summary fields: the run record, whose struct tags name its
// JSON keys and Parquet columns and whose field order defines the
// trajectory hash. Vertical controllers (agents.Controller) set
// per-task CPU on the edge scenario and act on the observation; horizontal
// ones (clasp) re-plan replicas on the scenario's horizontal counterpart
// (shared CPU, request costs; package agents/horizontal) and act on the step's
// env.Info. For every interval Footprint records the CPU the controller
// reserved (the applied allocations, or the whole CPU of every active
// server when servers share their CPU) and the servers it kept active.
//
// Units: latencies in milliseconds, CPU and reserved CPU in millicores,
// offered load and throughput in source messages per second, rewards
// unitless.
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
