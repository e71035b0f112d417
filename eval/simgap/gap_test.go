package simgap

import (
	"math"
	"strings"
	"testing"
)

// TestDiscordant: a pair the simulator ties (same violation rate and CPU)
// is not ranked by it, whatever the live order; a pair ordered the other
// way live is discordant.
func TestDiscordant(t *testing.T) {
	mk := func(name string, v, cpu float64) Outcome {
		return Outcome{Controller: name, ViolationRate: v, MeanCPU: cpu}
	}
	sim := []Outcome{mk("static:500", 0.95, 3000), mk("vrebalance", 0.95, 3000), mk("threshold", 0, 4000), mk("ppo", 0, 3900)}
	live := []Outcome{mk("static:500", 0.93, 3000), mk("vrebalance", 0.89, 3000), mk("threshold", 0, 3800), mk("ppo", 0, 3950)}
	got := Discordant(sim, live)
	if len(got) != 1 || got[0] != [2]string{"threshold", "ppo"} {
		t.Fatalf("discordant %v, want only [threshold ppo] (static:500/vrebalance tie in the simulator)", got)
	}
	live[2].MeanCPU = 4100
	if got := Discordant(sim, live); len(got) != 0 {
		t.Fatalf("discordant %v, want none", got)
	}
	var b strings.Builder
	WriteTable(&b, live, sim, "x", nil)
	if md := b.String(); !strings.Contains(md, "(different order)") || !strings.Contains(md, "ranking met") || !strings.Contains(md, "the simulator ties") {
		t.Errorf("a ranking that differs only in a simulated tie:\n%s", md)
	}
}

