package env

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Arrival processes inside a one-second step (Physics.Arrivals).
const (
	// ArrivalsUniform spaces the step's events evenly (deterministic).
	ArrivalsUniform = "uniform"
	// ArrivalsPoisson makes them a Poisson process at the step's rate.
	ArrivalsPoisson = "poisson"
	// ArrivalsGamma makes them a renewal process with gamma inter-arrival
	// times of coefficient of variation Physics.ArrivalCV (> 1: burstier
	// than Poisson).
	ArrivalsGamma = "gamma"
)

// Physics are the stochastic and real-system options of a scenario. The
// zero value is the deterministic physics of the paper's simulator
// (uniform arrivals, every event's service time its mean, allocations that
// act at once on a processor-sharing share of the host, exact metrics).
// Every option draws from its own named stream of the episode seed passed
// to Reset (rng.EnvArrivals, …), so the seed matters exactly when an
// option is on.
type Physics struct {
	// Arrivals is the arrival process inside each step: ArrivalsUniform
	// ("" means uniform), ArrivalsPoisson or ArrivalsGamma.
	Arrivals string `json:"arrivals,omitempty"`
	// ArrivalCV is the coefficient of variation of gamma inter-arrival
	// times (ArrivalsGamma only), > 0.
	ArrivalCV float64 `json:"arrival_cv,omitempty"`
	// RateCV modulates the arrival rate inside each step: every source
	// slice (Config.SlicesPerStep per step, 100 ms by default) runs at the
	// step's rate times a log-normal factor of mean 1 and this coefficient
	// of variation, independently (a doubly stochastic arrival process:
	// the sub-second burstiness of measured stream and IoT traffic, which
	// per-second trace points average away). 0: none.
	RateCV float64 `json:"rate_cv,omitempty"`
	// ServiceCV is the coefficient of variation of per-event service
	// times, which are log-normal with the task's mean; 0: deterministic.
	ServiceCV float64 `json:"service_cv,omitempty"`
	// CFSPeriodMS > 0 enforces allocations as Linux CFS bandwidth control
	// does (cpu.max): a task with allocation c runs at full core speed but
	// may use c/1000 × CFSPeriodMS of CPU per period, then waits for the
	// next period. 0: processor sharing at c/1000 of a core.
	CFSPeriodMS float64 `json:"cfs_period_ms,omitempty"`
	// CFSThreads is how many cores a task's threads use at once when it
	// runs under CFS (an operator's executor, I/O and garbage-collection
	// threads): it may burst to that many cores until its quota is spent,
	// so a task allotted a whole core can still be throttled. 0 means 1.
	CFSThreads int `json:"cfs_threads,omitempty"`
	// ActuationDelaySteps delays every allocation change by this many
	// steps (an in-place resize is not instant); the observation shows the
	// allocation in force. ≥ 0, less than the episode.
	ActuationDelaySteps int `json:"actuation_delay_steps,omitempty"`
	// MetricNoise is the relative standard deviation of multiplicative
	// log-normal noise, mean 1, on the measured metrics of the observation;
	// 0: exact. The measured metrics are, per task, its input and processed
	// counts, queue, mean delay, measured mean service time and utilisation
	// ρ, and the app's p95, mean latency and throughput; every feature
	// derived from them (rates, demand, ratios, latencies, changes, the
	// violation history, the total queue) is measured. Each metric draws
	// its own factor every step from rng.EnvMetrics. The task's allocation,
	// host capacity and free CPU, memory and task counts are the
	// scheduler's own state and stay exact, as do the reward and Info.
	MetricNoise float64 `json:"metric_noise,omitempty"`
	// MetricLagSteps makes the observation report the measured metrics of
	// that many steps before the last (a scrape interval behind; the first
	// ones after Reset report the state at Reset), and the exact features
	// of the current state; ≥ 0.
	MetricLagSteps int `json:"metric_lag_steps,omitempty"`
	// CapacityJitter is the per-step relative standard deviation of each
	// server's processing capacity (co-located load), log-normal with
	// mean 1; 0: none.
	CapacityJitter float64 `json:"capacity_jitter,omitempty"`
	// HopMS is a fixed dispatch latency, ms, that every event spends after
	// each task that forwards it to a successor (not after the task that
	// delivers it): the time a record waits in its sender's outgoing batch
	// until the batch is flushed, which the live runtime's timer batching
	// adds at every operator (its workers flush every 20 ms, or at 64
	// records; `eval calibrate` measures the mean per hop). Its mean, drawn
	// around it under HopSpread: it shifts latencies and leaves the CPU,
	// queues and throughput of the fluid as they are (the records it
	// holds back are at most HopMS × rate per hop). 0: none.
	HopMS float64 `json:"hop_ms,omitempty"`
	// HopMSByTask overrides HopMS for the tasks it names: the dispatch
	// latency, ms, after each listed task, which must forward to a
	// successor (the live runtime's batching wait differs by operator: a
	// stage fed at a high rate fills its 64-record batch long before the
	// 20 ms timer; `eval calibrate` measures it per operator). Each value
	// in [0, 1000]; a task name the application does not have, or one
	// without successors, is an error at New. Unlisted tasks keep HopMS.
	// The cores resolve it once, at construction, to a latency per task
	// in the application's task order (Physics.hopSeconds).
	HopMSByTask TaskHops `json:"hop_ms_by_task,omitzero"`
	// HopSpread makes every hop (HopMS, HopMSByTask) a distribution
	// instead of its mean h, in [0, 2]; 0: the fixed mean. Up to 1 it is
	// uniform on [(1 − HopSpread)·h, (1 + HopSpread)·h]; above 1 the
	// waits are heavier-tailed than any uniform of mean h: with
	// probability HopSpread − 1 a hop is exponential of mean h, else
	// uniform on [0, 2h] (the CV rises from 0.58 at 1 to 1 at 2). The
	// range above 1 exists because the live runtime's end-to-end p95 at a
	// generous allocation lies above what uniform hops on [0, 2h] give
	// (`eval calibrate` at 3,000 inputs/s: 51.3 ms live, 41.1 simulated
	// at spread 1 on pred); the exponential is a choice of shape, fitted
	// by its weight only. The live workers
	// dispatch a receiving queue's batch when its oldest record is 20 ms
	// old (checked every 5 ms) or at 64 records, so a record's wait is
	// spread over [0, ≈2h] (HopSpread 1) rather than fixed at h; `eval
	// calibrate` fits it to the end-to-end p95 of its probe at the
	// generous allocation. The mean is unchanged, so the fluid's CPU,
	// queues and throughput are too; only the latency percentiles move.
	// Records dispatched together share one wait: the outputs of one
	// execution (a fork's siblings) and, in the fast core, the siblings
	// of one message at each stage draw one factor. The fast core draws
	// from the service stream (rng.EnvService, which moves only when
	// HopSpread > 0); the per-event core hashes the message and the stage
	// with a key derived from the episode seed (rng.Derive(seed,
	// rng.EnvService)).
	HopSpread float64 `json:"hop_spread,omitempty"`
	// HopsEndToEnd says that the hops were measured end to end on the
	// deployment being modelled (`eval calibrate` measures them on one
	// worker process, where no record crosses a network), so they already
	// hold every delay between two tasks: the network's propagation
	// (Link.PropagationMS) is then not added to a flow between servers
	// (its transmission at its bandwidth share stays, microseconds at
	// these event sizes). This models the live deployment's network
	// instead of double counting it: the simulated placement still
	// decides the servers' speeds (and so the demands), the hops give the
	// delay between tasks. false: propagation along the route is added,
	// as the paper's simulator does.
	HopsEndToEnd bool `json:"hops_end_to_end,omitempty"`
	// HopCurve makes the hops depend on the step's input rate (see
	// HopCurve): at each step the hop after every task the curve lists
	// is interpolated at the rate the trace offers in that step, and
	// replaces its HopMSByTask or HopMS value; HopSpread draws around it
	// as around a fixed hop. Its waits add the records held for a batch
	// to the observation's queues and delays (the fluid's CPU, queues and
	// throughput are unchanged: the hops are latency). Empty: the hops
	// are fixed.
	HopCurve HopCurve `json:"hop_curve,omitzero"`
	// StepSeconds is the length of a step, seconds, in [0.01, 60]; 0
	// means 1, the paper's one-second control interval. A step still replays
	// one trace point at that point's rate (events per second), so a step
	// of L seconds carries L × rate events: the trace is replayed 1/L
	// times faster, as the live runtime replays it at `eval live
	// -time-scale L` (one trace point per control interval of L seconds
	// of wall time at the point's per-second rate). Steady-state
	// utilisation and latency do not depend on L; what does is how much
	// backlog an overload builds within one control interval (L × the
	// excess rate), and so the latency of an interval that starts
	// overloaded. The observation and Info keep per-second rates (a
	// step's counts divided by L; Info.SinkEvents stays the step's
	// count); queues are levels and latencies times, unchanged. The
	// source slices (Config.SlicesPerStep) and the fast core's substeps
	// divide the step, so they are L/SlicesPerStep long (RateCV then
	// modulates slices of that length); CFS periods, hops and network
	// latencies are absolute times; the actuation delay and metric lag
	// count steps.
	StepSeconds float64 `json:"step_seconds,omitempty"`
}

