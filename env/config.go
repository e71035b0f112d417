package env

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"streamscale/rng"
	"strings"
)

// Workload is the arrival process of an episode: the rate, in events per
// second, at which the application's sources receive events during each
// one-second step. A trace from package traces satisfies it.
type Workload interface {
	// Len is the number of points, > 0; step t of an episode replays
	// point (StartOffset + t) mod Len.
	Len() int
	// Rate is point i's rate, events/s, for i in [0, Len). At most
	// MaxRate; a negative or NaN rate is taken as 0.
	Rate(i int) float64
}

// MaxRate is the largest workload rate a Config accepts, events/s (10⁹,
// far beyond any cluster the simulator models: the paper's traces peak
// near 5,000). Beyond some 10²⁴ the tracer's event times leave the range
// of an int; New refuses a workload with a point above MaxRate rather
// than simulate it. Package traces refuses the same bound at load.
const MaxRate = 1e9

// Replica is one instance of a task: the server it runs on and the share
// of the task's input it receives.
type Replica struct {
	Server int     // server index
	Share  float64 // share of the task's input, in [0, 1]
}

// RequestCosts is the CPU work, in µs, a replica spends to send requests to
// its successors (CLASP, Eq. 1: W_w = Σ_o N_{w,o}·τ̄_{w,o} + α·R^l_w +
// β·R^r_w + γ·δ_w): Alpha per request to a replica on the same server, Beta
// per request to another server, Gamma per second per distinct remote
// destination server. The paper measured α ≈ 38.5 µs, β ≈ 275 µs and
// γ ≈ 51,500 µs.
type RequestCosts struct {
	AlphaUS, BetaUS, GammaUS float64
}

// StateMigration says how a replica plan moves the state of stateful tasks
// (Task.StateMB > 0).
type StateMigration struct {
	// RemoteAccess starts a replica that gains share of a stateful task as
	// soon as its share of the queued events has arrived, reading the
	// state of keys not yet transferred from the sending server while the
	// transfer lasts; the sender keeps serving. The default, false, is
	// stop-and-copy (CLASP's): the receiver waits for its state and queued
	// events, and the sender pauses while it transmits them.
	RemoteAccess bool
	// LocalStateUS and RemoteStateUS are the CPU cost of one state access
	// on the executing server and on another server, µs (paper §2.4:
	// ≈ 400 and ≈ 1,400). Under RemoteAccess an execution whose key's
	// state is still in flight costs RemoteStateUS − LocalStateUS more; the
	// state arrives uniformly over the transfer. Both 0 mean 400 and 1,400.
	LocalStateUS, RemoteStateUS float64
}

// extraUS returns the extra CPU, µs, of a remote over a local state access.
func (m StateMigration) extraUS() float64 {
	if m.LocalStateUS == 0 && m.RemoteStateUS == 0 {
		return 1000
	}
	return m.RemoteStateUS - m.LocalStateUS
}

