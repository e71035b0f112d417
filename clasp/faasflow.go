package clasp

import (
	"math"
	"sort"
)

// FaaSFlowConfig configures the FaaSFlow baseline.
type FaaSFlowConfig struct {
	SlotConfig
	// LagTolerance says when the system is saturated, so that Λ/n measures
	// a worker's throughput: Λ < (1−LagTolerance)·λ_p, in [0, 1). Default
	// 0.05.
	LagTolerance float64
}

// DefaultFaaSFlowConfig returns the defaults documented on the fields.
func DefaultFaaSFlowConfig() FaaSFlowConfig {
	return FaaSFlowConfig{SlotConfig: DefaultSlotConfig(), LagTolerance: 0.05}
}

func (c FaaSFlowConfig) validate() error {
	if !(c.LagTolerance >= 0 && c.LagTolerance < 1) {
		return invalidf("faasflow: lag tolerance %v, want [0, 1)", c.LagTolerance)
	}
	return c.SlotConfig.validate()
}

// FaaSFlow is the FaaSFlow baseline (Li et al., ASPLOS 2022) as the CLASP
// paper evaluates it: a worker's capacity is its executor slots only, and
// the worker count is extrapolated linearly from the throughput currently
// observed and revised at the next round.
//
//   - Worker count N = ⌈λ_p / T⌉, where T = Λ/n is the throughput per
//     worker of the latest observation in which the system was saturated
//     (Λ < (1−LagTolerance)·λ_p) on n active workers. The paper's example:
//     one worker delivering 100/s of 500/s gives N = 5; five workers then
//     delivering 250/s give T = 50 and N = 10. T is replaced by every new
//     saturated observation (never averaged). Before any saturated
//     observation there is nothing to extrapolate from, so N is the current
//     worker count (1 at the start): no prior capacity is assumed.
//   - Parallelism: the N·Slots instances are split over operators in
//     proportion to D_o·τ̄_o (one each at least, largest remainder);
//     N grows if there are more operators than slots.
//   - Placement groups heavily communicating operators: edges by descending
//     request rate; an unplaced endpoint goes first-fit onto the workers
//     hosting its partner, then onto the lowest-index worker with a free
//     slot (the fewest workers).
type FaaSFlow struct {
	cfg       FaaSFlowConfig
	perWorker float64 // T, requests/s; 0 before the first saturated observation
	lastTime  float64
	haveFirst bool
}

// NewFaaSFlow returns the baseline or an error for a bad configuration.
func NewFaaSFlow(cfg FaaSFlowConfig) (*FaaSFlow, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &FaaSFlow{cfg: cfg}, nil
}

// Name implements Planner.
func (f *FaaSFlow) Name() string { return "faasflow" }

// Reset implements Planner.
func (f *FaaSFlow) Reset() { f.perWorker, f.lastTime, f.haveFirst = 0, 0, false }

// activeWorkers is the number of workers holding a share of some operator,
// or, when nothing is placed, the number of workers observed (at least 1).
func activeWorkers(ob *Observation) int {
	n := 0
	for _, w := range ob.Workers {
		for _, s := range w.Share {
			if s > 0 {
				n++
				break
			}
		}
	}
	if n == 0 {
		n = len(ob.Workers)
	}
	return max(1, n)
}

// observe replaces T by Λ/n when saturated (once per time instant).
func (f *FaaSFlow) observe(now float64, ob *Observation) {
	if f.haveFirst && now <= f.lastTime {
		return
	}
	f.haveFirst, f.lastTime = true, now
	if ob.placed() && ob.Throughput > 0 && ob.Throughput < (1-f.cfg.LagTolerance)*ob.InputRate {
		f.perWorker = ob.Throughput / float64(activeWorkers(ob))
	}
}

// workers implements workerCounter (FaaSFlow-SP).
func (f *FaaSFlow) workers(ob *Observation, _ Demand) (int, []Score) {
	n := activeWorkers(ob)
	if f.perWorker > 0 && ob.InputRate > 0 {
		n = max(1, int(math.Ceil(ob.InputRate/f.perWorker-1e-9)))
	}
	n = max(n, (len(ob.App.Operators)+f.cfg.Slots-1)/f.cfg.Slots)
	n = min(n, f.cfg.MaxWorkers)
	return n, []Score{score("throughput-per-worker", -1, -1, f.perWorker), score("workers", -1, -1, float64(n))}
}

// Plan implements Planner.
func (f *FaaSFlow) Plan(now float64, ob Observation) (Plan, error) {
	if !finite(now) {
		return Plan{}, invalidf("time %v", now)
	}
	if err := ob.Validate(); err != nil {
		return Plan{}, err
	}
	f.observe(now, &ob)
	d := Derive(&ob)
	n, scores := f.workers(&ob, d)
	app := &ob.App
	nOps := len(app.Operators)
	weights := make([]float64, nOps)
	var tw float64
	for o := range nOps {
		weights[o] = d.Work(o)
		tw += weights[o]
	}
	if tw <= 0 {
		for o := range weights {
			weights[o] = 1
		}
	}
	par := apportionMinOne(weights, n*f.cfg.Slots)
	counts := f.group(app, d, par, n)
	return slotPlan(f.Name(), now, &ob, d, f.cfg.SlotConfig, countShares(counts, par), par, scores), nil
}

// group places the instances along the heaviest edges.
func (f *FaaSFlow) group(app *App, d Demand, par []int, n int) [][]int {
	nOps := len(app.Operators)
	counts := make([][]int, n)
	free := make([]int, n)
	for w := range counts {
		counts[w] = make([]int, nOps)
		free[w] = f.cfg.Slots
	}
	placed := make([]bool, nOps)
	hosts := func(q int) []int {
		var ws []int
		for w := range counts {
			if counts[w][q] > 0 {
				ws = append(ws, w)
			}
		}
		return ws
	}
	put := func(o int, prefer []int) {
		for range par[o] {
			w := firstFree(free, prefer)
			counts[w][o]++
			free[w]--
		}
		placed[o] = true
	}
	edges := make([]int, len(app.Edges))
	for i := range edges {
		edges[i] = i
	}
	sort.SliceStable(edges, func(a, b int) bool { return d.Edge[edges[a]] > d.Edge[edges[b]] })
	for _, e := range edges {
		u, v := app.Edges[e].From, app.Edges[e].To
		switch {
		case !placed[u] && !placed[v]:
			put(u, nil)
			put(v, hosts(u))
		case !placed[u]:
			put(u, hosts(v))
		case !placed[v]:
			put(v, hosts(u))
		}
	}
	for o := range nOps {
		if !placed[o] {
			put(o, nil)
		}
	}
	return counts
}
