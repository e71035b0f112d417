package liveclasp

import (
	"math"
	"slices"
	"strings"
	"testing"

	"streamscale/eval/live"
	"streamscale/serve/runtime/planner"
)

// fakeRun is a horizontal run whose levels are sustained where ok says
// (throughput = rate, p95 100 ms; otherwise half the rate), ending with
// workers in use.
func fakeRun(ctrl string, r ClaimRun, ok func(k int) bool, workers int, migs ...planner.Migration) ControllerRun {
	var h ControllerRun
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

// fakeProtocol is the protocol's runs of app (top 100, 2 workers) with
// hand-made summaries: fixed:1 holds 20 and 60, fixed:2 every level; after
// a transition clasp ends on the OOWC, faasflow one above, zhang24 on 2;
// on the ramp clasp holds every level, faasflow the first two, zhang24 all
// but the second.
func fakeProtocol(app string) ([]ClaimRun, []Summary) {
	runs := ClaimRuns(app, 100, 2)
	sums := make([]Summary, len(runs))
	all := func(int) bool { return true }
	for i, r := range runs {
		s := Summary{Profile: app, Trace: r.Trace}
		switch r.Kind {
		case "fixed":
			s.Runs = []ControllerRun{fakeRun("fixed:1", r, func(k int) bool { return k < 2 }, 1), fakeRun("fixed:2", r, all, 2)}
		case "transition":
			need := 1
			if r.Levels[1] == 100 {
				need = 2
			}
			s.Runs = []ControllerRun{
				fakeRun("clasp", r, all, need, planner.Migration{PlannerMS: 10, PauseMSMax: 1}, planner.Migration{PlannerMS: 30, PauseMSMax: 3, Reason: "failover"}),
				fakeRun("faasflow", r, all, need+1),
				fakeRun("zhang24", r, all, 2),
			}
		case "ramp":
			s.Runs = []ControllerRun{fakeRun("clasp", r, all, 2), fakeRun("faasflow", r, func(k int) bool { return k < 2 }, 1),
				fakeRun("zhang24", r, func(k int) bool { return k != 1 }, 1)}
		}
		sums[i] = s
	}
	return runs, sums
}

// TestClaimRuns: one ramp, one fixed-count run and the six transitions
// between the three levels, with their traces and controllers.
func TestClaimRuns(t *testing.T) {
	runs := ClaimRuns("wc", 16000, 3)
	if len(runs) != 8 {
		t.Fatalf("%d runs, want 8", len(runs))
	}
	if r := runs[0]; r.Kind != "ramp" || r.Dir != "wc-ramp" || r.Trace != "levels:4000x4,8000x4,12000x4,16000x4,20000x4" || !slices.Equal(r.Specs, []string{"clasp", "faasflow", "zhang24"}) {
		t.Errorf("ramp %+v", r)
	}
	if r := runs[1]; r.Kind != "fixed" || r.Trace != "levels:3200x6,9600x6,16000x6" || !slices.Equal(r.Specs, []string{"fixed:1", "fixed:2", "fixed:3"}) {
		t.Errorf("fixed %+v", r)
	}
	if r := runs[2]; r.Kind != "transition" || r.Dir != "wc-tr-0.2-0.6" || r.Trace != "levels:3200x10,9600x6" {
		t.Errorf("first transition %+v", r)
	}
}

// TestJudgeApp: the OOWC is the fewest fixed workers sustaining a level,
// the worker error the mean |final − OOWC| over the transitions, the ramp
// the highest sustained level, and the migrations' medians and failovers
// are counted per method; claims.md carries them.
func TestJudgeApp(t *testing.T) {
	runs, sums := fakeProtocol("syn")
	ac, err := JudgeApp("syn", 100, runs, sums, 2, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if ac.OOWC["20"] != 1 || ac.OOWC["60"] != 1 || ac.OOWC["100"] != 2 {
		t.Fatalf("OOWC %v", ac.OOWC)
	}
	c, f, z := ac.Methods["clasp"], ac.Methods["faasflow"], ac.Methods["zhang24"]
	if c.WorkerError != 0 || f.WorkerError != 1 || math.Abs(z.WorkerError-4.0/6) > 1e-12 || c.Transitions != 6 || len(ac.Rows) != 18 {
		t.Fatalf("errors %v %v %v over %d (%d rows)", c.WorkerError, f.WorkerError, z.WorkerError, c.Transitions, len(ac.Rows))
	}
	if !c.RampAll || c.RampSustained != 125 || f.RampAll || f.RampSustained != 50 || z.RampSustained != 125 || z.RampAll {
		t.Fatalf("ramps %+v %+v %+v", c, f, z)
	}
	if c.Migrations != 12 || c.PlannerMSMedian != 20 || c.PlannerMSMax != 30 || c.PauseMSMedian != 2 || c.PauseMSMax != 3 || c.Failovers != 6 || f.Migrations != 0 || f.PlannerMSMedian != 0 {
		t.Fatalf("migrations %+v %+v", c, f)
	}
	md := string(ClaimsMarkdown(Claims{MaxWorkers: 2, TaskMC: 1000, Apps: map[string]*AppClaims{"syn": ac}}, "syn"))
	for _, want := range []string{"| clasp | 0.00 | 6 |", "≥ 125", "20: 1, 60: 1, 100: 2", "1000 mc per task"} {
		if !strings.Contains(md, want) {
			t.Errorf("claims.md lacks %q:\n%s", want, md)
		}
	}
	// A summary of another protocol's run, a missing one and a fixed run
	// that is not fixed:N are refused.
	other := slices.Clone(sums)
	other[0].Trace = "levels:1x1"
	if _, err := JudgeApp("syn", 100, runs, other, 2, 1000); err == nil || !strings.Contains(err.Error(), "the protocol's run is") {
		t.Errorf("another trace: %v", err)
	}
	if _, err := JudgeApp("syn", 100, runs, sums[1:], 2, 1000); err == nil {
		t.Error("a missing summary was judged")
	}
	bad := slices.Clone(sums)
	bad[1].Runs = []ControllerRun{fakeRun("clasp", runs[1], func(int) bool { return true }, 1)}
	if _, err := JudgeApp("syn", 100, runs, bad, 2, 1000); err == nil || !strings.Contains(err.Error(), "not fixed:N") {
		t.Errorf("clasp in the fixed run: %v", err)
	}
}

// TestSustained: a level is sustained when its mean throughput after the
// first claimSkip points reaches claimRatio × its rate and its last p95 is
// within the SLO; a level with no judged point is not.
func TestSustained(t *testing.T) {
	var r ControllerRun
	r.ThroughputPerStep = []float64{0, 0, 100, 94, 0, 0, 50, 50, 7}
	r.P95PerStep = []float64{1, 1, 1, 900, 1, 1, 1, 2000, 1}
	got := sustained(r, []float64{100, 50, 10}, []int{4, 4, 2}, 1000)
	if want := []bool{true, false, false}; !slices.Equal(got, want) {
		t.Errorf("sustained %v, want %v", got, want)
	}
	r.P95PerStep[7] = 1000
	if got := sustained(r, []float64{100, 50}, []int{4, 4}, 1000); !got[1] {
		t.Errorf("a p95 at the SLO: %v", got)
	}
	if got := sustained(r, []float64{100}, []int{4}, 1000); !got[0] {
		t.Errorf("97 of 100 is ≥ 0.95: %v", got)
	}
}

// TestClaimRunMatches: a summary is a run's only with its trace and, for
// a mode, its peak and seeds (a summary older than -seeds counting as its
// one seed).
func TestClaimRunMatches(t *testing.T) {
	r := ModeRuns("syn", 200, []string{"gradual"}, 1, 1)[0]
	if err := r.Matches(Summary{Trace: "gradual", PeakRate: 200, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Summary{{Trace: "burst", PeakRate: 200, Seed: 1}, {Trace: "gradual", PeakRate: 100, Seed: 1},
		{Trace: "gradual", PeakRate: 200, Seed: 1, Seeds: []uint64{1, 2}}} {
		if r.Matches(s) == nil {
			t.Errorf("%+v matched %+v", s, r)
		}
	}
	if m := ModeRuns("wc", 100, []string{"burst", "gradual"}, 5, 3); len(m) != 2 || m[1].Dir != "wc-gradual" || !slices.Equal(m[1].Seeds, []uint64{5, 6, 7}) || m[0].Peak != 100 {
		t.Errorf("mode runs %+v", m)
	}
}