// WorkerPhysics is the serverless worker of the CLASP paper's evaluation,
// an option of the horizontal (SharedCPU) scenarios. Off (the zero value),
// a replica's events run at the replica's share of its server's CPU
// (processor sharing): near saturation every execution slows to its
// replica's average rate, so one loaded worker's latency explodes. On:
//
//   - Dispatch path. The server's CPU is W̄ of CLASP Eq. 1 (the budget the
//     estimator fits from α, β, γ): the capacity of a serial dispatch path.
//     A replica starts its events at most once per (its Eq. 1 work per
//     event)/(its share of W̄), the same split as processor sharing, so every
//     sustained rate is unchanged; only the latency model changes.
//   - Executor slots. Each started execution runs in one of Slots executor
//     slots on one of Cores cores at full core speed: it takes its own work
//     (h_k at one core plus the α/β work of the requests it sends), slowed
//     by b/Cores when b, the executions in flight on the worker (Little:
//     Σ arrival rate × work, at most Slots: the cap on executions in
//     flight), exceeds the cores; and the worker executes at most
//     min(Slots, Cores) cores' worth, split among its replicas by their
//     forecast arrivals (so in overload of the cores the split is not work
//     conserving; in the CLASP scenarios W̄ = 0.85 core binds long before
//     8 cores do). The fluid core models a replica as a
//     pipelined server: an event starts as a FIFO server with the dispatch
//     spacing would start it and departs its execution time later.
//   - RPC latency. Every request to another server adds HopMS on top of the
//     network's propagation and transmission.
//   - Timer batching. Inputs and requests to another server are sent in
//     batches on a timer (BatchCheckMS checks, BatchIntervalMS intervals):
//     a batch opens with its first request and leaves at the first check
//     at least BatchIntervalMS later, so a request waits uniformly between
//     0 and BatchIntervalMS + BatchCheckMS/2 on average. The fluid core
//     spreads a cohort's last departure by that window (exact for one
//     batched hop; over several hops it adds the maxima, not the
//     convolution, so it overstates the p95 of long remote chains).
//     Requests to the same server are direct calls (α) and are not batched.
//   - Cap on requests in flight (MaxInFlight). A worker holds at most
//     MaxInFlight of the requests it receives from outside (inputs from
//     the ingress and requests from other workers): the b executing in
//     its slots plus those waiting in its queue. Requests beyond the
//     slots wait in the worker's queue up to the cap; beyond it the
//     worker admits no more: they wait upstream, at the ingress or queued
//     at the sender, and are admitted in arrival order as room frees.
//     Requests a worker's own executions send to itself pass in memory
//     (the paper's workers use shared memory): always admitted, not
//     counted, so a local fan-out can queue beyond the cap. Below the
//     cap nothing changes. Above it, what waits upstream no longer counts in the
//     worker's queue Q_w (WorkerMetrics), in its replicas' demand of the
//     shared-CPU split, or in the queued events a re-plan transfers to
//     another worker; Info.Queue and Info.PlannerQueue still count it
//     (events waiting for the task, and at the sources). Since the cap
//     is at least the slots (validated), an admitted request never waits
//     for room to start executing, and each replica serves its requests
//     in arrival order, so a request's departure does not depend on
//     where it waited: latency is accounted from the original arrival
//     and a single stream's throughput and latency are unchanged; the
//     backlog and its waiting time move upstream. Not modelled: the
//     head-of-line blocking one replica's held backlog imposes on the
//     admission of another replica's requests on the same worker (each
//     replica keeps its own FIFO), and a worker's refusal does not slow
//     the sender (its send buffer is unbounded).
//
// PaperWorkers gives the values of the paper and its public harness. The
// fluid core only (PerEvent and stochastic physics reject it).
type WorkerPhysics struct {
	On bool
	// Cores per worker (paper: 8-core machines).
	Cores int
	// Slots is the executor slots per worker, the cap on executions in
	// flight (paper's harness: 10).
	Slots int
	// HopMS is the RPC latency of a request to another server, ms.
	HopMS float64
	// BatchIntervalMS and BatchCheckMS are the batching timer's interval
	// and check period, ms (harness: 20 and 5); both 0 turn batching off.
	BatchIntervalMS, BatchCheckMS float64
	// MaxInFlight is the cap on requests in flight per worker (executing
	// plus queued at the worker), requests; 0 (the default, and
	// PaperWorkers') is no cap: the worker's queue is unbounded, as in the
	// paper's public harness, whose workers put every dispatched request
	// in an unbounded per-function waiting queue and cap only the
	// executors that run them. Otherwise at least Slots.
	MaxInFlight int
}

// PaperWorkers returns the CLASP paper's worker: 8 cores, 10 executor
// slots, batches every 20 ms checked every 5 ms (its public harness), and
// an RPC latency of 1 ms per remote hop — the paper's measured extra time
// of reaching another worker over a local call (§2.4: a remote state
// access takes ≈ 1,400 µs against ≈ 400 µs locally); the paper gives no
// separate figure for a chained request. It sets no cap on requests in
// flight (MaxInFlight 0): the harness's workers (the CLASP fork of
// faabric, scheduler::Scheduler) queue every request they are sent in an
// unbounded per-function waiting queue, its planner's ingress queue is
// unbounded too, and only the executors are capped; CLASP detects a
// saturated worker by its queue's growth, which a cap at the worker would
// stop. The paper's text (as issue 15 reads it) says requests in flight
// are capped but gives no figure.
func PaperWorkers() WorkerPhysics {
	return WorkerPhysics{On: true, Cores: 8, Slots: 10, HopMS: 1, BatchIntervalMS: 20, BatchCheckMS: 5}
}

