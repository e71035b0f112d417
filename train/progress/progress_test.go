package progress

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"streamscale/ppo"
)

// TestCSVAndParquet: the CSV has the header once and NaN as an empty cell;
// the Parquet file reads back the rows, prior rows first.
func TestCSVAndParquet(t *testing.T) {
	rows := []ppo.Stats{{Iteration: 1, Timesteps: 64, EpRewMean: math.NaN()}, {Iteration: 2, Timesteps: 128, EpRewMean: 12.5, ChosenActionProb: 0.25, EntropyFraction: 0.75}}
	var csv, pq bytes.Buffer
	cl := NewCSVLogger(&csv, true)
	pl := NewParquetLogger(&pq, []ParquetRow{{Iterations: 0}})
	for _, s := range rows {
		if err := (ppo.Loggers{cl, pl}).Log(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := pl.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if len(lines) != 3 || lines[0] != strings.Join(ppo.MetricNames, ",") || !strings.HasPrefix(lines[1], "0,0,,") || !strings.HasPrefix(lines[2], "0.25,0,12.5,") {
		t.Fatalf("csv:\n%s", csv.String())
	}
	got, err := ReadParquet(bytes.NewReader(pq.Bytes()), int64(pq.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Iterations != 0 || got[2].Iterations != 2 || got[2].EpRewMean != 12.5 || got[2].ChosenActionProb != 0.25 || got[2].EntropyFraction != 0.75 || !math.IsNaN(got[1].EpRewMean) {
		t.Fatalf("parquet rows %+v", got)
	}
}

// TestParquetColumnsFollowMetrics: the Parquet schema has one column per
// logged metric name, so a Stats field added to Metrics must be added to
// ParquetRow.
func TestParquetColumnsFollowMetrics(t *testing.T) {
	var pq bytes.Buffer
	pl := NewParquetLogger(&pq, nil)
	if err := pl.Log(ppo.Stats{Iteration: 1}); err != nil {
		t.Fatal(err)
	}
	if err := pl.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(pq.Bytes()), int64(pq.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range f.Schema().Fields() {
		cols = append(cols, c.Name())
	}
	slices.Sort(cols)
	if !slices.Equal(cols, ppo.MetricNames) {
		t.Fatalf("parquet columns %v, metrics %v", cols, ppo.MetricNames)
	}
}

// TestLine: one line per iteration with the named figures; undefined
// values print as a dash, the ETA is the remaining steps at the rate.
func TestLine(t *testing.T) {
	var b bytes.Buffer
	l := NewLine(&b, "seed 3: ", 4, 400)
	rows := []ppo.Stats{
		{Iteration: 1, Timesteps: 100, FPS: 50, EpRewMean: math.NaN(), ExplainedVariance: math.NaN(), ExplainedVarianceMC: math.NaN(), EntropyFraction: 0.995},
		{Iteration: 4, Timesteps: 400, FPS: 0, EpRewMean: -12.34, ExplainedVariance: 0.625, ExplainedVarianceMC: 0.4, EntropyFraction: 0.5},
	}
	for _, s := range rows {
		if err := l.Log(s); err != nil {
			t.Fatal(err)
		}
	}
	want := "seed 3: train: it 1/4  100 steps  50 fps  return —  EV — (MC —)  entropy 100%  ETA 6s\n" +
		"seed 3: train: it 4/4  400 steps  0 fps  return -12.3  EV 0.62 (MC 0.40)  entropy 50%  ETA 0s\n"
	if b.String() != want {
		t.Errorf("lines\n%q\nwant\n%q", b.String(), want)
	}
	for _, tc := range []struct {
		rem  int
		fps  float64
		want string
	}{{0, 0, "0s"}, {10, 0, "—"}, {10, math.NaN(), "—"}, {7200, 2, "1h0m0s"}, {3, 2, "2s"}} {
		if got := eta(tc.rem, tc.fps); got != tc.want {
			t.Errorf("eta(%d, %v) = %q, want %q", tc.rem, tc.fps, got, tc.want)
		}
	}
}

// TestWriteCurve: a PNG is drawn, the same bytes for the same rows (NaN
// points left out), and no rows is an error.
func TestWriteCurve(t *testing.T) {
	rows := []ParquetRow{
		{TotalTimesteps: 100, EpRewMean: math.NaN(), ExplainedVariance: -0.5, ExplainedVarianceMC: math.NaN(), EntropyFraction: 0.99},
		{TotalTimesteps: 200, EpRewMean: 3, ExplainedVariance: 0.2, ExplainedVarianceMC: 0.1, EntropyFraction: 0.9},
		{TotalTimesteps: 300, EpRewMean: 5, ExplainedVariance: 0.6, ExplainedVarianceMC: 0.3, EntropyFraction: 0.7},
	}
	var a, b bytes.Buffer
	if err := WriteCurve(&a, rows); err != nil {
		t.Fatal(err)
	}
	if err := WriteCurve(&b, rows); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(a.Bytes(), []byte("\x89PNG\r\n\x1a\n")) || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("curve: %d bytes, PNG %v, repeatable %v", a.Len(), bytes.HasPrefix(a.Bytes(), []byte("\x89PNG")), bytes.Equal(a.Bytes(), b.Bytes()))
	}
	if err := WriteCurve(&a, nil); err == nil {
		t.Error("no rows: no error")
	}
}
