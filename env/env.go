package env

import (
	"errors"
	"fmt"
	"math"
)

// Info reports what happened during one step. Its slices are buffers owned
// by the Env and overwritten by the next Step or Reset; copy what you keep.
type Info struct {
	Step        int     // index of the step just simulated (0-based), or -1 after Reset
	Seed        uint64  // seed passed to Reset
	OfferedRate float64 // events/s entering the sources during the step (0 after Reset)
	// NextOfferedRate is the rate the next step will see at the sources,
	// events/s: what a planner at the ingress measures before deciding
	// (0 once the episode is over).
	NextOfferedRate float64
	Throughput      float64   // sink deliveries per second, in source-message equivalents
	SinkEvents      float64   // events delivered to the sink during the step
	P95MS           float64   // p95 end-to-end latency, ms
	MeanMS          float64   // mean end-to-end latency, ms
	Completed       bool      // whether any event reached the sink
	Violated        bool      // whether P95MS exceeded the SLO
	TotalCPU        float64   // Σ applied allocation, millicores
	InFlight        float64   // events on network links or propagating
	Requested       []float64 // requested allocation per task after clipping, millicores
	Applied         []float64 // applied allocation per task after server projection, millicores
	Queue           []float64 // events waiting at each task
	Reward          RewardTerms

	// Workers holds, per server, the metrics of CLASP's Table 2 for the
	// step (rates per second): what horizontal controllers observe. It is
	// filled in horizontal scenarios (replicas, request costs or shared
	// CPU) and nil otherwise; Env.WorkerMetrics computes it for any.
	Workers []WorkerMetrics
	// PlannerQueue is Q_p: events waiting at the source tasks.
	PlannerQueue float64
	// Migration is what the step's replica plan moved (zero without one).
	Migration Migration
	// StateMB is each task's state at the end of the step, MB (grows with
	// the distinct keys seen, Task.Keys).
	StateMB []float64
	// Plan is the replica plan in force after the step (Plan[k] lists
	// task k's replicas): Config.Replicas, one replica per task on
	// Config.Placement, or the last plan an Action applied.
	Plan [][]Replica
}

// StepResult is what one Step returns. Obs and Info hold the Env's
// buffers, valid until the next Step or Reset.
type StepResult struct {
	Obs    Observation
	Reward float64 // Info.Reward.Total
	// Terminated is always false: the scenarios have no terminal state.
	Terminated bool
	// Truncated is true on the last step of the episode (the trace's
	// end); the next Step returns ErrEpisodeOver until Reset.
	Truncated bool
	Info      Info
}

// WorkerMetrics are one server's metrics for a step (CLASP, Table 2).
type WorkerMetrics struct {
	Queue              float64   // Q_w: events waiting at the server's replicas (not those its cap on requests in flight holds upstream)
	LocalRequests      float64   // R^l_w: requests sent to replicas on the same server, per second
	RemoteRequests     float64   // R^r_w: requests sent to other servers, per second
	RemoteDestinations int       // δ_w: distinct remote servers requests were sent to
	Executions         []float64 // N_{w,o}: executions per second of each task on this server
	ExecUS             []float64 // τ̄_{w,o}: CPU work of one execution of each task here, µs (excluding requests)
	EdgeRequests       []float64 // E^{o→o_s}_w: requests per second sent on each app edge from this server
	LoadUS             float64   // W_w = Σ_o N·τ̄ + α·R^l + β·R^r + γ·δ, µs of work per second
}

