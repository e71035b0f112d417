// Package liveclasp is the CLASP experiments on the live runtime:
// horizontal live runs of CLASP and its baselines (`eval live` with a
// CLASP application) and the protocol that re-measures CLASP's claims
// from them (`eval liveclasp`).
//
// Run runs a Config: every Controller in turn on each seed's trace
// (live.RunHorizontal: the planner's placement loop decides workers and
// placement with migration), recording a Summary (summary.json) whose
// first controller is paired against every other by seed (Paired, package
// hpaired); Markdown renders report.md and ModeReport eval clasp's
// load-mode figure's rows. The protocol lists its runs per application
// (ClaimRuns: a ramp over 25…125% of the top rate, fixed worker counts at
// 20/60/100%, the six transitions between those levels; ModeRuns: the load
// modes on several seeds) and JudgeApp turns their summaries into Claims
// (claims.json): the observed optimal worker counts, each method's
// worker-count error, sustained ramp level and migrations, and the load
// modes beside eval clasp's simulated experiment (6) on the same seeds.
// ClaimsMarkdown renders claims.md. The command does the flags, the
// traces' files, the output directories and the printing.
//
// Units: rates in inputs/s; latencies in ms; CPU quotas in millicores;
// intervals of Config.Step wall time (one trace point each).
//
// Determinism: a live run is not: it depends on real time and the
// machine's load, and the summary records the configuration and seeds so
// that a rerun is the same experiment. Judging is: JudgeApp, Paired, the
// renderings and the simulated load modes are functions of their inputs
// (maps are rendered in fixed method and level order).
//
// Concurrency: Run's runs are sequential, each owning its processes and
// stopping them before it returns (also when ctx ends); Progress is
// written from the calling goroutine, Log as live.HConfig.Log is.
package liveclasp
