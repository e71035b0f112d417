package simgap

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"streamscale/eval/stats"
)

// The simgap goals (issue 16): the simulator predicts each controller's
// live violation rate within GoalViolationPP percentage points and its
// mean CPU within GoalCPURel (relative to live), and ranks the controllers
// in the same order.
const (
	GoalViolationPP = 2
	GoalCPURel      = 0.10
)

// Outcome is what the gap protocol reads of one run (live or simulated):
// the controller, its placement seed and the run-level figures.
type Outcome struct {
	Controller     string
	Placement      uint64
	ViolationRate  float64 // share of intervals with p95 > SLO, [0, 1]
	MeanP95MS      float64 // ms
	MeanCPU        float64 // scenario millicores
	MeanThroughput float64 // inputs/s
	// MeanTaskCPU is each task's mean applied allocation, scenario
	// millicores (nil: the per-task table is left out).
	MeanTaskCPU []float64
}

// ControllerGap is one controller's simulator-against-live gap over the
// placements it ran on (summary.json sim_gap): the goals are judged on
// the means over placements, and the per-placement gaps say whether a
// miss is noise.
type ControllerGap struct {
	Controller string `json:"controller"`
	Placements int    `json:"placements"`
	// ViolationSim and ViolationLive are the mean violation rates; DeltaPP
	// is 100·(sim − live) of the means, DeltaPPMin and DeltaPPMax the
	// extremes of the per-placement gaps, DeltaPPSE the standard error of
	// their mean (stats.StdErr; 0 with one placement) and LiveViolationSD
	// the live rate's sample SD over placements (stats.SampleSD).
	ViolationSim    float64 `json:"violation_sim"`
	ViolationLive   float64 `json:"violation_live"`
	DeltaPP         float64 `json:"delta_pp"`
	DeltaPPMin      float64 `json:"delta_pp_min"`
	DeltaPPMax      float64 `json:"delta_pp_max"`
	DeltaPPSE       float64 `json:"delta_pp_se"`
	LiveViolationSD float64 `json:"live_violation_sd"`
	// CPUSim and CPULive are the mean CPU, mc; CPURel is (sim − live) /
	// live of the means, CPURelMin, CPURelMax and CPURelSE as for the
	// violation rate over the per-placement relative gaps.
	CPUSim    float64 `json:"cpu_sim_millicores"`
	CPULive   float64 `json:"cpu_live_millicores"`
	CPURel    float64 `json:"cpu_rel"`
	CPURelMin float64 `json:"cpu_rel_min"`
	CPURelMax float64 `json:"cpu_rel_max"`
	CPURelSE  float64 `json:"cpu_rel_se"`
	// ViolationOK and CPUOK say whether the means meet the goals
	// (GoalViolationPP, GoalCPURel); the verdicts say "met", "miss within
	// noise" (the gap exceeds the goal by at most 2 SE), "miss beyond
	// noise" or "miss (one placement)".
	ViolationOK      bool   `json:"violation_ok"`
	CPUOK            bool   `json:"cpu_ok"`
	ViolationVerdict string `json:"violation_verdict"`
	CPUVerdict       string `json:"cpu_verdict"`
}

// Verdicts judges sim against live (paired by index) per controller, in
// the order the controllers first appear in live: means over the
// controller's placements, per-placement gaps and their spread. It returns
// nil when sim does not pair with live (different lengths, or none).
func Verdicts(live, sim []Outcome) []ControllerGap {
	if len(sim) != len(live) || len(sim) == 0 {
		return nil
	}
	var names []string
	for _, r := range live {
		if !slices.Contains(names, r.Controller) {
			names = append(names, r.Controller)
		}
	}
	out := make([]ControllerGap, 0, len(names))
	for _, name := range names {
		out = append(out, verdict(name, live, sim))
	}
	return out
}

