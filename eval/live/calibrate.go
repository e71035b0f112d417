package live

import (
	"fmt"
	"math"

	"streamscale/env"
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
		return nil, fmt.Errorf("live: step probe of %d tasks %v → %v at %d, want n ≥ 1, allocations > 0, at ≥ 1", n, high, low, at)
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
}

// Calibration accumulates the workers' reports of a probe run.
type Calibration struct {
	names []string
	// per operator: Σ cpu s, Σ execs, Σ delay×execs, per-interval costs
	cpu, execs, delay []float64
	per               [][]float64
	// Millicores reported per interval (operator 0, worker-summed), for
	// the actuation delay.
	Reported []int
}

// NewCalibration returns an accumulator for the operators named.
func NewCalibration(names []string) *Calibration {
	n := len(names)
	return &Calibration{names: names, cpu: make([]float64, n), execs: make([]float64, n), delay: make([]float64, n), per: make([][]float64, n)}
}

// Tap records one interval (Config.Tap): costs and delays from the
// intervals in [from, to) (the warm-up and the throttled phase left out);
// the reported allocation from every interval.
func (c *Calibration) Tap(from, to int) func(int, []planner.TaskObs) {
	return func(step int, tasks []planner.TaskObs) {
		mc := 0
		cpu := make([]float64, len(c.names))
		ex := make([]float64, len(c.names))
		for _, t := range tasks {
			if t.Op < 0 || t.Op >= len(c.names) {
				continue
			}
			if t.Op == 0 {
				mc += t.Millicores
			}
			cpu[t.Op] += t.CPUCores
			ex[t.Op] += t.Throughput
			if step >= from && step < to {
				c.delay[t.Op] += t.LatencyMS * t.Throughput
			}
		}
		c.Reported = append(c.Reported, mc)
		if step < from || step >= to {
			return
		}
		for o := range c.names {
			c.cpu[o] += cpu[o]
			c.execs[o] += ex[o]
			if ex[o] > 0 {
				c.per[o] = append(c.per[o], cpu[o]/ex[o]*1e6)
			}
		}
	}
}

// Costs returns every operator's cost.
func (c *Calibration) Costs() []OperatorCost {
	out := make([]OperatorCost, len(c.names))
	for o, name := range c.names {
		oc := OperatorCost{Operator: name, Intervals: len(c.per[o])}
		if c.execs[o] > 0 {
			oc.CPUUSPerEvent = c.cpu[o] / c.execs[o] * 1e6
			oc.DelayMS = c.delay[o] / c.execs[o]
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
func (c *Calibration) ActuationIntervals(at, want int) int {
	for i := at; i < len(c.Reported); i++ {
		if c.Reported[i] == want {
			return i - at
		}
	}
	return -1
}
