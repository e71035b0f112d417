package env

import "math"

// stage is a FIFO service point of the simulator: either a task (service
// time per event from its CPU allocation) or a network flow carrying one
// cross-server DAG edge (service time = event bits / the flow's max-min
// fair bandwidth share, plus a pure propagation delay).
type stage struct {
	task    int     // task index, or -1 for a flow
	edge    int     // app edge index for a flow, or -1
	service float64 // seconds per event
	delay   float64 // propagation added to outputs, seconds (flows)
	sel     float64 // output events per input event
	out     []int   // downstream stages
	sink    bool    // outputs are delivered to the sink
	merge   bool    // more than one upstream stage
	overlap bool    // arrivals may overlap in time (a merge stage or downstream of one)
	queue   ring
	inbox   []piece // arrivals pushed during the current step
	free    float64 // departure time of the last departed event

	// Per-step statistics (reset at the start of each step).
	pushed   float64 // events received
	departed float64 // input events processed
	delayW   float64 // Σ w × (mean departure − mean arrival), event-seconds

	// Cumulative counters for conservation checks.
	cumPushed, cumDeparted float64
}

// fluid is the fast simulator core: cohort ("piece") based, exact for the
// first and last event of every piece under deterministic FIFO service, so
// its cost does not depend on the event rate.
type fluid struct {
	stages  []stage
	order   []int // processing order of stages (topological)
	sources []int // source stages (task indices)
	slices  int   // source pieces per step
	sinkLat []latPiece
	now     float64 // start of the current step
	end     float64 // end of the current step
	cumEmit float64
	cumSink float64
	// per step
	emitted, sinkEvents float64
	// scratch for overlap stages
	scrBl, scrArr, scrKeep []piece
	scrEv                  []sweepEv
	scrB                   []float64
}

// latPiece is the end-to-end latency contribution of a piece delivered to
// the sink: w events whose latencies spread uniformly over [lo, hi] seconds.
type latPiece struct{ lo, hi, w float64 }

// topology holds what both simulator cores derive from a validated Config.
type topology struct {
	order     []int     // task topological order
	flowOf    []int     // per app edge: flow index, or -1 when local
	flowShare []float64 // per flow: bandwidth share, bits/s
	flowDelay []float64 // per flow: propagation, seconds
	flowEdge  []int     // per flow: app edge index
	hops      []int     // per flow: number of links
}

func buildTopology(c *Config) topology {
	order, _ := c.App.topoOrder() // validated already
	routes := shortestRoutes(c.Network)
	var t topology
	t.order = order
	t.flowOf = make([]int, len(c.App.Edges))
	var paths []route
	for i, e := range c.App.Edges {
		a, b := c.Placement[e.From], c.Placement[e.To]
		if a == b {
			t.flowOf[i] = -1
			continue
		}
		r := routes[c.Servers[a].Switch][c.Servers[b].Switch]
		t.flowOf[i] = len(paths)
		paths = append(paths, r)
		d := 0.0
		for _, li := range r {
			d += c.Network.Links[li].PropagationMS / 1000
		}
		t.flowDelay = append(t.flowDelay, d)
		t.flowEdge = append(t.flowEdge, i)
		t.hops = append(t.hops, len(r))
	}
	t.flowShare = make([]float64, len(paths))
	maxMinShares(c.Network.Links, paths, t.flowShare)
	return t
}

func newFluid(c *Config, t topology) *fluid {
	n := len(c.App.Tasks)
	f := &fluid{slices: c.SlicesPerStep, sources: c.App.Sources}
	f.stages = make([]stage, n+len(t.flowEdge))
	ups := make([]int, len(f.stages))
	for k, task := range c.App.Tasks {
		f.stages[k] = stage{task: k, edge: -1, sel: task.Selectivity}
	}
	for _, k := range c.App.Sinks {
		f.stages[k].sink = true
	}
	for fi, ei := range t.flowEdge {
		e := c.App.Edges[ei]
		s := &f.stages[n+fi]
		*s = stage{task: -1, edge: ei, sel: 1, delay: t.flowDelay[fi]}
		s.service = c.App.Tasks[e.From].OutBytes * 8 / t.flowShare[fi]
		if math.IsInf(t.flowShare[fi], 1) {
			s.service = 0
		}
	}
	for ei, e := range c.App.Edges {
		if fi := t.flowOf[ei]; fi >= 0 {
			f.stages[e.From].out = append(f.stages[e.From].out, n+fi)
			f.stages[n+fi].out = []int{e.To}
			ups[n+fi]++
		} else {
			f.stages[e.From].out = append(f.stages[e.From].out, e.To)
		}
		ups[e.To]++
	}
	for _, k := range c.App.Sources {
		ups[k]++
	}
	for i := range f.stages {
		s := &f.stages[i]
		s.merge = ups[i] > 1
		s.queue = newRing(c.QueueCapacity)
		s.inbox = make([]piece, 0, 2*c.QueueCapacity)
	}
	for _, k := range t.order {
		f.order = append(f.order, k)
		for _, o := range f.stages[k].out {
			if o >= n {
				f.order = append(f.order, o)
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
		s.cumPushed, s.cumDeparted = 0, 0
	}
	f.sinkLat = f.sinkLat[:0]
	f.now, f.cumEmit, f.cumSink = 0, 0, 0
	f.emitted, f.sinkEvents = 0, 0
}

// setService sets the per-event service time of task k, in seconds.
func (f *fluid) setService(k int, seconds float64) { f.stages[k].service = seconds }

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
			ds := max(p.as, s.free) + min(p.w, 1)*svc
			de := max(p.ae+svc, ds+max(p.w-1, 0)*svc)
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

// step advances the simulation by one second, [now, now+1), with the
// sources emitting rate events/s spread uniformly over the step in
// f.slices pieces. stepIndex numbers the source slices.
func (f *fluid) step(stepIndex int, rate float64) {
	t0 := f.now
	T := t0 + 1
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
		dt := 1 / float64(f.slices)
		w := rate * dt
		pad := dt / 2
		if w >= 1 {
			pad = dt / (2 * w)
		}
		for j := 0; j < f.slices; j++ {
			start := t0 + float64(j)*dt
			p := piece{w: w, as: start + pad, ae: start + dt - pad}
			p.os, p.oe = p.as, p.ae
			for _, k := range f.sources {
				f.deliver(k, p)
				f.emitted += w
			}
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
		ds := max(p.as, s.free) + min(p.w, 1)*svc
		if ds > T {
			break
		}
		de := max(p.ae+svc, ds+max(p.w-1, 0)*svc)
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
	q := piece{w: w, as: ds + s.delay, ae: de + s.delay, os: p.os, oe: p.oe}
	for _, o := range s.out {
		f.deliver(o, q)
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
	// Bisection to a 1 µs bracket, then linear interpolation inside it
	// (the CDF is linear between breakpoints).
	a, b := lo, hi
	ca, cb := 0.0, wsum
	for it := 0; it < 60 && b-a > 1e-6; it++ {
		x := (a + b) / 2
		if c := cdf(x); c >= target {
			b, cb = x, c
		} else {
			a, ca = x, c
		}
	}
	if cb > ca {
		return mean, a + (b-a)*(target-ca)/(cb-ca), true
	}
	return mean, b, true
}