// verdict is Verdicts of one controller.
func verdict(name string, live, sim []Outcome) ControllerGap {
	g := ControllerGap{Controller: name}
	var dv, dc, lv []float64
	for i, l := range live {
		if l.Controller != name {
			continue
		}
		m := sim[i]
		g.Placements++
		g.ViolationSim += m.ViolationRate
		g.ViolationLive += l.ViolationRate
		g.CPUSim += m.MeanCPU
		g.CPULive += l.MeanCPU
		dv = append(dv, 100*(m.ViolationRate-l.ViolationRate))
		lv = append(lv, l.ViolationRate)
		if l.MeanCPU > 0 {
			dc = append(dc, (m.MeanCPU-l.MeanCPU)/l.MeanCPU)
		}
	}
	n := float64(g.Placements)
	g.ViolationSim /= n
	g.ViolationLive /= n
	g.CPUSim /= n
	g.CPULive /= n
	g.DeltaPP = 100 * (g.ViolationSim - g.ViolationLive)
	g.DeltaPPMin, g.DeltaPPMax = slices.Min(dv), slices.Max(dv)
	g.DeltaPPSE = stats.StdErr(dv)
	g.LiveViolationSD = stats.SampleSD(lv)
	if len(dc) > 0 {
		g.CPURelMin, g.CPURelMax = slices.Min(dc), slices.Max(dc)
		g.CPURelSE = stats.StdErr(dc)
	}
	if g.CPULive > 0 {
		g.CPURel = (g.CPUSim - g.CPULive) / g.CPULive
	}
	g.ViolationOK = math.Abs(g.DeltaPP) <= GoalViolationPP
	g.CPUOK = g.CPULive > 0 && math.Abs(g.CPURel) <= GoalCPURel
	g.ViolationVerdict = verdictName(g.ViolationOK, math.Abs(g.DeltaPP)-GoalViolationPP, g.DeltaPPSE, g.Placements)
	g.CPUVerdict = verdictName(g.CPUOK, math.Abs(g.CPURel)-GoalCPURel, g.CPURelSE, len(dc))
	return g
}

// verdictName names a verdict: met, or a miss by excess beyond the goal
// that is within noise when excess ≤ 2·se (n ≥ 2 placements).
func verdictName(ok bool, excess, se float64, n int) string {
	switch {
	case ok:
		return "met"
	case n < 2:
		return "miss (one placement)"
	case excess <= 2*se:
		return "miss within noise"
	}
	return "miss beyond noise"
}

// ranked is rs as stats.Ranked entries: the controller on its violation
// rate, then its mean CPU.
func ranked(rs []Outcome) []stats.Ranked {
	out := make([]stats.Ranked, len(rs))
	for i, r := range rs {
		out[i] = stats.Ranked{Name: r.Controller, Keys: []float64{r.ViolationRate, r.MeanCPU}}
	}
	return out
}

// Ranking lists the controllers from the fewest violations to the most
// (means over placements), ties by mean CPU, then by name.
func Ranking(rs []Outcome) []string { return stats.Order(stats.GroupMeans(ranked(rs))) }

// Discordant lists the controller pairs that sim and live rank in
// opposite orders (means over placements; by violation rate, then mean
// CPU). A pair that either world ties on both is not ranked by it and is
// never discordant: two controllers that hold the same allocations in the
// simulator (static:500 and VRebalance at its minimum) tie there however
// the live noise orders them.
func Discordant(sim, live []Outcome) [][2]string {
	return stats.Discordant(stats.GroupMeans(ranked(sim)), stats.GroupMeans(ranked(live)))
}

// rel is (sim − live) / live as a signed percentage ("n/a" when live is 0).
func rel(sim, live float64) string {
	if live == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.0f%%", 100*(sim-live)/live)
}

// WriteTable writes the Markdown section comparing sim with live (paired
// by index) in scenario: one row per run, the rankings, the verdicts per
// controller (Verdicts) and, when tasks names every entry of the runs'
// MeanTaskCPU, the mean allocation per task. It writes nothing when sim
// does not pair with live.
func WriteTable(b *strings.Builder, live, sim []Outcome, scenario string, tasks []string) {
	if len(sim) != len(live) || len(sim) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Simulator against live (scenario %s, same slice, seed and placement)\n\n", scenario)
	same := writeRuns(b, live, sim)
	writeVerdicts(b, Verdicts(live, sim), same)
	writeTasks(b, live, sim, tasks)
}