// StepLength returns the length of a step, seconds (StepSeconds, 0
// meaning 1).
func (p Physics) StepLength() float64 {
	if p.StepSeconds == 0 {
		return 1
	}
	return p.StepSeconds
}

// TaskHops is a table of dispatch latencies by task name, ms
// (Physics.HopMSByTask). It is a value: two tables with the same entries
// are == (it keeps them in one canonical encoding, sorted by name), so
// Physics stays comparable. The zero TaskHops is the empty table. On disk
// it is a JSON object {"task": ms, …}.
type TaskHops struct {
	enc string // canonical JSON object, keys sorted; "" when empty
}

// TaskHop is one entry of a TaskHops.
type TaskHop struct {
	Task string
	MS   float64
}

// maxTaskHops bounds a TaskHops' entries (no application has more tasks).
const maxTaskHops = 1024

// NewTaskHops returns the table of the entries of m: names non-empty
// UTF-8, values in [0, 1000] ms (at most one step). An error names the entry.
func NewTaskHops(m map[string]float64) (TaskHops, error) {
	h, err := newTaskHops(m)
	if err != nil {
		return TaskHops{}, fmt.Errorf("env: %w", err)
	}
	return h, nil
}

// newTaskHops is NewTaskHops with errors not prefixed by the package
// (UnmarshalJSON's errors reach ParseScenario's).
func newTaskHops(m map[string]float64) (TaskHops, error) {
	if len(m) > maxTaskHops {
		return TaskHops{}, fmt.Errorf("hop_ms_by_task has %d entries, want at most %d", len(m), maxTaskHops)
	}
	if len(m) == 0 {
		return TaskHops{}, nil
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range names {
		v := m[k]
		if err := checkTaskHop(k, v); err != nil {
			return TaskHops{}, err
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return TaskHops{}, fmt.Errorf("hop_ms_by_task task %q: %w", k, err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(kb)
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(v+0, 'g', -1, 64)) // +0: no "-0"
	}
	b.WriteByte('}')
	return TaskHops{enc: b.String()}, nil
}

// checkTaskHop checks one entry of a TaskHops.
func checkTaskHop(task string, ms float64) error {
	if task == "" {
		return errors.New("hop_ms_by_task has an empty task name")
	}
	if !utf8.ValidString(task) {
		return fmt.Errorf("hop_ms_by_task task %q is not valid UTF-8", task)
	}
	if !(ms >= 0 && ms <= 1000) {
		return fmt.Errorf("hop_ms_by_task task %q: %v ms, want a finite number in [0, 1,000] (at most one step)", task, ms)
	}
	return nil
}

// Len returns the number of entries.
func (h TaskHops) Len() int { return len(h.Entries()) }

// String returns h as its JSON object ("{}" when empty).
func (h TaskHops) String() string {
	if h.enc == "" {
		return "{}"
	}
	return h.enc
}

// IsZero reports whether h is empty (for the omitzero JSON option).
func (h TaskHops) IsZero() bool { return h.enc == "" }

// Entries returns the entries sorted by task name.
func (h TaskHops) Entries() []TaskHop {
	if h.enc == "" {
		return nil
	}
	var out []TaskHop
	// enc was written by NewTaskHops: a valid object of unique names.
	dec := json.NewDecoder(strings.NewReader(h.enc))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		panic("env: corrupt TaskHops: " + err.Error())
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			panic("env: corrupt TaskHops: " + err.Error())
		}
		v, err := dec.Token()
		if err != nil {
			panic("env: corrupt TaskHops: " + err.Error())
		}
		ms, err := v.(json.Number).Float64()
		if err != nil {
			panic("env: corrupt TaskHops: " + err.Error())
		}
		out = append(out, TaskHop{Task: k.(string), MS: ms})
	}
	return out
}

