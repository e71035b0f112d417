package traces_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"streamscale/traces"
)

// loadSynthetic loads a named trace from an empty directory, so that the
// synthetic fallback is used, and returns it with the log lines written.
func loadSynthetic(t *testing.T, name string, seed uint64) (*traces.Trace, []string) {
	t.Helper()
	var logs []string
	tr, err := traces.Load(name, traces.Options{
		Dir:  t.TempDir(),
		Seed: seed,
		Logf: func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return tr, logs
}

func TestSyntheticFallback(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		len    int
		period int
		scale  float64
		logs   int // intel's scale falls back to the synthetic taxi's peak too
	}{
		{"taxi", "taxi_nab_5min_2015-01-01_3600pts.csv", 3600, 3600, 1, 1},
		{"taxi-train", "taxi_nab_5min_2014-12-30_train_352pts.csv", 352, 352, 1, 1},
		// the synthetic traces keep the real peaks, 5,117 and 362
		{"intel", "intel_5min_counts.csv", 3600, 1056, 5117.0 / 362, 2},
		{"intel-train", "intel_5min_counts.csv", 384, 384, 5117.0 / 362, 3}, // its own, intel's and taxi's
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, logs := loadSynthetic(t, tt.name, 7)
			if tr.Source != "synthetic" || tr.Name != tt.name || tr.Scale != tt.scale || tr.Mult != 1 {
				t.Errorf("Name, Source, Scale, Mult = %q, %q, %v, %v, want %q, synthetic, %v, 1",
					tr.Name, tr.Source, tr.Scale, tr.Mult, tt.name, tt.scale)
			}
			if tr.Len() != tt.len {
				t.Fatalf("Len() = %d, want %d", tr.Len(), tt.len)
			}
			for i := tt.period; i < tt.len; i++ {
				if tr.Counts[i] != tr.Counts[i-tt.period] {
					t.Fatalf("Counts[%d] != Counts[%d]: not a cycle of %d", i, i-tt.period, tt.period)
				}
			}
			if len(logs) != tt.logs {
				t.Fatalf("logged %d lines, want %d: %q", len(logs), tt.logs, logs)
			}
			for _, want := range []string{"traces: " + tt.name + ": ", tt.file, "not found", "synthetic", "(seed 7)"} {
				if !strings.Contains(logs[0], want) {
					t.Errorf("log line %q does not contain %q", logs[0], want)
				}
			}
		})
	}
}

func TestSyntheticDeterminism(t *testing.T) {
	for _, name := range traces.Names() {
		t.Run(name, func(t *testing.T) {
			a, _ := loadSynthetic(t, name, 7)
			b, _ := loadSynthetic(t, name, 7)
			c, _ := loadSynthetic(t, name, 8)
			if !slices.Equal(a.Counts, b.Counts) {
				t.Error("seed 7 twice gave different counts")
			}
			if slices.Equal(a.Counts, c.Counts) {
				t.Error("seeds 7 and 8 gave identical counts")
			}
		})
	}
}

// TestSyntheticPinned pins the first counts of seed 1, so that a change to
// the generator or to the stream derivation is noticed.
func TestSyntheticPinned(t *testing.T) {
	tests := []struct {
		name string
		want []float64
	}{
		{"taxi", []float64{2789, 2738, 2697, 2652}},
		{"taxi-train", []float64{2214, 2186, 2086, 2167}},
		{"intel", []float64{310, 287, 286, 303}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, _ := loadSynthetic(t, tt.name, 1)
			if got := tr.Counts[:len(tt.want)]; !slices.Equal(got, tt.want) {
				t.Errorf("first counts = %v, want %v", got, tt.want)
			}
		})
	}
}

// summary holds statistics of one cycle of a trace.
type summary struct {
	mean, sd, min, max float64
	ac1, ac144, ac288  float64 // autocorrelation at lags 1, 144 (half a day) and 288 (a day)
}

