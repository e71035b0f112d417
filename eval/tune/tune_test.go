package tune

import (
	"strings"
	"testing"

	"streamscale/eval/paired"
)

func TestParseGridAndSpecs(t *testing.T) {
	axes, err := ParseGrid("target=0.6,0.7:window=10,30")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(Specs("flink", axes), " ")
	want := "flink:target=0.6:window=10 flink:target=0.6:window=30 flink:target=0.7:window=10 flink:target=0.7:window=30"
	if got != want {
		t.Errorf("specs %q, want %q", got, want)
	}
	for _, bad := range []string{"", "target", "target=", "=1", "a=1:a=2", "a=x", "a=1,1", "a=NaN"} {
		if _, err := ParseGrid(bad); err == nil {
			t.Errorf("ParseGrid(%q) accepted", bad)
		}
	}
}

func TestCheckPlacements(t *testing.T) {
	if err := CheckPlacements(DevelopmentPlacements); err != nil {
		t.Error(err)
	}
	if err := CheckPlacements([]uint64{42, 101}); err == nil {
		t.Error("evaluation placement accepted")
	}
	if err := CheckPlacements(nil); err == nil {
		t.Error("no placements accepted")
	}
}

func TestChoose(t *testing.T) {
	cs := func(name string, v, cpu float64) paired.ControllerStats {
		return paired.ControllerStats{Controller: name, ViolationRateMean: paired.Num(v), MeanCPU: paired.Num(cpu)}
	}
	sum := paired.Summary{Protocol: paired.Protocol{Controllers: []string{"r", "r:a", "r:b", "r:c"}}}
	sum.Combinations = []paired.Combination{
		{Profile: "p", Trace: "x", Controllers: []paired.ControllerStats{cs("r", 0.01, 1000), cs("r:a", 0.015, 800), cs("r:b", 0.03, 500), cs("r:c", 0.005, 1200)}},
		{Profile: "q", Trace: "x", Controllers: []paired.ControllerStats{cs("r", 0.01, 2000), cs("r:a", 0.019, 1700), cs("r:b", 0.01, 1000), cs("r:c", 0.005, 2400)}},
	}
	res, err := Choose(sum, "r", 0.02)
	if err != nil {
		t.Fatal(err)
	}
	if res.Chosen != "r:a" {
		t.Errorf("chosen %s, want r:a (r:b is cheaper but over budget in one cell)", res.Chosen)
	}
	if p := res.Points[2]; p.Feasible || float64(p.MaxViolation) != 0.03 {
		t.Errorf("point %+v", p)
	}
	if r := float64(res.Points[1].RelCPU); r < 0.8249 || r > 0.8251 {
		t.Errorf("rel CPU %v, want 0.825", r)
	}
	// Nothing feasible: the fewest violations in the worst cell.
	none, _ := Choose(sum, "r", 0.004)
	if none.Chosen != "r:c" {
		t.Errorf("infeasible chosen %s, want r:c", none.Chosen)
	}
	if _, err := Choose(sum, "s", 0.02); err == nil {
		t.Error("a summary of another rule accepted")
	}
	if !strings.Contains(string(Markdown(res)), "**`r:a`** (chosen)") {
		t.Errorf("markdown:\n%s", Markdown(res))
	}
}
