package env

import (
	"math"
	"slices"
)

// stage is a FIFO service point of the simulator: either a task (service
// time per event from its CPU allocation) or a network flow carrying one
// cross-server DAG edge (service time = event bits / the flow's max-min
// fair bandwidth share, plus a pure propagation delay).
type stage struct {
	task    int       // task index, or -1 for a flow
	edge    int       // app edge index for a flow, or -1
	service float64   // seconds per event
	delay   float64   // propagation added to outputs, seconds (flows)
	sel     float64   // output events per input event
	out     []int     // downstream stages
	outW    []float64 // share of this stage's output sent to each downstream stage
	replica int       // replica index for a task stage, or -1 for a flow
	// Worker physics (Config.Worker): a pipelined replica (pipe) departs
	// an event lat after a FIFO server of spacing service would start it;
	// a flow adds a wait uniform on [0, spread] to its outputs (timer
	// batching, piece.batch).
	pipe        bool
	lat, spread float64
	sink        bool // outputs are delivered to the sink
	merge       bool // more than one upstream stage
	overlap     bool // arrivals may overlap in time (a merge stage or downstream of one)
	queue       ring
	inbox       []piece // arrivals pushed during the current step
	free        float64 // departure time of the last departed event

	// Per-step statistics (reset at the start of each step).
	pushed   float64 // events received
	departed float64 // input events processed
	delayW   float64 // Σ w × (mean departure − mean arrival), event-seconds

	// Cumulative counters for conservation checks; carried counts events
	// handed over by a re-plan.
	cumPushed, cumDeparted, carried float64

	// server is a task stage's server; ext marks a task stage that
	// receives from outside its server (a source, or a cross-server
	// flow), whose arrivals a worker's cap on requests in flight can hold
	// upstream (Config.Worker.MaxInFlight; holdUpstream).
	server int
	ext    bool
}

// fluid is the fast simulator core: cohort ("piece") based, exact for the
// first and last event of every piece under deterministic FIFO service, so
// its cost does not depend on the event rate.
type fluid struct {
	stages   []stage
	order    []int     // processing order of stages (topological)
	sources  []int     // source stages (replicas of source tasks)
	srcW     []float64 // share of the external stream each source stage receives
	nSources int       // source tasks (each receives the whole external stream)
	slices   int       // source pieces per step
	sinkLat  []latPiece
	now      float64 // start of the current step
	end      float64 // end of the current step
	cumEmit  float64
	cumSink  float64
	// per step
	emitted, sinkEvents float64
	// scratch for overlap stages
	scrBl, scrArr, scrKeep []piece
	scrEv, scrEnds         []sweepEv
	scrB                   []float64
	ph                     *physicsRun // the episode's physics
	batch                  float64     // timer batching window of the inputs, seconds (Config.Worker)
	hop                    []float64   // per task: dispatch latency after it, seconds (Physics.hopSeconds; under a HopCurve, of the step)
	hopBase                []float64   // per task: the fixed hops (Physics.hopSeconds) a HopCurve leaves in place
	curve                  *curveRun   // Physics.HopCurve resolved; nil: fixed hops
	tr                     *tracer     // stochastic latencies; nil under deterministic physics
	// joinOf gives, per task, the fork task it gathers (Task.JoinOf) or
	// −1. The per-event core and the tracer gather a message's siblings
	// at the join; the deterministic fluid carries the join's mass by its
	// selectivity (1/n), its latency that of the average sibling.
	joinOf []int

	// room is, per server, the requests its cap on requests in flight
	// leaves for waiting ones (MaxInFlight − executions in flight); nil
	// without a cap (Config.Worker.MaxInFlight 0).
	room []float64
	held []float64 // per replica: scratch of collect's holdUpstream
}

// latPiece is the end-to-end latency contribution of a piece delivered to
// the sink: w events whose latencies spread uniformly over [lo, hi] seconds.
type latPiece struct{ lo, hi, w float64 }

