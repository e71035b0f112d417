package env

import (
	"fmt"
	"math"
)

// Task features (paper Table 1), in column order. Normalization: CPU
// allocations are clipped linear (millicores / MaxCPU), shares of a
// capacity are in [0, 1], rates, demands and queues are log(1+x), latencies
// are relative to the SLO, changes are clipped to [−2, 2]. Every value is
// clipped to its range.
//
// Measured features (marked m) are computed from the metrics a monitoring
// system reports for the step: input and processed counts, queue, mean
// delay, measured mean service time s̄ (busy time / processed events) and
// the p95, mean and throughput of the app. Physics.MetricLagSteps and
// MetricNoise act on those metrics; the other features are read exact from
// the scheduler's state (allocations, capacities, placement).
const (
	TaskCPU             = iota // allocation / MaxCPU, [0, 1]
	TaskInputRate              // m: log(1 + input events/s), [0, 30]
	TaskDemand                 // m: log(1 + offered MIPS demand λ·h), [0, 30]
	TaskThroughput             // m: log(1 + processed events/s), [0, 30]
	TaskQueue                  // m: log(1 + events waiting), [0, 30]
	TaskThroughputRatio        // m: processed / input, [0, 2] (1 when idle)
	TaskQueuePressure          // m: seconds of queued work q·s̄ / SLO, [0, 10]
	TaskDemandPerCPU           // m: log(1 + ρ), ρ = λ·s̄ the offered load (input rate × measured mean service time; max over the task's replicas) clipped to 10, [0, log 11]
	TaskLatency                // m: mean queueing+processing delay at the task / SLO, [0, 10]
	TaskProcLatency            // m: measured mean service time s̄ / SLO, [0, 10]
	TaskLatencyChange          // m: (latency − previously reported) / SLO, [−2, 2]
	TaskQueueChange            // m: log(1+queue) − log(1+previously reported queue), [−2, 2]
	TaskIORatio                // m: output / (input + output) events over the step, output = processed × selectivity (σ/(1+σ) when idle), [0, 1]
	TaskHostCPUUtil            // host's allocated / capacity, [0, 1]
	TaskHostFreeCPU            // host's free (unallocated) / capacity, [0, 1]
)

// Server features, exact (they follow from the allocations and the
// placement). Memory is the tasks' memory demand, so the two memory
// features are constant during an episode unless a replica plan moves
// tasks.
const (
	ServerCPUUtil   = iota // allocated / capacity, [0, 1]
	ServerFreeCPU          // free millicores / MaxCPU, [0, 10]
	ServerMemUtil          // task memory / RAM, [0, 1]
	ServerFreeMem          // (RAM − task memory) / RAM, [0, 1]
	ServerTaskCount        // task replicas placed / the app's tasks, [0, 1]
)

// App features. The latencies, trend, violation history, queue and
// throughput are measured (the history counts the reported p95s); the CPU
// features are exact.
const (
	AppMeanLatency      = iota // m: mean end-to-end latency / SLO, [0, 10]
	AppP95Latency              // m: p95 / SLO, [0, 10]
	AppSLOMargin               // m: 1 − p95/SLO, [−9, 1]
	AppP95Trend                // m: (p95 − previously reported p95) / SLO, [−2, 2]
	AppViolationHistory        // m: share of the last 10 reported intervals (this one included) whose p95 exceeded the SLO, [0, 1]
	AppTotalCPU                // Σ allocation / Σ CPU of the servers hosting the app, [0, 1]
	AppMeanCPU                 // mean allocation / MaxCPU, [0, 1]
	AppMaxCPU                  // max allocation / MaxCPU, [0, 1]
	AppMinCPU                  // min allocation / MaxCPU, [0, 1]
	AppTotalQueue              // m: log(1 + Σ events waiting), [0, 30]
	AppThroughput              // m: log(1 + message-equivalent throughput per s), [0, 30]
)

// Feature names, in index order (TaskCPU …, ServerCPUUtil …,
// AppMeanLatency …): the constants' names in snake case, for logs and
// reports that name a feature.
var (
	taskFeatureNames = [TaskFeatures]string{"cpu", "input_rate", "demand", "throughput", "queue", "throughput_ratio",
		"queue_pressure", "demand_per_cpu", "latency", "proc_latency", "latency_change", "queue_change", "io_ratio",
		"host_cpu_util", "host_free_cpu"}
	serverFeatureNames = [ServerFeatures]string{"cpu_util", "free_cpu", "mem_util", "free_mem", "task_count"}
	appFeatureNames    = [AppFeatures]string{"mean_latency", "p95_latency", "slo_margin", "p95_trend", "violation_history",
		"total_cpu", "mean_cpu", "max_cpu", "min_cpu", "total_queue", "throughput"}
)

// FeatureNames returns the name of every element of Observation.Flatten
// for an application with the given task names on servers servers:
// "app/<feature>", "server<i>/<feature>", "<task>/<feature>".
func FeatureNames(tasks []string, servers int) []string {
	out := make([]string, 0, AppFeatures+servers*ServerFeatures+len(tasks)*TaskFeatures)
	for _, f := range appFeatureNames {
		out = append(out, "app/"+f)
	}
	for i := range servers {
		for _, f := range serverFeatureNames {
			out = append(out, fmt.Sprintf("server%d/%s", i, f))
		}
	}
	for _, t := range tasks {
		for _, f := range taskFeatureNames {
			out = append(out, t+"/"+f)
		}
	}
	return out
}

// logHigh bounds every log(1+x) feature: log(1+1e13), far above any rate
// or queue a scenario reaches, and the value is clipped to it regardless.
const logHigh = 30

// rhoHigh clips the offered load ρ of TaskDemandPerCPU before its log: ten
// times what the allocation serves is overload however much larger.
const rhoHigh = 10

var (
	taskLow  = [TaskFeatures]float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -2, -2, 0, 0, 0}
	taskHigh = [TaskFeatures]float64{1, logHigh, logHigh, logHigh, logHigh, 2, 10, math.Log1p(rhoHigh), 10, 10, 2, 2, 1, 1, 1}
	srvLow   = [ServerFeatures]float64{0, 0, 0, 0, 0}
	srvHigh  = [ServerFeatures]float64{1, 10, 1, 1, 1}
	appLow   = [AppFeatures]float64{0, 0, -9, -2, 0, 0, 0, 0, 0, 0, 0}
	appHigh  = [AppFeatures]float64{10, 10, 1, 2, 1, 1, 1, 1, 1, logHigh, logHigh}
)

func tiledBox(rows int, low, high []float64) Box {
	b := Box{Shape: []int{rows, len(low)}}
	if rows == 0 {
		b.Shape = []int{len(low)}
		rows = 1
	}
	for r := 0; r < rows; r++ {
		b.Low = append(b.Low, low...)
		b.High = append(b.High, high...)
	}
	return b
}

func makeSpaces(nTasks, nServers int, deltas, util [5]float64) Spaces {
	s := Spaces{
		Keys: []string{"app", "server", "task"},
		Observation: map[string]Box{
			"app":    tiledBox(0, appLow[:], appHigh[:]),
			"server": tiledBox(nServers, srvLow[:], srvHigh[:]),
			"task":   tiledBox(nTasks, taskLow[:], taskHigh[:]),
		},
		DeltaMillicores: deltas[:],
	}
	if util != ([5]float64{}) {
		s.DeltaMillicores, s.TargetUtilization = nil, util[:]
	}
	for k := 0; k < nTasks; k++ {
		s.Nvec = append(s.Nvec, len(deltas))
	}
	return s
}

func log1p(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return min(math.Log1p(x), logHigh)
}