// Env is one stream-processing scenario with Gymnasium semantics. It is a
// deterministic state machine: no clock, no goroutines, no I/O. It is not
// safe for concurrent use; VecEnv runs many in parallel.
type Env struct {
	cfg    Config
	topo   topology
	core   simCore
	spaces Spaces
	deltas [5]float64 // the action set in force (Config.Deltas)
	// utilSet is Config.ActionUtilization (zero: the choices are deltas).
	// cpuRing holds, for such a set, one row of allocations per row of the
	// metrics ring, in step with it, so that the reported row's allocation
	// (the one in force when its offered load was measured) is
	// reportedCPU; the choices size against that load times it.
	utilSet [5]float64
	cpuRing []float64
	n, m    int
	plan    [][]Replica // the replica plan in force (Info.Plan)

	hostOf   []int     // primary server of each task (its largest-share replica)
	primary  []int     // replica index of each task's primary replica
	mipsPerM []float64 // MIPS per millicore of each replica's server
	reqUS    []float64 // request-sending work per input event of each replica, µs
	gammaUS  []float64 // destination-holding work per second of each replica, µs
	remote   []int     // distinct remote destination servers of each server (δ_w)
	gain     float64   // expected sink events per source event
	taskGain []float64 // expected input events of each task per source event
	// processed counts each task's input events since Reset (its state
	// grows with them, Task.StateAt).
	processed []float64
	// remoteFrom and remoteTo bound, per replica, the transfer of the state
	// it gains under StateMigration.RemoteAccess (remoteTo ≤ remoteFrom:
	// none); meanwhile its stateful executions read state remotely.
	remoteFrom, remoteTo []float64
	remoteSteps          int // steps whose service times the windows still affect
	// arrive is, per replica, the EWMA (weight ½) of the events it received
	// per step, the shared-CPU split's arrival forecast; −1 until its
	// first step.
	arrive []float64
	// Worker physics (Config.Worker): per replica the arrival forecast of
	// the coming step (events/s) and per server the executions in flight
	// it implies (Σ arrivals × execution time).
	execIn, busy []float64
	// held is, per replica, the waiting events its worker's cap on
	// requests in flight keeps upstream (Config.Worker.MaxInFlight):
	// they are not part of the replica's demand in the split.
	held []float64

	memUsed []float64 // per server

	shared           []float64 // shared-CPU scenarios: each replica's service millicores this step
	svc              []float64 // each replica's service time this step, seconds
	svcCPU           []float64 // each replica's task allocation when svc was computed
	workers          []WorkerMetrics
	taskCount        []float64 // replicas with a share on each server
	replanned        bool      // the replica plan differs from the Config's
	basePlan         [][]Replica
	migration        Migration
	alloc, req, next []float64
	// desired is the allocation the controller asked for (projected onto
	// the servers); alloc is the one in force, which follows desired
	// Physics.ActuationDelaySteps steps later through the ring pend
	// (pendN entries from pendHead, n values each).
	desired, pend   []float64
	pendHead, pendN int
	ph              *physicsRun
	phys            Physics // the episode's physics (Config.Physics or its draw)
	st              stepStats
	obs             Observation
	info            Info

	// Physics.HopCurve: the curve and, per task, the step's batching wait
	// (seconds); nil without a curve (the cores interpolate the hops).
	curve *curveRun
	waits []float64
	// empty is, per task, the step's share of reports with an empty
	// receiving queue (HopPoint.Empty; NaN: not listed); nil when the
	// curve lists none.
	empty []float64

	started, over bool
	t             int
	prevP95       float64
	prevViolated  bool
	violHist      [10]bool
	prevQueue     []float64
	serverCPU     []float64
	rin           rewardInput
	util          []float64
	changed       []float64

	// The observation's measurements (Physics.MetricNoise and
	// MetricLagSteps): the exact raw metrics of the step and the
	// observer's ring and noise stream.
	raw []float64
	met *metrics
	// obsIn is the observation builder's input, scratch.
	obsIn ObsInputs
	// press is each task's reward pressure in the last interval (what a
	// controller saw when it chose this step's action); pressNow is
	// this interval's, scratch.
	press, pressNow []taskPressure
}

// ErrEpisodeOver is returned by Step after truncation, until Reset.
var ErrEpisodeOver = errors.New("env: episode is over; call Reset")

// ErrNotReset is returned by Step before the first Reset.
var ErrNotReset = errors.New("env: Step before Reset")

// New validates cfg and builds the environment.
func New(cfg Config) (*Env, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	cfg.App.Tasks = append([]Task(nil), cfg.App.Tasks...)
	cfg.Placement = append([]int(nil), cfg.Placement...)
	cfg.Servers = append([]Server(nil), cfg.Servers...)
	e := &Env{cfg: cfg, n: len(cfg.App.Tasks), m: len(cfg.Servers)}
	if cfg.Replicas != nil {
		e.cfg.Replicas = clonePlan(cfg.Replicas)
		e.basePlan = clonePlan(cfg.Replicas)
	}
	e.topo = buildTopology(&e.cfg)
	e.ph = newPhysicsRun(cfg.Physics, e.m, cfg.SlicesPerStep)
	switch cfg.Mode {
	case PerEvent:
		e.setCore(newPerEvent(&e.cfg, e.topo))
	default:
		e.setCore(newFluid(&e.cfg, e.topo))
	}
	e.spaces = makeSpaces(e.n, e.m, cfg.Deltas(), cfg.ActionUtilization)
	e.deltas = cfg.Deltas()
	e.utilSet = cfg.ActionUtilization
	e.rebind()
	e.taskGain, e.gain = reach(e.cfg.App, e.topo.order)
	mk := func() []float64 { return make([]float64, e.n) }
	e.alloc, e.req, e.next, e.desired = mk(), mk(), mk(), mk()
	maxDelay := cfg.Physics.ActuationDelaySteps
	if cfg.Randomize != nil {
		cfg.Randomize = new(*cfg.Randomize)
		e.cfg.Randomize = cfg.Randomize
		maxDelay = max(maxDelay, cfg.Randomize.ActuationDelaySteps[1])
	}
	e.phys = cfg.Physics
	e.pend = make([]float64, e.n*maxDelay)
	e.prevQueue, e.util, e.changed = mk(), mk(), mk()
	e.raw, e.met = make([]float64, metricWidth(e.n)), newMetrics(cfg.Physics, e.n)
	if e.utilSet != ([5]float64{}) {
		e.cpuRing = make([]float64, e.met.rows*e.n)
	}
	e.press, e.pressNow = make([]taskPressure, e.n), make([]taskPressure, e.n)
	e.serverCPU = make([]float64, e.m)
	e.st.tasks = make([]taskStats, e.n)
	e.obs = Observation{
		App: make([]float64, AppFeatures), Server: make([]float64, e.m*ServerFeatures), Task: make([]float64, e.n*TaskFeatures),
	}
	e.obsIn = ObsInputs{Tasks: make([]TaskMeasures, e.n), Servers: make([]ServerMeasures, e.m)}
	e.info.Requested, e.info.Applied, e.info.Queue, e.info.StateMB = mk(), mk(), mk(), mk()
	e.processed = mk()
	if e.curve = e.cfg.Physics.HopCurve.resolve(e.cfg.App); e.curve != nil {
		e.waits = mk()
		if e.curve.empty != nil {
			e.empty = mk()
		}
	}
	e.workers = make([]WorkerMetrics, e.m)
	for w := range e.workers {
		e.workers[w] = WorkerMetrics{Executions: mk(), ExecUS: mk(), EdgeRequests: make([]float64, len(e.cfg.App.Edges))}
	}
	return e, nil
}