// batchS is the mean batching window, seconds: the wait of a request is
// uniform on [0, batchS].
func (w WorkerPhysics) batchS() float64 {
	if !w.On || w.BatchIntervalMS == 0 {
		return 0
	}
	return (w.BatchIntervalMS + w.BatchCheckMS/2) / 1000
}

func (w WorkerPhysics) validate(c *Config) error {
	if !w.On {
		if w != (WorkerPhysics{}) {
			return fmt.Errorf("env: worker physics set but not on")
		}
		return nil
	}
	switch {
	case !c.SharedCPU:
		return fmt.Errorf("env: worker physics need shared CPU")
	case c.Mode != Fluid || c.Physics.traced() || c.Randomize != nil:
		return fmt.Errorf("env: worker physics need the fluid core and deterministic physics")
	case w.Cores < 1 || w.Slots < 1:
		return fmt.Errorf("env: worker physics: %d cores and %d slots, want ≥ 1", w.Cores, w.Slots)
	case w.MaxInFlight < 0 || (w.MaxInFlight > 0 && w.MaxInFlight < w.Slots):
		return fmt.Errorf("env: worker physics: cap of %d requests in flight, want 0 (none) or ≥ the %d slots", w.MaxInFlight, w.Slots)
	case !(w.HopMS >= 0) || !(w.BatchIntervalMS >= 0) || !(w.BatchCheckMS >= 0) || math.IsInf(w.HopMS+w.BatchIntervalMS+w.BatchCheckMS, 0):
		return fmt.Errorf("env: worker physics: hop %v ms, batching %v / %v ms, want finite and ≥ 0", w.HopMS, w.BatchIntervalMS, w.BatchCheckMS)
	}
	return nil
}

// Mode selects the simulator core.
type Mode int

const (
	// Fluid is the fast, cohort-based core (the default).
	Fluid Mode = iota
	// PerEvent simulates every event individually: slow and obviously
	// correct, used to check Fluid.
	PerEvent
)