// replica is one instance of a task: the server it runs on and the share
// of the task's input it receives.
type replica struct {
	task, server int
	share        float64
}

// link is the stream from one replica of an edge's source task to one
// replica of its destination task.
type link struct {
	edge     int     // app edge index
	from, to int     // replica indices
	frac     float64 // share of the sending replica's output sent on this link
	flow     int     // flow index, or -1 when both replicas share a server
}

// topology holds what both simulator cores derive from a validated Config.
type topology struct {
	order     []int     // task topological order
	replicas  []replica // all replicas, grouped by task in task order
	ofTask    [][]int   // replica indices of each task
	links     []link    // replica-to-replica streams, by edge then sender then receiver
	flowShare []float64 // per flow: bandwidth share, bits/s
	flowDelay []float64 // per flow: propagation, seconds
	flowLink  []int     // per flow: link index
}

// routeShares splits an edge's stream between the replicas of its two
// tasks and returns F[i][j], the share of the edge's total stream sent from
// sender i to receiver j (Σ_j F[i][j] = a_i, Σ_i F[i][j] = b_j). With one
// replica per task F = [[1]].
//
// By default (localFirst false) every sender spreads its output over the
// receiving replicas in proportion to their shares, F[i][j] = a_i·b_j: the
// exchange of a key-partitioned or load-balanced stream, where a request's
// destination depends on its key or on a balancer, not on where its sender
// runs. So a sender on server w keeps b_w of its requests local and sends
// the rest to every other server hosting the successor (CLASP's routing:
// the placement shares are the routing weights).
//
// With localFirst, requests stay on their server when the receiving task has
// a replica there (as much as that replica's share absorbs) and the rest is
// matched by the north-west-corner rule in replica order: locality-aware
// forwarding, possible only for stateless successors.
func routeShares(a, b []float64, sa, sb []int, localFirst bool) [][]float64 {
	F := make([][]float64, len(a))
	if !localFirst {
		var sum float64
		for _, x := range b {
			sum += x
		}
		for i := range a {
			F[i] = make([]float64, len(b))
			for j := range b {
				if sum > 0 {
					F[i][j] = a[i] * b[j] / sum
				}
			}
		}
		return F
	}
	ra, rb := append([]float64(nil), a...), append([]float64(nil), b...)
	for i := range a {
		F[i] = make([]float64, len(b))
		for j := range b {
			if sa[i] == sb[j] {
				x := min(ra[i], rb[j])
				F[i][j] += x
				ra[i] -= x
				rb[j] -= x
			}
		}
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x := min(ra[i], rb[j])
		F[i][j] += x
		ra[i] -= x
		rb[j] -= x
		if ra[i] <= 1e-12 {
			i++
		}
		if j < len(b) && rb[j] <= 1e-12 {
			j++
		}
	}
	return F
}

func buildTopology(c *Config) topology {
	order, _ := c.App.topoOrder() // validated already
	routes := shortestRoutes(c.Network)
	var t topology
	t.order = order
	t.ofTask = make([][]int, len(c.App.Tasks))
	for k, rs := range c.replicaSets() {
		for _, r := range rs {
			t.ofTask[k] = append(t.ofTask[k], len(t.replicas))
			t.replicas = append(t.replicas, replica{task: k, server: r.Server, share: r.Share})
		}
	}
	var paths []route
	for ei, e := range c.App.Edges {
		us, vs := t.ofTask[e.From], t.ofTask[e.To]
		a, b := make([]float64, len(us)), make([]float64, len(vs))
		sa, sb := make([]int, len(us)), make([]int, len(vs))
		for i, r := range us {
			a[i], sa[i] = t.replicas[r].share, t.replicas[r].server
		}
		for j, r := range vs {
			b[j], sb[j] = t.replicas[r].share, t.replicas[r].server
		}
		F := routeShares(a, b, sa, sb, c.LocalFirst)
		for i, ri := range us {
			for j, rj := range vs {
				if F[i][j] <= 0 || a[i] <= 0 {
					continue
				}
				l := link{edge: ei, from: ri, to: rj, frac: F[i][j] / a[i], flow: -1}
				if sa[i] != sb[j] {
					r := routes[c.Servers[sa[i]].Switch][c.Servers[sb[j]].Switch]
					l.flow = len(paths)
					paths = append(paths, r)
					d := 0.0
					for _, li := range r {
						d += c.Network.Links[li].PropagationMS / 1000
					}
					if c.Physics.HopsEndToEnd {
						d = 0 // in the measured hops (Physics.HopsEndToEnd)
					}
					t.flowDelay = append(t.flowDelay, d)
					t.flowLink = append(t.flowLink, len(t.links))
				}
				t.links = append(t.links, l)
			}
		}
	}
	t.flowShare = make([]float64, len(paths))
	maxMinShares(c.Network.Links, paths, t.flowShare)
	return t
}

