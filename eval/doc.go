// Command eval evaluates autoscaling controllers on the streamscale
// simulator.
//
//	go run ./eval run -profile etl -trace taxi -placement-seed 7 -controller static:2000 -steps 600 -json
//	go run ./eval paired -out out/paired
//	go run ./eval clasp -out out/clasp
//	go run ./eval sweep -profile pred -trace taxi -scenario paper -out out/sweep -json
//
// `run` runs one episode (or a prefix of it) of one controller and prints a
// summary (-json: one JSON object with the means and a SHA-256 of the
// trajectory); -out writes every interval to a Parquet file. `paired` runs
// every controller on every profile × workload × placement (seeds 101…110)
// on shared episode seeds and judges a candidate against each baseline with
// paired bootstrap confidence intervals, writing runs.parquet,
// intervals.parquet, summary.json, report.md and six PNG figures (with a CPU-against-violations Pareto picture) into
// -out. `clasp` reproduces the CLASP paper's experiments in simulation
// (eval/claspexp). `sweep` runs static:N for every N of a CPU grid on
// placements 101…100+n and writes sweep.parquet (one row per run),
// sweep.json (per grid point: violation rate, median and mean p95) and
// sweep.png (eval/sweep). run, paired and sweep take -scenario, the
// simulator's physics preset (default realistic).
//
// Controllers are named by spec strings: static:N, threshold, vrebalance,
// ppo (the policy in <-policies>/<profile>/policy.*), ppo:DIR, or clasp
// (horizontal scaling on the horizontal counterpart of the edge scenario,
// agents/horizontal).
//
// Bad flags exit with status 2 before any episode runs; failures while
// running exit with 1. The same flags give byte-identical output; wall time
// is printed on stderr only. The wiring and the controller registry live in
// eval/cli and eval/controllers, runs in eval/runner (over agents'
// episode loop), the protocol in eval/paired, the statistics in eval/stats,
// the artifacts in eval/report, the sweep in eval/sweep and the CLASP
// experiments in eval/claspexp.
package main
