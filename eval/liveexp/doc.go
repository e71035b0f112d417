// Package liveexp is the live experiment of `eval live` and `eval
// simgap`: every controller on every placement in turn on the real
// planner/worker runtime (package eval/live) on the same trace slice and
// seed, with eval simgap each run also simulated (eval/runner) and judged
// against its live run (eval/simgap), and the live runs' paired verdicts
// (eval/paired; Paired). Run returns the records (Summary, summary.json)
// and the runs; the command writes the files.
//
// Why a package of its own and not eval/live: eval/live is the harness of
// one run on the runtime (a planner, worker processes, the observation
// built from their reports) and knows nothing of controller specs, policy
// endpoints, the simulator or the paired protocol; this package composes
// those into the experiment, as eval/paired composes simulated runs.
// Controllers arrive as runner.Factory values (eval/controllers' specs
// satisfy it; only the command imports the registry), so the experiment
// is testable without it.
//
// Processes: nothing Run starts outlives it. The PPO policy endpoint is
// served in this process (serve/api on a loopback port; StartEndpoint)
// or, with Config.ServeBin, by a built serve binary in a process group of
// its own, killed as a group (and with SIGKILL as its parent-death
// signal); it is never started through `go run`, whose child a signal to
// the go command does not reach. Workers are started and stopped by
// eval/live. Run stops all of them before it returns: on success, on
// error, and when ctx ends (the command's SIGINT or SIGTERM).
//
// Paired candidate: the first PPO controller listed, else the first
// (DefaultCandidate), unless the command names one (-candidate).
//
// Units: as eval/live and eval/runner (scenario millicores, ms, seconds
// of wall time per interval).
//
// Determinism: the live half is not reproducible (real time on a shared
// machine; the seed and configuration are recorded). The simulated half
// is a deterministic function of the configuration: byte-identical for
// the same flags. A live run can record fewer intervals than asked when
// the host misses control ticks (eval/live drops empty catch-up windows);
// the observations recorded are exactly one per recorded interval.
//
// Concurrency: Run runs one controller at a time; Progress and Log are
// written from the calling goroutine and the runtime's.
package liveexp
