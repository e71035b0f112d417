package clasp

import (
	"fmt"
	"sort"
)

// placeEps is the smallest share Place puts on a worker, and the tolerance to
// which an operator's remaining demand counts as placed.
const placeEps = 1e-9

// PlaceStep is one chunk of the next-fit packing (paper Alg. 1), kept to
// explain the placement.
type PlaceStep struct {
	Op     int // operator
	Worker int // worker index in plan order
	// Room is w_rem, the worker's free budget before the chunk, µs/s.
	Room float64
	// PerUnit is m_w, the cost per unit of share of the chunk's first
	// segment, µs/s: D_o·τ̄_o + Σ_{o→o_s} E·(α if local, β if remote).
	PerUnit float64
	// NewDests is g_w, the number of remote destinations the chunk adds to
	// the worker.
	NewDests int
	// Share is the share φ_{o,w} placed.
	Share float64
	// Cost is the load the chunk adds, µs/s.
	Cost float64
}

// Placement is the result of Place.
type Placement struct {
	// Shares[w][o] is φ_{o,w} for worker index w in plan order; every
	// operator's shares sum to 1. len(Shares) is the worker count.
	Shares [][]float64
	// Loads are the workers' loads under the load model (CostModel.Loads).
	Loads []LoadParts
	// Order is the order in which operators were placed.
	Order []int
	// Postponed lists, in order of occurrence, operators visited before all
	// their successors were placed (and therefore postponed).
	Postponed []int
	// Steps are the chunks of the packing, in order.
	Steps []PlaceStep
}

// PlacementOrder returns the order in which CLASP places operators (paper
// §4.3): a depth-first search of the reversed DAG from the sinks (sinks by
// descending incoming request rate, ties to the lower index), following at
// each operator the edge from its predecessors with the highest request rate
// first (ties to the lower predecessor index). An operator reached before all
// its successors are placed is postponed: the search returns and reaches it
// again from its last successor. It also returns the postponements.
func PlacementOrder(app *App, d Demand) (order, postponed []int) {
	n := len(app.Operators)
	placed := make([]bool, n)
	in := make([][]int, n)
	for o := range n {
		in[o] = app.inEdges(o)
		sort.SliceStable(in[o], func(a, b int) bool {
			ea, eb := in[o][a], in[o][b]
			if d.Edge[ea] != d.Edge[eb] {
				return d.Edge[ea] > d.Edge[eb]
			}
			return app.Edges[ea].From < app.Edges[eb].From
		})
	}
	ready := func(o int) bool {
		for _, e := range app.outEdges(o) {
			if !placed[app.Edges[e].To] {
				return false
			}
		}
		return true
	}
	var visit func(o int)
	visit = func(o int) {
		if placed[o] {
			return
		}
		if !ready(o) {
			postponed = append(postponed, o)
			return
		}
		placed[o] = true
		order = append(order, o)
		for _, e := range in[o] {
			visit(app.Edges[e].From)
		}
	}
	sinks := app.Sinks()
	inRate := func(o int) float64 {
		var r float64
		for _, e := range in[o] {
			r += d.Edge[e]
		}
		return r
	}
	sort.SliceStable(sinks, func(a, b int) bool { return inRate(sinks[a]) > inRate(sinks[b]) })
	for _, s := range sinks {
		visit(s)
	}
	return order, postponed
}

// MinChunk is the smallest share of an operator Place puts on a worker
// (unless it is the operator's whole remainder): a sliver would make every
// predecessor's worker open one more remote destination, at γ each, for a
// negligible gain in packing.
const MinChunk = 1e-3

// packer is the state of the next-fit packing.
type packer struct {
	app    *App
	d      Demand
	m      CostModel
	budget float64
	shares [][]float64
	load   []float64
	dest   [][]bool // dest[w][v]: w already sends remote requests to v
	out    [][]int  // out-edges per operator with positive rate
}

