package liveclasp

import (
	"context"
	"strings"
	"testing"
	"time"

	"streamscale/eval/live"
	"streamscale/eval/runner"
	"streamscale/traces"
)

// TestMarkdown: the report has one row per controller with the CLASP
// figures.
func TestMarkdown(t *testing.T) {
	var r ControllerRun
	r.Key = runner.Key{Controller: "clasp"}
	r.HInfo = live.HInfo{Delivered: 0.987, P50MS: 12.5, P95MS: 80.25, MeanWorkers: 1.5, PeakWorkers: 2, FinalWorkers: 1, Migrations: 3,
		PlannerMSMax: 4.5, WorkerPauseMSMax: 1.25, Dropped: 2, Unfinished: 7, Lost: 2, MeanCPUUsedCores: 0.5}
	s := Summary{Profile: "syn", Trace: "burst", Intervals: 10, TimeScaleS: 1, RateMult: 1, PeakRate: 200, InitialWorkers: 1, MaxWorkers: 4,
		TaskMillicores: 1000, SLOMS: 1000, Runs: []ControllerRun{r}}
	md := string(Markdown(s))
	for _, want := range []string{"peak 200 inputs/s", "| clasp | 0.987 | 12.5 | 80.2 |", "| 1.50 | 2 | 1 | 3 | 4.5 | 1.25 | 2 | 7 | 0.500 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestPaired: a summary of two controllers on two seeds is
// judged by seed (clasp − fixed:2 workers −1 and −0.5: CI [−1, −0.5], the
// verdict holds) and the report carries the seed column and the paired
// table; a summary older than -seeds is one pair; runs out of seed order
// are refused.
func TestPaired(t *testing.T) {
	mk := func(ctrl string, seed uint64, workers, p95 float64) ControllerRun {
		var r ControllerRun
		r.Key = runner.Key{Controller: ctrl, Seed: seed}
		r.HInfo = live.HInfo{Delivered: 1, P95MS: p95, MeanWorkers: workers}
		return r
	}
	s := Summary{Profile: "syn", Trace: "gradual", Seed: 1, Seeds: []uint64{1, 2}, SeedIntervals: []int{140, 137}, SLOMS: 1000,
		Runs: []ControllerRun{mk("clasp", 1, 1, 300), mk("fixed:2", 1, 2, 200), mk("clasp", 2, 1.5, 300), mk("fixed:2", 2, 2, 250)}}
	ps, err := Paired(s)
	if err != nil {
		t.Fatal(err)
	}
	w := ps.Comparisons[0].Estimates[0]
	if ps.Candidate != "clasp" || w.Mean != -0.75 || w.CILow != -1 || w.CIHigh != -0.5 || !ps.Comparisons[0].Verdicts[0].Holds || ps.Comparisons[0].Verdicts[3].Holds {
		t.Fatalf("paired %+v", ps.Comparisons[0])
	}
	s.Paired = &ps
	md := string(Markdown(s))
	for _, want := range []string{"seeds 1 … 2 (intervals [140 137])", "| clasp | 2 | 1.000 |", "## Paired: `clasp` against each baseline", "| fixed:2 | 2 | -0.75 [-1.00, -0.50] |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	old := Summary{Profile: "syn", Trace: "burst", Seed: 1, SLOMS: 1000, Runs: []ControllerRun{mk("clasp", 1, 1, 300), mk("faasflow", 1, 2, 200)}}
	if ps, err := Paired(old); err != nil || ps.Comparisons[0].Pairs != 1 || ps.Comparisons[0].Verdicts[0].Holds {
		t.Fatalf("one seed: %v %+v", err, ps)
	}
	s.Runs[2], s.Runs[3] = s.Runs[3], s.Runs[2]
	if _, err := Paired(s); err == nil || !strings.Contains(err.Error(), "syn on gradual") {
		t.Fatalf("out of order: %v", err)
	}
}

// TestModeReport: every run of every summary becomes one mode row with its
// per-interval series, in order; no summary gives no row.
func TestModeReport(t *testing.T) {
	var a, b ControllerRun
	a.Key = runner.Key{Controller: "clasp", Seed: 1}
	a.HInfo = live.HInfo{WorkersPerStep: []int{1, 2}, P95PerStep: []float64{10, 20}, OfferedPerStep: []float64{5, 6}}
	b.Key = runner.Key{Controller: "zhang24", Seed: 2}
	r := ModeReport([]Summary{{Profile: "wc", Trace: "burst", Runs: []ControllerRun{a, b}}})
	if len(r.ModeRuns) != 2 || r.ModeRuns[0].App != "wc" || r.ModeRuns[0].Mode != "burst" || r.ModeRuns[1].Method != "zhang24" || r.ModeRuns[1].Seed != 2 ||
		r.ModeRuns[0].Workers[1] != 2 || r.ModeRuns[0].StepP95MS[1] != 20 || r.ModeRuns[0].Rates[0] != 5 {
		t.Errorf("mode rows %+v", r.ModeRuns)
	}
	if r := ModeReport(nil); len(r.ModeRuns) != 0 {
		t.Errorf("%d rows of nothing", len(r.ModeRuns))
	}
}

// TestRunRefusesBadConfig: Run refuses a configuration without traces,
// intervals or controllers before it starts anything.
func TestRunRefusesBadConfig(t *testing.T) {
	tr := &traces.Trace{Name: "x", Counts: []float64{1}, Scale: 1}
	good := Config{Traces: []*traces.Trace{tr}, Intervals: []int{1}, Step: time.Second, Controllers: []Controller{{Name: "fixed:1", Fixed: 1}}}
	for name, c := range map[string]Config{
		"no trace":       {Step: time.Second, Controllers: good.Controllers},
		"counts differ":  {Traces: good.Traces, Intervals: []int{1, 2}, Step: time.Second, Controllers: good.Controllers},
		"no controller":  {Traces: good.Traces, Intervals: good.Intervals, Step: time.Second},
		"zero step":      {Traces: good.Traces, Intervals: good.Intervals, Controllers: good.Controllers},
		"zero intervals": {Traces: good.Traces, Intervals: []int{0}, Step: time.Second, Controllers: good.Controllers},
	} {
		if _, _, err := Run(context.Background(), c); err == nil || !strings.HasPrefix(err.Error(), "liveclasp: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