// reach returns the expected number of events each task receives per
// source event, and the expected sink deliveries per source event.
func reach(a App, order []int) ([]float64, float64) {
	r := make([]float64, len(a.Tasks))
	for _, k := range a.Sources {
		r[k]++
	}
	for _, u := range order {
		for _, e := range a.Edges {
			if e.From == u {
				r[e.To] += r[u] * a.Tasks[u].Selectivity
			}
		}
	}
	g := 0.0
	for _, k := range a.Sinks {
		g += r[k] * a.Tasks[k].Selectivity
	}
	return r, g
}

// Config returns the validated configuration (with defaults filled in).
func (e *Env) Config() Config { return e.cfg }

// Spaces describes the observation and action spaces.
func (e *Env) Spaces() Spaces { return e.spaces }

// NumTasks is the number of tasks (the length of an action).
func (e *Env) NumTasks() int { return e.n }

// SLOMS is the application's SLO on p95 latency, milliseconds.
func (e *Env) SLOMS() float64 { return e.cfg.App.SLOMS }

// Allocation returns a copy of the current per-task CPU allocation.
func (e *Env) Allocation() []float64 { return append([]float64(nil), e.alloc...) }

// StepIndex is the number of steps taken in the current episode.
func (e *Env) StepIndex() int { return e.t }

// Reset starts a new episode: queues empty, every task at InitialCPU, the
// trace at its start. The simulator has no randomness of its own; seed is
// recorded in Info so controllers and wrappers can derive theirs. The
// returned observation is the Env's buffer, valid until the next call.
func (e *Env) Reset(seed uint64) (Observation, Info, error) {
	if e.replanned {
		e.cfg.Replicas = clonePlan(e.basePlan)
		if e.basePlan == nil {
			e.cfg.Replicas = nil
		}
		e.topo = buildTopology(&e.cfg)
		e.setCore(newFluid(&e.cfg, e.topo))
		e.rebind()
		e.replanned = false
	}
	e.migration = Migration{}
	e.randomize(seed)
	e.ph.reset(seed)
	e.core.reset()
	e.pendHead, e.pendN = 0, 0
	for k := range e.alloc {
		e.alloc[k] = e.cfg.InitialCPU
		e.desired[k] = e.cfg.InitialCPU
		e.prevQueue[k] = 0
	}
	clear(e.st.replicas)
	clear(e.processed)
	clear(e.waits)
	clear(e.empty)
	clear(e.remoteFrom)
	clear(e.remoteTo)
	for r := range e.arrive {
		e.arrive[r] = -1
	}
	e.remoteSteps = 0
	e.t, e.started, e.over = 0, true, false
	if e.cfg.SharedCPU {
		e.shareCPU()
	}
	e.applyService()
	e.prevP95, e.prevViolated = 0, false
	clear(e.press)
	e.violHist = [10]bool{}
	for i := range e.st.tasks {
		e.st.tasks[i] = taskStats{}
	}
	e.st.emitted, e.st.sinkEvents, e.st.mean, e.st.p95, e.st.completed, e.st.inFlight = 0, 0, 0, 0, false, 0
	e.info = Info{Step: -1, Seed: seed, Requested: e.info.Requested, Applied: e.info.Applied, Queue: e.info.Queue, StateMB: e.info.StateMB}
	e.info.NextOfferedRate = e.stepRate()
	e.info.Plan = e.plan
	for k, t := range e.cfg.App.Tasks {
		e.info.StateMB[k] = t.StateAt(0)
	}
	if e.horizontal() {
		e.info.Workers = e.WorkerMetrics()
	}
	copy(e.info.Requested, e.alloc)
	copy(e.info.Applied, e.alloc)
	clear(e.info.Queue)
	e.info.TotalCPU = sum(e.alloc)
	clear(e.changed)
	clear(e.util)
	e.met.reset(seed)
	e.fillObservation(0, 0, false)
	return e.obs, e.info, nil
}

// ValidateAction reports whether a is a valid action for this environment.
func (e *Env) ValidateAction(a Action) error {
	set := 0
	for _, b := range []bool{a.Choices != nil, a.Targets != nil, a.Replicas != nil, a.Hold} {
		if b {
			set++
		}
	}
	switch {
	case set > 1:
		return fmt.Errorf("env: action sets more than one of choices, targets, replicas and hold")
	case e.cfg.SharedCPU && (a.Choices != nil || a.Targets != nil):
		return fmt.Errorf("env: servers share their CPU in this scenario; act with a replica plan or hold")
	case a.Hold:
	case a.Replicas != nil:
		if e.cfg.Mode != Fluid {
			return fmt.Errorf("env: replica plans need the fluid core")
		}
		if err := e.cfg.validateReplicas(a.Replicas); err != nil {
			return err
		}
		if !e.cfg.SharedCPU {
			if err := e.planFits(a.Replicas); err != nil {
				return err
			}
		}
	case a.Choices != nil:
		if len(a.Choices) != e.n {
			return fmt.Errorf("env: action has %d entries, want %d", len(a.Choices), e.n)
		}
		for k, c := range a.Choices {
			if c < 0 || c >= len(e.deltas) {
				return fmt.Errorf("env: action entry %d (task %s) is %d, want 0..%d", k, e.cfg.App.Tasks[k].Name, c, len(e.deltas)-1)
			}
		}
	case a.Targets != nil:
		if len(a.Targets) != e.n {
			return fmt.Errorf("env: target allocation has %d entries, want %d", len(a.Targets), e.n)
		}
		for k, v := range a.Targets {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("env: target allocation entry %d (task %s) is %v", k, e.cfg.App.Tasks[k].Name, v)
			}
		}
	default:
		return fmt.Errorf("env: empty action")
	}
	return nil
}

