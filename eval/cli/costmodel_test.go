package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamscale/eval/live"
	"streamscale/eval/runner"
	"streamscale/internal/costfile"
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
	md := string(hliveMarkdown(HLiveSummary{Profile: "wc", CostModel: used}))
	if !strings.Contains(md, "Cost model: α 38.5 µs") {
		t.Errorf("report.md does not name the cost model:\n%s", md)
	}
}

// TestCalibrateCostProbeFile: the probe's model goes into scenario.json's
// cost_model with its method, a refused probe leaves a note naming the
// refused term, and calibration.json with a cost_probe parses back; bad
// probe flags are usage errors before any run.
func TestCalibrateCostProbeFile(t *testing.T) {
	sc, err := runner.Config(runner.Spec{Profile: "pred", Workload: constantRates{2000, 5}, PlacementSeed: 101})
	if err != nil {
		t.Fatal(err)
	}
	var opsCost []live.OperatorCost
	var svc []live.ServiceDist
	for _, task := range sc.App.Tasks {
		opsCost = append(opsCost, live.OperatorCost{Operator: task.Name, CPUUSPerEvent: 1.5, Intervals: 10, ExecsPerInterval: 500, DelayMS: 1})
		svc = append(svc, live.ServiceDist{Operator: task.Name, N: 100, MeanUS: 1.2, CV: 0.8})
	}
	model := costfile.Model{AlphaUS: 0.4, BetaUS: 3.3, GammaUS: 16400, BudgetUSPerS: 8e6}
	probe := live.CostProbeResult{Rate: 4000, LoadS: 3, ReportS: 0.25, TaskMillicores: 1000, BudgetApp: "syn", BudgetRate: 1500, MinR2: 0.5,
		Terms: []live.CostTerm{{Name: "alpha"}, {Name: "beta"}, {Name: "gamma"}, {Name: "budget", Samples: 6}}, Model: &model}
	c := Calibration{Profile: "pred", Rate: 2000, TimeScaleS: 0.25, Intervals: 40, CPUScale: 0.01, HighMC: 10000, LowMC: 500,
		Operators: opsCost, ServiceTimes: svc, CFSPeriodMS: 100, Enforcement: 1, CostProbe: &probe}
	c.Methods = calibrationMethods(c)
	s, err := calibratedScenario(c, sc)
	if err != nil {
		t.Fatal(err)
	}
	if cm := s.CostModel; cm == nil || cm.AlphaUS != 0.4 || cm.BudgetUSPerS != 8e6 || cm.Samples != 6 || !strings.Contains(s.Notes["cost_model"], "microbenchmarks") {
		t.Errorf("cost model %+v, note %q", s.CostModel, s.Notes["cost_model"])
	}
	b, err := s.MarshalFile()
	if err != nil {
		t.Fatal(err)
	}
	if m, kind, err := costfile.Parse(b); err != nil || m != model || kind != "scenario.json cost_model" {
		t.Errorf("scenario.json back: %+v %q %v", m, kind, err)
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := parseCalibration(data); err != nil || back.CostProbe == nil || *back.CostProbe.Model != model {
		t.Errorf("calibration.json back: %v", err)
	}
	if m, _, err := costfile.Parse(data); err != nil || m != model {
		t.Errorf("calibration.json's model: %+v %v", m, err)
	}
	probe.Model, probe.Refused = nil, "live: cost term refused: [gamma: poor fit: R² 0.2 < 0.50]"
	if s, err = calibratedScenario(c, sc); err != nil || s.CostModel != nil || !strings.Contains(s.Notes["cost_model"], "gamma: poor fit") {
		t.Errorf("refused probe: %+v, note %q, %v", s.CostModel, s.Notes["cost_model"], err)
	}
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
