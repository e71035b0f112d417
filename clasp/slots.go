package clasp

import "math"

// SlotConfig is the part of a slot-based baseline's configuration that all
// of them share.
type SlotConfig struct {
	// Slots is the number of executor slots per worker, ≥ 1. Default 10.
	Slots int
	// Model is the capacity model under which the plan's loads are
	// reported (explanation only; slot-based planners do not use it).
	// Default DefaultCostModel.
	Model CostModel
	// MaxWorkers bounds the worker count, ≥ 1. Default 512.
	MaxWorkers int
	// ComputeS is the planning time added to the planner duration, seconds
	// ≥ 0. Default 0.05.
	ComputeS float64
}

// DefaultSlotConfig returns the defaults documented on the fields.
func DefaultSlotConfig() SlotConfig {
	return SlotConfig{Slots: DefaultSlots, Model: DefaultCostModel(), MaxWorkers: 512, ComputeS: 0.05}
}

func (c SlotConfig) validate() error {
	if c.Slots < 1 || c.MaxWorkers < 1 || !nonNegative(c.ComputeS) {
		return invalidf("slots %d (want ≥ 1), max workers %d (want ≥ 1), compute %v s (want ≥ 0)", c.Slots, c.MaxWorkers, c.ComputeS)
	}
	return c.Model.validate()
}

// slotWorkers is the number of workers whose slots hold all instances.
func (c SlotConfig) slotWorkers(par []int) int {
	var tot int
	for _, p := range par {
		tot += p
	}
	return max(1, (tot+c.Slots-1)/c.Slots)
}

// slotFirstFit places inst[o] instances of each operator, operators in the
// given order, first-fit onto n workers of capSlots slots each. It returns
// counts[w][o]; instances that fit nowhere go to the worker with the most
// free slots (the lowest index among ties), overcommitting it.
func slotFirstFit(order, inst []int, n, capSlots int) [][]int {
	counts := make([][]int, n)
	free := make([]int, n)
	for w := range counts {
		counts[w] = make([]int, len(inst))
		free[w] = capSlots
	}
	for _, o := range order {
		for range inst[o] {
			w := firstFree(free, nil)
			counts[w][o]++
			free[w]--
		}
	}
	return counts
}

// firstFree returns the first worker of prefer (ascending) with a free slot,
// else the first worker with a free slot, else the one with the most free
// slots.
func firstFree(free, prefer []int) int {
	for _, w := range prefer {
		if free[w] > 0 {
			return w
		}
	}
	best := 0
	for w := range free {
		if free[w] > 0 {
			return w
		}
		if free[w] > free[best] {
			best = w
		}
	}
	return best
}

// countShares turns instance counts into shares φ_{o,w} = count/P_o.
func countShares(counts [][]int, inst []int) [][]float64 {
	s := make([][]float64, len(counts))
	for w := range counts {
		s[w] = make([]float64, len(inst))
		for o, c := range counts[w] {
			if inst[o] > 0 {
				s[w][o] = float64(c) / float64(inst[o])
			}
		}
	}
	return s
}

// slotUS is the CPU of one executor slot, µs/s: the worker budget of the
// reporting model shared by the slots.
func (c SlotConfig) slotUS() float64 { return c.Model.Budget / float64(c.Slots) }

// sameConfig reports whether par and shares (plan order, IDs from
// workerIDs) restate the observation's configuration.
func sameConfig(ob *Observation, par []int, shares [][]float64) bool {
	if len(shares) != len(ob.Workers) || len(par) != len(ob.Parallelism) {
		return false
	}
	for o := range par {
		if par[o] != ob.Parallelism[o] {
			return false
		}
	}
	for w := range shares {
		for o, s := range shares[w] {
			if math.Abs(s-at(ob.Workers[w].Share, o)) > shareEps {
				return false
			}
		}
	}
	return true
}

// slotPlan assembles a slot-based planner's plan.
func slotPlan(name string, now float64, ob *Observation, d Demand, c SlotConfig, shares [][]float64, par []int, scores []Score) Plan {
	if sameConfig(ob, par, shares) {
		p := hold(name, now, ob, d, c.Model, "configuration unchanged")
		p.Explain.Scores = scores
		return p
	}
	p := build(name, now, ob, d, c.Model, shares, par, c.ComputeS)
	p.Reason = "re-planned"
	p.Explain.Scores = scores
	return p
}

func score(name string, op, worker int, v float64) Score {
	return Score{Name: name, Op: op, Worker: worker, Value: v}
}
