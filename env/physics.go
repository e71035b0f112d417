package env

import (
	"fmt"
	"math"
	"slices"
	"strings"
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
	// records; `eval calibrate` measures the mean per hop). A constant,
	// not a distribution: it shifts latencies and leaves the CPU, queues
	// and throughput of the fluid as they are (the records it holds back
	// are at most HopMS × rate per hop). 0: none.
	HopMS float64 `json:"hop_ms,omitempty"`
}

// Stochastic reports whether any option of p draws randomness.
func (p Physics) Stochastic() bool {
	return (p.Arrivals != "" && p.Arrivals != ArrivalsUniform) || p.RateCV > 0 || p.ServiceCV > 0 || p.MetricNoise > 0 || p.CapacityJitter > 0
}

// traced reports whether p needs the fast core's tracer: any option that
// changes latencies event by event (everything but the observation's
// metric noise and lag and the actuation delay).
func (p Physics) traced() bool {
	return (p.Arrivals != "" && p.Arrivals != ArrivalsUniform) || p.RateCV > 0 || p.ServiceCV > 0 || p.CFSPeriodMS > 0 || p.CapacityJitter > 0 || p.HopMS > 0
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
	if p.CFSThreads < 0 || p.CFSThreads > 1024 {
		return fmt.Errorf("env: physics cfs_threads %d, want 0…1,024", p.CFSThreads)
	}
	if p.HopMS > 1000 {
		return fmt.Errorf("env: physics hop_ms %v, want at most 1,000 (one step)", p.HopMS)
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