// Config describes one scenario. It is validated once by New.
type Config struct {
	App       App      // the application DAG
	Network   Network  // switches and links
	Servers   []Server // edge servers
	Placement []int    // server index of each task (its single replica)

	// Replicas optionally runs task k as several instances (horizontal
	// scaling): Replicas[k] lists the servers it runs on and the share of
	// its input each receives (shares ≥ 0, summing to 1). nil means one
	// replica per task, on Placement[k]. A task's CPU allocation is split
	// among its replicas in proportion to their shares.
	Replicas [][]Replica

	// LocalFirst routes a request to a replica of the successor on the
	// sender's own server first (locality-aware forwarding; only sound for
	// stateless successors). The default, false, spreads every sender's
	// requests over the successor's replicas in proportion to their shares,
	// as a key-partitioned or load-balanced exchange does. With one replica
	// per task the two agree.
	LocalFirst bool

	// Requests is the CPU cost of chained requests, charged to the sending
	// replica (CLASP, Eq. 1). Zero (the default) in the edge scenarios.
	Requests RequestCosts

	// Migration says how replica plans move state (default stop-and-copy).
	Migration StateMigration

	// SharedCPU makes every server's CPU a pool its replicas share in
	// proportion to their demand (queued and last-step work), as the
	// executor slots of a serverless worker do, instead of the per-task
	// reservations of the edge scenarios. Controllers then act only with
	// replica plans (Action.Replicas) or Hold.
	SharedCPU bool
	// Worker is the serverless worker model of horizontal scenarios
	// (WorkerPhysics; off by default).
	Worker WorkerPhysics

	Workload Workload // arrival rate per step
	// Steps is the episode length in steps (seconds); 0 means Workload.Len().
	Steps int
	// StartOffset shifts the trace: step t replays Workload point
	// (StartOffset + t) mod Workload.Len(). Default 0.
	StartOffset int
	// SlicesPerStep is the number of source cohorts emitted per step (the
	// latency resolution of the fluid core). Default 10 (100 ms).
	SlicesPerStep int
	// QueueCapacity is the number of cohorts a stage holds before it
	// coalesces new ones into the newest. Default 256.
	QueueCapacity int

	// InitialCPU is every task's allocation at Reset, millicores. Default 500.
	InitialCPU float64
	// MinCPU and MaxCPU bound a task's allocation, millicores. Defaults 500
	// and 10,000.
	MinCPU, MaxCPU float64

	// ActionDeltas is the CPU change, millicores, of each of the five
	// choices of the MultiDiscrete action; the zero value means the
	// paper's DeltaMillicores {−500, −50, 0, +50, +500}. Another set is an
	// ablation (train -action-deltas): strictly increasing, the middle
	// choice 0 (hold), each finite and at most MaxCPU − MinCPU in
	// magnitude. A policy records the set it was trained with in its
	// Spaces, and evaluation runs it with that set.
	ActionDeltas [5]float64 `json:"ActionDeltas,omitzero"`

	// ActionUtilization, when not zero, replaces the deltas with target
	// utilizations (an ablation, train -action-utilization): choice i
	// sets a task's allocation to UtilizationTarget(c, ρ, u_i), the
	// observed offered load ρ (TaskDemandPerCPU) times the allocation c in
	// force during the interval it was measured in (MetricLagSteps before
	// the newest, so that ρ·c is the CPU the task was measured to need)
	// over u_i, rounded up to 50 millicores — the threshold rule's
	// sizing, with the target chosen per task and step by the policy —
	// and an entry 0 holds the allocation. The
	// paper's actions are increments; this set lets one step reach any
	// allocation, as the threshold rule's targets do. Entries are 0 or in
	// [0.05, 10], the non-zero ones distinct; ActionDeltas must then be
	// zero. A policy records the set in its Spaces (TargetUtilization).
	ActionUtilization [5]float64 `json:"ActionUtilization,omitzero"`

	// Reward holds the reward coefficients; the zero value means
	// DefaultReward().
	Reward *RewardConfig

	// Physics holds the stochastic and real-system options (zero: the
	// deterministic physics; ScenarioPhysics gives the presets).
	Physics Physics
	// Randomize, if not nil, draws some of the physics anew at every
	// Reset (domain randomisation; PhysicsRanges). Physics must then be
	// stochastic (its tracer on), so that every draw runs on the same
	// core.
	Randomize *PhysicsRanges

	// Mode selects the simulator core (Fluid by default).
	Mode Mode
}

func (c *Config) setDefaults() {
	if c.SlicesPerStep == 0 {
		c.SlicesPerStep = 10
	}
	if c.QueueCapacity == 0 {
		c.QueueCapacity = 256
	}
	if c.InitialCPU == 0 {
		c.InitialCPU = 500
	}
	if c.MinCPU == 0 {
		c.MinCPU = 500
	}
	if c.MaxCPU == 0 {
		c.MaxCPU = 10000
	}
	if c.Reward == nil {
		r := DefaultReward()
		c.Reward = &r
	}
	if c.Steps == 0 && c.Workload != nil {
		c.Steps = c.Workload.Len()
	}
}

// ErrInvalidConfig is wrapped by every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("invalid scenario")