// MarshalJSON writes h as a JSON object, keys sorted.
func (h TaskHops) MarshalJSON() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalJSON reads a JSON object of task name → ms (or null: empty),
// refusing a name given twice, a value that is not a number and every
// entry NewTaskHops refuses.
func (h *TaskHops) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("hop_ms_by_task: %w", err)
	}
	if tok == nil {
		*h = TaskHops{}
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("hop_ms_by_task: %v, want an object of task name → ms", tok)
	}
	m := map[string]float64{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return fmt.Errorf("hop_ms_by_task: %w", err)
		}
		name := k.(string) // an object key is a string
		v, err := dec.Token()
		if err != nil {
			return fmt.Errorf("hop_ms_by_task task %q: %w", name, err)
		}
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("hop_ms_by_task task %q: %v, want a number of ms", name, v)
		}
		ms, err := n.Float64()
		if err != nil {
			return fmt.Errorf("hop_ms_by_task task %q: %v, want a finite number of ms", name, n)
		}
		if _, dup := m[name]; dup {
			return fmt.Errorf("hop_ms_by_task task %q given twice", name)
		}
		m[name] = ms
	}
	t, err := newTaskHops(m)
	if err != nil {
		return err
	}
	*h = t
	return nil
}

// checkTasks checks p's per-task hops against the application a: every
// named task exists and forwards to a successor. The error names the task
// and the application.
func (p Physics) checkTasks(a App) error {
	if err := p.HopCurve.checkTasks(a); err != nil {
		return err
	}
	return p.HopMSByTask.checkForwarding(a, "hop_ms_by_task")
}