// Step applies a and simulates one second. a is one of: Choices (the
// MultiDiscrete action, one index per task into the action set,
// Config.Deltas), Targets
// (an absolute allocation per task, millicores, for controllers that
// think in allocations; clipped and projected the same way), Replicas (a
// new replica plan, for horizontal controllers) or Hold. An invalid
// action returns an error and changes nothing.
func (e *Env) Step(a Action) (StepResult, error) {
	if !e.started {
		return StepResult{}, ErrNotReset
	}
	if e.over {
		return StepResult{}, ErrEpisodeOver
	}
	if err := e.ValidateAction(a); err != nil {
		return StepResult{}, err
	}
	lo, hi := e.cfg.MinCPU, e.cfg.MaxCPU
	if a.Replicas != nil {
		e.replan(a.Replicas)
	}
	for k := range e.req {
		switch {
		case a.Choices != nil && e.utilSet != [5]float64{}:
			e.req[k] = e.desired[k]
			if u := e.utilSet[a.Choices[k]]; u != 0 {
				rho := min(e.met.cur[k*perTask+mRho], rhoHigh) // as TaskDemandPerCPU reports it
				e.req[k] = clip(UtilizationTarget(e.reportedCPU(k), rho, u), lo, hi)
			}
		case a.Choices != nil:
			e.req[k] = clip(e.desired[k]+e.deltas[a.Choices[k]], lo, hi)
		case a.Targets != nil:
			e.req[k] = clip(a.Targets[k], lo, hi)
		default:
			e.req[k] = e.desired[k]
		}
	}
	e.ph.drawJitter()
	if e.cfg.SharedCPU {
		e.shareCPU()
		copy(e.next, e.alloc)
		copy(e.desired, e.alloc)
		clear(e.changed)
	} else {
		e.project(e.req, e.next)
		for k := range e.desired {
			e.changed[k] = e.next[k] - e.desired[k]
		}
		copy(e.desired, e.next)
		e.actuate(e.next)
	}
	copy(e.alloc, e.next)
	if e.cfg.SharedCPU || a.Replicas != nil || e.remoteSteps > 0 || e.cfg.Physics.CapacityJitter > 0 {
		e.applyService()
		e.remoteSteps = max(0, e.remoteSteps-1)
	} else {
		// Only the tasks whose allocation changed need new service times.
		for k := range e.changed {
			if e.svcCPU[e.primary[k]] != e.alloc[k] {
				for _, r := range e.topo.ofTask[k] {
					e.setService(r)
				}
			}
		}
	}

	rate := e.stepRate()
	if e.curve != nil {
		e.curve.at(rate, nil, nil, e.waits, e.empty)
	}
	e.core.step(e.t, rate)
	e.core.collect(&e.st)
	sinkCount := e.st.sinkEvents
	L := e.ph.stepLen
	if L != 1 {
		e.st.perSecond(1 / L)
	}
	if e.cfg.SharedCPU { // the split's arrival forecast
		for r, x := range e.st.replicas {
			if e.arrive[r] < 0 {
				e.arrive[r] = x.in
			} else {
				e.arrive[r] = (e.arrive[r] + x.in) / 2
			}
		}
	}

	slo := e.cfg.App.SLOMS / 1000
	p95, mean := e.st.p95, e.st.mean
	if !e.st.completed {
		p95, mean = 0, 0
		if !math.IsInf(e.st.oldest, 1) {
			age := float64(e.t+1)*L - e.st.oldest
			p95, mean = age, age
		}
	}
	violated := p95 > slo
	for k := range e.util {
		e.util[k] = 0
		for _, r := range e.topo.ofTask[k] {
			if x := e.st.replicas[r].in; x > 0 {
				e.util[k] = max(e.util[k], x*e.svc[r])
			}
		}
	}
	prevCPU := 0.0
	for k, ts := range e.st.tasks {
		prevCPU += e.alloc[k] - e.changed[k]
		p := taskPressure{}
		if ts.in > 0 {
			p.deficit = 1 - ts.done/ts.in
		}
		if ts.done > 0 {
			p.delayS = ts.delayW / ts.done
		}
		for _, r := range e.topo.ofTask[k] { // replicas drain in parallel
			p.queueS = max(p.queueS, e.st.replicas[r].queue*e.svc[r])
		}
		e.pressNow[k] = p
	}
	e.rin = rewardInput{
		p95: p95, prevP95: e.prevP95, slo: slo, hasPrev: e.t > 0, violated: violated, prevViolated: e.prevViolated,
		totalCPU: sum(e.alloc), prevCPU: prevCPU, n: e.n, minCPU: lo,
		changed: e.changed, pressure: e.press,
	}
	terms := e.cfg.Reward.compute(e.rin)
	copy(e.press, e.pressNow)

	e.info.Step = e.t
	e.info.OfferedRate = rate
	e.info.SinkEvents = sinkCount
	e.info.Throughput = 0
	if e.gain > 0 {
		e.info.Throughput = e.st.sinkEvents / e.gain
	}
	e.info.P95MS, e.info.MeanMS = p95*1000, mean*1000
	e.info.Completed, e.info.Violated = e.st.completed, violated
	e.info.TotalCPU = e.rin.totalCPU
	e.info.InFlight = e.st.inFlight
	copy(e.info.Requested, e.req)
	copy(e.info.Applied, e.alloc)
	for k := range e.info.Queue {
		e.info.Queue[k] = e.st.tasks[k].queue
		e.processed[k] += e.st.tasks[k].done
		e.info.StateMB[k] = e.cfg.App.Tasks[k].StateAt(e.processed[k])
	}
	e.info.Reward = terms
	e.info.Migration = e.migration
	e.migration = Migration{}
	e.info.Workers = nil
	if e.horizontal() {
		e.info.Workers = e.WorkerMetrics()
	}

	e.fillObservation(p95, mean, true)

	copy(e.violHist[1:], e.violHist[:len(e.violHist)-1])
	e.violHist[0] = violated
	e.prevP95, e.prevViolated = p95, violated
	for k := range e.prevQueue {
		e.prevQueue[k] = e.st.tasks[k].queue
	}
	e.t++
	truncated := e.t >= e.cfg.Steps
	e.over = truncated
	e.info.NextOfferedRate = 0
	if !truncated {
		e.info.NextOfferedRate = e.stepRate()
	}
	e.info.Plan = e.plan
	return StepResult{Obs: e.obs, Reward: terms.Total, Truncated: truncated, Info: e.info}, nil
}

