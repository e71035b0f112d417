package calibrate

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"streamscale/clasp"

	"streamscale/env"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner"
)

// StepController holds every task at High scenario millicores until
// interval At, then at Low: the probe of the actuation delay.
type StepController struct {
	High, Low float64
	At        int
	n         int
	t         int
}

// NewStepController returns the probe for n tasks.
func NewStepController(n int, high, low float64, at int) (*StepController, error) {
	if n < 1 || !(high > 0) || !(low > 0) || at < 1 {
		return nil, fmt.Errorf("calibrate: step probe of %d tasks %v → %v at %d, want n ≥ 1, allocations > 0, at ≥ 1", n, high, low, at)
	}
	return &StepController{High: high, Low: low, At: at, n: n}, nil
}

// Reset implements agents.Controller.
func (s *StepController) Reset(uint64) error { s.t = 0; return nil }

// Act implements agents.Controller: decision t (0 is the initial one)
// sets the allocation of interval t.
func (s *StepController) Act(env.Observation) (env.Action, error) {
	v := s.High
	if s.t >= s.At {
		v = s.Low
	}
	s.t++
	a := env.Action{Targets: make([]float64, s.n)}
	for k := range a.Targets {
		a.Targets[k] = v
	}
	return a, nil
}

// OperatorCost is one operator's measured cost in a calibration run.
type OperatorCost struct {
	Operator string `json:"operator"`
	// CPUUSPerEvent is the CPU time per execution, µs: Σ CPU / Σ
	// executions over the intervals measured; CV the coefficient of
	// variation of the per-interval values (interval-to-interval, not
	// per event: the workers report sums).
	CPUUSPerEvent float64 `json:"cpu_us_per_event"`
	CV            float64 `json:"cv"`
	// DelayMS is the mean delay at the operator, enqueue → execution
	// finished (per hop), ms, execution-weighted.
	DelayMS   float64 `json:"delay_ms"`
	Intervals int     `json:"intervals"`
	// ExecsPerInterval is the mean executions per measured interval.
	ExecsPerInterval float64 `json:"execs_per_interval"`
	// EmptyShare is the share of the measured intervals whose report
	// showed the operator's receiving queue empty (summed over workers):
	// a batching queue is reported as a snapshot, empty or holding part
	// of a batch (env.HopPoint.Empty). nil in files written before it.
	EmptyShare *float64 `json:"empty_share,omitempty"`
}

// Recorder accumulates the workers' reports of a probe run.
type Recorder struct {
	names []string
	// per operator: Σ cpu s, Σ execs, Σ delay×execs, per-interval costs
	cpu, execs, delay []float64
	// per operator: Σ executions in the intervals (not rates)
	iexecs []float64
	// per operator: measured intervals with a report, and those whose
	// reported queue was empty
	qints, qempty []float64
	per           [][]float64
	// Millicores reported per interval (operator 0, worker-summed), for
	// the actuation delay.
	Reported []int
	// IntervalS is the interval length, s (for ExecsPerInterval; 0:
	// unknown).
	IntervalS float64
	// Per operator and interval, the CPU used (cores), the allotted
	// cores (millicores/1000) and the executions per second, summed over
	// workers: the quota enforcement and the cost per event in any phase.
	Used, Allotted, Rate [][]float64
}

// NewRecorder returns an accumulator for the operators named.
func NewRecorder(names []string) *Recorder {
	n := len(names)
	return &Recorder{names: names, cpu: make([]float64, n), execs: make([]float64, n), delay: make([]float64, n), per: make([][]float64, n), iexecs: make([]float64, n),
		qints: make([]float64, n), qempty: make([]float64, n)}
}

// Tap records one interval (Config.Tap): costs and delays from the
// intervals in [from, to) (the warm-up and the throttled phase left out);
// the reported allocation from every interval.
func (c *Recorder) Tap(from, to int) func(int, []planner.TaskObs) {
	return func(step int, tasks []planner.TaskObs) {
		mc := 0
		used, allot := make([]float64, len(c.names)), make([]float64, len(c.names))
		cpu := make([]float64, len(c.names))
		ex := make([]float64, len(c.names))
		queue := make([]float64, len(c.names))
		seen := make([]bool, len(c.names))
		for _, t := range tasks {
			if t.Op < 0 || t.Op >= len(c.names) {
				continue
			}
			queue[t.Op] += t.Queue
			seen[t.Op] = true
			if t.Op == 0 {
				mc += t.Millicores
			}
			cpu[t.Op] += t.CPUCores
			ex[t.Op] += t.Throughput
			used[t.Op] += t.CPUCores
			allot[t.Op] += float64(t.Millicores) / 1000
			if step >= from && step < to {
				c.delay[t.Op] += t.LatencyMS * t.Throughput
			}
		}
		c.Reported = append(c.Reported, mc)
		if c.Used == nil {
			c.Used, c.Allotted, c.Rate = make([][]float64, len(c.names)), make([][]float64, len(c.names)), make([][]float64, len(c.names))
		}
		for o := range c.names {
			c.Used[o], c.Allotted[o], c.Rate[o] = append(c.Used[o], used[o]), append(c.Allotted[o], allot[o]), append(c.Rate[o], ex[o])
		}
		if step < from || step >= to {
			return
		}
		for o := range c.names {
			if seen[o] {
				c.qints[o]++
				if queue[o] == 0 {
					c.qempty[o]++
				}
			}
			c.cpu[o] += cpu[o]
			c.execs[o] += ex[o]
			if ex[o] > 0 {
				c.per[o] = append(c.per[o], cpu[o]/ex[o]*1e6)
				c.iexecs[o] += ex[o] * c.IntervalS
			}
		}
	}
}

