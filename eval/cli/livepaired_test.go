package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamscale/eval/controllers"
	"streamscale/eval/runner"
	"streamscale/traces"
)

// TestLivePaired: paired live runs (two controllers on two placements)
// are judged like eval paired's: the first controller against the other,
// with its verdict table and figures; results out of the plan's order are
// refused.
func TestLivePaired(t *testing.T) {
	reg := controllers.New(controllers.Options{})
	var parsed []controllers.Spec
	for _, s := range []string{"static:4000", "static:500"} {
		sp, err := reg.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, sp)
	}
	tr := &traces.Trace{Name: "taxi", Counts: []float64{100, 200, 300, 400}, Scale: 1, Mult: 1}
	mk := func(ctrl string, placement uint64, viol float64) runner.Result {
		r := runner.Result{SLOMS: 180}
		r.Profile, r.Trace, r.Controller, r.PlacementSeed = "pred", "taxi", ctrl, placement
		for i := range 4 {
			p95 := 50.0
			if float64(i) < viol*4 {
				p95 = 500
			}
			r.Intervals = append(r.Intervals, runner.Interval{P95MS: p95, Throughput: 100, Offered: 100, TotalCPU: 1000})
		}
		r.Summary.ViolationRate = viol
		return r
	}
	results := []runner.Result{mk("static:4000", 101, 0), mk("static:500", 101, 1), mk("static:4000", 102, 0), mk("static:500", 102, 0.75)}
	dir := t.TempDir()
	if err := livePaired(Options{Commit: "c0ffee", GoVersion: "go-test"}, dir, "pred", "taxi", tr, []uint64{101, 102}, parsed, results, false, 1, 4, 0.5); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "paired.md"))
	if err != nil || !strings.Contains(string(md), "`static:500`") || !strings.Contains(string(md), "H1") || !strings.Contains(string(md), "commit `c0ffee`, go-test") {
		t.Fatalf("paired.md: %v\n%s", err, md)
	}
	for _, f := range []string{"paired.json", "p95_over_time.png", "pareto.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	results[0], results[1] = results[1], results[0]
	if err := livePaired(Options{}, t.TempDir(), "pred", "taxi", tr, []uint64{101, 102}, parsed, results, false, 1, 4, 0.5); err == nil {
		t.Error("results out of order were accepted")
	}
}