// Place packs the demand d onto workers (paper §4.3, Alg. 1): operators in
// PlacementOrder, each by next-fit with splittable demand. The current worker
// takes as much of the operator's remaining share as fits under budget (L_w ≤
// W̄); a new worker is opened only when the current one cannot hold the
// remainder. With requests routed as in Route (a share x of o on w sends
// x·φ_{o_s,v} of each edge's requests to every worker v hosting the
// successor), the cost of a share x is linear, so the share that fits is
//
//	φ^max_{o,w} = (w_rem − γ·g_w) / m_w
//
// where w_rem is the worker's free budget, m_w = D_o·τ̄_o + Σ_{o→o_s}
// E_{o→o_s}·(α·φ_{o_s,w} + β·(1 − φ_{o_s,w})) is the cost per unit of share
// including the requests, and g_w is the number of workers hosting a
// successor that w does not send to yet (its new remote destinations).
// Because every successor is placed first, m_w and g_w are known when o is
// placed, and later placements never change an earlier worker's load.
// Chunks smaller than MinChunk are not placed (nor left as remainders).
// maxWorkers bounds the worker count.
func Place(app *App, d Demand, m CostModel, budget float64, maxWorkers int) (Placement, error) {
	if err := app.Validate(); err != nil {
		return Placement{}, err
	}
	if !positive(budget) {
		return Placement{}, invalidf("placement budget %v µs/s, want > 0", budget)
	}
	if maxWorkers < 1 {
		return Placement{}, invalidf("max workers %d, want ≥ 1", maxWorkers)
	}
	if err := m.validate(); err != nil {
		return Placement{}, err
	}
	n := len(app.Operators)
	if len(d.Exec) != n || len(d.ExecUS) != n || len(d.Edge) != len(app.Edges) {
		return Placement{}, invalidf("demand has %d/%d/%d entries, want %d/%d/%d", len(d.Exec), len(d.ExecUS), len(d.Edge), n, n, len(app.Edges))
	}
	for o := range n {
		if !nonNegative(d.Exec[o]) || !positive(d.ExecUS[o]) {
			return Placement{}, invalidf("demand of %s: %v executions/s of %v µs", app.Operators[o].Name, d.Exec[o], d.ExecUS[o])
		}
	}
	for e := range app.Edges {
		if !nonNegative(d.Edge[e]) {
			return Placement{}, invalidf("demand on edge %d: %v requests/s", e, d.Edge[e])
		}
	}
	p := &packer{app: app, d: d, m: m, budget: budget, out: make([][]int, n)}
	for o := range n {
		for _, e := range app.outEdges(o) {
			if d.Edge[e] > 0 {
				p.out[o] = append(p.out[o], e)
			}
		}
	}
	var res Placement
	res.Order, res.Postponed = PlacementOrder(app, d)
	if len(res.Order) != n {
		return Placement{}, invalidf("app %s: only %d of %d operators reachable from the sinks", app.Name, len(res.Order), n)
	}
	p.open()
	cur := 0
	for _, o := range res.Order {
		r := 1.0
		for r > placeEps {
			x, step := p.fit(o, cur, r)
			if x < r {
				// leave no remainder below MinChunk and place no chunk below it
				x = min(x, r-MinChunk)
				if x < MinChunk {
					x = 0
				}
			}
			if x > 0 {
				step.Cost = p.commit(o, cur, x)
				step.Share = x
				res.Steps = append(res.Steps, step)
				r -= x
			}
			if r <= placeEps {
				break
			}
			if p.empty(cur) && x == 0 {
				return Placement{}, fmt.Errorf("%w: operator %s does not fit an empty worker: %d new destinations cost %.0f µs/s plus %.0f µs/s per unit share, budget %.0f µs/s",
					ErrCapacity, app.Operators[o].Name, step.NewDests, m.Gamma*float64(step.NewDests), step.PerUnit, budget)
			}
			if len(p.shares) == maxWorkers {
				return Placement{}, fmt.Errorf("%w: placement needs more than %d workers", ErrCapacity, maxWorkers)
			}
			p.open()
			cur++
		}
	}
	// Renormalize every operator's shares to sum to 1 exactly (they miss it
	// by at most placeEps).
	for o := range n {
		var sum float64
		for w := range p.shares {
			sum += p.shares[w][o]
		}
		if sum != 1 {
			for w := range p.shares {
				p.shares[w][o] /= sum
			}
		}
	}
	res.Shares = p.shares
	res.Loads = m.Loads(app, d, p.shares)
	return res, nil
}

func (p *packer) open() {
	p.shares = append(p.shares, make([]float64, len(p.app.Operators)))
	p.load = append(p.load, 0)
	for w := range p.dest {
		p.dest[w] = append(p.dest[w], false)
	}
	p.dest = append(p.dest, make([]bool, len(p.shares)))
}

func (p *packer) empty(w int) bool {
	for _, s := range p.shares[w] {
		if s > 0 {
			return false
		}
	}
	return true
}

// perUnit returns m_w and the new remote destinations of putting o on w.
func (p *packer) perUnit(o, w int) (float64, []int) {
	mw := p.d.Work(o)
	var added []int
	for _, e := range p.out[o] {
		s := p.app.Edges[e].To
		l := p.shares[w][s]
		var tot float64
		for v := range p.shares {
			tot += p.shares[v][s]
		}
		if tot <= 0 {
			continue // cannot happen: successors are placed first
		}
		loc := l / tot
		mw += p.d.Edge[e] * (p.m.Alpha*loc + p.m.Beta*(1-loc))
		for v := range p.shares {
			if v != w && p.shares[v][s] > 0 && !p.dest[w][v] && !contains(added, v) {
				added = append(added, v)
			}
		}
	}
	return mw, added
}

// fit returns the largest share x ≤ r of operator o that worker w can take
// under the budget: r when m_w·r + γ·g_w fits, else φ^max = (w_rem −
// γ·g_w)/m_w (0 when not even the destinations fit).
func (p *packer) fit(o, w int, r float64) (float64, PlaceStep) {
	mw, added := p.perUnit(o, w)
	room := p.budget - p.load[w]
	step := PlaceStep{Op: o, Worker: w, Room: room, PerUnit: mw, NewDests: len(added)}
	fixed := p.m.Gamma * float64(len(added))
	if mw*r+fixed <= room {
		return r, step
	}
	if mw <= 0 {
		return 0, step
	}
	x := (room - fixed) / mw
	if x < placeEps {
		return 0, step
	}
	return min(x, r), step
}

// commit puts share x of o on worker w and returns the load it adds.
func (p *packer) commit(o, w int, x float64) float64 {
	mw, added := p.perUnit(o, w)
	for _, v := range added {
		p.dest[w][v] = true
	}
	cost := mw*x + p.m.Gamma*float64(len(added))
	p.shares[w][o] += x
	p.load[w] += cost
	return cost
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
