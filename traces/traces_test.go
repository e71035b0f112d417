package traces_test

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamscale/env"
	"streamscale/traces"
)

// realDir returns the shared data directory, skipping the test if it is
// absent.
func realDir(t *testing.T) string {
	t.Helper()
	dir := traces.DefaultDir()
	if _, err := os.Stat(filepath.Join(dir, "taxi_nab_5min_2015-01-01_3600pts.csv")); err != nil {
		t.Skipf("trace data not available: %v", err)
	}
	return dir
}

// noLog fails the test if the fallback log line is written.
func noLog(t *testing.T) func(string, ...any) {
	return func(format string, args ...any) {
		t.Errorf("unexpected log: "+format, args...)
	}
}

func TestNames(t *testing.T) {
	want := []string{"intel", "intel-train", "taxi", "taxi-train"}
	if got := traces.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

func TestLoadNamedReal(t *testing.T) {
	dir := realDir(t)
	tests := []struct {
		name        string
		file        string
		len         int
		scale       float64
		first, last float64 // file rows 0 and (len-1) mod period
		period      int     // points taken from the file before cycling
	}{
		{"taxi", "taxi_nab_5min_2015-01-01_3600pts.csv", 3600, 1, 3147, 3177, 3600},
		{"taxi-train", "taxi_nab_5min_2014-12-30_train_352pts.csv", 352, 1, 1971, 364, 352},
		{"intel", "intel_5min_counts.csv", 3600, 5117.0 / 362, 322, 297, 1056},     // 3599 mod 1056 = 431; taxi's peak / intel's
		{"intel-train", "intel_5min_counts.csv", 384, 5117.0 / 362, 313, 320, 384}, // file rows 1056 and 1439; intel's scale
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Dir "" means DefaultDir(), which realDir returned.
			tr, err := traces.Load(tt.name, traces.Options{RateMult: 2, Logf: noLog(t)})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Name != tt.name || tr.Source != filepath.Join(dir, tt.file) {
				t.Errorf("Name, Source = %q, %q, want %q, %q", tr.Name, tr.Source, tt.name, filepath.Join(dir, tt.file))
			}
			if tr.Len() != tt.len {
				t.Fatalf("Len() = %d, want %d", tr.Len(), tt.len)
			}
			if tr.Scale != tt.scale || tr.Mult != 2 {
				t.Errorf("Scale, Mult = %v, %v, want %v, 2", tr.Scale, tr.Mult, tt.scale)
			}
			if tr.Counts[0] != tt.first || tr.Counts[tt.len-1] != tt.last {
				t.Errorf("first, last = %v, %v, want %v, %v", tr.Counts[0], tr.Counts[tt.len-1], tt.first, tt.last)
			}
			for i := tt.period; i < tt.len; i++ {
				if tr.Counts[i] != tr.Counts[i-tt.period] {
					t.Fatalf("Counts[%d] = %v, want Counts[%d] = %v (cycle of %d)", i, tr.Counts[i], i-tt.period, tr.Counts[i-tt.period], tt.period)
				}
			}
			if got, want := tr.Rate(0), tt.first*tt.scale*2; got != want {
				t.Errorf("Rate(0) = %v, want %v", got, want)
			}
			if got, want := tr.Rate(tt.len), tr.Rate(0); got != want {
				t.Errorf("Rate(Len) = %v, want Rate(0) = %v", got, want)
			}
		})
	}
}

