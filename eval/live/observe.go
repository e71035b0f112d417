package live

import (
	"errors"
	"fmt"
	"math"

	"streamscale/env"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner"
)

// Observer builds, from the runtime's reports, the observation the
// simulator builds (with the simulator's builder, env.ObsBuilder: the Dict
// of 15 features per task, 5 per server and 11 for the application), and
// applies a vertical controller's action to the
// allocations the way env.Step does (clip to [MinCPU, MaxCPU], then the
// projection onto server capacity: reductions first, then increases in
// task order, each limited by its host's free CPU).
//
// Servers: the observation's server rows are the scenario's servers and
// the scenario's placement (env.EdgeConfig of the profile and placement
// seed), computed from the applied allocations exactly as the simulator
// computes them (they are exact, not measured, there too). Live, every
// operator runs in the worker pool (each worker owns an even share of
// every operator's key groups) and a task's allocation is split evenly
// over the workers; the scenario's servers are the capacity bookkeeping
// the controller reasons about, and that bookkeeping is enforced (the
// projection), so an allocation the simulator would refuse is refused
// live too.
//
// Measured features come from the workers' last reports (planner.TaskObs,
// summed over workers) and the control window's end-to-end latencies:
// input rate = arrivals/s, throughput = executions/s, queue = requests
// waiting, mean delay = enqueue → execution finished, and the measured
// mean service time s̄ = CPU time per execution ÷ allocated cores (the
// time one execution takes at the task's allocation, which is what the
// simulator's busy time / processed events is), so ρ = λ·s̄ is the share
// of the allocation the offered load needs.
//
// An Observer is not safe for concurrent use.
type Observer struct {
	sc   env.Config
	ops  []int // env task k → runtime operator index
	nOps int
	obs  env.Observation
	in   env.ObsInputs // the builder's inputs, scratch

	// What the previous observations reported.
	hist    env.ObsHistory
	prevSvc []float64 // per task, the last measured service time
	stepped bool
}

