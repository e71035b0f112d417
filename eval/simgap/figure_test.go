package simgap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"streamscale/eval/runner"
)

// TestFigures: one PNG per (live, sim) pair, named by controller
// and placement; an interval without completions (p95 0) is still drawn.
func TestFigures(t *testing.T) {
	mk := func(ctrl, scenario string, p95 ...float64) runner.Result {
		r := runner.Result{SLOMS: 180}
		r.Profile, r.Trace, r.Controller, r.PlacementSeed, r.Scenario = "pred", "taxi", ctrl, 101, scenario
		for _, v := range p95 {
			r.Intervals = append(r.Intervals, runner.Interval{P95MS: v})
		}
		return r
	}
	dir := t.TempDir()
	files, err := Figures(dir, []runner.Result{
		mk("static:500", "live", 900, 0, 3000), mk("static:500", "realistic", 800, 1200, 2500),
		mk("ppo:policies/pred", "live", 60, 70, 80), mk("ppo:policies/pred", "realistic", 40, 45, 50),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"simgap_p95_static-500_101.png", "simgap_p95_ppo-policies-pred_101.png"}
	if len(files) != len(want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	for i, f := range files {
		if f != want[i] {
			t.Errorf("file %d: %s, want %s", i, f, want[i])
		}
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: not a PNG (%v)", f, err)
		}
	}
}