// TestIntelReplaysFileHead checks that intel replays the file's first 1,056
// rows, not some later span.
func TestIntelReplaysFileHead(t *testing.T) {
	dir := realDir(t)
	f, err := os.Open(filepath.Join(dir, "intel_5min_counts.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	file, err := traces.ReadCSV(f, "intel_5min_counts.csv")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := traces.Load("intel", traces.Options{Dir: dir, Logf: noLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(file) != 1440 {
		t.Fatalf("file has %d rows, want 1440", len(file))
	}
	if !slices.Equal(tr.Counts[:1056], file[:1056]) {
		t.Error("intel Counts[:1056] differ from the file's first 1,056 rows")
	}
	if tr.Counts[1056] != file[0] || file[1056] == file[0] {
		t.Errorf("Counts[1056] = %v, want file[0] = %v (file[1056] = %v)", tr.Counts[1056], file[0], file[1056])
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("STREAMSCALE_TRACES", "")
	got := traces.DefaultDir()
	if want := filepath.Join("shared", "data", "traces"); !strings.HasSuffix(got, want) {
		t.Errorf("DefaultDir() = %q, want a path ending in %q", got, want)
	}
	// From the package directory, the module root is one level up.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Dir(wd), "..", "shared", "data", "traces"); got != want {
		t.Errorf("DefaultDir() = %q, want %q", got, want)
	}
	t.Setenv("STREAMSCALE_TRACES", "/some/dir")
	if got := traces.DefaultDir(); got != "/some/dir" {
		t.Errorf("DefaultDir() with $STREAMSCALE_TRACES = %q, want /some/dir", got)
	}
}

func TestRate(t *testing.T) {
	tests := []struct {
		name string
		tr   traces.Trace
		step int
		want float64
	}{
		{"first", traces.Trace{Counts: []float64{10, 20, 30}, Scale: 2, Mult: 1}, 0, 20},
		{"mult", traces.Trace{Counts: []float64{10, 20, 30}, Scale: 2, Mult: 2}, 1, 80},
		{"mult 0 means 1", traces.Trace{Counts: []float64{10, 20, 30}, Scale: 2}, 2, 60},
		{"wraps", traces.Trace{Counts: []float64{10, 20, 30}, Scale: 1, Mult: 1}, 4, 20},
		{"negative step wraps", traces.Trace{Counts: []float64{10, 20, 30}, Scale: 1, Mult: 1}, -1, 30},
		{"empty", traces.Trace{Scale: 1, Mult: 1}, 5, 0},
		{"negative scale", traces.Trace{Counts: []float64{10}, Scale: -1, Mult: 1}, 0, 0},
		{"nan mult", traces.Trace{Counts: []float64{10}, Scale: 1, Mult: math.NaN()}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tr.Rate(tt.step); got != tt.want {
				t.Errorf("Rate(%d) = %v, want %v", tt.step, got, tt.want)
			}
		})
	}
}

