package cli

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamscale/eval/live"
	"streamscale/eval/report"
	"streamscale/serve/runtime/planner"
)

// fakeRun is a horizontal run whose levels are sustained where ok says
// (throughput = rate, p95 100 ms; otherwise half the rate), ending with
// workers in use.
func fakeRun(ctrl string, r claimRun, ok func(k int) bool, workers int, migs ...planner.Migration) HLiveRun {
	var h HLiveRun
	h.Controller = ctrl
	h.HInfo = live.HInfo{Delivered: 1, MigrationLog: migs}
	for k, rate := range r.levels {
		for range r.points[k] {
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

// TestLiveClaspAnalyze judges hand-made runs: the OOWC is the fewest fixed
// workers sustaining a level, the worker error the mean |final − OOWC|
// over the transitions, the ramp the highest sustained level, and the
// migrations' medians and failovers are counted per method.
func TestLiveClaspAnalyze(t *testing.T) {
	dir := t.TempDir()
	runs := claimRuns("syn", 100, 2)
	for _, r := range runs {
		s := HLiveSummary{Profile: "syn", Trace: r.trace}
		switch r.kind {
		case "fixed": // fixed:1 holds 20 and 60, fixed:2 every level
			s.Runs = []HLiveRun{fakeRun("fixed:1", r, func(k int) bool { return k < 2 }, 1), fakeRun("fixed:2", r, func(int) bool { return true }, 2)}
		case "transition":
			need := 1
			if r.levels[1] == 100 {
				need = 2
			}
			s.Runs = []HLiveRun{
				fakeRun("clasp", r, func(int) bool { return true }, need, planner.Migration{PlannerMS: 10, PauseMSMax: 1}, planner.Migration{PlannerMS: 30, PauseMSMax: 3, Reason: "failover"}),
				fakeRun("faasflow", r, func(int) bool { return true }, need+1),
				fakeRun("zhang24", r, func(int) bool { return true }, 2),
			}
		case "ramp": // clasp holds every level, faasflow the first two
			s.Runs = []HLiveRun{fakeRun("clasp", r, func(int) bool { return true }, 2), fakeRun("faasflow", r, func(k int) bool { return k < 2 }, 1),
				fakeRun("zhang24", r, func(k int) bool { return k != 1 }, 1)}
		}
		b, err := report.MarshalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, r.dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, r.dir, FileSummary), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr := call(t, "liveclasp", "-analyze", "-apps", "syn:100", "-max-workers", "2", "-out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ac, err := judgeApp(dir, "syn", 100, runs, 2, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if ac.OOWC["20"] != 1 || ac.OOWC["60"] != 1 || ac.OOWC["100"] != 2 {
		t.Fatalf("OOWC %v", ac.OOWC)
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
	for _, args := range [][]string{{"-apps", "pred:100"}, {"-apps", "syn"}, {"-apps", "syn:-1"}, {"-max-workers", "0"}, {"-task-mc", "0"}} {
		code, _, stderr := call(t, append([]string{"liveclasp", "-out", dir}, args...)...)
		if code != 2 {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
}
