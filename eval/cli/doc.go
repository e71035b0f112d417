// Package cli is the command line of `go run ./eval`: flag parsing,
// validation, file I/O and progress output around the library packages
// runner, paired, stats and report.
//
//	eval run     one episode of one controller; a JSON or text summary and
//	             optionally the per-interval Parquet table
//	eval paired  the paired evaluation protocol; Parquet tables,
//	             summary.json, report.md and figures in an output directory
//	eval sweep   uniform static allocations over a CPU grid on a few
//	             placements; sweep.parquet, sweep.json and sweep.png
//
// Every command takes -scenario, the simulator's physics preset
// (env.Scenarios; default realistic), recorded with the results.
//
// Exit codes: 0 success, 1 failure while running, 2 bad usage (unknown
// command, flag, name or value, or an unreadable trace), reported before
// any episode runs.
//
// Determinism: the same flags give byte-identical standard output and
// artifacts. Wall-clock time goes only to standard error. The commit and Go
// version recorded in artifacts come from Options.
//
// Concurrency: Main is safe to call from several goroutines with distinct
// Options writers; `paired` runs episodes on GOMAXPROCS goroutines.
package cli