// stepRate is the input rate of the step about to be simulated, events/s
// (0 for a negative or non-finite workload value).
func (e *Env) stepRate() float64 {
	wl := e.cfg.Workload
	rate := wl.Rate((e.cfg.StartOffset + e.t) % wl.Len())
	if !(rate >= 0) || math.IsInf(rate, 0) {
		return 0
	}
	return rate
}

// replicaCPU is replica r's CPU allocation, millicores: its task's
// allocation times the replica's share.
func (e *Env) replicaCPU(r int) float64 {
	if e.cfg.SharedCPU {
		return e.shared[r]
	}
	rep := e.topo.replicas[r]
	return e.alloc[rep.task] * rep.share
}

// shareCPU divides every server's CPU among its replicas in proportion to
// their demand in the coming step — the work queued at them plus the work
// arriving, forecast as the moving average (weight ½) of what they received
// per step or, for a replica that has not run a step yet (a new
// deployment), what the coming step's input rate sends it in steady state
// (the task's events per source event times the replica's share), plus the γ
// work of the remote destinations they hold — and sets each task's
// allocation to the sum over its replicas. The forecast makes the split
// follow the flow the moment a plan is deployed or the rate changes, as a
// worker's executor slots do, instead of one step behind. Replicas with
// share 0 get none.
//
// A replica's service CPU (what its events run on) is its proportional
// share C·d/D of the server's CPU C when the demand D exceeds C; when the
// server is underloaded it is C − D + d, everything the other replicas leave
// idle, since executor slots are work conserving — capped at the whole
// cores the replica's demand d keeps busy (at least one), as each event runs
// on one core: an event on a lightly loaded worker runs at full core speed
// instead of at its replica's average rate. The allocation reported per task (Info.Applied, TotalCPU)
// is the proportional share in both cases, so a server's reported CPU sums
// to C: the whole worker is reserved.
func (e *Env) shareCPU() {
	const eps = 1e-9
	clear(e.serverCPU) // Σ demand per server
	rate := e.stepRate()
	demand := func(r int) float64 {
		rep := e.topo.replicas[r]
		if rep.share == 0 {
			return 0
		}
		x := e.st.replicas[r]
		work := e.cfg.App.Tasks[rep.task].MIPSPerEvent/(e.mipsPerM[r]*1000) + e.reqUS[r]*1e-6
		arrive := e.arrive[r]
		if arrive < 0 {
			arrive = rate * e.taskGain[rep.task] * rep.share
		}
		// The γ work of the destinations it holds is demand too; what
		// waits upstream of a worker's cap is not.
		return (x.queue-e.held[r]+arrive)*work + e.gammaUS[r]*1e-6 + eps
	}
	if w := e.cfg.Worker; w.On {
		clear(e.busy)
		for r, rep := range e.topo.replicas {
			e.execIn[r] = 0
			if rep.share == 0 {
				continue
			}
			in := e.arrive[r]
			if in < 0 {
				in = rate * e.taskGain[rep.task] * rep.share
			}
			e.execIn[r] = in
			e.busy[rep.server] += in * (e.cfg.App.Tasks[rep.task].MIPSPerEvent/(e.mipsPerM[r]*1000) + e.reqUS[r]*1e-6)
		}
		if f, ok := e.core.(*fluid); ok && f.room != nil {
			// The cap leaves room for waiting requests beside the
			// executions in flight (at most the slots).
			for s := range f.room {
				f.room[s] = max(float64(w.MaxInFlight)-min(e.busy[s], float64(w.Slots)), 0)
			}
			f.holdUpstream(e.held)
		}
	}
	for r, rep := range e.topo.replicas {
		e.serverCPU[rep.server] += demand(r)
	}
	clear(e.alloc)
	for r, rep := range e.topo.replicas {
		e.shared[r] = 0
		d := demand(r)
		if d <= 0 {
			continue
		}
		// C and D in millicores: the server's CPU and its replicas' demand.
		c, all := e.cfg.Servers[rep.server].CPU, e.serverCPU[rep.server]*1000
		own := d * 1000
		prop := c * d / e.serverCPU[rep.server]
		e.alloc[rep.task] += prop
		if all <= c {
			// Underloaded: the scheduler is work conserving, so a
			// replica's events run on whatever the others leave idle,
			// each on one core: at most the whole cores its demand
			// keeps busy, at least one.
			cores := 1000 * math.Max(1, math.Ceil(own/1000-1e-9))
			e.shared[r] = max(prop, min(c-all+own, cores))
		} else {
			e.shared[r] = prop
		}
	}
}

