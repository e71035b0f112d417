package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"streamscale/eval/claspexp"
	"streamscale/eval/live"
	"streamscale/eval/liveclasp"
	"streamscale/eval/report"
	"streamscale/serve/runtime/planner"
)

// fakeRun is a horizontal run whose levels are sustained where ok says
// (throughput = rate, p95 100 ms; otherwise half the rate), ending with
// workers in use.
func fakeRun(ctrl string, r liveclasp.ClaimRun, ok func(k int) bool, workers int, migs ...planner.Migration) liveclasp.ControllerRun {
	var h liveclasp.ControllerRun
	h.Controller = ctrl
	h.HInfo = live.HInfo{Delivered: 1, MigrationLog: migs}
	for k, rate := range r.Levels {
		for range r.Points[k] {
			t := rate
			if !ok(k) {
				t = rate / 2
			}
			h.ThroughputPerStep = append(h.ThroughputPerStep, t)
			h.P95PerStep = append(h.P95PerStep, 100)
			h.WorkersPerStep = append(h.WorkersPerStep, workers)
		}
	}
	return h
}

// writeFakeProtocol writes hand-made summaries of the protocol's runs
// (app, top 100, 2 workers) into dir: fixed:1 holds 20 and 60, fixed:2
// every level; after a transition clasp ends on the OOWC, faasflow one
// above, zhang24 on 2; on the ramp clasp holds every level, faasflow the
// first two, zhang24 all but the second.
func writeFakeProtocol(t *testing.T, dir, app string) []liveclasp.ClaimRun {
	t.Helper()
	runs := liveclasp.ClaimRuns(app, 100, 2)
	for _, r := range runs {
		s := liveclasp.Summary{Profile: app, Trace: r.Trace}
		switch r.Kind {
		case "fixed": // fixed:1 holds 20 and 60, fixed:2 every level
			s.Runs = []liveclasp.ControllerRun{fakeRun("fixed:1", r, func(k int) bool { return k < 2 }, 1), fakeRun("fixed:2", r, func(int) bool { return true }, 2)}
		case "transition":
			need := 1
			if r.Levels[1] == 100 {
				need = 2
			}
			s.Runs = []liveclasp.ControllerRun{
				fakeRun("clasp", r, func(int) bool { return true }, need, planner.Migration{PlannerMS: 10, PauseMSMax: 1}, planner.Migration{PlannerMS: 30, PauseMSMax: 3, Reason: "failover"}),
				fakeRun("faasflow", r, func(int) bool { return true }, need+1),
				fakeRun("zhang24", r, func(int) bool { return true }, 2),
			}
		case "ramp": // clasp holds every level, faasflow the first two
			s.Runs = []liveclasp.ControllerRun{fakeRun("clasp", r, func(int) bool { return true }, 2), fakeRun("faasflow", r, func(k int) bool { return k < 2 }, 1),
				fakeRun("zhang24", r, func(k int) bool { return k != 1 }, 1)}
		}
		b, err := report.MarshalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, r.Dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, r.Dir, FileSummary), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return runs
}

