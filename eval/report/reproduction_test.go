package report

import (
	"encoding/json"
	"strings"
	"testing"

	"streamscale/eval/paired"
)

// TestReproductionTable: the goal is met only with violations at or below
// the paper's and CPU at or below the rule's; the candidate is the
// summary's first learned controller unless the record names one.
func TestReproductionTable(t *testing.T) {
	st := func(name string, v, cpu float64) paired.ControllerStats {
		return paired.ControllerStats{Controller: name, ViolationRateMean: paired.Num(v), MeanCPU: paired.Num(cpu)}
	}
	sum := paired.Summary{Combinations: []paired.Combination{
		{Profile: "pred", Trace: "taxi", Controllers: []paired.ControllerStats{st("ppo", 0.0005, 900), st("rule", 0.0004, 1000), st("r2", 0.002, 800)}},
		{Profile: "pred", Trace: "intel", Controllers: []paired.ControllerStats{st("ppo", 0.0005, 1100), st("rule", 0.0004, 1000), st("r2", 0, 950)}},
	}}
	sum.Protocol.Learned = []string{"ppo"}
	sb, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	load := func(string) ([]byte, error) { return sb, nil }
	rec := func(candidate string) []byte {
		b, _ := json.Marshal(Reported{Summary: "s.json", Rule: "rule", Candidate: candidate, Cells: []ReportedCell{
			{Profile: "pred", Trace: "taxi", ViolationRate: 0.001}, {Profile: "pred", Trace: "intel", ViolationRate: 0.001}}})
		return b
	}
	got, err := reproductionTable(rec(""), load)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| our PPO violations |", "| pred / taxi | 0.10% | 0.05%", "| 900 | 0.04% | 1000 | yes |", "| 1100 | 0.04% | 1000 | no |"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	got, err = reproductionTable(rec("r2"), load)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| `r2` violations | `r2` CPU (mc) |", "| 800 | 0.04% | 1000 | no |", "| 950 | 0.04% | 1000 | yes |"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	if _, err := reproductionTable(rec("absent"), load); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("an absent candidate: %v", err)
	}
}