// checkForwarding checks that every task h names is a task of a that
// forwards to a successor (a hop applies after such a task); the error
// names field, the task and the application.
func (h TaskHops) checkForwarding(a App, field string) error {
	for _, e := range h.Entries() {
		k := slices.IndexFunc(a.Tasks, func(t Task) bool { return t.Name == e.Task })
		if k < 0 {
			return fmt.Errorf("env: physics %s: task %q is not a task of %s", field, e.Task, a.Name)
		}
		if !slices.ContainsFunc(a.Edges, func(ed Edge) bool { return ed.From == k }) {
			return fmt.Errorf("env: physics %s: task %q of %s forwards to no task (a hop applies after a task that forwards)", field, e.Task, a.Name)
		}
	}
	return nil
}

// hopSeconds returns the dispatch latency after each task of a, seconds,
// indexed as a.Tasks: its HopMSByTask entry, else HopMS for a task that
// forwards to a successor, else 0. p has passed checkTasks for a.
func (p Physics) hopSeconds(a App) []float64 {
	out := make([]float64, len(a.Tasks))
	for _, e := range a.Edges {
		out[e.From] = p.HopMS / 1000
	}
	for _, e := range p.HopMSByTask.Entries() {
		if k := slices.IndexFunc(a.Tasks, func(t Task) bool { return t.Name == e.Task }); k >= 0 {
			out[k] = e.MS / 1000
		}
	}
	return out
}

// Stochastic reports whether any option of p draws randomness.
func (p Physics) Stochastic() bool {
	return (p.Arrivals != "" && p.Arrivals != ArrivalsUniform) || p.RateCV > 0 || p.ServiceCV > 0 || p.MetricNoise > 0 || p.CapacityJitter > 0 || p.hopsDrawn()
}

// hopsDrawn reports whether p draws hop latencies (HopSpread on a
// positive hop).
func (p Physics) hopsDrawn() bool {
	return (p.HopSpread > 0 || p.HopCurve.spreads()) && (p.HopMS > 0 || p.HopMSByTask.positive() || p.HopCurve.positive())
}

// traced reports whether p needs the fast core's tracer: any option that
// changes latencies event by event (everything but the observation's
// metric noise and lag and the actuation delay).
func (p Physics) traced() bool {
	return (p.Arrivals != "" && p.Arrivals != ArrivalsUniform) || p.RateCV > 0 || p.ServiceCV > 0 || p.CFSPeriodMS > 0 || p.CapacityJitter > 0 || p.HopMS > 0 || p.HopMSByTask.positive() || p.HopCurve.positive()
}

// positive reports whether any entry of h is above 0.
func (h TaskHops) positive() bool {
	return slices.ContainsFunc(h.Entries(), func(e TaskHop) bool { return e.MS > 0 })
}