func TestLoadPath(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "mine.csv")
	if err := os.WriteFile(csvPath, []byte("count\n5\n7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pqPath := filepath.Join(dir, "mine.PARQUET")
	writeParquetFile(t, pqPath, []float64{3, 4, 5})

	tests := []struct {
		path string
		want []float64
	}{
		{csvPath, []float64{5, 7}},
		{pqPath, []float64{3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			tr, err := traces.Load(tt.path, traces.Options{RateMult: 3, Logf: noLog(t)})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tr.Counts, tt.want) || tr.Name != tt.path || tr.Source != tt.path || tr.Scale != 1 || tr.Mult != 3 {
				t.Errorf("Load(%q) = %+v, want Counts %v, Name and Source the path, Scale 1, Mult 3", tt.path, *tr, tt.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("count\n1\n-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	short := t.TempDir()
	if err := os.WriteFile(filepath.Join(short, "intel_5min_counts.csv"), []byte("count\n1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		arg      string
		opts     traces.Options
		want     []string // substrings of the error
		notExist bool
	}{
		{"missing path", filepath.Join(dir, "nope.csv"), traces.Options{}, []string{"nope.csv"}, true},
		{"unknown name", "taxy", traces.Options{}, []string{`"taxy"`, "intel, intel-train, taxi, taxi-train"}, false},
		{"empty name", "", traces.Options{}, []string{"empty"}, false},
		{"bad extension", filepath.Join(dir, "x.txt"), traces.Options{}, []string{"x.txt"}, false},
		{"bad file", bad, traces.Options{}, []string{bad, "line 3", "negative"}, false},
		{"named file too short", "intel", traces.Options{Dir: short}, []string{"intel_5min_counts.csv", "2 data rows", "1056"}, false},
		{"negative mult", "taxi", traces.Options{RateMult: -1}, []string{"rate multiplier -1"}, false},
		{"nan mult", "taxi", traces.Options{RateMult: math.NaN()}, []string{"rate multiplier NaN"}, false},
		{"inf mult", "taxi", traces.Options{RateMult: math.Inf(1)}, []string{"rate multiplier +Inf"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Logf = noLog(t)
			tr, err := traces.Load(tt.arg, tt.opts)
			if err == nil {
				t.Fatalf("Load(%q) = %+v, want an error", tt.arg, tr)
			}
			checkErr(t, err, tt.want...)
			if got := errors.Is(err, fs.ErrNotExist); got != tt.notExist {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v", got, tt.notExist)
			}
		})
	}
}

// checkErr checks that err has the package prefix and contains each of want.
func checkErr(t *testing.T, err error, want ...string) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, "traces: ") {
		t.Errorf("error %q lacks the prefix %q", msg, "traces: ")
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not contain %q", msg, w)
		}
	}
}

func ExampleReadCSV() {
	const data = "index,count\n0,100\n1,250\n"
	counts, err := traces.ReadCSV(strings.NewReader(data), "mini.csv")
	if err != nil {
		fmt.Println(err)
		return
	}
	tr := &traces.Trace{Name: "mini", Counts: counts, Scale: 12, Mult: 2}
	for step := range 3 {
		fmt.Printf("step %d: %.0f events/s\n", step, tr.Rate(step))
	}
	// Output:
	// step 0: 2400 events/s
	// step 1: 6000 events/s
	// step 2: 2400 events/s
}

func ExampleReadCSV_error() {
	const data = "window_start,count\n2004-03-04 00:00:00,322\n2004-03-04 00:05:00,NaN\n"
	_, err := traces.ReadCSV(strings.NewReader(data), "intel.csv")
	fmt.Println(err)
	// Output:
	// traces: intel.csv: line 3: count NaN is not finite
}

// TestIntelPeakMatchesTaxi checks the rule that sets intel's scale: its
// replayed windows peak at the taxi evaluation trace's peak rate, whatever
// the files hold (here a hand-made pair).
func TestIntelPeakMatchesTaxi(t *testing.T) {
	dir := t.TempDir()
	taxi := "index,window_start,count\n"
	for i := range 3600 {
		taxi += fmt.Sprintf("%d,w%d,%d\n", i, i, 100+800*min(i%1000/999, 1))
	}
	intel := "window_start,count,active_motes\n"
	for i := range 1056 {
		intel += fmt.Sprintf("w%d,%d,1\n", i, 10+i%7)
	}
	intel += "late,1000,1\n" // beyond the replayed windows: not the peak
	for f, body := range map[string]string{"taxi_nab_5min_2015-01-01_3600pts.csv": taxi, "intel_5min_counts.csv": intel} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := traces.Load("intel", traces.Options{Dir: dir, Logf: noLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if want := 900.0 / 16; tr.Scale != want {
		t.Fatalf("Scale = %v, want taxi's peak 900 / intel's 16 = %v", tr.Scale, want)
	}
	peak := 0.0
	for i := range tr.Len() {
		peak = max(peak, tr.Rate(i))
	}
	if peak != 900 {
		t.Fatalf("intel peaks at %v/s, want taxi's 900/s", peak)
	}
}

// TestLoadMaxRate: Load refuses a point whose rate exceeds MaxRate (the
// simulator's env.MaxRate), naming the point and the limit, whether the
// count itself or the rate multiplier takes it past the bound.
func TestLoadMaxRate(t *testing.T) {
	if traces.MaxRate != env.MaxRate {
		t.Fatalf("traces.MaxRate %g ≠ env.MaxRate %g", traces.MaxRate, env.MaxRate)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(path, []byte("count\n5\n1e9\n1e25\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mult    float64
		wantErr string
	}{
		{1, "point 2: rate 1e+25 events/s (count 1e+25 × scale 1 × multiplier 1) exceeds the maximum 1e+09"},
		{1e-17, ""},
		{2, "point 1: rate 2e+09 events/s (count 1e+09 × scale 1 × multiplier 2) exceeds the maximum 1e+09"},
	} {
		tr, err := traces.Load(path, traces.Options{RateMult: tc.mult})
		if tc.wantErr == "" {
			if err != nil || tr.Len() != 3 {
				t.Errorf("multiplier %g: %v", tc.mult, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "traces: ") {
			t.Errorf("multiplier %g: err = %v, want %q", tc.mult, err, tc.wantErr)
		}
	}
	// A named trace: the synthetic taxi stand-in peaks at 5,117/s, so a
	// multiplier of 10⁶ takes it past the bound.
	_, err := traces.Load("taxi", traces.Options{Dir: dir, RateMult: 1e6, Logf: func(string, ...any) {}})
	if err == nil || !strings.Contains(err.Error(), "exceeds the maximum 1e+09") {
		t.Errorf("taxi ×10⁶: err = %v", err)
	}
}
