package progress

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"streamscale/ppo"
)

// CSVLogger writes rows as CSV (SB3's progress.csv columns, here in
// MetricNames order), with a header before the first row unless the
// writer continues an existing file. NaN is written as an empty cell.
type CSVLogger struct {
	w      *csv.Writer
	header bool
}

// NewCSVLogger returns a CSVLogger on w; header says whether to write the
// header row first.
func NewCSVLogger(w io.Writer, header bool) *CSVLogger {
	return &CSVLogger{w: csv.NewWriter(w), header: header}
}

// Log implements ppo.Logger; each row is flushed.
func (l *CSVLogger) Log(s ppo.Stats) error {
	if l.header {
		if err := l.w.Write(ppo.MetricNames); err != nil {
			return fmt.Errorf("progress: csv: %w", err)
		}
		l.header = false
	}
	row := make([]string, 0, len(ppo.MetricNames))
	for _, m := range s.Metrics() {
		row = append(row, formatMetric(m.Value))
	}
	if err := l.w.Write(row); err != nil {
		return fmt.Errorf("progress: csv: %w", err)
	}
	l.w.Flush()
	if err := l.w.Error(); err != nil {
		return fmt.Errorf("progress: csv: %w", err)
	}
	return nil
}

func formatMetric(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// ParquetRow is one row of the Parquet progress file; column names are
// SB3's metric names.
type ParquetRow struct {
	ChosenActionProb   float64 `parquet:"rollout/chosen_action_prob"`
	EpLenMean          float64 `parquet:"rollout/ep_len_mean"`
	EpRewMean          float64 `parquet:"rollout/ep_rew_mean"`
	FPS                float64 `parquet:"time/fps"`
	Iterations         int64   `parquet:"time/iterations"`
	TotalTimesteps     int64   `parquet:"time/total_timesteps"`
	ApproxKL           float64 `parquet:"train/approx_kl"`
	ClipFraction       float64 `parquet:"train/clip_fraction"`
	ClipRange          float64 `parquet:"train/clip_range"`
	EntropyFraction    float64 `parquet:"train/entropy_fraction"`
	EntropyLoss        float64 `parquet:"train/entropy_loss"`
	ExplainedVariance  float64 `parquet:"train/explained_variance"`
	LearningRate       float64 `parquet:"train/learning_rate"`
	Loss               float64 `parquet:"train/loss"`
	NUpdates           int64   `parquet:"train/n_updates"`
	PolicyGradientLoss float64 `parquet:"train/policy_gradient_loss"`
	ValueLoss          float64 `parquet:"train/value_loss"`
}

// Row converts s to a ParquetRow.
func Row(s ppo.Stats) ParquetRow {
	return ParquetRow{
		ChosenActionProb: s.ChosenActionProb, EpLenMean: s.EpLenMean, EpRewMean: s.EpRewMean, FPS: s.FPS,
		Iterations: int64(s.Iteration), TotalTimesteps: int64(s.Timesteps),
		ApproxKL: s.ApproxKL, ClipFraction: s.ClipFraction, ClipRange: s.ClipRange,
		EntropyFraction: s.EntropyFraction, EntropyLoss: s.EntropyLoss, ExplainedVariance: s.ExplainedVariance,
		LearningRate: s.LearningRate, Loss: s.Loss, NUpdates: int64(s.NUpdates),
		PolicyGradientLoss: s.PolicyGradientLoss, ValueLoss: s.ValueLoss,
	}
}

// ParquetLogger collects rows and writes them as one Parquet file on Close
// (a Parquet file cannot be appended to). Prior rows, e.g. read back from
// the file of an interrupted run, can be passed to NewParquetLogger.
type ParquetLogger struct {
	w    io.Writer
	rows []ParquetRow
}

// NewParquetLogger returns a logger that writes to w on Close, starting
// with prior rows.
func NewParquetLogger(w io.Writer, prior []ParquetRow) *ParquetLogger {
	return &ParquetLogger{w: w, rows: append([]ParquetRow(nil), prior...)}
}

// Log implements ppo.Logger.
func (l *ParquetLogger) Log(s ppo.Stats) error {
	l.rows = append(l.rows, Row(s))
	return nil
}

// Close writes the file.
func (l *ParquetLogger) Close() error {
	pw := parquet.NewGenericWriter[ParquetRow](l.w)
	if _, err := pw.Write(l.rows); err != nil {
		return fmt.Errorf("progress: parquet: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("progress: parquet: %w", err)
	}
	return nil
}

// ReadParquet reads the rows of a progress file written by ParquetLogger.
func ReadParquet(r io.ReaderAt, size int64) ([]ParquetRow, error) {
	rows, err := parquet.Read[ParquetRow](r, size)
	if err != nil {
		return nil, fmt.Errorf("progress: parquet: %w", err)
	}
	return rows, nil
}

// ProgressBar draws a one-line progress bar (carriage return, no newline
// until the last iteration). Use it only on a terminal.
type ProgressBar struct {
	w          io.Writer
	iterations int
	width      int
}

// NewProgressBar returns a bar for a run of the given iterations.
func NewProgressBar(w io.Writer, iterations int) *ProgressBar {
	return &ProgressBar{w: w, iterations: iterations, width: 30}
}

// Log implements ppo.Logger.
func (p *ProgressBar) Log(s ppo.Stats) error {
	done := p.width * s.Iteration / max(1, p.iterations)
	bar := strings.Repeat("█", done) + strings.Repeat("░", p.width-done)
	rew := "—"
	if !math.IsNaN(s.EpRewMean) {
		rew = strconv.FormatFloat(s.EpRewMean, 'f', 1, 64)
	}
	end := ""
	if s.Iteration >= p.iterations {
		end = "\n"
	}
	_, err := fmt.Fprintf(p.w, "\r%s %d/%d it  %d steps  %.0f sps  ep_rew_mean %s   %s", bar, s.Iteration, p.iterations, s.Timesteps, s.FPS, rew, end)
	return err
}
