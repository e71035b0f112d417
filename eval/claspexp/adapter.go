package claspexp

import (
	"errors"
	"fmt"
	"math"

	"streamscale/clasp"
	"streamscale/env"
)

// HorizontalController decides replica plans from the simulator's per-worker
// metrics. agents.Controller sees only env.Observation, which lacks
// Info.Workers; a horizontal planner needs them, so it is driven through
// this interface by Run.
type HorizontalController interface {
	// Reset starts a new episode.
	Reset(seed uint64) error
	// Act returns the action for the step that starts at time now
	// (seconds), given the Info of the previous step (of Reset at now = 0).
	Act(now float64, info env.Info) (env.Action, error)
}

// ShareQuantum is the grid the adapter rounds shares to (2⁻¹⁹ ≈ 1.9·10⁻⁶).
// clasp.Route ignores a remote flow of at most 10⁻⁶ of an edge when it
// counts destinations, while the simulator opens a destination (and charges
// γ) for any positive flow; rounding the cumulative shares of every operator
// to one grid makes shares that agree to within the grid identical, so the
// residues that clasp ignores do not reach the simulator.
const ShareQuantum = 1.0 / (1 << 19)

// QuantizeShares rounds every operator's shares (shares[w][o], plan order)
// to multiples of ShareQuantum by rounding the running sums, so each
// operator's shares still sum to exactly 1 (or 0) and two operators with the
// same cumulative profile get the same shares. It returns a new slice.
func QuantizeShares(shares [][]float64) [][]float64 {
	out := make([][]float64, len(shares))
	for w := range shares {
		out[w] = make([]float64, len(shares[w]))
	}
	if len(shares) == 0 {
		return out
	}
	for o := range shares[0] {
		cum, prev := 0.0, 0.0
		for w := range shares {
			cum += shares[w][o]
			q := math.Round(cum/ShareQuantum) * ShareQuantum
			out[w][o] = max(0, q-prev)
			prev = max(prev, q)
		}
	}
	return out
}

// ObservationFromInfo converts one step's Info into CLASP's observation
// (paper Table 2). active lists the worker (= server) IDs of the current
// plan, ascending, and shares[i][o] the share of operator o on active[i];
// par is the current parallelism (nil before the first plan). Worker i's
// metrics come from info.Workers[active[i]] (zeros when Info has none).
func ObservationFromInfo(app clasp.App, info env.Info, active []int, shares [][]float64, par []int, bandwidth float64) (clasp.Observation, error) {
	if len(shares) != len(active) {
		return clasp.Observation{}, fmt.Errorf("claspexp: %d share rows for %d active workers", len(shares), len(active))
	}
	nOps, nEdges := len(app.Operators), len(app.Edges)
	ob := clasp.Observation{
		App:          app,
		PlannerQueue: info.PlannerQueue,
		InputRate:    info.OfferedRate,
		Throughput:   info.Throughput,
		Bandwidth:    bandwidth,
	}
	if par != nil {
		ob.Parallelism = append([]int(nil), par...)
	}
	if len(info.StateMB) == nOps {
		ob.StateBytes = make([]float64, nOps)
		for o, mb := range info.StateMB {
			ob.StateBytes[o] = mb * (1 << 20)
		}
	}
	for i, id := range active {
		if id < 0 || (info.Workers != nil && id >= len(info.Workers)) {
			return clasp.Observation{}, fmt.Errorf("claspexp: active worker %d outside the %d servers", id, len(info.Workers))
		}
		if len(shares[i]) != nOps {
			return clasp.Observation{}, fmt.Errorf("claspexp: worker %d has %d shares, want %d", id, len(shares[i]), nOps)
		}
		w := clasp.WorkerObs{
			ID:       id,
			Exec:     make([]float64, nOps),
			ExecUS:   make([]float64, nOps),
			EdgeRate: make([]float64, nEdges),
			Share:    append([]float64(nil), shares[i]...),
		}
		if info.Workers != nil {
			m := info.Workers[id]
			if len(m.Executions) != nOps || len(m.EdgeRequests) != nEdges {
				return clasp.Observation{}, fmt.Errorf("claspexp: worker %d reports %d tasks and %d edges, want %d and %d", id, len(m.Executions), len(m.EdgeRequests), nOps, nEdges)
			}
			w.Queue = m.Queue
			w.LocalRate = m.LocalRequests
			w.RemoteRate = m.RemoteRequests
			w.RemoteDests = float64(m.RemoteDestinations)
			w.LoadUS = m.LoadUS
			copy(w.Exec, m.Executions)
			copy(w.ExecUS, m.ExecUS)
			copy(w.EdgeRate, m.EdgeRequests)
		}
		ob.Workers = append(ob.Workers, w)
	}
	return ob, nil
}