func summarize(c []float64) summary {
	s := summary{min: math.Inf(1), max: math.Inf(-1)}
	for _, v := range c {
		s.mean += v
		s.min = min(s.min, v)
		s.max = max(s.max, v)
	}
	s.mean /= float64(len(c))
	var ss float64
	for _, v := range c {
		ss += (v - s.mean) * (v - s.mean)
	}
	s.sd = math.Sqrt(ss / float64(len(c)))
	ac := func(lag int) float64 {
		var num float64
		for i := 0; i+lag < len(c); i++ {
			num += (c[i] - s.mean) * (c[i+lag] - s.mean)
		}
		return num / ss
	}
	s.ac1, s.ac144, s.ac288 = ac(1), ac(144), ac(288)
	return s
}

// TestSyntheticStatistics checks that the synthetic traces resemble the real
// ones (statistics of the replayed data, see SOURCES.md and the doc comments
// of the named traces).
func TestSyntheticStatistics(t *testing.T) {
	tests := []struct {
		name    string
		period  int
		want    summary // mean, sd, min, max of the real trace
		sdTol   float64 // relative tolerance on sd
		diurnal bool    // want a daily cycle: ac288 > 0.5 and ac144 < 0
	}{
		{"taxi", 3600, summary{mean: 2369.1, sd: 1171.6, min: 255, max: 5117}, 0.2, true},
		{"taxi-train", 352, summary{mean: 2075.0, sd: 1102.7, min: 328, max: 3784}, 0.25, false},
		{"intel", 1056, summary{mean: 321.9, sd: 17.3, min: 267, max: 362}, 0.25, false},
	}
	for _, tt := range tests {
		for _, seed := range []uint64{1, 2, 3, 42} {
			t.Run(fmt.Sprintf("%s/seed=%d", tt.name, seed), func(t *testing.T) {
				tr, _ := loadSynthetic(t, tt.name, seed)
				c := tr.Counts[:tt.period]
				for i, v := range c {
					if v != math.Round(v) || v < 0 {
						t.Fatalf("Counts[%d] = %v, want a whole number ≥ 0", i, v)
					}
				}
				got := summarize(c)
				if got.min != tt.want.min || got.max != tt.want.max {
					t.Errorf("min, max = %v, %v, want %v, %v", got.min, got.max, tt.want.min, tt.want.max)
				}
				if math.Abs(got.mean-tt.want.mean) > 0.01*tt.want.mean {
					t.Errorf("mean = %.1f, want %.1f ± 1%%", got.mean, tt.want.mean)
				}
				if math.Abs(got.sd-tt.want.sd) > tt.sdTol*tt.want.sd {
					t.Errorf("sd = %.1f, want %.1f ± %.0f%%", got.sd, tt.want.sd, 100*tt.sdTol)
				}
				if got.ac1 < 0.5 {
					t.Errorf("lag-1 autocorrelation = %.3f, want ≥ 0.5 (real traces are smooth)", got.ac1)
				}
				if tt.diurnal && (got.ac288 < 0.5 || got.ac144 > 0) {
					t.Errorf("autocorrelation at 144, 288 = %.3f, %.3f, want < 0 and > 0.5 (daily cycle)", got.ac144, got.ac288)
				}
			})
		}
	}
}

// TestSyntheticStreamsIndependent checks that the stream is derived from the
// name as well as the seed: taxi and taxi-train share a shape, so with one
// seed and no name in the stream key their scaled noise would line up.
func TestSyntheticStreamsIndependent(t *testing.T) {
	taxi, _ := loadSynthetic(t, "taxi", 5)
	train, _ := loadSynthetic(t, "taxi-train", 5)
	// Compare the fluctuations (differences) of the common 352 windows.
	var same int
	for i := 1; i < 352; i++ {
		if math.Signbit(taxi.Counts[i]-taxi.Counts[i-1]) == math.Signbit(train.Counts[i]-train.Counts[i-1]) {
			same++
		}
	}
	if same > 300 {
		t.Errorf("%d of 351 steps move in the same direction in taxi and taxi-train, want them unrelated", same)
	}
}
