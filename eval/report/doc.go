// Package report writes the evaluation's artifacts: per-interval and
// per-run Parquet tables, summary.json, report.md and the PNG figures of a
// paired evaluation.
//
// Units: as recorded by package runner (ms, millicores, messages/s).
//
// Determinism: every artifact is a pure function of its inputs. Floats are
// printed at fixed precision in Markdown, encoded by encoding/json in
// JSON, and stored bit for bit in Parquet (zstd-compressed, fixed
// created_by string, one row group per run). Figures are rasterized
// deterministically by gonum/plot. No artifact records the wall-clock time
// or the host.
//
// Concurrency: the writers are not safe for concurrent use. Figures draws
// its figures on concurrent goroutines, each into its own file; the inputs
// are only read.
package report