// ReplicasFromShares converts a placement (ids[w] the server of plan worker
// w, shares[w][o] its share of operator o) into the simulator's replica plan:
// per task, one replica per worker with a positive quantized share, in plan
// (ascending ID) order, which is the order both routing rules use.
func ReplicasFromShares(ids []int, shares [][]float64, servers int) ([][]env.Replica, error) {
	if len(ids) != len(shares) {
		return nil, fmt.Errorf("claspexp: %d worker IDs for %d share rows", len(ids), len(shares))
	}
	if len(shares) == 0 {
		return nil, fmt.Errorf("claspexp: plan has no workers")
	}
	q := QuantizeShares(shares)
	nOps := len(q[0])
	plan := make([][]env.Replica, nOps)
	for w, id := range ids {
		if id < 0 || id >= servers {
			return nil, fmt.Errorf("claspexp: plan uses worker %d, scenario has %d", id, servers)
		}
		if w > 0 && id <= ids[w-1] {
			return nil, fmt.Errorf("claspexp: worker IDs not ascending (%d after %d)", id, ids[w-1])
		}
		if len(q[w]) != nOps {
			return nil, fmt.Errorf("claspexp: worker %d has %d shares, want %d", id, len(q[w]), nOps)
		}
		for o, s := range q[w] {
			if s > 0 {
				plan[o] = append(plan[o], env.Replica{Server: id, Share: s})
			}
		}
	}
	for o, rs := range plan {
		if len(rs) == 0 {
			return nil, fmt.Errorf("claspexp: operator %d placed nowhere", o)
		}
	}
	return plan, nil
}

// ActionFromPlan converts a plan into the simulator's action: Hold when the
// plan keeps the configuration, else the replica plan of its workers.
func ActionFromPlan(p clasp.Plan, servers int) (env.Action, error) {
	if !p.Changed {
		return env.Action{Hold: true}, nil
	}
	ids := make([]int, len(p.Workers))
	for i, w := range p.Workers {
		ids[i] = w.ID
	}
	plan, err := ReplicasFromShares(ids, p.Shares(), servers)
	if err != nil {
		return env.Action{}, err
	}
	return env.Action{Replicas: plan}, nil
}

// PlannerController drives a clasp.Planner in the simulator: every step it
// converts the Info into an Observation, asks for a plan and applies it as
// a replica plan (or holds). Worker IDs are server indices; the scenario
// must have at least as many servers as the planner may use.
type PlannerController struct {
	planner clasp.Planner
	app     clasp.App
	servers int

	active []int
	shares [][]float64
	par    []int
	// Plans are the changed plans applied, in order.
	Plans []clasp.Plan
	// Infeasible counts the steps whose demand exceeded the whole cluster
	// (the current plan was kept).
	Infeasible int
}

// NewPlannerController wraps p for app on a scenario of servers workers.
func NewPlannerController(p clasp.Planner, app clasp.App, servers int) *PlannerController {
	return &PlannerController{planner: p, app: app, servers: servers}
}

// Reset implements HorizontalController.
func (c *PlannerController) Reset(uint64) error {
	c.planner.Reset()
	c.active, c.shares, c.par, c.Plans, c.Infeasible = nil, nil, nil, nil, 0
	return nil
}

// Act implements HorizontalController.
func (c *PlannerController) Act(now float64, info env.Info) (env.Action, error) {
	ob, err := ObservationFromInfo(c.app, info, c.active, c.shares, c.par, BandwidthBytes)
	if err != nil {
		return env.Action{}, err
	}
	p, err := c.planner.Plan(now, ob)
	if errors.Is(err, clasp.ErrCapacity) {
		// The demand exceeds the whole cluster: keep the current plan,
		// which is as large as the planner may go, and count it.
		c.Infeasible++
		return env.Action{Hold: true}, nil
	}
	if err != nil {
		return env.Action{}, err
	}
	a, err := ActionFromPlan(p, c.servers)
	if err != nil || a.Hold {
		return a, err
	}
	c.active = c.active[:0]
	for _, w := range p.Workers {
		c.active = append(c.active, w.ID)
	}
	c.shares = QuantizeShares(p.Shares())
	c.par = append(c.par[:0], p.Parallelism...)
	c.Plans = append(c.Plans, p)
	return a, nil
}

// Hold is the controller that never changes the configuration.
type Hold struct{}

// Reset implements HorizontalController.
func (Hold) Reset(uint64) error { return nil }

// Act implements HorizontalController.
func (Hold) Act(float64, env.Info) (env.Action, error) { return env.Action{Hold: true}, nil }
