package horizontal

import (
	"errors"
	"fmt"
	"math"

	"streamscale/clasp"
	"streamscale/env"
)

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
		return clasp.Observation{}, fmt.Errorf("horizontal: %d share rows for %d active workers", len(shares), len(active))
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
			return clasp.Observation{}, fmt.Errorf("horizontal: active worker %d outside the %d servers", id, len(info.Workers))
		}
		if len(shares[i]) != nOps {
			return clasp.Observation{}, fmt.Errorf("horizontal: worker %d has %d shares, want %d", id, len(shares[i]), nOps)
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
				return clasp.Observation{}, fmt.Errorf("horizontal: worker %d reports %d tasks and %d edges, want %d and %d", id, len(m.Executions), len(m.EdgeRequests), nOps, nEdges)
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
		return nil, fmt.Errorf("horizontal: %d worker IDs for %d share rows", len(ids), len(shares))
	}
	if len(shares) == 0 {
		return nil, fmt.Errorf("horizontal: plan has no workers")
	}
	q := QuantizeShares(shares)
	nOps := len(q[0])
	plan := make([][]env.Replica, nOps)
	for w, id := range ids {
		if id < 0 || id >= servers {
			return nil, fmt.Errorf("horizontal: plan uses worker %d, scenario has %d", id, servers)
		}
		if w > 0 && id <= ids[w-1] {
			return nil, fmt.Errorf("horizontal: worker IDs not ascending (%d after %d)", id, ids[w-1])
		}
		if len(q[w]) != nOps {
			return nil, fmt.Errorf("horizontal: worker %d has %d shares, want %d", id, len(q[w]), nOps)
		}
		for o, s := range q[w] {
			if s > 0 {
				plan[o] = append(plan[o], env.Replica{Server: id, Share: s})
			}
		}
	}
	for o, rs := range plan {
		if len(rs) == 0 {
			return nil, fmt.Errorf("horizontal: operator %d placed nowhere", o)
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

// Adapter runs a clasp.Planner in the simulator as an
// agents.HorizontalController: every step it converts the Info into the
// planner's Observation (paper Table 2) with the plan workers numbered as
// the planner numbers them, asks for a plan, and returns it as a replica
// plan on the mapped servers (or Hold). It is the one bridge between
// package clasp and package env.
type Adapter struct {
	planner   clasp.Planner
	app       clasp.App
	cfg       AdapterConfig
	perm      []env.WorkerMetrics // info.Workers in plan-worker order
	active    []int               // plan-worker IDs of the current plan, ascending
	shares    [][]float64         // their quantized shares
	par       []int
	over      bool // the last decision found the demand beyond the cluster
	overCnt   int
	infeasCnt int
	plans     []clasp.Plan
}

// AdapterConfig says how plan workers map onto the scenario's servers and
// what the planner is told of the network.
type AdapterConfig struct {
	// Servers[i] is the server index of plan worker i; its length is the
	// most workers a plan may use. Default: the identity over the
	// scenario's servers.
	Servers []int
	// Speedup[i] multiplies the execution times the simulator reports for
	// plan worker i, converting them to the planner's reference core
	// (Mapping.Speedup). Default: 1 for every worker.
	Speedup []float64
	// BandwidthBytes is a worker's network bandwidth as the planner sees
	// it, bytes/s (> 0).
	BandwidthBytes float64
	// CapacityUS, when > 0, is the load (µs of work per second) beyond
	// which a plan spanning every worker counts as over capacity (the
	// planner spread a demand larger than the cluster over all workers).
	CapacityUS float64
}

// NewAdapter wraps planner p for app on a scenario of servers servers.
func NewAdapter(p clasp.Planner, app clasp.App, servers int, cfg AdapterConfig) (*Adapter, error) {
	if cfg.Servers == nil {
		for i := range servers {
			cfg.Servers = append(cfg.Servers, i)
		}
	}
	if cfg.Speedup == nil {
		for range cfg.Servers {
			cfg.Speedup = append(cfg.Speedup, 1)
		}
	}
	switch {
	case p == nil:
		return nil, errors.New("horizontal: no planner")
	case len(cfg.Servers) == 0 || len(cfg.Servers) > servers:
		return nil, fmt.Errorf("horizontal: %d plan workers for %d servers", len(cfg.Servers), servers)
	case len(cfg.Speedup) != len(cfg.Servers):
		return nil, fmt.Errorf("horizontal: %d speed-ups for %d plan workers", len(cfg.Speedup), len(cfg.Servers))
	case !(cfg.BandwidthBytes > 0):
		return nil, fmt.Errorf("horizontal: bandwidth %v bytes/s, want > 0", cfg.BandwidthBytes)
	case cfg.CapacityUS < 0 || math.IsNaN(cfg.CapacityUS):
		return nil, fmt.Errorf("horizontal: capacity %v µs/s, want ≥ 0", cfg.CapacityUS)
	}
	seen := make([]bool, servers)
	for i, s := range cfg.Servers {
		if s < 0 || s >= servers || seen[s] {
			return nil, fmt.Errorf("horizontal: plan worker %d maps to server %d (of %d, each once)", i, s, servers)
		}
		seen[s] = true
		if !(cfg.Speedup[i] > 0) || math.IsInf(cfg.Speedup[i], 0) {
			return nil, fmt.Errorf("horizontal: plan worker %d has speed-up %v, want a finite number > 0", i, cfg.Speedup[i])
		}
	}
	return &Adapter{planner: p, app: app, cfg: cfg, perm: make([]env.WorkerMetrics, servers)}, nil
}

// Planner returns the wrapped planner.
func (c *Adapter) Planner() clasp.Planner { return c.planner }

// Reset implements agents.HorizontalController.
func (c *Adapter) Reset(uint64) error {
	c.planner.Reset()
	c.active, c.shares, c.par, c.plans = nil, nil, nil, nil
	c.over, c.overCnt, c.infeasCnt = false, 0, 0
	return nil
}

// OverCapacity implements agents.CapacityReporter: whether the last
// decision found the demand beyond the cluster (the planner could not
// place it, clasp.ErrCapacity, and the plan in force was kept; or, with
// CapacityUS set, its plan spans every worker and still loads one beyond
// CapacityUS).
func (c *Adapter) OverCapacity() bool { return c.over }

// OverCapacitySteps counts the decisions since Reset that found the demand
// beyond the cluster.
func (c *Adapter) OverCapacitySteps() int { return c.overCnt }

// Infeasible counts the decisions since Reset on which the planner could
// not place the demand at all (clasp.ErrCapacity; the plan was kept).
func (c *Adapter) Infeasible() int { return c.infeasCnt }

// Plans returns the changed plans applied since Reset, in order.
func (c *Adapter) Plans() []clasp.Plan { return c.plans }

// Workers is the number of plan workers of the plan in force (0 before
// the first plan).
func (c *Adapter) Workers() int { return len(c.active) }

// Replans counts the replica plans applied since Reset.
func (c *Adapter) Replans() int { return len(c.plans) }

// LastPlan is the last changed plan applied (zero before the first).
func (c *Adapter) LastPlan() clasp.Plan {
	if len(c.plans) == 0 {
		return clasp.Plan{}
	}
	return c.plans[len(c.plans)-1]
}

// Act implements agents.HorizontalController. At now = 0 (Info of Reset)
// the planner sees the first step's ingress rate, Info.NextOfferedRate, as
// a planner at the ingress would; afterwards the rate of the step just
// simulated.
func (c *Adapter) Act(now float64, info env.Info) (env.Action, error) {
	c.over = false
	if info.Step < 0 {
		info.OfferedRate = info.NextOfferedRate
	}
	ob, err := c.observation(info)
	if err != nil {
		return env.Action{}, err
	}
	p, err := c.planner.Plan(now, ob)
	switch {
	case errors.Is(err, clasp.ErrCapacity):
		c.over = true
		c.overCnt++
		c.infeasCnt++
		return env.Action{Hold: true}, nil
	case err != nil:
		return env.Action{}, fmt.Errorf("horizontal: %w", err)
	}
	if c.overloaded(&p) {
		c.over = true
		c.overCnt++
	}
	if !p.Changed {
		return env.Action{Hold: true}, nil
	}
	ids := make([]int, len(p.Workers))
	for i, w := range p.Workers {
		ids[i] = w.ID
	}
	shares := p.Shares()
	plan, err := ReplicasFromShares(ids, shares, len(c.cfg.Servers))
	if err != nil {
		return env.Action{}, err
	}
	for _, rs := range plan {
		for j := range rs {
			rs[j].Server = c.cfg.Servers[rs[j].Server]
		}
	}
	c.active = append(c.active[:0], ids...)
	c.shares = QuantizeShares(shares)
	c.par = append(c.par[:0], p.Parallelism...)
	c.plans = append(c.plans, p)
	return env.Action{Replicas: plan}, nil
}

// overloaded reports whether a plan (changed or held) spans every worker
// and still loads one beyond CapacityUS.
func (c *Adapter) overloaded(p *clasp.Plan) bool {
	if c.cfg.CapacityUS <= 0 || len(p.Workers) < len(c.cfg.Servers) {
		return false
	}
	limit := c.cfg.CapacityUS * (1 + 1e-9)
	for _, w := range p.Workers {
		if w.Load.Total() > limit {
			return true
		}
	}
	return false
}

// observation converts info into the planner's observation in plan-worker
// order, execution times at the reference speed.
func (c *Adapter) observation(info env.Info) (clasp.Observation, error) {
	if info.Workers != nil {
		if len(info.Workers) != len(c.perm) {
			return clasp.Observation{}, fmt.Errorf("horizontal: info reports %d servers, want %d", len(info.Workers), len(c.perm))
		}
		for i, s := range c.cfg.Servers {
			c.perm[i] = info.Workers[s]
		}
		info.Workers = c.perm[:len(c.cfg.Servers)]
	}
	ob, err := ObservationFromInfo(c.app, info, c.active, c.shares, c.par, c.cfg.BandwidthBytes)
	if err != nil {
		return clasp.Observation{}, err
	}
	for i := range ob.Workers {
		w := &ob.Workers[i]
		for o := range w.ExecUS {
			w.ExecUS[o] *= c.cfg.Speedup[w.ID]
		}
	}
	return ob, nil
}

// Hold is the horizontal controller that never changes the configuration.
type Hold struct{}

// Reset implements agents.HorizontalController.
func (Hold) Reset(uint64) error { return nil }

// Act implements agents.HorizontalController.
func (Hold) Act(float64, env.Info) (env.Action, error) { return env.Action{Hold: true}, nil }