func (c *Config) validate() error {
	if err := c.App.validate(); err != nil {
		return err
	}
	if err := c.Network.validate(); err != nil {
		return err
	}
	if len(c.Servers) == 0 {
		return fmt.Errorf("env: no servers")
	}
	if c.ActionDeltas != ([5]float64{}) {
		if err := validateDeltas(c.ActionDeltas, c.MinCPU, c.MaxCPU); err != nil {
			return err
		}
	}
	if c.ActionUtilization != ([5]float64{}) {
		if c.ActionDeltas != ([5]float64{}) {
			return fmt.Errorf("env: both ActionDeltas and ActionUtilization are set; choose one action set")
		}
		if err := validateUtilization(c.ActionUtilization); err != nil {
			return err
		}
	}
	for i, s := range c.Servers {
		if !(s.CPU > 0) || !(s.MIPS > 0) || !(s.RAMMB > 0) || math.IsInf(s.CPU+s.MIPS+s.RAMMB, 0) {
			return fmt.Errorf("env: server %d (%s): capacities must be positive and finite", i, s.Name)
		}
		if s.Switch < 0 || s.Switch >= c.Network.Switches {
			return fmt.Errorf("env: server %d (%s) on missing switch %d", i, s.Name, s.Switch)
		}
	}
	if c.Replicas == nil && len(c.Placement) != len(c.App.Tasks) {
		return fmt.Errorf("env: placement has %d entries, want %d (one per task)", len(c.Placement), len(c.App.Tasks))
	}
	if c.Replicas != nil {
		if err := c.validateReplicas(c.Replicas); err != nil {
			return err
		}
	}
	for _, v := range []float64{c.Requests.AlphaUS, c.Requests.BetaUS, c.Requests.GammaUS} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("env: request costs must be finite and ≥ 0")
		}
	}
	if err := c.Physics.validate(max(c.Steps, 1)); err != nil {
		return err
	}
	if err := c.Physics.checkTasks(c.App); err != nil {
		return err
	}
	if r := c.Randomize; r != nil {
		if err := r.validate(max(c.Steps, 1)); err != nil {
			return err
		}
		if !c.Physics.traced() {
			return fmt.Errorf("env: physics ranges need stochastic base physics (arrivals, rate, service, CFS or jitter on)")
		}
	}
	if err := c.Worker.validate(c); err != nil {
		return err
	}
	if m := c.Migration; !(m.LocalStateUS >= 0) || !(m.RemoteStateUS >= 0) || math.IsInf(m.LocalStateUS+m.RemoteStateUS, 0) || m.extraUS() < 0 {
		return fmt.Errorf("env: state access costs %v µs local, %v µs remote: want finite, ≥ 0, remote ≥ local", m.LocalStateUS, m.RemoteStateUS)
	}
	if c.Workload == nil {
		return fmt.Errorf("env: no workload")
	}
	if c.Workload.Len() <= 0 {
		return fmt.Errorf("env: workload has %d steps", c.Workload.Len())
	}
	for i := range c.Workload.Len() {
		if r := c.Workload.Rate(i); r > MaxRate {
			return fmt.Errorf("env: workload point %d: rate %g events/s exceeds the maximum %g", i, r, float64(MaxRate))
		}
	}
	if c.Steps < 0 {
		return fmt.Errorf("env: steps %d < 0", c.Steps)
	}
	if c.StartOffset < 0 {
		return fmt.Errorf("env: start offset %d < 0", c.StartOffset)
	}
	if c.SlicesPerStep < 1 || c.SlicesPerStep > 1000 {
		return fmt.Errorf("env: slices per step %d outside [1, 1000]", c.SlicesPerStep)
	}
	if c.QueueCapacity < 2 {
		return fmt.Errorf("env: queue capacity %d < 2", c.QueueCapacity)
	}
	if !(c.MinCPU > 0) || !(c.MaxCPU >= c.MinCPU) || math.IsInf(c.MaxCPU, 0) {
		return fmt.Errorf("env: CPU bounds [%v, %v] millicores invalid", c.MinCPU, c.MaxCPU)
	}
	if !(c.InitialCPU >= c.MinCPU && c.InitialCPU <= c.MaxCPU) {
		return fmt.Errorf("env: initial CPU %v outside [%v, %v]", c.InitialCPU, c.MinCPU, c.MaxCPU)
	}
	if c.Mode != Fluid && c.Mode != PerEvent {
		return fmt.Errorf("env: unknown mode %d", c.Mode)
	}
	if c.Replicas == nil {
		for k, s := range c.Placement {
			if s < 0 || s >= len(c.Servers) {
				return fmt.Errorf("env: task %s placed on missing server %d", c.App.Tasks[k].Name, s)
			}
		}
	}
	cpu := make([]float64, len(c.Servers))
	mem := make([]float64, len(c.Servers))
	for k, rs := range c.replicaSets() {
		for _, r := range rs {
			cpu[r.Server] += c.InitialCPU * r.Share
			mem[r.Server] += c.App.Tasks[k].MemoryMB * r.Share
		}
	}
	for i, s := range c.Servers {
		if cpu[i] > s.CPU && !c.SharedCPU {
			return fmt.Errorf("env: server %s: initial allocations %v exceed capacity %v millicores", s.Name, cpu[i], s.CPU)
		}
		if mem[i] > s.RAMMB {
			return fmt.Errorf("env: server %s: task memory %v exceeds %v MB", s.Name, mem[i], s.RAMMB)
		}
	}
	routes := shortestRoutes(c.Network)
	sets := c.replicaSets()
	for _, e := range c.App.Edges {
		for _, ra := range sets[e.From] {
			for _, rb := range sets[e.To] {
				a, b := c.Servers[ra.Server].Switch, c.Servers[rb.Server].Switch
				if routes[a][b] == nil {
					return fmt.Errorf("env: no network route from switch %d to %d for edge %s→%s", a, b, c.App.Tasks[e.From].Name, c.App.Tasks[e.To].Name)
				}
			}
		}
	}
	return c.Reward.validate()
}

