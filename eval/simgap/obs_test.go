package simgap

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestObservationGaps: per controller, the features ranked by |SMD|
// (computed by hand below), features equal in both worlds left out, a
// feature constant in both worlds and different ranked first with a null
// SMD.
func TestObservationGaps(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	runs := []ObsRun{
		{World: "live", Controller: "x", Placement: 1, Rows: [][]float64{{0, 1, 5, 7}, {2, 1, 5, 7}}},
		{World: "sim", Controller: "x", Placement: 1, Rows: [][]float64{{1, 2, 5, 8}, {3, 4, 5, 8}}},
	}
	gaps := ObservationGaps(names, runs)
	if len(gaps) != 1 || gaps[0].Controller != "x" || gaps[0].Intervals != 2 {
		t.Fatalf("gaps %+v", gaps)
	}
	top := gaps[0].Top
	// d: constant 7 live, 8 sim. a: means 1 and 2, variances 1 and 1, SMD 1.
	// b: means 1 and 3, variances 0 and 1, pooled SD √0.5, SMD 2/√0.5. c: equal.
	want := []struct {
		name string
		smd  float64 // NaN: null
	}{{"d", math.NaN()}, {"b", 2 / math.Sqrt(0.5)}, {"a", 1}}
	if len(top) != len(want) {
		t.Fatalf("top %+v, want %d features", top, len(want))
	}
	for i, w := range want {
		g := top[i]
		switch {
		case g.Feature != w.name:
			t.Errorf("rank %d: %s, want %s", i, g.Feature, w.name)
		case math.IsNaN(w.smd) && g.SMD != nil:
			t.Errorf("%s: SMD %v, want null", g.Feature, *g.SMD)
		case !math.IsNaN(w.smd) && (g.SMD == nil || math.Abs(*g.SMD-w.smd) > 1e-12):
			t.Errorf("%s: SMD %v, want %v", g.Feature, g.SMD, w.smd)
		}
	}
	if _, err := json.Marshal(gaps); err != nil {
		t.Errorf("marshal: %v", err)
	}
}

// TestWriteObservations: the file reads back row for row (world,
// controller, placement, interval, feature, value), and a run whose row
// has another width is refused, naming it.
func TestWriteObservations(t *testing.T) {
	names := []string{"a", "b"}
	runs := []ObsRun{{World: WorldLive, Controller: "x", Placement: 7, Rows: [][]float64{{1, 2}, {3, 4}}}, {World: WorldSim, Controller: "x", Placement: 7, Rows: [][]float64{{5, 6}}}}
	var buf bytes.Buffer
	if err := WriteObservations(&buf, names, runs); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.Read[ObsRow](bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	want := []ObsRow{{"live", "x", 7, 0, "a", 1}, {"live", "x", 7, 0, "b", 2}, {"live", "x", 7, 1, "a", 3}, {"live", "x", 7, 1, "b", 4}, {"sim", "x", 7, 0, "a", 5}, {"sim", "x", 7, 0, "b", 6}}
	if !slices.Equal(rows, want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
	runs[1].Rows[0] = []float64{5}
	if err := WriteObservations(io.Discard, names, runs); err == nil || !strings.Contains(err.Error(), "sim x placement 7 interval 0: 1 observation features, want 2") {
		t.Errorf("a short row: %v", err)
	}
}