// Costs returns every operator's cost.
func (c *Recorder) Costs() []OperatorCost {
	out := make([]OperatorCost, len(c.names))
	for o, name := range c.names {
		oc := OperatorCost{Operator: name, Intervals: len(c.per[o])}
		if c.execs[o] > 0 {
			oc.CPUUSPerEvent = c.cpu[o] / c.execs[o] * 1e6
			oc.DelayMS = c.delay[o] / c.execs[o]
		}
		if oc.Intervals > 0 {
			oc.ExecsPerInterval = c.iexecs[o] / float64(oc.Intervals)
		}
		if c.qints[o] > 0 {
			e := c.qempty[o] / c.qints[o]
			oc.EmptyShare = &e
		}
		if n := len(c.per[o]); n > 1 {
			mean, ss := 0.0, 0.0
			for _, x := range c.per[o] {
				mean += x
			}
			mean /= float64(n)
			for _, x := range c.per[o] {
				ss += (x - mean) * (x - mean)
			}
			if mean > 0 {
				oc.CV = math.Sqrt(ss/float64(n-1)) / mean
			}
		}
		out[o] = oc
	}
	return out
}

// ActuationIntervals returns how many intervals after interval at the
// workers first reported want millicores for operator 0 (-1: never).
func (c *Recorder) ActuationIntervals(at, want int) int {
	for i := at; i < len(c.Reported); i++ {
		if c.Reported[i] == want {
			return i - at
		}
	}
	return -1
}

// Enforcement returns operator op's Σ CPU used / Σ CPU allotted over the
// intervals in [from, to) (for a saturated operator, 1: the quota binds
// exactly; above 1: it overdrew the quota; below: it was held back beyond
// it), and the intervals counted; ratio 0 with none.
func (c *Recorder) Enforcement(op, from, to int) (float64, int) {
	if op < 0 || op >= len(c.Used) {
		return 0, 0
	}
	u, a, n := 0.0, 0.0, 0
	for i := max(from, 0); i < min(to, len(c.Used[op])); i++ {
		u, a, n = u+c.Used[op][i], a+c.Allotted[op][i], n+1
	}
	if a == 0 {
		return 0, 0
	}
	return u / a, n
}

// PhaseCost returns operator op's CPU per event over the intervals in
// [from, to), µs (Σ CPU used / Σ executions), the share of the allotted
// CPU it used there (Σ used / Σ allotted: near 1 when the quota bound)
// and the intervals counted; zeros with no executions.
func (c *Recorder) PhaseCost(op, from, to int) (costUS, used float64, n int) {
	if op < 0 || op >= len(c.Used) {
		return 0, 0, 0
	}
	u, a, r := 0.0, 0.0, 0.0
	for i := max(from, 0); i < min(to, len(c.Used[op])); i++ {
		u, a, r, n = u+c.Used[op][i], a+c.Allotted[op][i], r+c.Rate[op][i], n+1
	}
	if r == 0 || a == 0 {
		return 0, 0, 0
	}
	return u / r * 1e6, u / a, n
}

// ServiceDist is one operator's per-execution CPU time measured in
// process (ServiceTimes).
type ServiceDist struct {
	Operator string  `json:"operator"`
	N        int     `json:"n"`        // executions kept
	MeanUS   float64 `json:"mean_us"`  // mean, µs
	CV       float64 `json:"cv"`       // coefficient of variation (sample sd / mean)
	P50US    float64 `json:"p50_us"`   // median, µs
	P99US    float64 `json:"p99_us"`   // 99th percentile, µs
	Outliers int     `json:"outliers"` // executions above OutlierFactor × the median, dropped
}