// replicaCPUModel is replica r's execution under the episode's physics.
// Its service time, seconds per event, is the work of one event (h_k at
// the host's per-core speed plus the requests it sends, paper Eq. 1 and
// CLASP Eq. 1) over the replica's cores, slowed by the share of each
// second it spends holding remote destinations (γ) and by the host's
// capacity factor; a replica without CPU never serves (+Inf). For the
// stochastic core it adds the work per event, speed and CFS quota
// (physicsRun.cpuModel).
func (e *Env) replicaCPUModel(r int) cpuOf {
	rep := e.topo.replicas[r]
	mc := e.replicaCPU(r)
	if !(mc > 0) {
		return cpuOf{service: math.Inf(1), work: math.Inf(1), quota: math.Inf(1)}
	}
	cores := mc / 1000
	work := e.cfg.App.Tasks[rep.task].MIPSPerEvent/(e.mipsPerM[r]*1000) + e.reqUS[r]*1e-6 + e.remoteWork(r)
	usable := max(1-e.gammaUS[r]*1e-6/cores, 0.01)
	speed := e.ph.speed[rep.server]
	svc := work / cores / usable / speed
	c := e.ph.cpuModel(svc, cores*usable*speed, cores)
	if w := e.cfg.Worker; w.On {
		// The execution itself runs in an executor slot at full core
		// speed, slowed when more executions are in flight than cores;
		// the worker executes at most min(Slots, Cores) cores' worth.
		b, slots, nc := e.busy[rep.server], float64(w.Slots), float64(w.Cores)
		c.lat = work / speed * max(1, min(b, slots)/nc)
		if capC := min(slots, nc); b > capC && e.execIn[r] > 0 {
			c.service = max(c.service, b/(capC*e.execIn[r]))
		}
	}
	return c
}

// remoteWork is replica r's extra work per event, seconds, in the coming
// step [t·L, (t+1)·L) (L = Physics.StepSeconds) from reading state remotely (StateMigration.RemoteAccess):
// the extra cost of a remote access times the step-average share of its
// keys whose state is still in flight, which falls linearly from 1 to 0
// over the transfer window.
func (e *Env) remoteWork(r int) float64 {
	from, to := e.remoteFrom[r], e.remoteTo[r]
	if to <= from {
		return 0
	}
	a, b := float64(e.t)*e.ph.stepLen, float64(e.t+1)*e.ph.stepLen
	lo, hi := max(a, from), min(b, to)
	if hi <= lo {
		return 0
	}
	// ∫_lo^hi (1 − (τ − from)/(to − from)) dτ
	missing := (hi - lo) - ((hi-from)*(hi-from)-(lo-from)*(lo-from))/(2*(to-from))
	return e.cfg.Migration.extraUS() * 1e-6 * missing / (b - a)
}

// applyService sets, and caches in svc, every replica's service time.
func (e *Env) applyService() {
	for r := range e.topo.replicas {
		e.setService(r)
	}
}

// setService computes replica r's execution parameters and hands them to
// the core.
func (e *Env) setService(r int) {
	c := e.replicaCPUModel(r)
	e.svc[r] = c.service
	e.svcCPU[r] = e.alloc[e.topo.replicas[r].task]
	e.core.setCPU(r, c)
}

// setCore installs a simulator core and attaches the episode's physics.
func (e *Env) setCore(c simCore) {
	c.attach(e.ph)
	e.core = c
}

// actuate turns next, the allocation just decided, into the one in force:
// itself without an actuation delay, else the decision of
// Physics.ActuationDelaySteps steps ago (the current allocation until the
// first one arrives).
func (e *Env) actuate(next []float64) {
	d := e.phys.ActuationDelaySteps
	if d == 0 {
		return
	}
	n := e.n
	due := e.pendN == d
	if due { // swap the decision of d steps ago with this one
		slot := e.pend[e.pendHead*n : (e.pendHead+1)*n]
		for k := range next {
			next[k], slot[k] = slot[k], next[k]
		}
		e.pendHead = (e.pendHead + 1) % d
		return
	}
	tail := (e.pendHead + e.pendN) % d
	copy(e.pend[tail*n:(tail+1)*n], next)
	e.pendN++
	copy(next, e.alloc)
}