func newFluid(c *Config, t topology) *fluid {
	nr := len(t.replicas)
	f := &fluid{slices: c.SlicesPerStep, nSources: len(c.App.Sources), batch: c.Worker.batchS(), hop: c.Physics.hopSeconds(c.App)}
	if f.curve = c.Physics.HopCurve.resolve(c.App); f.curve != nil {
		f.hopBase = slices.Clone(f.hop)
	}
	f.joinOf = make([]int, len(c.App.Tasks))
	for k := range f.joinOf {
		f.joinOf[k], _ = c.App.joinFork(k) // validated already
	}
	f.stages = make([]stage, nr+len(t.flowLink))
	ups := make([]int, len(f.stages))
	for i, r := range t.replicas {
		f.stages[i] = stage{task: r.task, replica: i, edge: -1, sel: c.App.Tasks[r.task].Selectivity, pipe: c.Worker.On, server: r.server}
	}
	if c.Worker.On && c.Worker.MaxInFlight > 0 {
		f.room, f.held = make([]float64, len(c.Servers)), make([]float64, nr)
		for w := range f.room {
			f.room[w] = float64(c.Worker.MaxInFlight)
		}
	}
	for _, k := range c.App.Sinks {
		for _, r := range t.ofTask[k] {
			f.stages[r].sink = true
		}
	}
	for _, k := range c.App.Sources {
		for _, r := range t.ofTask[k] {
			f.sources = append(f.sources, r)
			f.srcW = append(f.srcW, t.replicas[r].share)
			f.stages[r].ext = true
			ups[r]++
		}
	}
	for fi, li := range t.flowLink {
		l := t.links[li]
		s := &f.stages[nr+fi]
		*s = stage{task: -1, replica: -1, edge: l.edge, sel: 1, delay: t.flowDelay[fi]}
		if c.Worker.On {
			s.delay += c.Worker.HopMS / 1000
			s.spread = c.Worker.batchS()
		}
		s.service = c.App.Tasks[t.replicas[l.from].task].OutBytes * 8 / t.flowShare[fi]
		if math.IsInf(t.flowShare[fi], 1) {
			s.service = 0
		}
	}
	for _, l := range t.links {
		from := &f.stages[l.from]
		if l.flow >= 0 {
			fs := nr + l.flow
			from.out = append(from.out, fs)
			from.outW = append(from.outW, l.frac)
			f.stages[fs].out = []int{l.to}
			f.stages[fs].outW = []float64{1}
			f.stages[l.to].ext = true
			ups[fs]++
		} else {
			from.out = append(from.out, l.to)
			from.outW = append(from.outW, l.frac)
		}
		ups[l.to]++
	}
	for i := range f.stages {
		s := &f.stages[i]
		s.merge = ups[i] > 1
		s.queue = newRing(c.QueueCapacity)
	}
	for _, k := range t.order {
		for _, r := range t.ofTask[k] {
			f.order = append(f.order, r)
			for _, o := range f.stages[r].out {
				if o >= nr {
					f.order = append(f.order, o)
				}
			}
		}
	}
	// Arrivals may overlap at a stage with several upstream streams and
	// downstream of one (its departures interleave); one pass in
	// topological order propagates the flag.
	for _, i := range f.order {
		s := &f.stages[i]
		s.overlap = s.overlap || s.merge
		if s.overlap {
			for _, o := range s.out {
				f.stages[o].overlap = true
			}
			s.inbox = make([]piece, 0, 2*c.QueueCapacity)
		}
	}
	f.sinkLat = make([]latPiece, 0, 4*c.QueueCapacity)
	return f
}

