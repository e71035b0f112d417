package clasp

import "slices"

// Planner decides the configuration of a stream application: given the
// current time (seconds) and an observation, it returns a Plan. A Planner is
// pure decision logic in the manner of Nomad's scheduler: it reads no clock,
// does no I/O and applies nothing; the caller (the simulator's controller)
// applies the plan. Implementations are deterministic and may keep history
// between calls (estimators, triggers, stabilization windows), which Reset
// clears. Plan rejects a malformed observation with an error wrapping
// ErrInvalid and without changing state.
type Planner interface {
	// Name identifies the planner ("clasp", "faasflow", …).
	Name() string
	// Plan returns the plan for the observation at time now (seconds).
	Plan(now float64, ob Observation) (Plan, error)
	// Reset forgets all history.
	Reset()
}

// Plan is a planner's decision.
type Plan struct {
	// Planner is the planner's name; Time the decision time, seconds.
	Planner string
	Time    float64
	// Changed is false when the plan keeps the current configuration (no
	// trigger, or a re-plan that reproduced it); Workers and Parallelism
	// then restate the observation's and the migration is empty.
	Changed bool
	// Reason says why the planner re-planned or held.
	Reason string
	// Parallelism is P_o per operator.
	Parallelism []int
	// Workers are the workers of the plan, in plan order (ascending ID),
	// which is also the routing order of Route. len(Workers) is the worker
	// count.
	Workers []WorkerPlan
	// Migration moves state and queued requests from the old placement to
	// the new one.
	Migration Migration
	// DurationS is the estimated planner duration: the planning time plus
	// the migration's makespan, seconds.
	DurationS float64
	// Explain holds the inputs and per-component scores behind the plan.
	Explain Explanation
}

// WorkerPlan is one worker of a plan.
type WorkerPlan struct {
	ID int
	// New marks a worker that is not active in the observation.
	New bool
	// Share is φ_{o,w} per operator.
	Share []float64
	// Load is the worker's load under Explain.Model (Eq. 1), by component.
	Load LoadParts
}

// Score is one named per-component score behind a decision. Op and Worker
// are −1 where they do not apply; Worker is an index into Plan.Workers.
type Score struct {
	Name   string
	Op     int
	Worker int
	Value  float64
}

// Explanation is what a plan was derived from.
type Explanation struct {
	// Model is the capacity model the loads are computed with (CLASP's
	// current estimate; the baselines report loads under their configured
	// model, which they do not otherwise use unless they say so).
	Model CostModel
	// Budget is the per-worker load the packing targeted, µs/s (0 for
	// planners that do not pack by load).
	Budget float64
	// Demand is the projected demand.
	Demand Demand
	// Order, Postponed and Steps describe CLASP's packing (empty for the
	// slot-based baselines).
	Order, Postponed []int
	Steps            []PlaceStep
	// Scores are planner-specific scores, in a fixed order.
	Scores []Score
}

// NumWorkers is the plan's worker count.
func (p *Plan) NumWorkers() int { return len(p.Workers) }

// Shares returns the placement as shares[w][o] in plan order.
func (p *Plan) Shares() [][]float64 {
	s := make([][]float64, len(p.Workers))
	for i, w := range p.Workers {
		s[i] = w.Share
	}
	return s
}

// workerIDs returns the IDs of an n-worker plan: the observation's active
// IDs in ascending order (the lowest are kept when scaling in), then fresh
// IDs above the largest active one.
func workerIDs(ob *Observation, n int) (ids []int, isNew []bool) {
	next := 0
	for _, w := range ob.Workers {
		next = max(next, w.ID+1)
	}
	for i := range n {
		if i < len(ob.Workers) {
			ids = append(ids, ob.Workers[i].ID)
			isNew = append(isNew, false)
			continue
		}
		ids = append(ids, next)
		isNew = append(isNew, true)
		next++
	}
	return ids, isNew
}

// build assembles a changed plan from shares in plan order.
func build(name string, now float64, ob *Observation, d Demand, m CostModel, shares [][]float64, par []int, computeS float64) Plan {
	ids, isNew := workerIDs(ob, len(shares))
	loads := m.Loads(&ob.App, d, shares)
	p := Plan{Planner: name, Time: now, Changed: true, Parallelism: par}
	for i := range shares {
		p.Workers = append(p.Workers, WorkerPlan{ID: ids[i], New: isNew[i], Share: shares[i], Load: loads[i]})
	}
	p.Migration = Migrate(ob, d, ids, shares)
	p.DurationS = computeS + p.Migration.MakespanS
	p.Explain = Explanation{Model: m, Demand: d}
	return p
}

// hold restates the observation's configuration as an unchanged plan.
func hold(name string, now float64, ob *Observation, d Demand, m CostModel, reason string) Plan {
	nOps := len(ob.App.Operators)
	shares := make([][]float64, len(ob.Workers))
	for i, w := range ob.Workers {
		shares[i] = make([]float64, nOps)
		copy(shares[i], w.Share)
	}
	loads := m.Loads(&ob.App, d, shares)
	p := Plan{Planner: name, Time: now, Reason: reason, Parallelism: slices.Clone(ob.Parallelism)}
	if p.Parallelism == nil {
		p.Parallelism = make([]int, nOps)
	}
	for i, w := range ob.Workers {
		p.Workers = append(p.Workers, WorkerPlan{ID: w.ID, Share: shares[i], Load: loads[i]})
	}
	p.Explain = Explanation{Model: m, Demand: d}
	return p
}