// requestCosts derives, from the routing of every edge, the request work
// per input event of each replica (α per local and β per remote request:
// each input event yields Selectivity outputs, split over the links) and the
// γ work of the distinct remote destination servers each server holds,
// charged to the first replica on the server that sends there.
func (e *Env) requestCosts() {
	nr := len(e.topo.replicas)
	e.reqUS, e.gammaUS = make([]float64, nr), make([]float64, nr)
	e.remote = make([]int, e.m)
	rc := e.cfg.Requests
	opened := make(map[[2]int]bool)
	for _, l := range e.topo.links {
		from, to := e.topo.replicas[l.from], e.topo.replicas[l.to]
		sel := e.cfg.App.Tasks[from.task].Selectivity
		if from.server == to.server {
			e.reqUS[l.from] += sel * l.frac * rc.AlphaUS
			continue
		}
		e.reqUS[l.from] += sel * l.frac * rc.BetaUS
		key := [2]int{from.server, to.server}
		if !opened[key] {
			opened[key] = true
			e.gammaUS[l.from] += rc.GammaUS
			e.remote[from.server]++
		}
	}
}

// project maps requested allocations (already clipped to [MinCPU, MaxCPU])
// onto server capacity: reductions (and unchanged tasks) are applied first;
// then increases, in increasing task index, each limited by its host's
// remaining free CPU. It is the single projection shared by delta and
// target actions.
func (e *Env) project(req, out []float64) {
	clear(e.serverCPU)
	for k := range req {
		out[k] = min(req[k], e.alloc[k])
		for _, r := range e.topo.ofTask[k] {
			rep := e.topo.replicas[r]
			e.serverCPU[rep.server] += out[k] * rep.share
		}
	}
	for k := range req {
		if req[k] <= out[k] {
			continue
		}
		inc := req[k] - out[k]
		for _, r := range e.topo.ofTask[k] {
			rep := e.topo.replicas[r]
			if rep.share > 0 {
				inc = min(inc, max(e.cfg.Servers[rep.server].CPU-e.serverCPU[rep.server], 0)/rep.share)
			}
		}
		out[k] += inc
		for _, r := range e.topo.ofTask[k] {
			rep := e.topo.replicas[r]
			e.serverCPU[rep.server] += inc * rep.share
		}
	}
}

// reportedCPU is task k's allocation in the interval whose metrics the
// observation reports (the metrics ring's oldest row; target-utilization
// action sets only).
func (e *Env) reportedCPU(k int) float64 {
	old := (e.met.head + 1) % e.met.rows
	return e.cpuRing[old*e.n+k]
}

// fillObservation writes the observation of the step just simulated
// (stepped) or of the state at Reset (paper Table 1; every feature's formula
// and range is in obs.go; ObsBuilder computes them). The measured features are computed from the
// reported metrics (metrics.push: lagged and noisy as Physics says), the
// others from the scheduler's state, exact.
func (e *Env) fillObservation(p95, mean float64, stepped bool) {
	e.measure(p95, mean)
	m := e.met
	m.push(e.raw, !stepped)
	if e.cpuRing != nil {
		if !stepped {
			for i := range m.rows {
				copy(e.cpuRing[i*e.n:(i+1)*e.n], e.alloc)
			}
		} else {
			copy(e.cpuRing[m.head*e.n:(m.head+1)*e.n], e.alloc)
		}
	}
	clear(e.serverCPU)
	for r, rep := range e.topo.replicas {
		e.serverCPU[rep.server] += e.replicaCPU(r)
	}
	in := &e.obsIn
	for k := range in.Tasks {
		x := m.cur[k*perTask : (k+1)*perTask]
		in.Tasks[k] = TaskMeasures{InputRate: x[mIn], Throughput: x[mDone], Queue: x[mQueue], DelayS: x[mLat], ServiceS: x[mSvc], Load: x[mRho],
			CPU: e.alloc[k], Host: e.hostOf[k]}
	}
	for s := range in.Servers {
		in.Servers[s] = ServerMeasures{CPU: e.serverCPU[s], MemoryMB: e.memUsed[s], Tasks: e.taskCount[s]}
	}
	x := m.cur[e.n*perTask:]
	in.App = AppMeasures{P95S: x[mP95], MeanS: x[mMean], Throughput: x[mThr]}
	in.Stepped = stepped
	ObsBuilder{App: &e.cfg.App, Servers: e.cfg.Servers, MaxCPU: e.cfg.MaxCPU}.Build(e.obs, in, &m.hist)
}