func (f *fluid) reset() {
	for i := range f.stages {
		s := &f.stages[i]
		s.queue.clear()
		s.inbox = s.inbox[:0]
		s.free = 0
		s.pushed, s.departed, s.delayW = 0, 0, 0
		s.cumPushed, s.cumDeparted, s.carried = 0, 0, 0
	}
	f.sinkLat = f.sinkLat[:0]
	f.now, f.cumEmit, f.cumSink = 0, 0, 0
	f.emitted, f.sinkEvents = 0, 0
	if f.tr != nil {
		f.tr.reset()
	}
}

// setCPU sets replica r's per-event service time (and, under stochastic
// physics, the tracer's execution parameters).
func (f *fluid) setCPU(r int, c cpuOf) {
	f.stages[r].service = c.service
	f.stages[r].lat = c.lat
	if f.tr != nil {
		f.tr.cpu[r] = c
	}
}

// attach gives the core the episode's physics: random arrival counts and,
// when any option is stochastic, the tracer.
func (f *fluid) attach(ph *physicsRun) {
	f.ph = ph
	f.tr = nil
	if ph.tracing {
		nrep := 0
		for i := range f.stages {
			if f.stages[i].task >= 0 {
				nrep++
			}
		}
		f.tr = newTracer(f, ph, nrep)
	}
}

func (f *fluid) deliver(i int, p piece) {
	s := &f.stages[i]
	s.pushed += p.w
	s.cumPushed += p.w
	if !s.overlap {
		// A single FIFO stream arrives in order. With nothing queued ahead
		// the piece is served at once (FIFO makes this the same as serving
		// it in stage order); otherwise it joins the queue.
		if s.queue.n == 0 {
			svc := s.service
			ds, de := fifoTimes(&p, s.free, svc)
			if de <= f.end {
				s.free = de
				f.depart(s, p, ds, de)
				return
			}
		}
		s.queue.push(p)
		return
	}
	if len(s.inbox) == cap(s.inbox) {
		s.inbox[len(s.inbox)-1].absorb(p)
	} else {
		s.inbox = append(s.inbox, p)
	}
}