// NewObserver returns the observer of scenario sc (an edge scenario: one
// replica per task on Placement, per-task allocations) for the runtime
// application app, whose operators must include every task of the
// scenario by name (extra operators, such as ETL's Sink, are run but not
// controlled).
func NewObserver(sc env.Config, app ops.App) (*Observer, error) {
	e, err := env.New(sc) // fills the defaults and validates
	if err != nil {
		return nil, fmt.Errorf("live: %w", err)
	}
	sc = e.Config()
	if sc.SharedCPU || sc.Replicas != nil {
		return nil, errors.New("live: the scenario must be an edge scenario (one replica per task, per-task allocations)")
	}
	o := &Observer{sc: sc, nOps: len(app.Operators)}
	for _, t := range sc.App.Tasks {
		idx := -1
		for i, s := range app.Operators {
			if s.Name == t.Name {
				idx = i
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("live: runtime app %s has no operator %q (task of profile %s)", app.Name, t.Name, sc.App.Name)
		}
		o.ops = append(o.ops, idx)
	}
	n, m := len(sc.App.Tasks), len(sc.Servers)
	o.obs = env.Observation{App: make([]float64, env.AppFeatures), Server: make([]float64, m*env.ServerFeatures), Task: make([]float64, n*env.TaskFeatures)}
	o.in = env.ObsInputs{Tasks: make([]env.TaskMeasures, n), Servers: make([]env.ServerMeasures, m)}
	o.hist, o.prevSvc = env.NewObsHistory(n), make([]float64, n)
	return o, nil
}

// Scenario returns the scenario with its defaults filled.
func (o *Observer) Scenario() env.Config { return o.sc }

// Ops returns the runtime operator index of every task.
func (o *Observer) Ops() []int { return o.ops }

// Measured is one control interval's measurements.
type Measured struct {
	Tasks      []planner.TaskObs // the workers' last reports
	P95MS      float64           // end-to-end p95 of the inputs completed in the interval, ms
	MeanMS     float64           // their mean, ms
	Throughput float64           // inputs completed per second (source-message equivalents)
}

// TaskTotals are one task's measurements summed over the workers.
type TaskTotals struct {
	In, Done, Queue float64 // events/s, events/s, events
	LatS, SvcS, Rho float64 // mean delay s, mean service time s, max utilisation over workers
}

// Totals aggregates m per task (env task order). A task without
// executions keeps its previously measured service time.
func (o *Observer) Totals(m Measured) []TaskTotals {
	out := make([]TaskTotals, len(o.ops))
	latW := make([]float64, len(o.ops))
	svcSet := make([]bool, len(o.ops))
	byOp := make([]int, o.nOps)
	for i := range byOp {
		byOp[i] = -1
	}
	for k, op := range o.ops {
		byOp[op] = k
	}
	for _, t := range m.Tasks {
		if t.Op < 0 || t.Op >= o.nOps || byOp[t.Op] < 0 {
			continue
		}
		k := byOp[t.Op]
		tt := &out[k]
		tt.In += t.InputRate
		tt.Done += t.Throughput
		tt.Queue += t.Queue
		latW[k] += t.LatencyMS / 1000 * t.Throughput
		if t.Throughput > 0 && t.Millicores > 0 {
			s := t.CPUCores / t.Throughput / (float64(t.Millicores) / 1000)
			if !svcSet[k] { // the first (lowest-ID) worker's, as env's primary replica
				tt.SvcS, svcSet[k] = s, true
			}
			tt.Rho = max(tt.Rho, t.InputRate*s)
		}
	}
	for k := range out {
		if out[k].Done > 0 {
			out[k].LatS = latW[k] / out[k].Done
		}
		if !svcSet[k] {
			out[k].SvcS = o.prevSvc[k]
			out[k].Rho = out[k].In * out[k].SvcS
		}
		for _, p := range []*float64{&out[k].In, &out[k].Done, &out[k].Queue, &out[k].LatS, &out[k].SvcS, &out[k].Rho} {
			if !(*p >= 0) || math.IsInf(*p, 0) {
				*p = 0
			}
		}
	}
	return out
}

func clip(x, lo, hi float64) float64 {
	if x != x {
		return lo
	}
	return min(max(x, lo), hi)
}

// Observe builds the observation of the interval just measured, with
// alloc the allocation (scenario millicores, per task) in force: the
// builder's inputs (env.ObsInputs) from the reports (Totals) and the
// scenario's placement, the observation by env.ObsBuilder. The returned
// observation is reused by the next call.
func (o *Observer) Observe(m Measured, alloc []float64) env.Observation {
	sc := o.sc
	in := &o.in
	for s := range in.Servers {
		in.Servers[s] = env.ServerMeasures{}
	}
	for k, s := range sc.Placement {
		in.Servers[s].CPU += alloc[k]
		in.Servers[s].MemoryMB += sc.App.Tasks[k].MemoryMB
		in.Servers[s].Tasks++
	}
	for k, tt := range o.Totals(m) {
		in.Tasks[k] = env.TaskMeasures{InputRate: tt.In, Throughput: tt.Done, Queue: tt.Queue, DelayS: tt.LatS, ServiceS: tt.SvcS, Load: tt.Rho,
			CPU: alloc[k], Host: sc.Placement[k]}
		o.prevSvc[k] = tt.SvcS
	}
	in.App = env.AppMeasures{P95S: m.P95MS / 1000, MeanS: m.MeanMS / 1000, Throughput: m.Throughput}
	in.Stepped = o.stepped
	env.ObsBuilder{App: &sc.App, Servers: sc.Servers, MaxCPU: sc.MaxCPU}.Build(o.obs, in, &o.hist)
	o.stepped = true
	return o.obs
}

// Apply returns the allocation (scenario millicores per task) after action
// a on the allocation cur, as env.Step computes it for an edge scenario:
// Choices add the scenario's action deltas (env.Config.Deltas) or size to
// its target utilizations (env.Config.ActionUtilization), Targets set; both are clipped to [MinCPU,
// MaxCPU] and projected onto the servers' capacity. Hold keeps cur. A
// replica plan or a malformed action is an error and changes nothing.
func (o *Observer) Apply(cur []float64, a env.Action) ([]float64, error) {
	n := len(o.ops)
	if len(cur) != n {
		return nil, fmt.Errorf("live: allocation has %d entries, want %d", len(cur), n)
	}
	if a.Replicas != nil {
		return nil, errors.New("live: replica plans are not supported live (vertical controllers only)")
	}
	req := make([]float64, n)
	lo, hi := o.sc.MinCPU, o.sc.MaxCPU
	switch {
	case a.Hold:
		copy(req, cur)
	case a.Choices != nil:
		if len(a.Choices) != n {
			return nil, fmt.Errorf("live: action has %d entries, want %d", len(a.Choices), n)
		}
		deltas, util := o.sc.Deltas(), o.sc.ActionUtilization
		for k, c := range a.Choices {
			if c < 0 || c >= len(deltas) {
				return nil, fmt.Errorf("live: action entry %d is %d, want 0..%d", k, c, len(deltas)-1)
			}
		}
		for k, c := range a.Choices {
			switch {
			case util == [5]float64{}:
				req[k] = clip(cur[k]+deltas[c], lo, hi)
			case util[c] == 0:
				req[k] = cur[k]
			default:
				// Sized as env.Step sizes it: the allocation in force (the
				// one the last observation showed) and the offered load
				// that observation showed.
				rho := math.Expm1(o.obs.Task[k*env.TaskFeatures+env.TaskDemandPerCPU])
				req[k] = clip(env.UtilizationTarget(cur[k], rho, util[c]), lo, hi)
			}
		}
	case a.Targets != nil:
		if len(a.Targets) != n {
			return nil, fmt.Errorf("live: target allocation has %d entries, want %d", len(a.Targets), n)
		}
		for k, v := range a.Targets {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("live: target allocation entry %d is %v", k, v)
			}
			req[k] = clip(v, lo, hi)
		}
	default:
		return nil, errors.New("live: empty action")
	}
	// Projection (env's project, one replica per task).
	out := make([]float64, n)
	used := make([]float64, len(o.sc.Servers))
	for k := range req {
		out[k] = min(req[k], cur[k])
		used[o.sc.Placement[k]] += out[k]
	}
	for k := range req {
		if req[k] <= out[k] {
			continue
		}
		s := o.sc.Placement[k]
		inc := min(req[k]-out[k], max(o.sc.Servers[s].CPU-used[s], 0))
		out[k] += inc
		used[s] += inc
	}
	return out, nil
}
