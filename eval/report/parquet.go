package report

import (
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"streamscale/eval/runner"
)

// IntervalRow is one interval of one run in intervals.parquet (and in the
// file `eval run -out` writes): the run's key, then the interval record.
type IntervalRow struct {
	runner.Key
	runner.Interval
}

// RunRow is one run in runs.parquet: its key, kind and SLO, the run-level
// record, and the hashes.
type RunRow struct {
	runner.Key
	Horizontal bool    `parquet:"horizontal"`
	SLOMS      float64 `parquet:"slo_ms"`
	runner.Summary
	ConfigSHA256     string `parquet:"config_sha256"`
	TrajectorySHA256 string `parquet:"trajectory_sha256"`
}

func writerOptions() []parquet.WriterOption {
	return []parquet.WriterOption{
		parquet.Compression(&parquet.Zstd),
		parquet.CreatedBy("streamscale/eval", "0", "none"),
	}
}

// IntervalRows converts a run's intervals to rows.
func IntervalRows(r runner.Result) []IntervalRow {
	rows := make([]IntervalRow, len(r.Intervals))
	for i, iv := range r.Intervals {
		rows[i] = IntervalRow{Key: r.Key, Interval: iv}
	}
	return rows
}

// RunRowOf summarises a run as a row.
func RunRowOf(r runner.Result) RunRow {
	return RunRow{Key: r.Key, Horizontal: r.Horizontal, SLOMS: r.SLOMS, Summary: r.Summary,
		ConfigSHA256: r.ConfigSHA256, TrajectorySHA256: r.TrajectorySHA256}
}

// IntervalWriter streams runs' intervals to a Parquet file, one row group
// per run.
type IntervalWriter struct {
	w *parquet.GenericWriter[IntervalRow]
}

// NewIntervalWriter starts a Parquet file of IntervalRows on w.
func NewIntervalWriter(w io.Writer) *IntervalWriter {
	return &IntervalWriter{w: parquet.NewGenericWriter[IntervalRow](w, writerOptions()...)}
}

// Write appends r's intervals as one row group.
func (iw *IntervalWriter) Write(r runner.Result) error {
	if _, err := iw.w.Write(IntervalRows(r)); err != nil {
		return fmt.Errorf("eval: writing intervals: %w", err)
	}
	if err := iw.w.Flush(); err != nil {
		return fmt.Errorf("eval: writing intervals: %w", err)
	}
	return nil
}

// Close finishes the file (it does not close the underlying writer).
func (iw *IntervalWriter) Close() error {
	if err := iw.w.Close(); err != nil {
		return fmt.Errorf("eval: writing intervals: %w", err)
	}
	return nil
}

// WriteRuns writes runs.parquet rows to w.
func WriteRuns(w io.Writer, rows []RunRow) error {
	pw := parquet.NewGenericWriter[RunRow](w, writerOptions()...)
	if _, err := pw.Write(rows); err != nil {
		return fmt.Errorf("eval: writing runs: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("eval: writing runs: %w", err)
	}
	return nil
}