// step advances the simulation by one step of L seconds
// (Physics.StepSeconds), [now, now+L), with the sources emitting rate
// events/s spread uniformly over the step in f.slices pieces. stepIndex
// numbers the source slices.
func (f *fluid) step(stepIndex int, rate float64) {
	if f.curve != nil {
		f.hopsAt(rate)
	}
	t0 := f.now
	L := f.ph.stepLen
	T := t0 + L
	f.end = T
	f.sinkLat = f.sinkLat[:0]
	f.emitted, f.sinkEvents = 0, 0
	for i := range f.stages {
		s := &f.stages[i]
		s.pushed, s.departed, s.delayW = 0, 0, 0
	}
	// Serve what single-stream stages carried over first: FIFO makes this
	// the same as serving it later, and it lets this step's arrivals find
	// empty queues and be served on delivery (deliver's fast path).
	for _, i := range f.order {
		if s := &f.stages[i]; !s.overlap && s.queue.n > 0 {
			f.process(i, T)
		}
	}
	if rate > 0 {
		dt := L / float64(f.slices)
		w := rate * dt
		pad := dt / 2
		if w >= 1 {
			pad = dt / (2 * w)
		}
		f.ph.drawRates()
		for j := 0; j < f.slices; j++ {
			start := t0 + float64(j)*dt
			if f.ph.p.RateCV > 0 && !f.ph.arrivalsRandom {
				w = rate * dt * f.ph.mult[j]
				pad = dt / 2
				if w >= 1 {
					pad = dt / (2 * w)
				}
			}
			if f.ph.arrivalsRandom {
				w = f.ph.count(rate * dt * f.ph.mult[j])
				if w <= 0 {
					continue
				}
				pad = dt / 2
				if w >= 1 {
					pad = dt / (2 * w)
				}
			}
			p := piece{w: w, as: start + pad, ae: start + dt - pad}
			p.os, p.oe = p.as, p.ae
			if f.batch > 0 {
				p.batch(f.batch) // inputs wait for their batch (Config.Worker)
			}
			for si, k := range f.sources {
				q := p
				q.w *= f.srcW[si]
				if q.w > 0 {
					f.deliver(k, q)
				}
			}
			f.emitted += w * float64(f.nSources)
		}
	}
	f.cumEmit += f.emitted
	for _, i := range f.order {
		if f.stages[i].overlap {
			f.processSweep(i, t0, T)
		} else {
			f.process(i, T)
		}
	}
	f.cumSink += f.sinkEvents
	if f.tr != nil {
		f.tr.step(f, t0)
	}
	f.now = T
}

// process serves stage i's queue up to time T. A piece's first event
// departs at ds = max(as, free) + s (a piece of less than one event takes
// its share of s) and its last at
// de = max(ae + s, ds + (w−1)·s): exact for deterministic FIFO service of
// uniformly spaced arrivals. A piece still in service at T is split: the
// share departed by T leaves, the rest stays queued.
func (f *fluid) process(i int, T float64) {
	s := &f.stages[i]
	svc := s.service
	for s.queue.len() > 0 {
		p := s.queue.front()
		ds, de := fifoTimes(p, s.free, svc)
		if ds > T {
			break
		}
		if de <= T {
			f.depart(s, *p, ds, de)
			s.free = de
			s.queue.pop()
			continue
		}
		done, rest := p.split(p.w * splitShare(p.w, ds, de, T))
		f.depart(s, done, ds, T)
		s.queue.total -= done.w
		*p = rest
		s.free = T
		break
	}
}

// fifoTimes returns when the first and the last event of piece p depart
// from a FIFO server that is free from time free and serves one event every
// svc seconds: ds = max(as, free) + s (a piece of less than one event takes
// its share of s), de = max(ae + s, ds + (w−1)·s).
func fifoTimes(p *piece, free, svc float64) (ds, de float64) {
	ds = max(p.as, free) + min(p.w, 1)*svc
	return ds, max(p.ae+svc, ds+max(p.w-1, 0)*svc)
}

// splitShare is the share of a piece of w events, departing from ds
// (first event) to de (last event), that has departed by T: the first event
// plus the interpolated share of the other w−1.
func splitShare(w, ds, de, T float64) float64 {
	if w <= 1 {
		return (T - ds) / (de - ds)
	}
	return min(1+(w-1)*(T-ds)/(de-ds), w) / w
}

