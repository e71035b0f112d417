package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	for _, flag := range []string{"-scenario", "-baseline"} {
		code, _, stderr := call(t, "simgap", "-out", out, "-traces", "testdata", "-controller", "static:500", flag, bad)
		if want := `task "Join" is not a task of pred`; code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("simgap %s %s: exit %d, stderr %q; want 2 and %q", flag, bad, code, stderr, want)
		}
	}
}

// TestLiveMarkdown: the report lists every run, and the simgap table gives
// sim − live differences and compares the rankings.
func TestLiveMarkdown(t *testing.T) {
	mk := func(name string, v, p95, cpu float64) LiveRun {
		var r LiveRun
		r.Controller, r.ViolationRate, r.MeanP95MS, r.MeanCPU, r.MeanThroughput = name, v, p95, cpu, 100
		r.PlacementSeed = 101
		return r
	}
	s := LiveSummary{Profile: "pred", Trace: "taxi", Intervals: 60, TimeScaleS: 0.25,
		Runs: []LiveRun{mk("static:500", 0.9, 3000, 3000), mk("threshold", 0.1, 80, 4000)},
		Sim:  []LiveRun{mk("static:500", 0.8, 1500, 3000), mk("threshold", 0.2, 120, 8000)}, SimScenario: "realistic"}
	md := string(liveMarkdown(s))
	for _, want := range []string{
		"| static:500 | 101 | 0.900 | 3000.0 | 3000 |",
		"| threshold | 101 | 0.200 | 0.100 | +10.0 | 120.0 | 80.0 | +50% | 8000 | 4000 | +100% |",
		"| static:500 | 101 | 0.800 | 0.900 | -10.0 | 1500.0 | 3000.0 | -50% |",
		"simulator [threshold static:500], live [threshold static:500] (same order)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	s.Sim[1].ViolationRate = 0.95
	if md := string(liveMarkdown(s)); !strings.Contains(md, "(different order)") {
		t.Errorf("rankings differ but the report says:\n%s", md)
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
	} {
		code, _, stderr := call(t, append([]string{"calibrate", "-out", t.TempDir()}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestPolicyEndpointDir: PPO controllers from different policy directories
// are served by different endpoints, each from the directory holding its
// policy (one endpoint for all of them once asked the first directory's
// policy of the same name).
func TestPolicyEndpointDir(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"ppo", "policies"},
		{"ppo:policies/longer/pred", "policies/longer"},
		{"ppo:policies/calibrated/pred", "policies/calibrated"},
		{"ppo:/abs/dir/etl", "/abs/dir"},
	} {
		if got := policyEndpointDir(tc.spec, "policies"); got != tc.want {
			t.Errorf("%s: endpoint directory %q, want %q", tc.spec, got, tc.want)
		}
	}
	if policyEndpointDir("ppo:a/pred", "p") == policyEndpointDir("ppo:b/pred", "p") {
		t.Error("two directories share one endpoint")
	}
}