// RandomPlacement places n tasks on the servers uniformly at random with at
// most maxPerServer tasks per server (the paper's scenarios use 2), drawing
// from the "env/placement" stream of seed.
func RandomPlacement(n, servers, maxPerServer int, seed uint64) ([]int, error) {
	if n > servers*maxPerServer {
		return nil, fmt.Errorf("env: %d tasks do not fit %d servers × %d", n, servers, maxPerServer)
	}
	slots := make([]int, 0, servers*maxPerServer)
	for s := 0; s < servers; s++ {
		for j := 0; j < maxPerServer; j++ {
			slots = append(slots, s)
		}
	}
	r := rng.New(seed, rng.EnvPlacement)
	r.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
	return append([]int(nil), slots[:n]...), nil
}

// EdgeConfig returns the default edge scenario for a profile ("pred" or
// "etl"): the default region, a random placement (at most two tasks per
// server) drawn from placementSeed, and workload w.
func EdgeConfig(profile string, placementSeed uint64, w Workload) (Config, error) {
	app, err := Profile(profile)
	if err != nil {
		return Config{}, err
	}
	net, servers := DefaultRegion()
	pl, err := RandomPlacement(len(app.Tasks), len(servers), 2, placementSeed)
	if err != nil {
		return Config{}, err
	}
	return Config{App: app, Network: net, Servers: servers, Placement: pl, Workload: w}, nil
}

// replicaSets returns the replicas of every task: Replicas, or one replica
// per task on Placement.
func (c *Config) replicaSets() [][]Replica {
	if c.Replicas != nil {
		return c.Replicas
	}
	out := make([][]Replica, len(c.Placement))
	for k, s := range c.Placement {
		out[k] = []Replica{{Server: s, Share: 1}}
	}
	return out
}

// ReplicaPlan returns a copy of the replica plan the configuration
// starts from: Replicas, or one replica per task on Placement.
func (c *Config) ReplicaPlan() [][]Replica { return clonePlan(c.replicaSets()) }

// Spaces describes the observation and action spaces of the environment
// New(c) builds, without building it (the counts of c's tasks and
// servers; c is not validated).
func (c *Config) Spaces() Spaces {
	return makeSpaces(len(c.App.Tasks), len(c.Servers), c.Deltas(), c.ActionUtilization)
}

// Deltas returns the action set in force: ActionDeltas, or the paper's
// DeltaMillicores when it is zero.
func (c *Config) Deltas() [5]float64 {
	if c.ActionDeltas == ([5]float64{}) {
		return DeltaMillicores
	}
	return c.ActionDeltas
}

// ParseActionDeltas parses five comma-separated millicore changes (e.g.
// "-200,-50,0,50,500") into an action set and checks it as Config does
// (minCPU and maxCPU the allocation bounds).
func ParseActionDeltas(s string, minCPU, maxCPU float64) ([5]float64, error) {
	d, err := parseFive(s, "action deltas")
	if err != nil {
		return d, err
	}
	return d, validateDeltas(d, minCPU, maxCPU)
}

// ParseActionUtilization parses five comma-separated target utilizations
// (e.g. "0,0.9,0.7,0.5,0.3"; 0 holds) into an action set and checks it as
// Config does.
func ParseActionUtilization(s string) ([5]float64, error) {
	u, err := parseFive(s, "action utilizations")
	if err != nil {
		return u, err
	}
	if u == ([5]float64{}) {
		return u, fmt.Errorf("env: action utilizations %q: every choice holds", s)
	}
	return u, validateUtilization(u)
}