// OutlierFactor: ServiceTimes drops executions longer than this many
// medians (a preemption or garbage collection on the shared host, not the
// operator's work).
const OutlierFactor = 50

// ServiceTimes runs n inputs of app's source (seed) through its operators
// in this process, one record at a time in FIFO order with an in-memory
// keyed state, and times every Process call (monotonic wall clock, on one
// goroutine: the per-execution CPU time while nothing preempts it). The
// workers report sums only; this gives the per-event distribution. A
// record an operator fails on is not timed.
func ServiceTimes(app ops.App, seed uint64, n int) ([]ServiceDist, error) {
	if n < 1 || n > 1e6 {
		return nil, fmt.Errorf("calibrate: service-time probe of %d inputs, want 1..1e6", n)
	}
	nOps := len(app.Operators)
	insts := make([]ops.Operator, nOps)
	states := make([]memState, nOps)
	for o, s := range app.Operators {
		insts[o], states[o] = s.New(), memState{}
	}
	times := make([][]float64, nOps)
	// Inputs go to every operator without an incoming edge, as the
	// planner sends them.
	hasIn := make([]bool, nOps)
	for _, e := range app.Edges {
		hasIn[e[1]] = true
	}
	var sources []int
	for o, h := range hasIn {
		if !h {
			sources = append(sources, o)
		}
	}
	src := app.NewSource(seed)
	em := &fifoEmitter{}
	var buf []byte
	for range n {
		var key uint64
		key, buf = src.Next(buf)
		for _, o := range sources {
			em.q = append(em.q, pending{op: o, rec: ops.Record{Key: key, Payload: slices.Clone(buf)}})
		}
		for len(em.q) > 0 {
			p := em.q[0]
			em.q = em.q[1:]
			em.from = p.op
			start := time.Now()
			err := insts[p.op].Process(p.rec, states[p.op], em)
			d := time.Since(start)
			if err == nil {
				times[p.op] = append(times[p.op], float64(d.Nanoseconds())/1e3)
			}
		}
	}
	out := make([]ServiceDist, nOps)
	for o, s := range app.Operators {
		out[o] = distOf(s.Name, times[o])
	}
	return out, nil
}

