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
