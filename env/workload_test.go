package env

import (
	"bufio"
	"errors"
	"math"
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

// TestMaxRate: New refuses a workload point above MaxRate, naming the
// point and the limit (a rate of 10²⁵ used to send the tracer's event
// times out of the range of an int and index a slice at −2⁶³), and a
// workload at MaxRate runs under the realistic physics.
func TestMaxRate(t *testing.T) {
	for _, tc := range []struct {
		rate    float64
		wantErr string
	}{
		{MaxRate, ""},
		{math.Nextafter(MaxRate, math.Inf(1)), "env: workload point 2: rate 1.0000000000000001e+09 events/s exceeds the maximum 1e+09"},
		{1e25, "env: workload point 2: rate 1e+25 events/s exceeds the maximum 1e+09"},
		{math.Inf(1), "env: workload point 2: rate +Inf events/s exceeds the maximum 1e+09"},
	} {
		err := runRatePoint(t, tc.rate, 2)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("rate %g: %v", tc.rate, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("rate %g: err = %v, want %q", tc.rate, err, tc.wantErr)
		}
	}
}

// runRatePoint runs three steps of PRED under the realistic physics with
// point at of a four-point workload at rate (the others at 1,000/s).
func runRatePoint(t testing.TB, rate float64, at int) error {
	t.Helper()
	w := constRate(1000, 4)
	w[at] = rate
	cfg, err := EdgeConfig("pred", 42, w)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Physics, _ = ScenarioPhysics(ScenarioRealistic)
	cfg.StartOffset = at
	e, err := New(cfg)
	if err != nil {
		return err
	}
	e.Reset(1)
	for range 3 {
		if _, err := e.Step(Action{Targets: make([]float64, e.NumTasks())}); err != nil {
			t.Fatalf("rate %g: step: %v", rate, err)
		}
	}
	return nil
}

// FuzzWorkloadRate: no workload rate makes New or Step panic; New refuses
// exactly the rates above MaxRate.
func FuzzWorkloadRate(f *testing.F) {
	for _, r := range []float64{0, 1000, MaxRate, 1e25, -1, math.NaN(), math.Inf(1)} {
		f.Add(r)
	}
	f.Fuzz(func(t *testing.T, rate float64) {
		err := runRatePoint(t, rate, 1)
		if (err != nil) != (rate > MaxRate) {
			t.Fatalf("rate %g: err = %v", rate, err)
		}
	})
}
