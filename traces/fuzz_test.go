package traces_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"streamscale/traces"
)

// checkCounts is the invariant of both readers: an error with the package
// prefix and the file name and no counts, or at least one count, all finite
// and ≥ 0.
func checkCounts(t *testing.T, counts []float64, err error, name string) {
	t.Helper()
	if err != nil {
		if counts != nil {
			t.Errorf("got counts %v with error %v", counts, err)
		}
		if !strings.HasPrefix(err.Error(), "traces: "+name+": ") {
			t.Errorf("error %q lacks the prefix %q", err, "traces: "+name+": ")
		}
		return
	}
	if len(counts) == 0 {
		t.Error("no counts and no error")
	}
	for i, v := range counts {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("counts[%d] = %v, want finite and ≥ 0", i, v)
		}
	}
}

func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{
		"index,window_start,count\n0,2015-01-01 00:00:00,3147\n1,2015-01-01 00:05:00,3370\n",
		"window_start,count,active_motes\n2004-03-04 00:00:00,322,52\n",
		"count\n1\nNaN\n",
		"count\n-1\n",
		"count\n1e400\n",
		"a,count\n1,2\n3\n",
		"note,count\n\"a\nb\",7\n",
		"\ufeffcount\r\n0x1p3\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		counts, err := traces.ReadCSV(bytes.NewReader(data), "fuzz.csv")
		checkCounts(t, counts, err, "fuzz.csv")
	})
}

func FuzzReadParquet(f *testing.F) {
	for _, counts := range [][]float64{{1}, {0, 2.5, 5117}} {
		var buf bytes.Buffer
		if err := traces.WriteParquet(&buf, counts); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte("PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		counts, err := traces.ReadParquet(bytes.NewReader(data), int64(len(data)), "fuzz.parquet")
		checkCounts(t, counts, err, "fuzz.parquet")
	})
}
