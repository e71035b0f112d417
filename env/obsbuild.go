package env

import "math"

// TaskMeasures are the inputs of one task's row of an observation: the
// metrics measured over the interval the observation reports (what a
// monitoring system reports; the simulator applies Physics.MetricLagSteps
// and MetricNoise to them before they get here) and the task's exact
// allocation and host.
type TaskMeasures struct {
	InputRate  float64 // m: events arrived per second
	Throughput float64 // m: events processed per second
	Queue      float64 // m: events waiting
	DelayS     float64 // m: mean queueing + processing delay at the task, s
	ServiceS   float64 // m: mean service time s̄ at the allocation (busy time / processed events), s
	Load       float64 // m: offered load ρ = λ·s̄ (the maximum over the task's replicas)
	CPU        float64 // allocation, millicores
	Host       int     // index of the server that hosts the task (its primary replica)
}

// ServerMeasures are the inputs of one server's row, all exact.
type ServerMeasures struct {
	CPU      float64 // millicores allocated to the replicas on it
	MemoryMB float64 // memory demand of the replicas on it, MB
	Tasks    float64 // task replicas placed on it (with a share > 0)
}

// AppMeasures are the application's measured inputs of an observation.
type AppMeasures struct {
	P95S, MeanS float64 // end-to-end latency of the interval's completed inputs, s
	Throughput  float64 // completed inputs per second (source-message equivalents)
}

// ObsInputs are the measurements one observation is made of, one entry
// per task (App.Tasks order) and per server (Servers order).
type ObsInputs struct {
	Tasks   []TaskMeasures
	Servers []ServerMeasures
	App     AppMeasures
	// Stepped is false for the observation at Reset: its change features
	// are 0 and it records no violation in the history.
	Stepped bool
}

// ObsHistory is what the change features and the violation history of an
// observation compare with: what the previous observations reported.
// The zero history (or one after Reset) is that of an episode's start.
type ObsHistory struct {
	DelayS, Queue []float64 // per task, the previous observation's mean delay (s) and queue (events)
	P95S          float64   // the previous observation's p95, s
	Violated      [10]bool  // whether each of the last 10 stepped observations' p95 exceeded the SLO, newest first
}

// NewObsHistory returns the history of an episode's start for nTasks
// tasks.
func NewObsHistory(nTasks int) ObsHistory {
	return ObsHistory{DelayS: make([]float64, nTasks), Queue: make([]float64, nTasks)}
}

// Reset returns h to an episode's start, keeping its buffers.
func (h *ObsHistory) Reset() {
	clear(h.DelayS)
	clear(h.Queue)
	h.P95S, h.Violated = 0, [10]bool{}
}

// ObsBuilder builds the Dict observation (15 features per task, 5 per
// server, 11 for the application; see the Task…, Server… and App…
// constants for every feature's formula and range, and FeatureNames for
// their names) from the measurements of an interval. It is the one place
// the observation's normalisations and clipping are computed: Env builds
// every observation with it, and so does whatever builds the observation
// of a real deployment (eval/live, from the workers' reports).
//
// The builder holds no state beyond its fields; the history it compares
// with is passed to Build, which advances it.
type ObsBuilder struct {
	App     *App     // the application: its SLO and the tasks' selectivity and MIPS per event
	Servers []Server // the servers: CPU and RAM capacity
	MaxCPU  float64  // the largest task allocation, millicores (Config.MaxCPU)
}