// TestLiveClaspAnalyze judges hand-made runs: the OOWC is the fewest fixed
// workers sustaining a level, the worker error the mean |final − OOWC|
// over the transitions, the ramp the highest sustained level, and the
// migrations' medians and failovers are counted per method.
func TestLiveClaspAnalyze(t *testing.T) {
	dir := t.TempDir()
	runs := writeFakeProtocol(t, dir, "syn")
	code, out, stderr := call(t, "liveclasp", "-analyze", "-apps", "syn:100", "-max-workers", "2", "-out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sums, err := readClaimRuns(dir, runs)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := liveclasp.JudgeApp("syn", 100, runs, sums, 2, 1000)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "claims.json"))
	if err != nil {
		t.Fatal(err)
	}
	var claims liveclasp.Claims
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	if got := claims.Apps["syn"]; got == nil || !reflect.DeepEqual(got.OOWC, ac.OOWC) || got.Methods["clasp"].WorkerError != ac.Methods["clasp"].WorkerError || got.Methods["clasp"].PlannerMSMedian != ac.Methods["clasp"].PlannerMSMedian {
		t.Fatalf("claims.json %+v, want what JudgeApp gives %+v", got, ac)
	}
	c, f, z := ac.Methods["clasp"], ac.Methods["faasflow"], ac.Methods["zhang24"]
	if c.WorkerError != 0 || f.WorkerError != 1 || math.Abs(z.WorkerError-4.0/6) > 1e-12 || c.Transitions != 6 {
		t.Fatalf("errors %v %v %v over %d", c.WorkerError, f.WorkerError, z.WorkerError, c.Transitions)
	}
	if !c.RampAll || c.RampSustained != 125 || f.RampAll || f.RampSustained != 50 || z.RampSustained != 125 || z.RampAll {
		t.Fatalf("ramps %+v %+v %+v", c, f, z)
	}
	if c.Migrations != 12 || c.PlannerMSMedian != 20 || c.PlannerMSMax != 30 || c.PauseMSMax != 3 || c.Failovers != 6 || f.Migrations != 0 {
		t.Fatalf("migrations %+v", c)
	}
	if !strings.Contains(out, "| clasp | 0.00 | 6 |") || !strings.Contains(out, "≥ 125") || !strings.Contains(out, "20: 1, 60: 1, 100: 2") {
		t.Fatalf("claims.md:\n%s", out)
	}
	// A run directory from another protocol is refused.
	code, _, stderr = call(t, "liveclasp", "-analyze", "-apps", "syn:200", "-max-workers", "2", "-out", dir)
	if code == 0 || !strings.Contains(stderr, "the protocol's run is") {
		t.Fatalf("other top: exit %d, %q", code, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{{[]string{"-apps", "pred:100"}, "-apps"}, {[]string{"-apps", "syn"}, "-apps"}, {[]string{"-apps", "syn:-1"}, "-apps"},
		{[]string{"-max-workers", "0"}, "-max-workers"}, {[]string{"-task-mc", "0"}, "-task-mc"}, {[]string{"-worker-budget", "70000"}, "-worker-budget"}, {[]string{"-worker-budget", "100", "-worker-budget-mode", "cgroup"}, "-worker-budget-mode"}, {[]string{"-worker-budget-mode", "process"}, "-worker-budget-mode process needs"}, {[]string{"-modes", "spike"}, "-modes"}, {[]string{"-modes", "burst,burst"}, "-modes"},
		{[]string{"-modes", "burst", "-mode-seeds", "0"}, "-mode-seeds"}, {[]string{"-modes", "burst", "-seed", "18446744073709551615"}, "overflows"}} {
		code, _, stderr := call(t, append([]string{"liveclasp", "-out", dir}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", c.args, code, stderr, c.want)
		}
	}
}

// modeRun is a load-mode run of ctrl on seed: mean workers w, p95 p95 ms,
// violation share v, delivered d.
func modeRun(ctrl string, seed uint64, w, p95, v, d float64) liveclasp.ControllerRun {
	var h liveclasp.ControllerRun
	h.Controller, h.Key.Seed, h.ViolationRate = ctrl, seed, v
	h.HInfo = live.HInfo{Delivered: d, P50MS: p95 / 2, P95MS: p95, MeanWorkers: w, Migrations: 1,
		WorkersPerStep: []int{1, 2, 1}, P95PerStep: []float64{p95, p95, p95}, OfferedPerStep: []float64{10, 100, 10}}
	return h
}

// TestLiveClaspModes judges hand-made load-mode runs beside the protocol's
// others: the live figures are the means over the seeds, the simulated
// ones come from eval clasp's experiment (6), and CLASP is paired with each
// baseline by seed (clasp − faasflow workers −1 and −2: CI [−2, −1]).
// Outputs without the mode runs, or from other seeds, are refused with a
// message naming the flag; without -modes they are judged as before.
func TestLiveClaspModes(t *testing.T) {
	dir := t.TempDir()
	writeFakeProtocol(t, dir, "wc")
	s := liveclasp.Summary{Profile: "wc", Trace: "burst", PeakRate: 100, Seed: 1, Seeds: []uint64{1, 2}, SLOMS: 1000, Runs: []liveclasp.ControllerRun{
		modeRun("clasp", 1, 1, 100, 0, 1), modeRun("faasflow", 1, 2, 200, 0.1, 1), modeRun("zhang24", 1, 1, 50, 0, 0.9),
		modeRun("clasp", 2, 2, 300, 0.2, 1), modeRun("faasflow", 2, 4, 200, 0.1, 1), modeRun("zhang24", 2, 1, 60, 0, 0.8),
	}}
	b, err := report.MarshalJSON(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "wc-burst"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wc-burst", FileSummary), b, 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"liveclasp", "-analyze", "-apps", "wc:100", "-max-workers", "2", "-out", dir}
	code, out, stderr := call(t, append(base, "-modes", "burst", "-mode-seeds", "2")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "claims.json"))
	if err != nil {
		t.Fatal(err)
	}
	var claims liveclasp.Claims
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	mc := claims.Apps["wc"].Modes["burst"]
	if mc == nil || mc.Peak != 100 || !slices.Equal(mc.Seeds, []uint64{1, 2}) {
		t.Fatalf("modes %+v", claims.Apps["wc"].Modes)
	}
	c, z := mc.Methods["clasp"], mc.Methods["zhang24"]
	if c.Runs != 2 || c.MeanWorkers != 1.5 || c.P95MS != 200 || c.P50MS != 100 || math.Abs(c.ViolationShare-0.1) > 1e-12 || c.Migrations != 2 ||
		math.Abs(z.Delivered-0.85) > 1e-12 {
		t.Fatalf("live figures %+v %+v", c, z)
	}
	if !(c.Sim.Delivered > 0 && c.Sim.Workers >= 1 && c.Sim.Seeds == 2 && mc.SimTop > 0) {
		t.Fatalf("simulated figures %+v, top %v", c.Sim, mc.SimTop)
	}
	p := mc.Paired
	if p.Candidate != "clasp" || len(p.Comparisons) != 2 || p.Comparisons[0].Baseline != "faasflow" {
		t.Fatalf("paired %+v", p)
	}
	w := p.Comparisons[0].Estimates[0]
	if w.Mean != -1.5 || w.CILow != -2 || w.CIHigh != -1 || !p.Comparisons[0].Verdicts[0].Holds {
		t.Fatalf("clasp − faasflow workers %+v, verdict %+v", w, p.Comparisons[0].Verdicts[0])
	}
	// clasp − zhang24 delivered: +10 and +20 points, not a loss.
	if d := p.Comparisons[1].Verdicts[4]; !d.Holds || p.Comparisons[1].Verdicts[0].Holds {
		t.Fatalf("clasp − zhang24 %+v", p.Comparisons[1].Verdicts)
	}
	if _, err := os.Stat(filepath.Join(dir, claspexp.FigModes)); err != nil {
		t.Errorf("the live load-mode figure: %v", err)
	}
	if !strings.Contains(out, "### wc, burst mode (live peak 100 inputs/s, seeds 1, 2") || !strings.Contains(out, "| clasp | 1.000 | 100 / 200 | 1.50 | 0.100 | 2 | 0 |") {
		t.Fatalf("claims.md:\n%s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-modes", "burst,gradual", "-mode-seeds", "2"}, "without -modes"},
		{[]string{"-modes", "burst", "-mode-seeds", "3"}, "-mode-seeds"},
		{[]string{"-modes", "burst", "-mode-seeds", "2", "-seed", "5"}, "-seed"},
	} {
		code, _, stderr := call(t, append(base, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want an error naming %s", c.args, code, stderr, c.want)
		}
	}
	// Without -modes the same directory is judged as an older output.
	code, _, stderr = call(t, base...)
	if code != 0 {
		t.Fatalf("without -modes: exit %d, %s", code, stderr)
	}
	raw, _ = os.ReadFile(filepath.Join(dir, "claims.json"))
	if strings.Contains(string(raw), `"modes"`) {
		t.Fatal("claims.json has modes without -modes")
	}
}
