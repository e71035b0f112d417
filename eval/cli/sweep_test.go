package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"streamscale/eval/sweep"
)

func sweepArgs(out string, extra ...string) []string {
	return append([]string{"sweep", "-profile", "pred", "-trace", testTrace, "-steps", "60",
		"-grid", "600,2000", "-placements", "2", "-out", out}, extra...)
}

// TestSweepJSON checks the shape of `eval sweep -json`, that it is
// sweep.json, and the rows of sweep.parquet against the points.
func TestSweepJSON(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := call(t, sweepArgs(dir, "-json", "-scenario", "paper")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if js, _ := os.ReadFile(filepath.Join(dir, FileSweepJSON)); string(js) != out {
		t.Error("-json output differs from sweep.json")
	}
	var raw struct {
		Points []map[string]any `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Points) != 2 {
		t.Fatalf("%d points, want 2: %s", len(raw.Points), out)
	}
	keys := []string{"cpu_millicores", "mean_p95_ms", "median_p95_ms", "violation_rate"}
	for i, p := range raw.Points {
		var got []string
		for k, v := range p {
			got = append(got, k)
			if _, ok := v.(float64); !ok {
				t.Errorf("point %d: %s = %v, want a number", i, k, v)
			}
		}
		slices.Sort(got)
		if !reflect.DeepEqual(got, keys) {
			t.Errorf("point %d has keys %v, want %v", i, got, keys)
		}
	}
	var sum sweep.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Profile != "pred" || sum.Scenario != "paper" || sum.Steps != 60 || !reflect.DeepEqual(sum.PlacementSeeds, []uint64{101, 102}) ||
		sum.Points[0].CPUMillicores != 600 || sum.Points[1].CPUMillicores != 2000 || sum.Commit != "test-commit" || sum.TraceSource != filepath.Base(testTrace) {
		t.Errorf("summary %+v", sum)
	}
	rows, err := parquet.ReadFile[sweep.Row](filepath.Join(dir, FileSweep))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 2 grid points × 2 placements", len(rows))
	}
	for i, r := range rows {
		if r.CPUMillicores != sum.Points[i/2].CPUMillicores || r.PlacementSeed != 101+uint64(i%2) || r.Steps != 60 || r.Scenario != "paper" {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	// The point's violation rate is the mean over its placements; a
	// placement's episode seed is the same at every grid point.
	if v := (rows[2].ViolationRate + rows[3].ViolationRate) / 2; float64(sum.Points[1].ViolationRate) != v {
		t.Errorf("violation rate %v, want the placements' mean %v", sum.Points[1].ViolationRate, v)
	}
	if rows[0].Seed != rows[2].Seed || rows[0].Seed == rows[1].Seed {
		t.Errorf("episode seeds %d %d %d", rows[0].Seed, rows[1].Seed, rows[2].Seed)
	}
	if fi, err := os.Stat(filepath.Join(dir, FileSweepFigure)); err != nil || fi.Size() == 0 {
		t.Errorf("no figure: %v", err)
	}
	if !strings.Contains(errs, "wall time") {
		t.Errorf("stderr %q does not report the wall time", errs)
	}
}

// TestSweepDeterminism: the same flags give the same bytes, on stdout and
// in every artifact; another seed gives other rows.
func TestSweepDeterminism(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	_, outA, errs := call(t, sweepArgs(a, "-json")...)
	_, outB, _ := call(t, sweepArgs(b, "-json")...)
	if outA == "" || outA != outB {
		t.Fatalf("same flags, different output (stderr %q):\n%s\n%s", errs, outA, outB)
	}
	for _, f := range []string{FileSweep, FileSweepFigure, FileSweepJSON} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs with the same flags", f)
		}
	}
	if code, _, errs := call(t, sweepArgs(c, "-seed", "2")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	x, _ := os.ReadFile(filepath.Join(a, FileSweep))
	y, _ := os.ReadFile(filepath.Join(c, FileSweep))
	if bytes.Equal(x, y) {
		t.Error("seeds 1 and 2 gave the same sweep.parquet")
	}
}

func TestSweepText(t *testing.T) {
	code, out, errs := call(t, sweepArgs(t.TempDir())...)
	if code != 0 || !strings.Contains(out, "median p95 ms") || !strings.Contains(out, "2000") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestSweepBadFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-grid", ""}, `-grid "" has an empty entry`},
		{[]string{"-grid", "500,,900"}, "empty entry"},
		{[]string{"-grid", "900,500"}, "not strictly ascending"},
		{[]string{"-grid", "500,500"}, "not strictly ascending"},
		{[]string{"-grid", "0,500"}, `-grid entry "0"`},
		{[]string{"-grid", "-500"}, `-grid entry "-500"`},
		{[]string{"-grid", "abc"}, `-grid entry "abc"`},
		{[]string{"-grid", "NaN"}, `-grid entry "NaN"`},
		{[]string{"-grid", "500,20000"}, "-grid entry 20000 outside"},
		{[]string{"-grid", "100,500"}, "-grid entry 100 outside"},
		{[]string{"-placements", "0"}, "-placements 0"},
		{[]string{"-steps", "-1"}, "-steps -1"},
		{[]string{"-profile", "foo"}, `unknown profile "foo"`},
		{[]string{"-trace", "moon"}, `unknown trace "moon"`},
		{[]string{"-scenario", "lab"}, `-scenario: env: scenario "lab" is neither a preset (realistic or paper) nor a readable scenario file`},
		{[]string{"-scenario", "realistic", "-steps", "2"}, "actuation_delay_steps"},
		{[]string{"-rate-mult", "0"}, "rate multiplier 0"},
		{[]string{"-out", ""}, "-out is empty"},
		{[]string{"-frob"}, "flag provided but not defined: -frob"},
	} {
		code, stdout, stderr := call(t, sweepArgs(dir, tc.args...)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "eval") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line mentioning %q", tc.args, code, stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("%v: stdout %q", tc.args, stdout)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Fatalf("%v: created %s before failing", tc.args, dir)
		}
	}
}
