package liveexp

import (
	"fmt"
	"strings"

	"streamscale/eval/live"
	"streamscale/eval/runner"
	"streamscale/eval/simgap"
	"streamscale/internal/command"
)

// Record is one controller's run in summary.json (live, or with eval
// simgap simulated): its key, the run-level record (runner.Summary:
// violation_rate, mean_p95_ms, mean_cpu_millicores, mean_throughput, …)
// and what a live run adds (live.Info: lost, inputs, control failures, …;
// zero in a simulated record).
type Record struct {
	runner.Key
	runner.Summary
	live.Info
	Placement        []int  `json:"placement"` // server of each task in the scenario
	TrajectorySHA256 string `json:"trajectory_sha256"`
	// MeanTaskCPU is each task's mean applied allocation, scenario
	// millicores (eval simgap: where the CPU of the two worlds differs).
	MeanTaskCPU []float64 `json:"mean_task_cpu_millicores,omitempty"`
}

// record is r's Record, with its per-task means when perTask is set.
func record(r runner.Result, info live.Info, perTask bool) Record {
	rec := Record{Key: r.Key, Summary: r.Summary, Info: info, Placement: r.Placement, TrajectorySHA256: r.TrajectorySHA256}
	if perTask {
		rec.MeanTaskCPU = MeanTaskCPU(r)
	}
	return rec
}

// MeanTaskCPU is each task's mean applied allocation over r's intervals
// (nil without intervals).
func MeanTaskCPU(r runner.Result) []float64 {
	var out []float64
	for _, iv := range r.Intervals {
		if out == nil {
			out = make([]float64, len(iv.Applied))
		}
		for k, a := range iv.Applied {
			if k < len(out) {
				out[k] += a / float64(len(r.Intervals))
			}
		}
	}
	return out
}

// Outcomes is rs as the gap protocol reads them.
func Outcomes(rs []Record) []simgap.Outcome {
	out := make([]simgap.Outcome, len(rs))
	for i, r := range rs {
		out[i] = simgap.Outcome{Controller: r.Controller, Placement: r.PlacementSeed, ViolationRate: r.ViolationRate, MeanP95MS: r.MeanP95MS,
			MeanCPU: r.MeanCPU, MeanThroughput: r.MeanThroughput, MeanTaskCPU: r.MeanTaskCPU}
	}
	return out
}

// Summary is summary.json of `eval live` and `eval simgap`: the
// configuration, the provenance and one Record per controller and
// placement, in the order run. Live runs are not reproducible (real time
// on a shared machine); the seed and the configuration are recorded so a
// rerun is the same experiment.
type Summary struct {
	Profile     string  `json:"profile"`
	Trace       string  `json:"trace"`
	TraceSource string  `json:"trace_source"`
	TraceStart  int     `json:"trace_start"`
	Intervals   int     `json:"intervals"`
	TimeScaleS  float64 `json:"time_scale_s"`
	RateMult    float64 `json:"rate_mult"`
	CPUScale    float64 `json:"cpu_scale"`
	// WarmupIntervals ran before every controller's recorded intervals
	// (live.Config.Warmup).
	WarmupIntervals int      `json:"warmup_intervals"`
	Workers         int      `json:"workers"`
	Seed            uint64   `json:"seed"`
	PlacementSeeds  []uint64 `json:"placement_seeds"`
	SLOMS           float64  `json:"slo_ms"`
	Tasks           []string `json:"tasks"`
	API             string   `json:"api,omitempty"`
	Runs            []Record `json:"runs"`
	// Sim holds, for `eval simgap`, each controller's simulated run on the
	// same slice (same order as Runs), and SimScenario its physics preset.
	Sim         []Record `json:"sim,omitempty"`
	SimScenario string   `json:"sim_scenario,omitempty"`
	// SimStepS and SimBaselineStepS are the simulated step's length,
	// seconds (env.Physics.StepSeconds), in Sim (-sim-step) and
	// SimBaseline (the baseline file's).
	SimStepS         float64 `json:"sim_step_s,omitempty"`
	SimBaselineStepS float64 `json:"sim_baseline_step_s,omitempty"`
	// SimBaseline holds, with a baseline scenario, each controller's
	// simulated run in SimBaselineScenario (the gap before).
	SimBaseline         []Record `json:"sim_baseline,omitempty"`
	SimBaselineScenario string   `json:"sim_baseline_scenario,omitempty"`
	// SimGap and SimBaselineGap are the goal verdicts of Sim and
	// SimBaseline against Runs per controller, over the placements
	// (simgap.Verdicts).
	SimGap         []simgap.ControllerGap `json:"sim_gap,omitempty"`
	SimBaselineGap []simgap.ControllerGap `json:"sim_baseline_gap,omitempty"`
	// ObsGap is, when observations are recorded, the features whose means
	// differ most between the worlds per controller
	// (simgap.ObservationGaps).
	ObsGap []simgap.ObsGap `json:"obs_gap,omitempty"`
	// Uptime is the host's load line before and after the runs: live
	// figures on a shared machine move with it.
	Uptime []string `json:"uptime,omitempty"`
	command.Build
}

// Markdown is report.md: the configuration, one row per live run and,
// for eval simgap, the simulator-against-live sections.
func Markdown(s Summary) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Live evaluation: %s on %s\n\n", s.Profile, s.Trace)
	fmt.Fprintf(&b, "%d intervals of %.3g s (trace points %d–%d, rate × %g), %d worker process(es), CPU scale %g live mc per scenario mc, seed %d, placement seeds %v, SLO %g ms. Live runs are not reproducible (real time on a shared machine).\n\n",
		s.Intervals, s.TimeScaleS, s.TraceStart, s.TraceStart+s.Intervals-1, s.RateMult, s.Workers, s.CPUScale, s.Seed, s.PlacementSeeds, s.SLOMS)
	b.WriteString("| controller | placement | violation rate | mean p95 ms | mean CPU mc | throughput /s | offered /s | dropped | unfinished | control failures | CPU used (cores) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range s.Runs {
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.1f | %.0f | %.1f | %.1f | %d | %d | %d | %.4f |\n",
			r.Controller, r.PlacementSeed, r.ViolationRate, r.MeanP95MS, r.MeanCPU, r.MeanThroughput, r.MeanOffered, r.Dropped, r.Unfinished, r.ControlFailures, r.MeanCPUUsedCores)
	}
	for _, u := range s.Uptime {
		fmt.Fprintf(&b, "\nuptime: %s", u)
	}
	if len(s.Uptime) > 0 {
		b.WriteString("\n")
	}
	live := Outcomes(s.Runs)
	simgap.WriteTable(&b, live, Outcomes(s.Sim), fmt.Sprintf("%s, simulated steps of %g s", s.SimScenario, s.SimStepS), s.Tasks)
	simgap.WriteTable(&b, live, Outcomes(s.SimBaseline), fmt.Sprintf("%s (baseline), simulated steps of %g s", s.SimBaselineScenario, s.SimBaselineStepS), s.Tasks)
	simgap.WriteObsGaps(&b, s.ObsGap)
	return []byte(b.String())
}