// TestGapVerdictsOverPlacements: the goals are judged per controller on
// the means over its placements, with the per-placement gaps' extremes
// and standard error, and a miss is labelled noise or not; the figures
// are computed by hand below.
func TestGapVerdictsOverPlacements(t *testing.T) {
	mk := func(name string, place uint64, v, cpu float64) Outcome {
		return Outcome{Controller: name, Placement: place, ViolationRate: v, MeanCPU: cpu}
	}
	// Placement-major, as simgap runs them.
	live := []Outcome{mk("a", 1, 0.10, 1000), mk("b", 1, 0.50, 1000), mk("c", 1, 0.00, 500),
		mk("a", 2, 0.20, 2000), mk("b", 2, 0.30, 1000), mk("a", 3, 0.00, 3000)}
	sim := []Outcome{mk("a", 1, 0.12, 1100), mk("b", 1, 0.44, 1300), mk("c", 1, 0.05, 500),
		mk("a", 2, 0.15, 2000), mk("b", 2, 0.31, 1350), mk("a", 3, 0.06, 2700)}
	got := Verdicts(live, sim)
	want := []ControllerGap{
		// a: Δ pp per placement +2, −5, +6 (mean 1, SD √31, SE √31/√3);
		// means 0.11 vs 0.10; CPU 1933.3 vs 2000 (−3.3%), per placement
		// +10%, 0, −10% (SD 0.1, SE 0.1/√3).
		{Controller: "a", Placements: 3, ViolationSim: 0.11, ViolationLive: 0.10, DeltaPP: 1, DeltaPPMin: -5, DeltaPPMax: 6, DeltaPPSE: math.Sqrt(31) / math.Sqrt(3), LiveViolationSD: 0.1,
			CPUSim: 5800.0 / 3, CPULive: 2000, CPURel: -1.0 / 30, CPURelMin: -0.1, CPURelMax: 0.1, CPURelSE: 0.1 / math.Sqrt(3),
			ViolationOK: true, CPUOK: true, ViolationVerdict: "met", CPUVerdict: "met"},
		// b: Δ −6, +1 (mean −2.5, SD 7/√2, SE 3.5): a miss by 0.5 pp
		// within 2 SE; CPU +30%, +35% (mean of means +32.5%, SE 0.025): a
		// miss by 22.5 points beyond 2 SE.
		{Controller: "b", Placements: 2, ViolationSim: 0.375, ViolationLive: 0.4, DeltaPP: -2.5, DeltaPPMin: -6, DeltaPPMax: 1, DeltaPPSE: 3.5, LiveViolationSD: 0.2 / math.Sqrt(2),
			CPUSim: 1325, CPULive: 1000, CPURel: 0.325, CPURelMin: 0.3, CPURelMax: 0.35, CPURelSE: 0.025,
			ViolationVerdict: "miss within noise", CPUVerdict: "miss beyond noise"},
		// c: one placement, +5 pp: a miss whose noise is unknown.
		{Controller: "c", Placements: 1, ViolationSim: 0.05, DeltaPP: 5, DeltaPPMin: 5, DeltaPPMax: 5, CPUSim: 500, CPULive: 500,
			CPUOK: true, ViolationVerdict: "miss (one placement)", CPUVerdict: "met"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d controllers, want %d: %+v", len(got), len(want), got)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }
	for i, w := range want {
		g := got[i]
		nums := [][2]float64{{g.ViolationSim, w.ViolationSim}, {g.ViolationLive, w.ViolationLive}, {g.DeltaPP, w.DeltaPP}, {g.DeltaPPMin, w.DeltaPPMin},
			{g.DeltaPPMax, w.DeltaPPMax}, {g.DeltaPPSE, w.DeltaPPSE}, {g.LiveViolationSD, w.LiveViolationSD}, {g.CPUSim, w.CPUSim}, {g.CPULive, w.CPULive},
			{g.CPURel, w.CPURel}, {g.CPURelMin, w.CPURelMin}, {g.CPURelMax, w.CPURelMax}, {g.CPURelSE, w.CPURelSE}}
		for j, p := range nums {
			if !near(p[0], p[1]) {
				t.Errorf("%s: figure %d is %v, want %v", w.Controller, j, p[0], p[1])
			}
		}
		if g.Controller != w.Controller || g.Placements != w.Placements || g.ViolationOK != w.ViolationOK || g.CPUOK != w.CPUOK ||
			g.ViolationVerdict != w.ViolationVerdict || g.CPUVerdict != w.CPUVerdict {
			t.Errorf("got %+v\nwant %+v", g, w)
		}
	}
	var b strings.Builder
	WriteTable(&b, live, sim, "x", nil)
	for _, s := range []string{
		"Goals (means over placements): violation rate within 2 pp for 1 of 3 controllers, mean CPU within 10% for 2 of 3, ranking met.",
		"| b | 2 | 0.375 | 0.400 | -2.5 | -6.0 … +1.0 | 3.5 | 0.141 | miss within noise | 1325 | 1000 | +32% | +30% … +35% | 2% | miss beyond noise |",
		"Per run: violation rate within 2 pp in 2 of 6 runs",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q:\n%s", s, b.String())
		}
	}
	if Verdicts(live, sim[:2]) != nil {
		t.Error("unpaired runs judged")
	}
}

// TestGapTableGoals: the verdict counts the runs within the goals and
// compares the rankings.
func TestGapTableGoals(t *testing.T) {
	mk := func(name string, v, cpu float64) Outcome {
		return Outcome{Controller: name, ViolationRate: v, MeanCPU: cpu}
	}
	live := []Outcome{mk("a", 0.10, 1000), mk("b", 0.50, 2000)}
	sim := []Outcome{mk("a", 0.11, 1050), mk("b", 0.40, 2500)}
	var b strings.Builder
	WriteTable(&b, live, sim, "x", nil)
	if !strings.Contains(b.String(), "within 2 pp in 1 of 2 runs, mean CPU within 10% in 1 of 2, ranking met") {
		t.Errorf("%s", b.String())
	}
	b.Reset()
	WriteTable(&b, live, sim[:1], "x", nil)
	if b.Len() != 0 {
		t.Errorf("unpaired runs tabled:\n%s", b.String())
	}
}
