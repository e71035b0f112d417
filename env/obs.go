package env

import "math"

// Task features (paper Table 1), in column order. Normalization: CPU values
// are clipped linear (millicores / MaxCPU), rates, demands and queues are
// log(1+x), latencies are relative to the SLO, changes are clipped to
// [−2, 2].
const (
	TaskCPU             = iota // allocation / MaxCPU, [0, 1]
	TaskInputRate              // log(1 + input events/s)
	TaskDemand                 // log(1 + offered MIPS demand λ·h)
	TaskThroughput             // log(1 + processed events/s)
	TaskQueue                  // log(1 + events waiting)
	TaskThroughputRatio        // processed / input, clipped [0, 2] (1 when idle)
	TaskQueuePressure          // seconds of queued work / SLO, clipped [0, 10]
	TaskDemandPerCPU           // offered load ρ = λ·s (demand over capacity), clipped [0, 10]
	TaskLatency                // mean queueing+processing delay at the task / SLO, clipped [0, 10]
	TaskProcLatency            // per-event service time / SLO, clipped [0, 10]
	TaskLatencyChange          // (latency − previous) / SLO, clipped [−2, 2]
	TaskQueueChange            // log(1+queue) − log(1+previous queue), clipped [−2, 2]
	TaskIORatio                // log(1 + output events / input events) over the step (selectivity when idle)
	TaskHostCPUUtil            // host's allocated / capacity, [0, 1]
	TaskHostFreeCPU            // host's free millicores / MaxCPU, clipped [0, 10]
)

// Server features.
const (
	ServerCPUUtil   = iota // allocated / capacity, [0, 1]
	ServerFreeCPU          // free millicores / MaxCPU, clipped [0, 10]
	ServerMemUtil          // task memory / RAM, [0, 1]
	ServerFreeMem          // log(1 + free MB)
	ServerTaskCount        // tasks placed, [0, 100]
)

// App features.
const (
	AppMeanLatency      = iota // mean end-to-end latency / SLO, clipped [0, 10]
	AppP95Latency              // p95 / SLO, clipped [0, 10]
	AppSLOMargin               // 1 − p95/SLO, clipped [−9, 1]
	AppP95Trend                // (p95 − previous p95) / SLO, clipped [−2, 2]
	AppViolationHistory        // share of the last 10 intervals that violated, [0, 1]
	AppTotalCPU                // Σ allocation / (n·MaxCPU), [0, 1]
	AppMeanCPU                 // mean allocation / MaxCPU, [0, 1]
	AppMaxCPU                  // max allocation / MaxCPU, [0, 1]
	AppMinCPU                  // min allocation / MaxCPU, [0, 1]
	AppTotalQueue              // log(1 + Σ events waiting)
	AppThroughput              // log(1 + message-equivalent throughput per s)
)

// logHigh bounds every log(1+x) feature: log(1+1e13), far above any rate
// or queue a scenario reaches, and the value is clipped to it regardless.
const logHigh = 30

var (
	taskLow  = [TaskFeatures]float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -2, -2, 0, 0, 0}
	taskHigh = [TaskFeatures]float64{1, logHigh, logHigh, logHigh, logHigh, 2, 10, 10, 10, 10, 2, 2, logHigh, 1, 10}
	srvLow   = [ServerFeatures]float64{0, 0, 0, 0, 0}
	srvHigh  = [ServerFeatures]float64{1, 10, 1, logHigh, 100}
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

func makeSpaces(nTasks, nServers int) Spaces {
	s := Spaces{
		Keys: []string{"app", "server", "task"},
		Observation: map[string]Box{
			"app":    tiledBox(0, appLow[:], appHigh[:]),
			"server": tiledBox(nServers, srvLow[:], srvHigh[:]),
			"task":   tiledBox(nTasks, taskLow[:], taskHigh[:]),
		},
		DeltaMillicores: DeltaMillicores[:],
	}
	for k := 0; k < nTasks; k++ {
		s.Nvec = append(s.Nvec, len(DeltaMillicores))
	}
	return s
}

func log1p(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	return min(math.Log1p(x), logHigh)
}
