package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamscale/eval/liveclasp"
)

// TestCostModelFlag: eval live (horizontal) and eval liveclasp refuse a
// missing file, a file without a cost model and one with a negative term
// before any live run, naming the flag; a good file's model and source
// are what the runs get (and summary.json records), the paper's without
// the flag.
func TestCostModelFlag(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeTemp(t, dir, name, body) }
	good := write("calibration.json", `{"profile": "wc", "cost_probe": {"model": {"alpha_us": 1.5, "beta_us": 4, "gamma_us": 900, "budget_us_per_s": 2000000}}}`)
	for name, c := range map[string]struct{ file, want string }{
		"missing":  {filepath.Join(dir, "nope.json"), "nope.json"},
		"no model": {write("none.json", `{"profile": "pred"}`), "no cost model"},
		"refused":  {write("refused.json", `{"cost_probe": {"refused": "live: cost term refused: [gamma: poor fit]"}}`), "gamma: poor fit"},
		"negative": {write("neg.json", `{"cost_model": {"alpha_us": 1, "beta_us": -4, "gamma_us": 0, "budget_us_per_s": 1}}`), "beta_us -4, want ≥ 0"},
	} {
		for _, args := range [][]string{
			{"live", "-profile", "wc", "-controllers", "clasp", "-out", filepath.Join(dir, "out"), "-cost-model", c.file},
			{"liveclasp", "-apps", "wc:100", "-out", filepath.Join(dir, "out"), "-cost-model", c.file},
		} {
			code, _, stderr := call(t, args...)
			if code != 2 || !strings.Contains(stderr, "-cost-model") || !strings.Contains(stderr, c.want) {
				t.Errorf("%s, %s: exit %d, %q; want 2 naming -cost-model and %q", name, args[0], code, stderr, c.want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a refused -cost-model left an output directory")
	}
	code, _, stderr := call(t, "live", "-profile", "wc", "-controllers", "clasp", "-planner", "127.0.0.1:1", "-planner-token", "x", "-cost-model", good, "-out", filepath.Join(dir, "out"))
	if code != 2 || !strings.Contains(stderr, "serve planner -cost-model") {
		t.Errorf("with -planner: exit %d, %q", code, stderr)
	}
	if code, _, stderr := call(t, "calibrate", "-profile", "syn", "-cost-worker-budget", "-5", "-out", filepath.Join(dir, "out")); code != 2 || !strings.Contains(stderr, "-cost-worker-budget") {
		t.Errorf("-cost-worker-budget -5: exit %d, %q", code, stderr)
	}
	if code, _, stderr := call(t, "calibrate", "-profile", "syn", "-cost-worker-budget-mode", "process", "-out", filepath.Join(dir, "out")); code != 2 || !strings.Contains(stderr, "-cost-worker-budget-mode process needs") {
		t.Errorf("-cost-worker-budget-mode process without a budget: exit %d, %q", code, stderr)
	}
	ms, used, err := hliveMethods(good, "", 4)
	if err != nil || used.AlphaUS != 1.5 || used.BudgetUSPerS != 2e6 || !strings.HasPrefix(used.Source, good) || len(ms) == 0 {
		t.Fatalf("good file: %+v %v", used, err)
	}
	_, used, err = hliveMethods("", "", 4)
	if err != nil || used.AlphaUS != 38.5 || !strings.HasPrefix(used.Source, "paper") {
		t.Errorf("default: %+v %v", used, err)
	}
	md := string(liveclasp.Markdown(liveclasp.Summary{Profile: "wc", CostModel: used}))
	if !strings.Contains(md, "Cost model: α 38.5 µs") {
		t.Errorf("report.md does not name the cost model:\n%s", md)
	}
}

// TestCalibrateCostProbeFlags: bad cost-model probe flags are usage
// errors before any run.
func TestCalibrateCostProbeFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-profile", "wc", "-cost-duration", "0"},
		{"-profile", "wc", "-cost-min-r2", "2"},
		{"-profile", "wc", "-cost-rate", "0"},
		{"-profile", "wc", "-cost-budget-app", "nope"},
		{"-profile", "pred", "-cost-duration", "100ms"},
		{"-profile", "nope"},
	} {
		code, _, stderr := call(t, append([]string{"calibrate", "-out", t.TempDir()}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
}
