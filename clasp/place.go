package clasp

import (
	"fmt"
	"math"
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

// packer is the state of the next-fit packing.
type packer struct {
	app    *App
	d      Demand
	m      CostModel
	budget float64
	shares [][]float64
	load   []float64
	dest   []map[int]bool // remote destinations of each worker
	offset []float64      // per edge: residual share already sent by earlier chunks of its sender
	out    [][]int        // out-edges per operator with positive rate
}

// Place packs the demand d onto workers (paper §4.3, Alg. 1): operators in
// PlacementOrder, each by next-fit with splittable demand. The current worker
// takes as much of the operator's remaining share as fits under budget (L_w ≤
// W̄); a new worker is opened only when the current one cannot hold the
// remainder. The share that fits is, per linear segment of the cost,
//
//	φ^max_{o,w} = (w_rem − γ·g_w) / m_w
//
// where w_rem is the worker's free budget, m_w is the cost per unit of share
// of putting o's demand on w including its requests, D_o·τ̄_o + Σ_{o→o_s}
// E_{o→o_s}·(α while the successor's share on w absorbs them locally, β
// beyond), and g_w is the number of remote destination workers this adds
// to w (the paper's new-destination indicator, summed over destinations).
// Because every successor is placed first, o's request costs are known when o
// is placed, and later placements never change an earlier worker's load.
// Requests are routed as in Route. maxWorkers bounds the worker count.
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
	p := &packer{app: app, d: d, m: m, budget: budget, offset: make([]float64, len(app.Edges)), out: make([][]int, n)}
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
			if x < r && x >= r-placeEps && p.fits(o, cur, r, step.Room) {
				x = r // snap the sliver onto this worker when it still fits
			}
			if x > 0 {
				step.Cost = p.commit(o, cur, x)
				step.Share = x
				res.Steps = append(res.Steps, step)
				r -= x
			}
			if r <= placeEps {
				break // a sliver ≤ placeEps that does not fit is renormalized away below
			}
			if p.empty(cur) && x == 0 {
				return Placement{}, fmt.Errorf("clasp: operator %s does not fit an empty worker: %d new destinations cost %.0f µs/s plus %.0f µs/s per unit share, budget %.0f µs/s",
					app.Operators[o].Name, step.NewDests, m.Gamma*float64(step.NewDests), step.PerUnit, budget)
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
	p.dest = append(p.dest, map[int]bool{})
}

func (p *packer) empty(w int) bool {
	for _, s := range p.shares[w] {
		if s > 0 {
			return false
		}
	}
	return true
}

// receiver is a worker's residual receiving capacity on the cumulative axis
// of an edge's north-west-corner routing.
type receiver struct {
	w          int
	start, end float64
}

// receivers lists, in worker order, the residual receiving capacity of edge
// e's successor for a chunk of its sender placed on worker w (w itself is a
// sender there once its local capacity is used, so it is left out).
func (p *packer) receivers(e, w int) []receiver {
	ed := p.app.Edges[e]
	var rs []receiver
	var cum float64
	for v := range p.shares {
		if v == w {
			continue
		}
		a, b := p.shares[v][ed.From], p.shares[v][ed.To]
		if rb := b - max(0, min(a, b)); rb > 0 {
			rs = append(rs, receiver{v, cum, cum + rb})
			cum += rb
		}
	}
	return rs
}

// chunkCost is the exact cost of putting share x of o on worker w, with the
// remote destinations it adds, following Route's semantics.
func (p *packer) chunkCost(o, w int, x float64, rcv [][]receiver) (cost float64, added []int) {
	cost = x * p.d.Work(o)
	for i, e := range p.out[o] {
		l := p.shares[w][p.app.Edges[e].To]
		loc := max(0, min(x, l))
		ra := x - loc
		cost += p.d.Edge[e] * p.m.Alpha * loc
		if ra <= 0 {
			continue
		}
		cost += p.d.Edge[e] * p.m.Beta * ra
		lo, hi := p.offset[e], p.offset[e]+ra
		for _, r := range rcv[i] {
			if min(hi, r.end)-max(lo, r.start) > flowEps && !p.dest[w][r.w] && !contains(added, r.w) {
				added = append(added, r.w)
			}
		}
	}
	cost += p.m.Gamma * float64(len(added))
	return cost, added
}

// fit returns the largest share x ≤ r of operator o that worker w can take
// under the budget, walking the piecewise-linear cost segment by segment and
// applying φ^max = (w_rem − γ·g_w)/m_w in the segment where the budget runs
// out.
func (p *packer) fit(o, w int, r float64) (float64, PlaceStep) {
	rcv := make([][]receiver, len(p.out[o]))
	points := []float64{0, r}
	for i, e := range p.out[o] {
		rcv[i] = p.receivers(e, w)
		l := p.shares[w][p.app.Edges[e].To]
		if l < r {
			points = append(points, l)
		}
		for _, rc := range rcv[i] {
			if bx := l + rc.end - p.offset[e]; rc.end > p.offset[e] && bx > 0 && bx < r {
				points = append(points, bx)
			}
		}
	}
	sort.Float64s(points)
	room := p.budget - p.load[w]
	step := PlaceStep{Op: o, Worker: w, Room: room, PerUnit: math.NaN()}
	rem := room
	var added []int
	x, lastLo := 0.0, 0.0
	for k := 0; k+1 < len(points); k++ {
		lo, hi := points[k], points[k+1]
		if hi <= lo {
			continue
		}
		mid := (lo + hi) / 2
		mw := p.d.Work(o)
		var nd []int
		for i, e := range p.out[o] {
			l := p.shares[w][p.app.Edges[e].To]
			if mid < l {
				mw += p.d.Edge[e] * p.m.Alpha
				continue
			}
			mw += p.d.Edge[e] * p.m.Beta
			pos := p.offset[e] + mid - l
			for _, rc := range rcv[i] {
				// a receiver no wider than flowEps can never be a destination
				if rc.start <= pos && pos < rc.end && rc.end-rc.start > flowEps && !p.dest[w][rc.w] && !contains(added, rc.w) && !contains(nd, rc.w) {
					nd = append(nd, rc.w)
				}
			}
		}
		if math.IsNaN(step.PerUnit) {
			step.PerUnit, step.NewDests = mw, len(nd)
		}
		lastLo = lo
		need := mw*(hi-lo) + p.m.Gamma*float64(len(nd))
		if need <= rem {
			rem -= need
			added = append(added, nd...)
			x = hi
			continue
		}
		if mw > 0 {
			if phiMax := (rem - p.m.Gamma*float64(len(nd))) / mw; phiMax > placeEps {
				x = lo + phiMax
			}
		}
		break
	}
	if math.IsNaN(step.PerUnit) {
		step.PerUnit = p.d.Work(o)
	}
	// The walk is exact up to flowEps effects at segment boundaries; check
	// the exact cost and retreat to the segment start if it overshoots.
	if x > 0 {
		if c, _ := p.chunkCost(o, w, x, rcv); c > room*(1+1e-12)+1e-9 {
			x = lastLo
			if c, _ := p.chunkCost(o, w, x, rcv); c > room*(1+1e-12)+1e-9 {
				x = 0
			}
		}
	}
	if x < placeEps {
		x = 0
	}
	if x > 0 {
		_, a := p.chunkCost(o, w, x, rcv)
		step.NewDests = len(a)
	}
	return x, step
}

// fits reports whether share x of o fits worker w's room exactly.
func (p *packer) fits(o, w int, x, room float64) bool {
	rcv := make([][]receiver, len(p.out[o]))
	for i, e := range p.out[o] {
		rcv[i] = p.receivers(e, w)
	}
	c, _ := p.chunkCost(o, w, x, rcv)
	return c <= room*(1+1e-12)+1e-9
}

// commit puts share x of o on worker w and returns the load it adds.
func (p *packer) commit(o, w int, x float64) float64 {
	rcv := make([][]receiver, len(p.out[o]))
	for i, e := range p.out[o] {
		rcv[i] = p.receivers(e, w)
	}
	cost, added := p.chunkCost(o, w, x, rcv)
	for _, v := range added {
		p.dest[w][v] = true
	}
	for _, e := range p.out[o] {
		l := p.shares[w][p.app.Edges[e].To]
		if ra := x - max(0, min(x, l)); ra > 0 {
			p.offset[e] += ra
		}
	}
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
