package liveexp

import (
	"strings"
	"testing"
)

// TestMarkdown: the report lists every run, and the simgap table gives
// sim − live differences and compares the rankings.
func TestMarkdown(t *testing.T) {
	mk := func(name string, v, p95, cpu float64) Record {
		var r Record
		r.Controller, r.ViolationRate, r.MeanP95MS, r.MeanCPU, r.MeanThroughput = name, v, p95, cpu, 100
		r.PlacementSeed = 101
		return r
	}
	s := Summary{Profile: "pred", Trace: "taxi", Intervals: 60, TimeScaleS: 0.25,
		Runs: []Record{mk("static:500", 0.9, 3000, 3000), mk("threshold", 0.1, 80, 4000)},
		Sim:  []Record{mk("static:500", 0.8, 1500, 3000), mk("threshold", 0.2, 120, 8000)}, SimScenario: "realistic"}
	md := string(Markdown(s))
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
	if md := string(Markdown(s)); !strings.Contains(md, "(different order)") || !strings.Contains(md, "[[static:500 threshold]]") || !strings.Contains(md, "ranking not met") {
		t.Errorf("rankings differ but the report says:\n%s", md)
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
		if got := PolicyEndpointDir(tc.spec, "policies"); got != tc.want {
			t.Errorf("%s: endpoint directory %q, want %q", tc.spec, got, tc.want)
		}
	}
	if PolicyEndpointDir("ppo:a/pred", "p") == PolicyEndpointDir("ppo:b/pred", "p") {
		t.Error("two directories share one endpoint")
	}
}
