package ppo

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Stats is one iteration's log row. Field comments give SB3's metric name.
type Stats struct {
	Iteration          int     // time/iterations
	Timesteps          int     // time/total_timesteps
	FPS                float64 // time/fps: env steps per wall second since Learn started (0 without a clock)
	EpRewMean          float64 // rollout/ep_rew_mean: mean return of the last 100 episodes (NaN before the first)
	EpLenMean          float64 // rollout/ep_len_mean
	ApproxKL           float64 // train/approx_kl: mean of (ρ−1) − log ρ over the last epoch
	ClipFraction       float64 // train/clip_fraction: share of |ρ−1| > ε, mean over minibatches
	EntropyLoss        float64 // train/entropy_loss: −mean entropy, mean over minibatches
	PolicyGradientLoss float64 // train/policy_gradient_loss
	ValueLoss          float64 // train/value_loss
	Loss               float64 // train/loss: total loss of the last minibatch
	ExplainedVariance  float64 // train/explained_variance of the rollout values against the returns
	NUpdates           int     // train/n_updates: epochs run so far (SB3 counts epochs)
	LearningRate       float64 // train/learning_rate
	ClipRange          float64 // train/clip_range
	GradientSteps      int     // Adam steps so far (not an SB3 metric; not in Metrics)
}

// Metric is one named value of a log row.
type Metric struct {
	Name  string
	Value float64
}

// MetricNames lists the logged names in the order Metrics returns them.
var MetricNames = []string{
	"rollout/ep_len_mean", "rollout/ep_rew_mean",
	"time/fps", "time/iterations", "time/total_timesteps",
	"train/approx_kl", "train/clip_fraction", "train/clip_range", "train/entropy_loss",
	"train/explained_variance", "train/learning_rate", "train/loss", "train/n_updates",
	"train/policy_gradient_loss", "train/value_loss",
}

// Metrics returns the row under SB3's names, in MetricNames order.
func (s Stats) Metrics() []Metric {
	v := []float64{
		s.EpLenMean, s.EpRewMean,
		s.FPS, float64(s.Iteration), float64(s.Timesteps),
		s.ApproxKL, s.ClipFraction, s.ClipRange, s.EntropyLoss,
		s.ExplainedVariance, s.LearningRate, s.Loss, float64(s.NUpdates),
		s.PolicyGradientLoss, s.ValueLoss,
	}
	m := make([]Metric, len(v))
	for i := range v {
		m[i] = Metric{MetricNames[i], v[i]}
	}
	return m
}

// Logger receives one row per iteration.
type Logger interface {
	Log(s Stats) error
}

// Loggers fans a row out to several loggers in order, stopping at the
// first error.
type Loggers []Logger

// Log implements Logger.
func (ls Loggers) Log(s Stats) error {
	for _, l := range ls {
		if err := l.Log(s); err != nil {
			return err
		}
	}
	return nil
}

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

// Log implements Logger; each row is flushed.
func (l *CSVLogger) Log(s Stats) error {
	if l.header {
		if err := l.w.Write(MetricNames); err != nil {
			return fmt.Errorf("ppo: csv: %w", err)
		}
		l.header = false
	}
	row := make([]string, 0, len(MetricNames))
	for _, m := range s.Metrics() {
		row = append(row, formatMetric(m.Value))
	}
	if err := l.w.Write(row); err != nil {
		return fmt.Errorf("ppo: csv: %w", err)
	}
	l.w.Flush()
	if err := l.w.Error(); err != nil {
		return fmt.Errorf("ppo: csv: %w", err)
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
	EpLenMean          float64 `parquet:"rollout/ep_len_mean"`
	EpRewMean          float64 `parquet:"rollout/ep_rew_mean"`
	FPS                float64 `parquet:"time/fps"`
	Iterations         int64   `parquet:"time/iterations"`
	TotalTimesteps     int64   `parquet:"time/total_timesteps"`
	ApproxKL           float64 `parquet:"train/approx_kl"`
	ClipFraction       float64 `parquet:"train/clip_fraction"`
	ClipRange          float64 `parquet:"train/clip_range"`
	EntropyLoss        float64 `parquet:"train/entropy_loss"`
	ExplainedVariance  float64 `parquet:"train/explained_variance"`
	LearningRate       float64 `parquet:"train/learning_rate"`
	Loss               float64 `parquet:"train/loss"`
	NUpdates           int64   `parquet:"train/n_updates"`
	PolicyGradientLoss float64 `parquet:"train/policy_gradient_loss"`
	ValueLoss          float64 `parquet:"train/value_loss"`
}

// Row converts s to a ParquetRow.
func (s Stats) Row() ParquetRow {
	return ParquetRow{
		EpLenMean: s.EpLenMean, EpRewMean: s.EpRewMean, FPS: s.FPS,
		Iterations: int64(s.Iteration), TotalTimesteps: int64(s.Timesteps),
		ApproxKL: s.ApproxKL, ClipFraction: s.ClipFraction, ClipRange: s.ClipRange,
		EntropyLoss: s.EntropyLoss, ExplainedVariance: s.ExplainedVariance,
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

// Log implements Logger.
func (l *ParquetLogger) Log(s Stats) error {
	l.rows = append(l.rows, s.Row())
	return nil
}

// Close writes the file.
func (l *ParquetLogger) Close() error {
	pw := parquet.NewGenericWriter[ParquetRow](l.w)
	if _, err := pw.Write(l.rows); err != nil {
		return fmt.Errorf("ppo: parquet: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("ppo: parquet: %w", err)
	}
	return nil
}

// ReadParquet reads the rows of a progress file written by ParquetLogger.
func ReadParquet(r io.ReaderAt, size int64) ([]ParquetRow, error) {
	rows, err := parquet.Read[ParquetRow](r, size)
	if err != nil {
		return nil, fmt.Errorf("ppo: parquet: %w", err)
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

// Log implements Logger.
func (p *ProgressBar) Log(s Stats) error {
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