// depart records piece p (as it arrived at stage s) leaving over [ds, de]
// and forwards its outputs.
func (f *fluid) depart(s *stage, p piece, ds, de float64) {
	if s.pipe {
		// A pipelined server starts events as the FIFO server of spacing
		// s.service does and departs them s.lat later.
		ds, de = max(ds+s.lat-s.service, p.as), max(de+s.lat-s.service, p.as)
	}
	s.departed += p.w
	s.cumDeparted += p.w
	s.delayW += p.w * ((ds+de)/2 - (p.as+p.ae)/2)
	w := p.w * s.sel
	if w <= 0 {
		return
	}
	if s.sink {
		f.sinkEvents += w
		if len(f.sinkLat) < cap(f.sinkLat) {
			f.sinkLat = append(f.sinkLat, latPiece{lo: ds - p.os, hi: max(de-p.oe, ds-p.os), w: w})
		} else {
			l := &f.sinkLat[len(f.sinkLat)-1]
			l.lo, l.hi, l.w = min(l.lo, ds-p.os), max(l.hi, de-p.oe), l.w+w
		}
	}
	if len(s.out) == 0 {
		return
	}
	// The outgoing piece stays in registers (no address taken): a piece
	// assembled in a stack temporary by scalar stores and copied out by
	// 16-byte loads stalls store-to-load forwarding (measured: ≈ 6% of an
	// ETL step).
	as, ae, os, oe := ds+s.delay, de+s.delay, p.os, p.oe
	if s.spread > 0 {
		as, ae, os, oe = batchTimes(as, ae, os, oe, s.spread)
	}
	if len(s.out) == 1 {
		// One successor (most stages): nothing stays live across the
		// call.
		if x := s.outW[0]; x == 1 {
			f.deliver(s.out[0], piece{w: w, as: as, ae: ae, os: os, oe: oe})
		} else if x > 0 {
			f.deliver(s.out[0], piece{w: w * x, as: as, ae: ae, os: os, oe: oe})
		}
		return
	}
	for j, o := range s.out {
		if x := s.outW[j]; x == 1 {
			f.deliver(o, piece{w: w, as: as, ae: ae, os: os, oe: oe})
		} else if x > 0 {
			f.deliver(o, piece{w: w * x, as: as, ae: ae, os: os, oe: oe})
		}
	}
}

// latencyStats returns the weighted mean and the q-quantile of the
// end-to-end latency of the pieces delivered this step, treating each
// piece as w events spread uniformly over [lo, hi] (a mixture of uniform
// distributions; its CDF is piecewise linear, so bisection on it is exact
// to the tolerance). ok is false when nothing reached the sink.
func quantileMixture(ps []latPiece, q float64) (mean, quant float64, ok bool) {
	var wsum, msum float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range ps {
		wsum += p.w
		msum += p.w * (p.lo + p.hi) / 2
		lo = min(lo, p.lo)
		hi = max(hi, p.hi)
	}
	if !(wsum > 0) {
		return 0, 0, false
	}
	mean = msum / wsum
	target := q * wsum
	cdf := func(x float64) float64 {
		c := 0.0
		for _, p := range ps {
			switch {
			case x >= p.hi:
				c += p.w
			case x > p.lo:
				c += p.w * (x - p.lo) / (p.hi - p.lo)
			}
		}
		return c
	}
	// Regula falsi with the Illinois modification: the CDF is linear
	// between breakpoints, so the interpolation lands on the quantile as
	// soon as the bracket holds no breakpoint; it stops within 1 µs.
	a, b := lo, hi
	fa, fb := -target, wsum-target
	side := 0
	for it := 0; it < 100 && b-a > 1e-6; it++ {
		x := a - fa*(b-a)/(fb-fa)
		if !(x > a && x < b) {
			x = (a + b) / 2
		}
		fx := cdf(x) - target
		switch {
		case fx == 0:
			return mean, x, true
		case fx > 0:
			b, fb = x, fx
			if side == 1 {
				fa /= 2
			}
			side = 1
		default:
			a, fa = x, fx
			if side == -1 {
				fb /= 2
			}
			side = -1
		}
	}
	return mean, b, true
}

// hopsAt sets the hops of a step whose input rate is rate (Physics.HopCurve)
// in the fluid and its tracer.
func (f *fluid) hopsAt(rate float64) {
	if sp := f.curve.at(rate, f.hopBase, f.hop, nil, nil); sp >= 0 && f.ph != nil {
		f.ph.hopSpread = sp
	}
	if f.tr == nil {
		return
	}
	for r := range f.tr.hop {
		if len(f.stages[r].out) > 0 {
			f.tr.hop[r] = f.hop[f.stages[r].task]
		}
	}
}
