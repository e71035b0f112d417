package env

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rates is a test workload: events/s per step.
type rates []float64

func (r rates) Len() int           { return len(r) }
func (r rates) Rate(i int) float64 { return r[i] }
func constRate(v float64, n int) rates {
	r := make(rates, n)
	for i := range r {
		r[i] = v
	}
	return r
}

// sharedTrace reads the count column of a file in the shared trace
// directory (scale 1 event/s per count), or skips the test.
func sharedTrace(t testing.TB, name string, scale float64) rates {
	t.Helper()
	dir := os.Getenv("STREAMSCALE_TRACES")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data", "traces")
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Skipf("trace not available: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	col := -1
	var r rates
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		if col < 0 {
			for i, h := range fields {
				if h == "count" {
					col = i
				}
			}
			continue
		}
		v, err := strconv.ParseFloat(fields[col], 64)
		if err != nil {
			t.Fatal(err)
		}
		r = append(r, v*scale)
	}
	return r
}
