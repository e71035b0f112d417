package traces_test

import (
	"bytes"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	"streamscale/traces"
)

// writeParquetFile writes counts with WriteParquet to path.
func writeParquetFile(t *testing.T, path string, counts []float64) {
	t.Helper()
	var buf bytes.Buffer
	if err := traces.WriteParquet(&buf, counts); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// encode writes rows with parquet-go directly, for column types and values
// that WriteParquet does not produce.
func encode[T any](t *testing.T, rows []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readParquet(b []byte, name string) ([]float64, error) {
	return traces.ReadParquet(bytes.NewReader(b), int64(len(b)), name)
}

func TestParquetRoundTrip(t *testing.T) {
	long := make([]float64, 3000) // more than one read buffer
	for i := range long {
		long[i] = float64(i%500) * 1.5
	}
	tests := []struct {
		name   string
		counts []float64
	}{
		{"one", []float64{42}},
		{"mixed", []float64{0, 1, 2.5, 5117, 1e12}},
		{"long", long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := traces.WriteParquet(&buf, tt.counts); err != nil {
				t.Fatal(err)
			}
			got, err := readParquet(buf.Bytes(), "rt.parquet")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.counts) {
				t.Errorf("round trip changed the counts: got %d values, want %d", len(got), len(tt.counts))
			}
		})
	}
}

func TestReadParquetColumnTypes(t *testing.T) {
	type i64 struct {
		Time  string `parquet:"window_start"`
		Count int64  `parquet:"count"`
	}
	type i32 struct {
		Count int32 `parquet:"count"`
	}
	type f32 struct {
		Count float32 `parquet:"count"`
		Other int64   `parquet:"active_motes"`
	}
	type opt struct {
		Count *float64 `parquet:"count,optional"`
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"int64", encode(t, []i64{{"a", 1}, {"b", 2}, {"c", 3}})},
		{"int32", encode(t, []i32{{1}, {2}, {3}})},
		{"float32", encode(t, []f32{{1, 9}, {2, 9}, {3, 9}})},
		{"optional without nulls", encode(t, []opt{{new(1.0)}, {new(2.0)}, {new(3.0)}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readParquet(tt.data, "typed.parquet")
			if err != nil {
				t.Fatal(err)
			}
			if want := []float64{1, 2, 3}; !slices.Equal(got, want) {
				t.Errorf("ReadParquet = %v, want %v", got, want)
			}
		})
	}
}

func TestReadParquetBad(t *testing.T) {
	type noCount struct {
		Value float64 `parquet:"value"`
	}
	type i64 struct {
		Count int64 `parquet:"count"`
	}
	type f64 struct {
		Count float64 `parquet:"count"`
	}
	type str struct {
		Count string `parquet:"count"`
	}
	type opt struct {
		Count *float64 `parquet:"count,optional"`
	}
	type rep struct {
		Count []float64 `parquet:"count,list"`
	}
	var good bytes.Buffer
	if err := traces.WriteParquet(&good, []float64{1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	hugeFooter := bytes.Clone(good.Bytes())
	hugeFooter[len(hugeFooter)-5] = 0xff // high byte of the footer length
	tests := []struct {
		name string
		data []byte
		want []string
	}{
		{"huge footer length", hugeFooter, []string{"corrupt parquet file", "footer of"}},
		{"not parquet", []byte("index,count\n0,1\n"), nil},
		{"empty input", nil, nil},
		{"truncated", good.Bytes()[:good.Len()-10], nil},
		{"no count column", encode(t, []noCount{{1}}), []string{`no "count" column`}},
		{"no rows", encode(t, []f64{}), []string{"no data rows"}},
		{"negative", encode(t, []i64{{1}, {2}, {-3}}), []string{"row 3", "negative"}},
		{"nan", encode(t, []f64{{math.NaN()}}), []string{"row 1", "not finite"}},
		{"inf", encode(t, []f64{{1}, {math.Inf(1)}}), []string{"row 2", "not finite"}},
		{"null", encode(t, []opt{{new(1.0)}, {nil}}), []string{"row 2", "null"}},
		{"string column", encode(t, []str{{"1"}}), []string{"type"}},
		{"list column", encode(t, []rep{{[]float64{1, 2}}}), []string{"nested"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readParquet(tt.data, "bad.parquet")
			if err == nil {
				t.Fatalf("ReadParquet = %v, want an error", got)
			}
			checkErr(t, err, append([]string{"traces: bad.parquet: "}, tt.want...)...)
		})
	}
}

func TestWriteParquetRefuses(t *testing.T) {
	tests := []struct {
		name   string
		counts []float64
		want   string
	}{
		{"empty", nil, "no counts"},
		{"negative", []float64{1, -1}, "counts[1]"},
		{"nan", []float64{math.NaN()}, "counts[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := traces.WriteParquet(&buf, tt.counts)
			if err == nil {
				t.Fatal("WriteParquet succeeded, want an error")
			}
			checkErr(t, err, tt.want)
			if buf.Len() != 0 {
				t.Errorf("WriteParquet wrote %d bytes before failing, want 0", buf.Len())
			}
		})
	}
}