// Build writes into obs (whose slices have the shapes of the observation
// space) the observation of x and advances h to it. x.Tasks must have one
// entry per task of b.App, x.Servers one per server of b.Servers, and h
// one per task. Non-finite or out-of-range values are clipped to their
// feature's range (NaN to its lower bound).
func (b ObsBuilder) Build(obs Observation, x *ObsInputs, h *ObsHistory) {
	slo := b.App.SLOMS / 1000
	maxCPU := b.MaxCPU
	n := len(x.Tasks)
	totalQueue := 0.0
	for k := range n {
		tm := &x.Tasks[k]
		in, done, queue, lat, s := tm.InputRate, tm.Throughput, tm.Queue, tm.DelayS, tm.ServiceS
		row := obs.Task[k*TaskFeatures : (k+1)*TaskFeatures]
		task := b.App.Tasks[k]
		hostCPU := b.Servers[tm.Host].CPU
		hostUsed := x.Servers[tm.Host].CPU
		ratio, sel := 1.0, task.Selectivity
		io := sel / (1 + sel)
		if in > 0 {
			ratio = done / in
		}
		if out := done * sel; in+out > 0 {
			io = out / (in + out)
		}
		row[TaskCPU] = tm.CPU / maxCPU
		row[TaskInputRate] = log1p(in)
		row[TaskDemand] = log1p(in * task.MIPSPerEvent)
		row[TaskThroughput] = log1p(done)
		row[TaskQueue] = log1p(queue)
		row[TaskThroughputRatio] = ratio
		row[TaskQueuePressure] = queue * s / slo
		row[TaskDemandPerCPU] = math.Log1p(min(tm.Load, rhoHigh))
		row[TaskLatency] = lat / slo
		row[TaskProcLatency] = s / slo
		row[TaskLatencyChange] = 0
		row[TaskQueueChange] = 0
		if x.Stepped {
			row[TaskLatencyChange] = (lat - h.DelayS[k]) / slo
			row[TaskQueueChange] = log1p(queue) - log1p(h.Queue[k])
		}
		row[TaskIORatio] = io
		row[TaskHostCPUUtil] = hostUsed / hostCPU
		row[TaskHostFreeCPU] = (hostCPU - hostUsed) / hostCPU
		for i := range row {
			row[i] = clip(row[i], taskLow[i], taskHigh[i])
		}
		h.DelayS[k], h.Queue[k] = lat, queue
		totalQueue += queue
	}
	hostsCPU := 0.0 // CPU of the servers that host the app
	for s, srv := range b.Servers {
		sm := x.Servers[s]
		row := obs.Server[s*ServerFeatures : (s+1)*ServerFeatures]
		if sm.Tasks > 0 {
			hostsCPU += srv.CPU
		}
		row[ServerCPUUtil] = sm.CPU / srv.CPU
		row[ServerFreeCPU] = (srv.CPU - sm.CPU) / maxCPU
		row[ServerMemUtil] = sm.MemoryMB / srv.RAMMB
		row[ServerFreeMem] = (srv.RAMMB - sm.MemoryMB) / srv.RAMMB
		row[ServerTaskCount] = sm.Tasks / float64(n)
		for i := range row {
			row[i] = clip(row[i], srvLow[i], srvHigh[i])
		}
	}
	p95, mean := x.App.P95S, x.App.MeanS
	violated := x.Stepped && p95 > slo
	viol := 0
	if violated {
		viol++
	}
	for _, v := range h.Violated[:len(h.Violated)-1] {
		if v {
			viol++
		}
	}
	total, mx, mn := 0.0, 0.0, math.Inf(1)
	for k := range x.Tasks {
		c := x.Tasks[k].CPU
		total += c
		mx, mn = max(mx, c), min(mn, c)
	}
	a := obs.App
	a[AppMeanLatency] = mean / slo
	a[AppP95Latency] = p95 / slo
	a[AppSLOMargin] = 1 - p95/slo
	a[AppP95Trend] = 0
	if x.Stepped {
		a[AppP95Trend] = (p95 - h.P95S) / slo
	}
	a[AppViolationHistory] = float64(viol) / float64(len(h.Violated))
	a[AppTotalCPU] = 0
	if hostsCPU > 0 {
		a[AppTotalCPU] = total / hostsCPU
	}
	a[AppMeanCPU] = total / float64(n) / maxCPU
	a[AppMaxCPU] = mx / maxCPU
	a[AppMinCPU] = mn / maxCPU
	a[AppTotalQueue] = log1p(totalQueue)
	a[AppThroughput] = log1p(x.App.Throughput)
	for i := range a {
		a[i] = clip(a[i], appLow[i], appHigh[i])
	}
	h.P95S = p95
	if x.Stepped {
		copy(h.Violated[1:], h.Violated[:len(h.Violated)-1])
		h.Violated[0] = violated
	}
}
