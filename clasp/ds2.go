package clasp

import "math"

// DS2Config configures the DS2 baseline.
type DS2Config struct {
	SlotConfig
	// MaxParallelism caps P_o, ≥ 1. Default 1,000.
	MaxParallelism int
}

// DefaultDS2Config returns the defaults documented on the fields.
func DefaultDS2Config() DS2Config {
	return DS2Config{SlotConfig: DefaultSlotConfig(), MaxParallelism: 1000}
}

// DS2 is the DS2 scaling policy (Kalavri et al., OSDI 2018): one-step
// parallelism from true processing rates.
//
//   - True processing rate: records processed per unit of useful time. For
//     operator o, useful time is Σ_w N_{w,o}·τ̄_{w,o}/S instance-seconds per
//     second, where S = W/Slots is the CPU of one executor slot (µs/s: the
//     slots of a worker share its budget W, so an instance busy for a second
//     of wall time does S µs of work), and one instance's true rate is
//     S/τ̄_o (τ̄_o the execution-
//     weighted mean execution time; nominal where o ran nowhere).
//   - Target rates: sources must keep up with λ_p; every edge's true
//     selectivity, observed requests out per execution of its sender (the
//     nominal ratio where the sender ran nowhere), carries the targets
//     downstream in topological order.
//   - P_o = ⌈target_o / true rate per instance⌉, at least 1.
//
// DS2 decides parallelism only; its workers are the ⌈Σ P_o / Slots⌉ needed
// to host the instances, which fill slots first-fit in topological order
// (Flink's default slot assignment).
type DS2 struct{ cfg DS2Config }

// NewDS2 returns the baseline or an error for a bad configuration.
func NewDS2(cfg DS2Config) (*DS2, error) {
	if cfg.MaxParallelism < 1 {
		return nil, invalidf("ds2: max parallelism %d, want ≥ 1", cfg.MaxParallelism)
	}
	if err := cfg.SlotConfig.validate(); err != nil {
		return nil, err
	}
	return &DS2{cfg: cfg}, nil
}

// Name implements Planner.
func (s *DS2) Name() string { return "ds2" }

// Reset implements Planner (DS2 keeps no history).
func (s *DS2) Reset() {}

// Plan implements Planner.
func (s *DS2) Plan(now float64, ob Observation) (Plan, error) {
	if !finite(now) {
		return Plan{}, invalidf("time %v", now)
	}
	if err := ob.Validate(); err != nil {
		return Plan{}, err
	}
	d := Derive(&ob)
	app := &ob.App
	nOps := len(app.Operators)
	processed, sent := ob.totals()
	target := make([]float64, nOps)
	for _, src := range app.Sources() {
		target[src] = ob.InputRate
	}
	var scores []Score
	par := make([]int, nOps)
	for _, o := range app.TopoOrder() {
		trueRate := s.cfg.slotUS() / d.ExecUS[o]
		par[o] = min(s.cfg.MaxParallelism, max(1, int(math.Ceil(target[o]/trueRate-1e-9))))
		scores = append(scores, score("target-rate", o, -1, target[o]), score("true-rate", o, -1, trueRate))
		for _, e := range app.outEdges(o) {
			sel := app.Edges[e].Ratio
			if processed[o] > 0 {
				sel = sent[e] / processed[o]
			}
			target[app.Edges[e].To] += target[o] * sel
		}
	}
	n := min(s.cfg.slotWorkers(par), s.cfg.MaxWorkers)
	counts := slotFirstFit(app.TopoOrder(), par, n, s.cfg.Slots)
	return slotPlan(s.Name(), now, &ob, d, s.cfg.SlotConfig, countShares(counts, par), par, scores), nil
}
