package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"streamscale/agents"
	"streamscale/agents/controllertest"
	"streamscale/env"
	"streamscale/eval/controllers"
	"streamscale/eval/liveexp"
	"streamscale/eval/runner"
	"streamscale/eval/simgap"
)

// TestLiveUsage: bad controllers and flags are usage errors (exit 2, one
// line naming what was wrong) before any process starts.
func TestLiveUsage(t *testing.T) {
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-controller", "nosuch"}, "unknown controller"},
		{[]string{"-controller", "static:-3"}, "static:-3"},
		{[]string{"-controller", "clasp"}, "horizontal"},
		{[]string{"-controller", "ppo-sample"}, "argmax"},
		{[]string{"-controller", "ppo:/nonexistent/policy"}, "ppo"},
		{[]string{}, "one of -controller and -controllers"},
		{[]string{"-controller", "threshold", "-controllers", "static:500"}, "one of -controller"},
		{[]string{"-controllers", "threshold,threshold"}, "twice"},
		{[]string{"-controller", "threshold", "-profile", "wc"}, "profile"},
		{[]string{"-controller", "threshold", "-trace", "nope"}, "trace"},
		{[]string{"-controller", "threshold", "-time-scale", "1ms"}, "-time-scale"},
		{[]string{"-controller", "threshold", "-duration", "100ms"}, "-duration"},
		{[]string{"-controller", "threshold", "-rate-mult", "0"}, "rate multiplier"},
		{[]string{"-controller", "threshold", "-cpu-scale", "-1"}, "-cpu-scale"},
		{[]string{"-controller", "threshold", "-workers", "0"}, "-workers"},
		{[]string{"-controller", "threshold", "-start", "-4"}, "-start"},
		{[]string{"-controller", "threshold", "-placements", "0"}, "-placements"},
		{[]string{"-controller", "threshold", "-bogus"}, "bogus"},
		{[]string{"-controller", "threshold", "-sim-step", "1s"}, "-sim-step applies only to eval simgap"},
	} {
		code, _, stderr := call(t, append([]string{"live", "-out", out, "-traces", "testdata"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	// simgap checks its scenarios against the profile before any run: a
	// per-task hop of etl's Join on pred, as the scenario or the baseline.
	bad := filepath.Join(t.TempDir(), "etl-hops.json")
	if err := os.WriteFile(bad, []byte(`{"version":1,"base":"realistic","physics":{"hop_ms_by_task":{"Join":3}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"5ms", "2m", "steps", ""} {
		code, _, stderr := call(t, "simgap", "-out", out, "-traces", "testdata", "-controller", "static:500", "-sim-step", v)
		if want := fmt.Sprintf("-sim-step %q, want interval, scenario or a duration", v); code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("simgap -sim-step %q: exit %d, stderr %q; want 2 and %q", v, code, stderr, want)
		}
	}
	for _, flag := range []string{"-scenario", "-baseline"} {
		code, _, stderr := call(t, "simgap", "-out", out, "-traces", "testdata", "-controller", "static:500", flag, bad)
		if want := `task "Join" is not a task of pred`; code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("simgap %s %s: exit %d, stderr %q; want 2 and %q", flag, bad, code, stderr, want)
		}
	}
}

// TestCalibrateUsage: bad calibrate flags are usage errors.
func TestCalibrateUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-rate", "0"}, "-rate"},
		{[]string{"-duration", "1s"}, "-duration"},
		{[]string{"-high", "20000"}, "-high"},
		{[]string{"-profile", "x"}, "profile"},
		{[]string{"-hop-rates", "1000,3000"}, "-hop-rates lists -rate 3000"},
		{[]string{"-hop-rates", "0"}, `rate "0"`},
		{[]string{"-hop-rates", "500,x"}, `rate "x"`},
		{[]string{"-hop-rates", "500,500"}, "given twice"},
		{[]string{"-profile", "wc", "-hop-rates", "500"}, "-hop-rates applies to pred and etl"},
	} {
		code, _, stderr := call(t, append([]string{"calibrate", "-out", t.TempDir()}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestSimgapEndToEnd runs simgap live on two placements (pred,
// static:4000, 3 intervals of 200 ms each) with a scenario file carrying
// spread hops end to end: the simulated runs are on the same placements
// as the live ones, in the same order, and summary.json and report.md
// judge the controller over both placements. About 2 s.
func TestSimgapEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the live runtime")
	}
	dir := t.TempDir()
	scen := writeTemp(t, t.TempDir(), "scenario.json", `{"version":1,"base":"realistic","physics":{"hop_ms":8,"hop_spread":1,"hops_end_to_end":true}}`)
	code, _, stderr := call(t, "simgap", "-profile", "pred", "-controller", "static:4000", "-traces", "testdata", "-time-scale", "200ms", "-duration", "600ms",
		"-placements", "2", "-scenario", scen, "-baseline", "paper", "-obs", "-out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, FileSummary))
	if err != nil {
		t.Fatal(err)
	}
	var s liveexp.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Runs) != 2 || len(s.Sim) != 2 || len(s.SimBaseline) != 2 {
		t.Fatalf("%d live, %d sim, %d baseline runs; want 2 each", len(s.Runs), len(s.Sim), len(s.SimBaseline))
	}
	for i, want := range []uint64{101, 102} {
		if s.Runs[i].PlacementSeed != want || s.Sim[i].PlacementSeed != want || s.SimBaseline[i].PlacementSeed != want {
			t.Errorf("run %d: placements live %d, sim %d, baseline %d; want %d", i, s.Runs[i].PlacementSeed, s.Sim[i].PlacementSeed, s.SimBaseline[i].PlacementSeed, want)
		}
	}
	// -obs: one observation per recorded interval of every run, in both
	// worlds: 3 simulated intervals per placement, and as many live ones
	// as the live run recorded (on a busy host it can record fewer: a
	// window that spans missed control ticks is one interval), every
	// interval with every feature.
	rows, err := parquet.ReadFile[simgap.ObsRow](filepath.Join(dir, simgap.FileObservations))
	if err != nil {
		t.Fatal(err)
	}
	names := env.FeatureNames(s.Tasks, 7)
	type cell struct {
		world     string
		placement int64
		step      int64
	}
	got := map[cell]int{}
	for _, r := range rows {
		got[cell{r.World, r.Placement, r.Step}]++
	}
	want := map[cell]int{}
	liveTotal := 0
	for i, p := range []int64{101, 102} {
		steps := int(s.Runs[i].Steps)
		if steps < 1 || steps > 3 || int(s.Sim[i].Steps) != 3 {
			t.Fatalf("placement %d: %d live, %d simulated intervals; want 1..3 and 3", p, steps, s.Sim[i].Steps)
		}
		liveTotal += steps
		for k := range steps {
			want[cell{"live", p, int64(k)}] = len(names)
		}
		for k := range 3 {
			want[cell{"sim", p, int64(k)}] = len(names)
		}
	}
	if len(got) != len(want) {
		t.Errorf("observations of %d (world, placement, interval), want %d: %v", len(got), len(want), got)
	}
	for c, n := range want {
		if got[c] != n {
			t.Errorf("%v: %d feature rows, want %d", c, got[c], n)
		}
	}
	if len(s.ObsGap) != 1 || s.ObsGap[0].Intervals != min(liveTotal, 6) || len(s.ObsGap[0].Top) == 0 {
		t.Errorf("obs_gap %+v, want static:4000 over %d intervals per world with its differing features", s.ObsGap, min(liveTotal, 6))
	}
	if s.SimStepS != 0.2 || s.SimBaselineStepS != 1 {
		t.Errorf("sim_step_s %v, sim_baseline_step_s %v; want the live interval 0.2 and the baseline's 1", s.SimStepS, s.SimBaselineStepS)
	}
	if len(s.SimGap) != 1 || s.SimGap[0].Placements != 2 || len(s.SimBaselineGap) != 1 {
		t.Errorf("sim_gap %+v, sim_baseline_gap %+v; want one controller over 2 placements", s.SimGap, s.SimBaselineGap)
	}
	md, err := os.ReadFile(filepath.Join(dir, FileReport))
	if err != nil || !strings.Contains(string(md), "Goals (means over placements): violation rate within 2 pp for") || !strings.Contains(string(md), "| static:4000 | 2 |") ||
		!strings.Contains(string(md), "simulated steps of 0.2 s") || !strings.Contains(string(md), "(baseline), simulated steps of 1 s") ||
		!strings.Contains(string(md), "## Observation gap (sim − live") {
		t.Errorf("report.md: %v\n%s", err, md)
	}
}

// TestApplySimStep: -sim-step sets the simulated step of the scenario to
// the live interval or a duration (1 s as the zero value), or leaves the
// scenario's own.
func TestApplySimStep(t *testing.T) {
	for _, c := range []struct {
		v    string
		want float64
	}{{"interval", 0.25}, {"scenario", 0.5}, {"1s", 0}, {"100ms", 0.1}} {
		scen := env.Scenario{Physics: env.Physics{StepSeconds: 0.5}}
		if err := applySimStep(c.v, 250*time.Millisecond, &scen); err != nil {
			t.Fatalf("%s: %v", c.v, err)
		}
		if scen.Physics.StepSeconds != c.want {
			t.Errorf("-sim-step %s: step_seconds %v, want %v", c.v, scen.Physics.StepSeconds, c.want)
		}
	}
}

// TestBuildLiveHasNoMetricLag: the live observation reports the interval
// just ended, so threshold:measured built for a live run sizes as a rule
// with no lag, even when the scenario's physics carry one (the realistic
// preset's); built for the simulator it keeps the lag.
func TestBuildLiveHasNoMetricLag(t *testing.T) {
	sc, err := runner.Config(runner.Spec{Profile: "pred", Workload: constantRates{2000, 5}, PlacementSeed: 101})
	if err != nil {
		t.Fatal(err)
	}
	sc.Physics.MetricLagSteps = 1 // the realistic preset's
	sp, err := controllers.New(controllers.Options{}).Parse("threshold:measured")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := sp.Build(sc)
	if err != nil {
		t.Fatal(err)
	}
	lv, err := liveexp.BuildLive(context.Background(), sp, sc, "")
	if err != nil {
		t.Fatal(err)
	}
	// A scale-up to 2000, then the same ρ at 2000: measured at 1000 (lag
	// 1) it holds; measured at 2000 (no lag) it doubles.
	rows := []controllertest.TaskRow{{CPU: 1000, Rho: 1.4, Ratio: 1}, {CPU: 2000, Rho: 1.4, Ratio: 1}}
	want := map[string][]float64{"sim": {2000, 2000}, "live": {2000, 4000}}
	for name, c := range map[string]agents.Controller{"sim": sim.Controller(), "live": lv} {
		if err := c.Reset(1); err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			a, err := c.Act(controllertest.Obs([]controllertest.TaskRow{r}, 100, 180, 1000))
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Targets) != 1 || a.Targets[0] != want[name][i] {
				t.Errorf("%s step %d: target %v, want %v", name, i, a.Targets, want[name][i])
			}
		}
	}
}
