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
		{[]string{"-profile", "syn", "-controller", "clasp", "-slo-ms", "0"}, "-slo-ms"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-workers", "9", "-max-workers", "4"}, "above -max-workers"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-max-workers", "40"}, "-max-workers"},
		{[]string{"-profile", "syn", "-controllers", "clasp,clasp"}, "twice"},
		{[]string{"-profile", "syn"}, "one of -controller and -controllers"},
	} {
		code, _, stderr := call(t, append([]string{"live", "-out", out, "-traces", "testdata"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	code, _, stderr := call(t, "simgap", "-out", out, "-profile", "wc", "-controller", "clasp")
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