// parseFive parses five comma-separated numbers (an action set); what
// names the set in errors.
func parseFive(s, what string) ([5]float64, error) {
	var x [5]float64
	parts := strings.Split(s, ",")
	if len(parts) != len(x) {
		return x, fmt.Errorf("env: %s %q: %d values, want %d", what, s, len(parts), len(x))
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return x, fmt.Errorf("env: %s %q: value %d: %v", what, s, i, err)
		}
		x[i] = v
	}
	return x, nil
}

// validateUtilization checks a target-utilization action set: each entry
// 0 (hold) or in [0.05, 10], the non-zero ones distinct.
func validateUtilization(u [5]float64) error {
	for i, v := range u {
		if v != 0 && !(v >= minTargetUtilization && v <= rhoHigh) {
			return fmt.Errorf("env: action utilization %d is %v, want 0 (hold) or in [%v, %v]", i, v, minTargetUtilization, rhoHigh)
		}
		for _, w := range u[:i] {
			if v != 0 && v == w {
				return fmt.Errorf("env: action utilizations %v repeat %v", u, v)
			}
		}
	}
	return nil
}

// minTargetUtilization is the smallest target utilization of an action
// set: 0.05 sizes a task at 20× its offered load.
const minTargetUtilization = 0.05

// UtilizationTarget is the allocation, millicores, a target utilization u
// > 0 asks for a task observed at allocation cpu with offered load rho:
// cpu·rho/u rounded up to a multiple of 50 (the threshold rule's
// sizing and grid; a relative 1e-9 is forgiven before rounding so that an
// exact multiple does not round up by floating-point noise). The caller
// clips it to [MinCPU, MaxCPU].
func UtilizationTarget(cpu, rho, u float64) float64 {
	x := cpu * rho / u / 50
	return math.Ceil(x*(1-1e-9)) * 50
}

// validateDeltas checks an action set: strictly increasing, the middle
// choice 0, magnitudes finite and at most maxCPU − minCPU.
func validateDeltas(d [5]float64, minCPU, maxCPU float64) error {
	span := maxCPU - minCPU
	for i, v := range d {
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > span {
			return fmt.Errorf("env: action delta %d is %v millicores, want finite and at most %v in magnitude (MaxCPU − MinCPU)", i, v, span)
		}
		if i > 0 && !(v > d[i-1]) {
			return fmt.Errorf("env: action deltas %v are not strictly increasing", d)
		}
	}
	if d[2] != 0 {
		return fmt.Errorf("env: action deltas %v: the middle choice is %v, want 0 (hold)", d, d[2])
	}
	return nil
}

// ClonePlan returns a deep copy of a replica plan.
func ClonePlan(p [][]Replica) [][]Replica { return clonePlan(p) }

// validateReplicas checks a replica plan against the scenario.
func (c *Config) validateReplicas(plan [][]Replica) error {
	if len(plan) != len(c.App.Tasks) {
		return fmt.Errorf("env: replicas given for %d tasks, want %d", len(plan), len(c.App.Tasks))
	}
	for k, rs := range plan {
		if len(rs) == 0 {
			return fmt.Errorf("env: task %s has no replica", c.App.Tasks[k].Name)
		}
		total := 0.0
		seen := map[int]bool{}
		for j, r := range rs {
			if r.Server < 0 || r.Server >= len(c.Servers) {
				return fmt.Errorf("env: task %s replica %d on missing server %d", c.App.Tasks[k].Name, j, r.Server)
			}
			if seen[r.Server] {
				return fmt.Errorf("env: task %s has two replicas on server %d", c.App.Tasks[k].Name, r.Server)
			}
			seen[r.Server] = true
			if !(r.Share >= 0 && r.Share <= 1) {
				return fmt.Errorf("env: task %s replica %d share %v outside [0, 1]", c.App.Tasks[k].Name, j, r.Share)
			}
			total += r.Share
		}
		if math.Abs(total-1) > 1e-9 {
			return fmt.Errorf("env: task %s replica shares sum to %v, want 1", c.App.Tasks[k].Name, total)
		}
	}
	return nil
}
