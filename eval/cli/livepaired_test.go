package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamscale/eval/controllers"
	"streamscale/eval/liveexp"
	"streamscale/eval/runner"
	"streamscale/internal/command"
	"streamscale/traces"
)

// livePairedFixture is a two-controller, two-placement live experiment's
// configuration and results (placement-major, as liveexp.Run returns
// them), with the controllers of specs.
func livePairedFixture(t *testing.T, specs ...string) (liveexp.Config, liveexp.Output) {
	t.Helper()
	reg := controllers.New(controllers.Options{PoliciesDir: "../../policies/calibrated"})
	var facs []runner.Factory
	for _, s := range specs {
		sp, err := reg.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		facs = append(facs, sp)
	}
	tr := &traces.Trace{Name: "taxi", Counts: []float64{100, 200, 300, 400}, Scale: 1, Mult: 1}
	mk := func(ctrl string, placement uint64, viol float64) runner.Result {
		r := runner.Result{SLOMS: 180}
		r.Profile, r.Trace, r.Controller, r.PlacementSeed, r.Scenario = "pred", "taxi", ctrl, placement, liveexp.ScenarioLive
		for i := range 4 {
			p95 := 50.0
			if float64(i) < viol*4 {
				p95 = 500
			}
			r.Intervals = append(r.Intervals, runner.Interval{P95MS: p95, Throughput: 100, Offered: 100, TotalCPU: 1000})
		}
		r.Summary.ViolationRate = viol
		return r
	}
	var out liveexp.Output
	for _, pl := range []uint64{101, 102} {
		for i, s := range specs {
			out.Results = append(out.Results, mk(s, pl, float64(i)*0.5))
		}
	}
	cfg := liveexp.Config{Profile: "pred", TraceName: "taxi", TraceSource: "synthetic", Trace: tr, PlacementSeeds: []uint64{101, 102},
		Controllers: facs, Seed: 1, Intervals: 4, RateMult: 0.5, Build: command.Build{Commit: "c0ffee", GoVersion: "go-test"}}
	return cfg, out
}

// TestLivePaired: paired live runs (two controllers on two placements)
// are judged like eval paired's, with its verdict table and figures; the
// candidate is the PPO controller wherever it is listed (or -candidate),
// the report says the runs are live, not simulated; results out of the
// plan's order are refused.
func TestLivePaired(t *testing.T) {
	for _, c := range []struct {
		specs     []string
		candidate string // -candidate
		want      string
	}{
		{[]string{"static:4000", "static:500"}, "", "static:4000"},
		{[]string{"static:500", "threshold", "ppo"}, "", "ppo"},
		{[]string{"static:500", "threshold", "ppo"}, "threshold", "threshold"},
	} {
		cfg, out := livePairedFixture(t, c.specs...)
		cand := c.candidate
		if cand == "" {
			cand = liveexp.DefaultCandidate(cfg.Controllers)
		}
		dir := t.TempDir()
		if err := writeLiveOutputs(dir, cfg, out, cand); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "paired.json"))
		if err != nil {
			t.Fatal(err)
		}
		var ps struct {
			Protocol struct {
				Candidate string `json:"candidate"`
			} `json:"protocol"`
		}
		if err := json.Unmarshal(raw, &ps); err != nil || ps.Protocol.Candidate != c.want {
			t.Errorf("%v -candidate %q: candidate %q (%v), want %s", c.specs, c.candidate, ps.Protocol.Candidate, err, c.want)
		}
		md, err := os.ReadFile(filepath.Join(dir, "paired.md"))
		if err != nil || !strings.Contains(string(md), "Candidate: `"+c.want+"`") || !strings.Contains(string(md), "H1") ||
			!strings.Contains(string(md), "commit `c0ffee`, go-test") || !strings.Contains(string(md), "Scenario: `live` (the real planner") ||
			strings.Contains(string(md), "simulator physics") {
			t.Errorf("paired.md: %v\n%s", err, md)
		}
		for _, f := range []string{"paired.json", "p95_over_time.png", "pareto.png", FileIntervals} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Error(err)
			}
		}
	}
	cfg, out := livePairedFixture(t, "static:4000", "static:500")
	out.Results[0], out.Results[1] = out.Results[1], out.Results[0]
	if err := writeLiveOutputs(t.TempDir(), cfg, out, "static:4000"); err == nil {
		t.Error("results out of order were accepted")
	}
}

// TestLiveCandidateUsage: -candidate must name one of the controllers.
func TestLiveCandidateUsage(t *testing.T) {
	code, _, stderr := call(t, "live", "-out", t.TempDir(), "-traces", "testdata", "-controllers", "static:500,threshold", "-candidate", "static:4000")
	if code != 2 || !strings.Contains(stderr, "-candidate static:4000 is not one of the controllers") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