// writeRuns writes the per-run table and the ranking; it reports whether
// the ranking goal is met.
func writeRuns(b *strings.Builder, live, sim []Outcome) bool {
	b.WriteString("Differences are sim − live: percentage points for the violation rate, relative to live for the others.\n\n")
	b.WriteString("| controller | placement | violation sim | violation live | Δ pp | p95 sim ms | p95 live ms | Δ | CPU sim mc | CPU live mc | Δ | throughput sim | throughput live | Δ |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	okV, okC := 0, 0
	for i, l := range live {
		m := sim[i]
		fmt.Fprintf(b, "| %s | %d | %.3f | %.3f | %+.1f | %.1f | %.1f | %s | %.0f | %.0f | %s | %.1f | %.1f | %s |\n", l.Controller, l.Placement,
			m.ViolationRate, l.ViolationRate, 100*(m.ViolationRate-l.ViolationRate),
			m.MeanP95MS, l.MeanP95MS, rel(m.MeanP95MS, l.MeanP95MS), m.MeanCPU, l.MeanCPU, rel(m.MeanCPU, l.MeanCPU),
			m.MeanThroughput, l.MeanThroughput, rel(m.MeanThroughput, l.MeanThroughput))
		if math.Abs(100*(m.ViolationRate-l.ViolationRate)) <= GoalViolationPP {
			okV++
		}
		if l.MeanCPU > 0 && math.Abs(m.MeanCPU-l.MeanCPU)/l.MeanCPU <= GoalCPURel {
			okC++
		}
	}
	rs, rl := Ranking(sim), Ranking(live)
	strict := slices.Equal(rs, rl)
	disc := Discordant(sim, live)
	same := len(disc) == 0
	fmt.Fprintf(b, "\nRanking by violation rate (then mean CPU), means over placements: simulator %v, live %v (%s).\n",
		rs, rl, map[bool]string{true: "same order", false: "different order"}[strict])
	if !strict && same {
		b.WriteString("The orders differ only between controllers the simulator ties (the same mean violation rate and CPU), which it does not rank: no pair is ordered one way in one world and the other way in the other, so the ranking goal is met.\n")
	} else if !same {
		fmt.Fprintf(b, "Pairs ranked one way in the simulator and the other way live: %v.\n", disc)
	}
	fmt.Fprintf(b, "Per run: violation rate within %d pp in %d of %d runs, mean CPU within %.0f%% in %d of %d, ranking %s.\n",
		GoalViolationPP, okV, len(live), 100*GoalCPURel, okC, len(live), metNot(same))
	return same
}

func metNot(ok bool) string { return map[bool]string{true: "met", false: "not met"}[ok] }

// writeVerdicts writes the per-controller verdict table and the goals'
// line.
func writeVerdicts(b *strings.Builder, gaps []ControllerGap, rankingMet bool) {
	b.WriteString("\nPer controller over its placements: means of both worlds, the gap of the means (the goals' verdict), the per-placement gaps (min … max) and the standard error of their mean (SE; 0 with one placement), and the live rate's standard deviation over placements. A miss is *within noise* when the gap exceeds the goal by at most 2 SE.\n\n")
	b.WriteString("| controller | placements | violation sim | violation live | Δ pp | per placement | SE | live SD | verdict | CPU sim mc | CPU live mc | Δ | per placement | SE | verdict |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---|---:|---|\n")
	vOK, cOK := 0, 0
	for _, g := range gaps {
		fmt.Fprintf(b, "| %s | %d | %.3f | %.3f | %+.1f | %+.1f … %+.1f | %.1f | %.3f | %s | %.0f | %.0f | %+.0f%% | %+.0f%% … %+.0f%% | %.0f%% | %s |\n",
			g.Controller, g.Placements, g.ViolationSim, g.ViolationLive, g.DeltaPP, g.DeltaPPMin, g.DeltaPPMax, g.DeltaPPSE, g.LiveViolationSD, g.ViolationVerdict,
			g.CPUSim, g.CPULive, 100*g.CPURel, 100*g.CPURelMin, 100*g.CPURelMax, 100*g.CPURelSE, g.CPUVerdict)
		if g.ViolationOK {
			vOK++
		}
		if g.CPUOK {
			cOK++
		}
	}
	fmt.Fprintf(b, "\nGoals (means over placements): violation rate within %d pp for %d of %d controllers, mean CPU within %.0f%% for %d of %d, ranking %s.\n",
		GoalViolationPP, vOK, len(gaps), 100*GoalCPURel, cOK, len(gaps), metNot(rankingMet))
}

// writeTasks writes the mean allocation per task of both worlds.
func writeTasks(b *strings.Builder, live, sim []Outcome, tasks []string) {
	if len(tasks) == 0 || len(live[0].MeanTaskCPU) != len(tasks) {
		return
	}
	b.WriteString("\nMean allocation per task, scenario mc, sim / live:\n\n| controller | placement |")
	for _, t := range tasks {
		fmt.Fprintf(b, " %s |", t)
	}
	b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(tasks)) + "\n")
	for i, l := range live {
		fmt.Fprintf(b, "| %s | %d |", l.Controller, l.Placement)
		for k := range tasks {
			if k < len(sim[i].MeanTaskCPU) && k < len(l.MeanTaskCPU) {
				fmt.Fprintf(b, " %.0f / %.0f |", sim[i].MeanTaskCPU[k], l.MeanTaskCPU[k])
			}
		}
		b.WriteString("\n")
	}
}