// measure writes into e.raw the exact metrics of the step just simulated
// (or of the state at Reset) that the observation reports (metrics.go).
func (e *Env) measure(p95, mean float64) {
	for k := 0; k < e.n; k++ {
		ts := e.st.tasks[k]
		x := e.raw[k*perTask : (k+1)*perTask]
		x[mIn], x[mDone], x[mQueue], x[mLat] = ts.in, ts.done, ts.queue, 0
		if ts.done > 0 {
			x[mLat] = ts.delayW / ts.done
		}
		if e.waits != nil {
			// The records waiting for their batch (Physics.HopCurve): in
			// the receiving queue the workers report, and in its delay.
			w := e.waits[k]
			if e.empty != nil && e.empty[k] == e.empty[k] {
				// As a report's snapshot (HopPoint.Empty), and the
				// processed count as the counters make it.
				q, prev := e.met.batchSnapshot(k, ts.in*w, e.empty[k])
				x[mQueue] += q
				x[mDone] = max(x[mDone]-(q-prev)/e.ph.stepLen, 0)
			} else {
				x[mQueue] += ts.in * w
			}
			if ts.done > 0 {
				x[mLat] += w
			}
		}
		x[mSvc] = e.meanService(e.primary[k])
		rho := 0.0
		for _, r := range e.topo.ofTask[k] {
			if in := e.st.replicas[r].in; in > 0 {
				rho = max(rho, in*e.meanService(r))
			}
		}
		x[mRho] = rho
	}
	a := e.raw[e.n*perTask:]
	a[mP95], a[mMean], a[mThr] = p95, mean, 0
	if e.gain > 0 {
		a[mThr] = e.st.sinkEvents / e.gain
	}
}

// meanService is replica r's measured mean service time over the step,
// seconds: its busy time over the events it processed. Every event of a
// step is served at the replica's service time of the step, so that is
// the service time itself.
func (e *Env) meanService(r int) float64 { return e.svc[r] }

func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// horizontal reports whether the scenario uses replicas, request costs or
// shared CPU, the physics horizontal controllers act on.
func (e *Env) horizontal() bool {
	rc := e.cfg.Requests
	return e.cfg.SharedCPU || e.basePlan != nil || e.replanned || rc.AlphaUS != 0 || rc.BetaUS != 0 || rc.GammaUS != 0
}

// WorkerMetrics computes the per-server metrics of the last step (CLASP,
// Table 2) from the replicas' statistics and the routing. The returned
// slice is a buffer owned by the Env, valid until the next call.
func (e *Env) WorkerMetrics() []WorkerMetrics {
	for w := range e.workers {
		m := &e.workers[w]
		m.Queue, m.LocalRequests, m.RemoteRequests, m.RemoteDestinations, m.LoadUS = 0, 0, 0, 0, 0
		clear(m.Executions)
		clear(m.ExecUS)
		clear(m.EdgeRequests)
	}
	for r, rep := range e.topo.replicas {
		m := &e.workers[rep.server]
		x := e.st.replicas[r]
		m.Queue += x.queue - x.held // what waits upstream of its cap is not at the worker
		m.Executions[rep.task] += x.done
		m.ExecUS[rep.task] = e.cfg.App.Tasks[rep.task].MIPSPerEvent / (e.mipsPerM[r] * 1000) * 1e6
	}
	e.info.PlannerQueue = 0
	for _, k := range e.cfg.App.Sources {
		for _, r := range e.topo.ofTask[k] {
			e.info.PlannerQueue += e.st.replicas[r].queue
		}
	}
	for _, l := range e.topo.links {
		from, to := e.topo.replicas[l.from], e.topo.replicas[l.to]
		m := &e.workers[from.server]
		req := e.st.replicas[l.from].done * e.cfg.App.Tasks[from.task].Selectivity * l.frac
		m.EdgeRequests[l.edge] += req
		if from.server == to.server {
			m.LocalRequests += req
		} else {
			m.RemoteRequests += req
		}
	}
	rc := e.cfg.Requests
	for w := range e.workers {
		m := &e.workers[w]
		if m.RemoteRequests > 0 {
			m.RemoteDestinations = e.remote[w]
		}
		for k, n := range m.Executions {
			m.LoadUS += n * m.ExecUS[k]
		}
		m.LoadUS += rc.AlphaUS*m.LocalRequests + rc.BetaUS*m.RemoteRequests + rc.GammaUS*float64(m.RemoteDestinations)
	}
	return e.workers
}

// rebind derives the per-replica tables from the current topology.
func (e *Env) rebind() {
	e.plan = e.cfg.replicaSets()
	e.memUsed = make([]float64, e.m)
	e.hostOf, e.primary = make([]int, e.n), make([]int, e.n)
	nr := len(e.topo.replicas)
	e.mipsPerM = make([]float64, nr)
	for k, rs := range e.topo.ofTask {
		best := rs[0]
		for _, r := range rs {
			rep := e.topo.replicas[r]
			srv := e.cfg.Servers[rep.server]
			e.mipsPerM[r] = srv.MIPS / srv.CPU
			e.memUsed[rep.server] += e.cfg.App.Tasks[k].MemoryMB * rep.share
			if rep.share > e.topo.replicas[best].share {
				best = r
			}
		}
		e.primary[k], e.hostOf[k] = best, e.topo.replicas[best].server
	}
	e.requestCosts()
	e.taskCount = make([]float64, e.m)
	for _, rep := range e.topo.replicas {
		if rep.share > 0 {
			e.taskCount[rep.server]++
		}
	}
	e.st.replicas = make([]taskStats, nr)
	e.shared = make([]float64, nr)
	e.svc = make([]float64, nr)
	e.svcCPU = make([]float64, nr)
	e.remoteFrom, e.remoteTo = make([]float64, nr), make([]float64, nr)
	e.arrive = make([]float64, nr)
	e.execIn, e.busy, e.held = make([]float64, nr), make([]float64, e.m), make([]float64, nr)
	for r := range e.arrive {
		e.arrive[r] = -1
	}
}
