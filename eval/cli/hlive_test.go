package cli

import (
	"strings"
	"testing"

	"streamscale/eval/live"
	"streamscale/eval/runner"
)

// TestHLiveUsage: horizontal profiles take the horizontal controllers and
// their own flags; bad ones are usage errors before any process starts.
func TestHLiveUsage(t *testing.T) {
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-profile", "syn", "-controller", "threshold"}, "for a horizontal profile"},
		{[]string{"-profile", "syn", "-controller", "fixed:9", "-max-workers", "4"}, "fixed:N"},
		{[]string{"-profile", "syn", "-controller", "fixed:x"}, "fixed:N"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-trace", "levels:5"}, "level 0"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-trace", "burst", "-peak", "0"}, "-peak"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-task-mc", "0"}, "-task-mc"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-worker-budget", "-1"}, "-worker-budget"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-worker-budget", "100", "-worker-budget-mode", "kernel"}, "-worker-budget-mode"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-worker-budget-mode", "process"}, "-worker-budget-mode process needs"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-worker-budget", "500", "-planner", "127.0.0.1:1"}, "-worker-budget"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-slo-ms", "0"}, "-slo-ms"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-workers", "9", "-max-workers", "4"}, "above -max-workers"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-max-workers", "40"}, "-max-workers"},
		{[]string{"-profile", "syn", "-controllers", "clasp,clasp"}, "twice"},
		{[]string{"-profile", "syn"}, "one of -controller and -controllers"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-seeds", "0"}, "-seeds"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-seeds", "101"}, "-seeds"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-seeds", "2", "-seed", "18446744073709551615"}, "overflows"},
	} {
		code, _, stderr := call(t, append([]string{"live", "-out", out, "-traces", "testdata"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	code, _, stderr := call(t, "live", "-out", out, "-profile", "pred", "-controller", "threshold", "-seeds", "2")
	if code != 2 || !strings.Contains(stderr, "-seeds is for horizontal profiles") {
		t.Errorf("-seeds on pred: exit %d, %q", code, stderr)
	}
	code, _, stderr = call(t, "simgap", "-out", out, "-profile", "wc", "-controller", "clasp")
	if code != 2 || !strings.Contains(stderr, "horizontal") {
		t.Errorf("simgap on wc: exit %d, %q", code, stderr)
	}
}

// TestHLiveMarkdown: the report has one row per controller with the CLASP
// figures.
func TestHLiveMarkdown(t *testing.T) {
	var r HLiveRun
	r.Key = runner.Key{Controller: "clasp"}
	r.HInfo = live.HInfo{Delivered: 0.987, P50MS: 12.5, P95MS: 80.25, MeanWorkers: 1.5, PeakWorkers: 2, FinalWorkers: 1, Migrations: 3,
		PlannerMSMax: 4.5, WorkerPauseMSMax: 1.25, Lost: 7, MeanCPUUsedCores: 0.5}
	s := HLiveSummary{Profile: "syn", Trace: "burst", Intervals: 10, TimeScaleS: 1, RateMult: 1, PeakRate: 200, InitialWorkers: 1, MaxWorkers: 4,
		TaskMillicores: 1000, SLOMS: 1000, Runs: []HLiveRun{r}}
	md := string(hliveMarkdown(s))
	for _, want := range []string{"peak 200 inputs/s", "| clasp | 0.987 | 12.5 | 80.2 |", "| 1.50 | 2 | 1 | 3 | 4.5 | 1.25 | 7 | 0.500 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// TestHLivePairedReport: a summary of two controllers on two seeds is
// judged by seed (clasp − fixed:2 workers −1 and −0.5: CI [−1, −0.5], the
// verdict holds) and the report carries the seed column and the paired
// table; a summary older than -seeds is one pair; runs out of seed order
// are refused.
func TestHLivePairedReport(t *testing.T) {
	mk := func(ctrl string, seed uint64, workers, p95 float64) HLiveRun {
		var r HLiveRun
		r.Key = runner.Key{Controller: ctrl, Seed: seed}
		r.HInfo = live.HInfo{Delivered: 1, P95MS: p95, MeanWorkers: workers}
		return r
	}
	s := HLiveSummary{Profile: "syn", Trace: "gradual", Seed: 1, Seeds: []uint64{1, 2}, SeedIntervals: []int{140, 137}, SLOMS: 1000,
		Runs: []HLiveRun{mk("clasp", 1, 1, 300), mk("fixed:2", 1, 2, 200), mk("clasp", 2, 1.5, 300), mk("fixed:2", 2, 2, 250)}}
	ps, err := hlivePaired(s)
	if err != nil {
		t.Fatal(err)
	}
	w := ps.Comparisons[0].Estimates[0]
	if ps.Candidate != "clasp" || w.Mean != -0.75 || w.CILow != -1 || w.CIHigh != -0.5 || !ps.Comparisons[0].Verdicts[0].Holds || ps.Comparisons[0].Verdicts[3].Holds {
		t.Fatalf("paired %+v", ps.Comparisons[0])
	}
	s.Paired = &ps
	md := string(hliveMarkdown(s))
	for _, want := range []string{"seeds 1 … 2 (intervals [140 137])", "| clasp | 2 | 1.000 |", "## Paired: `clasp` against each baseline", "| fixed:2 | 2 | -0.75 [-1.00, -0.50] |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	old := HLiveSummary{Profile: "syn", Trace: "burst", Seed: 1, SLOMS: 1000, Runs: []HLiveRun{mk("clasp", 1, 1, 300), mk("faasflow", 1, 2, 200)}}
	if ps, err := hlivePaired(old); err != nil || ps.Comparisons[0].Pairs != 1 || ps.Comparisons[0].Verdicts[0].Holds {
		t.Fatalf("one seed: %v %+v", err, ps)
	}
	s.Runs[2], s.Runs[3] = s.Runs[3], s.Runs[2]
	if _, err := hlivePaired(s); err == nil || !strings.Contains(err.Error(), "syn on gradual") {
		t.Fatalf("out of order: %v", err)
	}
}
