package progress

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"streamscale/ppo"
)

// TestCSVAndParquet: the CSV has the header once and NaN as an empty cell;
// the Parquet file reads back the rows, prior rows first.
func TestCSVAndParquet(t *testing.T) {
	rows := []ppo.Stats{{Iteration: 1, Timesteps: 64, EpRewMean: math.NaN()}, {Iteration: 2, Timesteps: 128, EpRewMean: 12.5}}
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
	if len(lines) != 3 || lines[0] != strings.Join(ppo.MetricNames, ",") || !strings.HasPrefix(lines[1], "0,,") || !strings.HasPrefix(lines[2], "0,12.5,") {
		t.Fatalf("csv:\n%s", csv.String())
	}
	got, err := ReadParquet(bytes.NewReader(pq.Bytes()), int64(pq.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Iterations != 0 || got[2].Iterations != 2 || got[2].EpRewMean != 12.5 || !math.IsNaN(got[1].EpRewMean) {
		t.Fatalf("parquet rows %+v", got)
	}
}
