// Package cli is the command line of `go run ./eval`: flag parsing,
// validation, file I/O and printing around the library packages (runner,
// paired, stats, report, sweep, claspexp, live, liveexp, simgap, …). It
// holds no experiment logic of its own.
//
//	eval run        one episode of one controller; a JSON or text summary
//	                and optionally the per-interval Parquet table
//	eval paired     the paired evaluation protocol (eval/paired); Parquet
//	                tables, summary.json, report.md and figures
//	eval sweep      uniform static allocations over a CPU grid on a few
//	                placements; sweep.parquet, sweep.json and sweep.png
//	eval clasp      CLASP's experiments in the simulator (eval/claspexp)
//	eval live       controllers on the real planner/worker runtime
//	                (eval/liveexp; horizontal profiles: the planner's
//	                placement loop); intervals.parquet, summary.json,
//	                report.md, and with several controllers paired.json,
//	                paired.md (candidate: -candidate, default the PPO
//	                controller) and figures
//	eval simgap     eval live, and every run also in the simulator on the
//	                same slice, judged against it (eval/simgap); with -obs
//	                observations.parquet
//	eval obsswap    which observation features make a policy act
//	                differently live (simgap.Swap on simgap -obs's file)
//	eval calibrate  the runtime's measured costs and a scenario file
//	eval liveclasp  CLASP's claims on the runtime
//
// Simulator commands take -scenario, the simulator's physics preset
// (env.Scenarios; default realistic) or a scenario file, recorded with
// the results. Trained policies: eval run/paired default to
// policies/default, eval live/simgap to policies/calibrated (each set is
// <set>/<profile>/policy.json).
//
// Exit codes: 0 success, 1 failure while running, 2 bad usage (unknown
// command, flag, name or value, or an unreadable trace), reported before
// any episode runs.
//
// Determinism: the simulator commands give byte-identical standard output
// and artifacts for the same flags; live runs are not reproducible and
// record their seed and configuration. Wall-clock time goes only to
// standard error. The commit and Go version recorded in artifacts come
// from Options.
//
// Processes: nothing a command starts outlives it. eval live and simgap
// serve the PPO policies in process (or with -serve-bin from a built
// binary in its own process group) and stop their workers and endpoints
// on success, error, SIGINT and SIGTERM (main cancels the context).
//
// Concurrency: Main is safe to call from several goroutines with distinct
// Options writers; `paired` runs episodes on GOMAXPROCS goroutines.
package cli
