package progress

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

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
	ChosenActionProb  float64 `parquet:"rollout/chosen_action_prob"`
	EpLenMean         float64 `parquet:"rollout/ep_len_mean"`
	EpRewMean         float64 `parquet:"rollout/ep_rew_mean"`
	FPS               float64 `parquet:"time/fps"`
	Iterations        int64   `parquet:"time/iterations"`
	TotalTimesteps    int64   `parquet:"time/total_timesteps"`
	ApproxKL          float64 `parquet:"train/approx_kl"`
	ClipFraction      float64 `parquet:"train/clip_fraction"`
	ClipRange         float64 `parquet:"train/clip_range"`
	EntropyFraction   float64 `parquet:"train/entropy_fraction"`
	EntropyLoss       float64 `parquet:"train/entropy_loss"`
	ExplainedVariance float64 `parquet:"train/explained_variance"`
	// ExplainedVarianceMC is ppo.Stats.ExplainedVarianceMC (λ = 1 target).
	ExplainedVarianceMC float64 `parquet:"train/explained_variance_mc"`
	LearningRate        float64 `parquet:"train/learning_rate"`
	Loss                float64 `parquet:"train/loss"`
	NUpdates            int64   `parquet:"train/n_updates"`
	PolicyGradientLoss  float64 `parquet:"train/policy_gradient_loss"`
	ValueLoss           float64 `parquet:"train/value_loss"`
}

// Row converts s to a ParquetRow.
func Row(s ppo.Stats) ParquetRow {
	return ParquetRow{
		ChosenActionProb: s.ChosenActionProb, EpLenMean: s.EpLenMean, EpRewMean: s.EpRewMean, FPS: s.FPS,
		Iterations: int64(s.Iteration), TotalTimesteps: int64(s.Timesteps),
		ApproxKL: s.ApproxKL, ClipFraction: s.ClipFraction, ClipRange: s.ClipRange,
		EntropyFraction: s.EntropyFraction, EntropyLoss: s.EntropyLoss, ExplainedVariance: s.ExplainedVariance,
		ExplainedVarianceMC: s.ExplainedVarianceMC,
		LearningRate:        s.LearningRate, Loss: s.Loss, NUpdates: int64(s.NUpdates),
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

// Rows returns the rows so far (prior rows first); the caller must not
// modify them.
func (l *ParquetLogger) Rows() []ParquetRow { return l.rows }

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

// Line writes one line per iteration, for a person watching a run:
//
//	train: it 12/180  344064 steps  7391 fps  return 17.3  EV 0.62 (MC 0.41)  entropy 58%  ETA 11m38s
//
// The ETA is the remaining env steps at the iteration's fps (time/fps,
// the trainer's rate since Learn started); "—" stands for an undefined
// value (no finished episode yet, a zero variance, no clock). Prefix,
// when not empty, starts every line (e.g. "seed 3: ").
type Line struct {
	w          io.Writer
	prefix     string
	iterations int
	total      int // env steps of the whole run
}

// NewLine returns a Line for a run of the given iterations and total env
// steps.
func NewLine(w io.Writer, prefix string, iterations, total int) *Line {
	return &Line{w: w, prefix: prefix, iterations: iterations, total: total}
}

// Log implements ppo.Logger.
func (p *Line) Log(s ppo.Stats) error {
	_, err := fmt.Fprintf(p.w, "%strain: it %d/%d  %d steps  %s fps  return %s  EV %s (MC %s)  entropy %s  ETA %s\n",
		p.prefix, s.Iteration, p.iterations, s.Timesteps, num(s.FPS, 0), num(s.EpRewMean, 1),
		num(s.ExplainedVariance, 2), num(s.ExplainedVarianceMC, 2), percent(s.EntropyFraction), eta(p.total-s.Timesteps, s.FPS))
	return err
}

func num(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func percent(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return strconv.FormatFloat(100*v, 'f', 0, 64) + "%"
}

// eta formats the time to collect remaining env steps at fps steps per
// second, to the second ("0s" when none remain, "—" without a rate).
func eta(remaining int, fps float64) string {
	if remaining <= 0 {
		return "0s"
	}
	if !(fps > 0) || math.IsInf(fps, 0) {
		return "—"
	}
	sec := math.Ceil(float64(remaining) / fps)
	if sec > 1e8 {
		return "—"
	}
	return (time.Duration(sec) * time.Second).String()
}