// distOf summarises one operator's execution times, µs.
func distOf(name string, xs []float64) ServiceDist {
	d := ServiceDist{Operator: name}
	if len(xs) == 0 {
		return d
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	kept := s
	if med > 0 {
		cut := sort.SearchFloat64s(s, OutlierFactor*med+1e-12)
		kept = s[:max(cut, 1)]
	}
	d.Outliers = len(s) - len(kept)
	d.N = len(kept)
	mean, ss := 0.0, 0.0
	for _, x := range kept {
		mean += x
	}
	mean /= float64(len(kept))
	for _, x := range kept {
		ss += (x - mean) * (x - mean)
	}
	d.MeanUS, d.P50US, d.P99US = mean, kept[len(kept)/2], kept[min(len(kept)-1, len(kept)*99/100)]
	if len(kept) > 1 && mean > 0 {
		d.CV = math.Sqrt(ss/float64(len(kept)-1)) / mean
	}
	return d
}

type pending struct {
	op  int
	rec ops.Record
}

// fifoEmitter queues every emitted record (payload copied) for its
// successor operator.
type fifoEmitter struct {
	q    []pending
	from int
}

func (e *fifoEmitter) Emit(to int, key uint64, payload []byte) {
	e.q = append(e.q, pending{op: to, rec: ops.Record{Key: key, Payload: slices.Clone(payload)}})
}

// memState is an in-memory ops.State.
type memState map[uint64][]byte

func (m memState) Get(k uint64) ([]byte, bool) { v, ok := m[k]; return v, ok }
func (m memState) Put(k uint64, v []byte)      { m[k] = v }
func (m memState) Delete(k uint64)             { delete(m, k) }

// CostEstimate is the result of the earlier cost probe (a regression of
// Eq. 1 over saturated worker-seconds with clasp.Estimator, replaced by
// ProbeCosts because it was not identifiable on this runtime): kept so
// that calibration.json files that hold one still decode.
type CostEstimate struct {
	// Model is the RLS estimate (clasp.Estimator.Raw) of α, β, γ (µs)
	// and W (µs/s); Smoothed is W̄, the estimator's EWMA.
	Model    clasp.CostModel `json:"model"`
	Smoothed float64         `json:"w_bar_us_per_s"`
	// Samples is the saturated worker-seconds absorbed, per mix.
	Samples []int `json:"samples"`
	// Mixes are the mean (R^l, R^r, δ) of each mix's samples.
	Mixes []CostMixObs `json:"mixes"`
}

// CostMixObs is the mean request mix of one probe run's samples.
type CostMixObs struct {
	Name        string  `json:"name"`
	LocalRate   float64 `json:"local_rate"`
	RemoteRate  float64 `json:"remote_rate"`
	RemoteDests float64 `json:"remote_dests"`
	ExecWorkUS  float64 `json:"exec_work_us_per_s"`
}

// CostSaturationS is the queueing delay, s, above which a worker counts
// as saturated in the cost probe's budget run (CLASP §4.1's delay
// criterion, clasp.SaturationConfig.DelayS): (Q_w + Q_p) / Σ_o N_{w,o} >
// CostSaturationS, the planner's queue Q_p included (it holds what a
// saturated worker pushes back).
const CostSaturationS = 0.5

// TaskHop is the dispatch latency after one forwarding task of the
// simulator's profile, derived from the operators' measured delays
// (HopsAfter): the value of env.Physics.HopMSByTask.
type TaskHop struct {
	Task string  `json:"task"`
	MS   float64 `json:"ms"`
	// From lists the measured operator delays it sums, e.g.
	// "RangeFilter 1.68", "SenMLParse 11.89 (input)".
	From []string `json:"from"`
}

// HopsAfter maps the operators' measured mean delays (OperatorCost.DelayMS,
// enqueue at the operator's queue → execution finished, whose batching
// wait — a queue dispatched at 64 records or when its oldest is 20 ms old
// — is paid on the receiving side) to the simulator's dispatch latency
// after each forwarding task (env.Physics.HopMSByTask, paid on the way to
// the successors). tasks are the profile's task names (the simulator's
// application); operators are matched to them by name.
//
//   - After task k: the mean of the delays at k's successors that are
//     tasks of the profile, weighted by their executions (each successor
//     receives every record k emits in pred and etl, so these are the
//     records k dispatches).
//   - The simulator has no hop before a source task and no place for
//     operators the profile lacks (etl's Sink, which joins the branches
//     before completion), yet every input waits at both once: with exactly
//     one source operator, its own delay and every such operator's delay
//     are added to the hop after it, so each path's sum of hops is the sum
//     of the live delays along it. With several sources they are left out.
//
// Operators without executions (no delay measured) contribute nothing; a
// forwarding task none of whose successors executed gets no entry (HopMS
// applies). The result is in the application's operator order.
func HopsAfter(app ops.App, costs []OperatorCost, tasks []string) ([]TaskHop, error) {
	if len(costs) != len(app.Operators) {
		return nil, fmt.Errorf("calibrate: %d operator costs for the %d operators of %s", len(costs), len(app.Operators), app.Name)
	}
	isTask := make([]bool, len(app.Operators))
	hasIn := make([]bool, len(app.Operators))
	for o, s := range app.Operators {
		isTask[o] = slices.Contains(tasks, s.Name)
		if costs[o].Operator != s.Name {
			return nil, fmt.Errorf("calibrate: cost %d is of %q, want operator %q of %s", o, costs[o].Operator, s.Name, app.Name)
		}
	}
	for _, e := range app.Edges {
		hasIn[e[1]] = true
	}
	measured := func(o int) bool {
		return costs[o].ExecsPerInterval > 0 && costs[o].DelayMS >= 0 && !math.IsInf(costs[o].DelayMS, 0)
	}
	label := func(o int, what string) string {
		return fmt.Sprintf("%s %.2f%s", app.Operators[o].Name, costs[o].DelayMS, what)
	}
	var out []TaskHop
	at := make([]int, len(app.Operators)) // index in out, or -1
	for o := range app.Operators {
		at[o] = -1
		if !isTask[o] {
			continue
		}
		var num, den float64
		var from []string
		for _, e := range app.Edges {
			if s := e[1]; e[0] == o && isTask[s] && measured(s) {
				w := costs[s].ExecsPerInterval
				num += w * costs[s].DelayMS
				den += w
				from = append(from, label(s, ""))
			}
		}
		if den > 0 {
			at[o] = len(out)
			out = append(out, TaskHop{Task: app.Operators[o].Name, MS: num / den, From: from})
		}
	}
	var srcs []int
	for o := range app.Operators {
		if !hasIn[o] {
			srcs = append(srcs, o)
		}
	}
	if len(srcs) == 1 && at[srcs[0]] >= 0 {
		h := &out[at[srcs[0]]]
		if measured(srcs[0]) {
			h.MS += costs[srcs[0]].DelayMS
			h.From = append(h.From, label(srcs[0], " (input)"))
		}
		for o := range app.Operators {
			if !isTask[o] && measured(o) {
				h.MS += costs[o].DelayMS
				h.From = append(h.From, label(o, " (not a task of the profile)"))
			}
		}
	}
	return out, nil
}