// validate checks p for an episode of steps steps.
func (p Physics) validate(steps int) error {
	switch p.Arrivals {
	case "", ArrivalsUniform, ArrivalsPoisson:
		if p.ArrivalCV != 0 {
			return fmt.Errorf("env: physics arrival_cv %v applies only to %q arrivals", p.ArrivalCV, ArrivalsGamma)
		}
	case ArrivalsGamma:
		if !(p.ArrivalCV > 0) || math.IsInf(p.ArrivalCV, 0) {
			return fmt.Errorf("env: physics arrival_cv %v, want a finite number > 0", p.ArrivalCV)
		}
	default:
		return fmt.Errorf("env: physics arrivals %q, want %s, %s or %s", p.Arrivals, ArrivalsUniform, ArrivalsPoisson, ArrivalsGamma)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"rate_cv", p.RateCV}, {"service_cv", p.ServiceCV}, {"cfs_period_ms", p.CFSPeriodMS}, {"metric_noise", p.MetricNoise}, {"capacity_jitter", p.CapacityJitter}, {"hop_ms", p.HopMS}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("env: physics %s %v, want a finite number ≥ 0", f.name, f.v)
		}
	}
	if p.StepSeconds != 0 && !(p.StepSeconds >= 0.01 && p.StepSeconds <= 60) {
		return fmt.Errorf("env: physics step_seconds %v, want a number in [0.01, 60] (0 means 1)", p.StepSeconds)
	}
	if p.CFSThreads < 0 || p.CFSThreads > 1024 {
		return fmt.Errorf("env: physics cfs_threads %d, want 0…1,024", p.CFSThreads)
	}
	if !(p.HopSpread >= 0 && p.HopSpread <= 2) {
		return fmt.Errorf("env: physics hop_spread %v, want a number in [0, 2] (up to 1 the half-width of a hop's uniform distribution relative to its mean; above 1 the weight + 1 of an exponential component)", p.HopSpread)
	}
	if p.HopMS > 1000 {
		return fmt.Errorf("env: physics hop_ms %v, want at most 1,000 (one step)", p.HopMS)
	}
	for _, e := range p.HopMSByTask.Entries() {
		if err := checkTaskHop(e.Task, e.MS); err != nil {
			return fmt.Errorf("env: physics %w", err)
		}
	}
	if p.CFSPeriodMS > 1000 {
		return fmt.Errorf("env: physics cfs_period_ms %v, want at most 1,000 (one step)", p.CFSPeriodMS)
	}
	if p.ActuationDelaySteps < 0 || p.ActuationDelaySteps >= steps {
		return fmt.Errorf("env: physics actuation_delay_steps %d, want 0 ≤ delay < the episode's %d steps", p.ActuationDelaySteps, steps)
	}
	if p.MetricLagSteps < 0 || p.MetricLagSteps >= steps {
		return fmt.Errorf("env: physics metric_lag_steps %d, want 0 ≤ lag < the episode's %d steps", p.MetricLagSteps, steps)
	}
	return nil
}

// Scenario presets (ScenarioPhysics).
const (
	// ScenarioPaper is the paper's simulator: deterministic physics (the
	// zero Physics), with the reward and observation as the paper writes
	// them.
	ScenarioPaper = "paper"
	// ScenarioRealistic turns every real-system option on.
	ScenarioRealistic = "realistic"
)

// Scenarios lists the preset names, default first.
func Scenarios() []string { return []string{ScenarioRealistic, ScenarioPaper} }

// ScenarioPhysics returns the physics of a preset:
//
//   - "paper": the zero Physics.
//   - "realistic": Poisson arrivals (many independent sensors and riders:
//     a superposition of independent sources tends to Poisson) whose rate
//     varies from one 100 ms slice to the next by a log-normal factor of
//     coefficient of variation 0.5 (the sub-second burstiness of measured
//     network and stream traffic, Leland et al., "On the self-similar
//     nature of Ethernet traffic", 1994, which per-second trace points
//     average away); log-normal service times with coefficient of
//     variation 1 (payload-dependent parsing and model work); Linux CFS
//     bandwidth control with its default 100 ms period, one thread per
//     task; allocation changes that take effect after 2 steps (a
//     Kubernetes in-place resize goes through the API server and the
//     kubelet's next sync); metrics with 5% relative noise, one step
//     behind (a 1 s scrape interval); 5% per-second capacity jitter from
//     co-located load. The values are stated, not fitted; the live
//     runtime will calibrate them.
func ScenarioPhysics(name string) (Physics, error) {
	switch name {
	case ScenarioPaper:
		return Physics{}, nil
	case ScenarioRealistic:
		return Physics{
			Arrivals: ArrivalsPoisson, ServiceCV: 1, RateCV: 0.5, CFSPeriodMS: 100, ActuationDelaySteps: 2,
			MetricNoise: 0.05, MetricLagSteps: 1, CapacityJitter: 0.05,
		}, nil
	}
	return Physics{}, fmt.Errorf("env: unknown scenario %q (want %s)", name, strings.Join(Scenarios(), " or "))
}

// IsScenario reports whether name is a preset.
func IsScenario(name string) bool { return slices.Contains(Scenarios(), name) }
