package env

import (
	"math"
	"slices"
	"sort"
)

// event is one event at a stage of the per-event core: its arrival time
// at the stage and its emission time at the source, in seconds, and the
// number of the external message it descends from (a join's key).
type event struct {
	a, o float64
	id   uint64
}

// joinKey names one message's pending siblings at a join task.
type joinKey struct {
	task int
	id   uint64
}

type refStage struct {
	task    int
	replica int
	outW    []float64
	outAcc  []float64 // routing credit per downstream stage
	service float64
	cpu     cpuOf // execution parameters (stochastic physics)
	delay   float64
	sel     float64
	out     []int
	sink    bool
	joinN   int     // a join (Task.JoinOf): siblings gathered per message; 0 otherwise
	hop     float64 // dispatch latency to the successors (Physics.HopMS, HopMSByTask), seconds; task stages only
	queue   []event
	inbox   []event
	free    float64 // time the server becomes free
	headRem float64 // remaining share of the head event's service (1 = not started)
	// Stochastic physics: the head event's remaining work (core-seconds;
	// 0 = not started) and the CFS period and quota used in it.
	headWork, qused float64
	period          int
	selAcc          float64 // fractional outputs owed

	in, done, delayW       float64
	cumPushed, cumDeparted float64
}

// perEvent is the reference simulator: every event is served individually
// in FIFO order with deterministic service times, sources space the events
// of each slice evenly, network flows transmit events one after another at
// their bandwidth share and add propagation delay. It shares the topology
// and semantics of the fluid core but none of its approximations (cohorts,
// coalescing, linear interpolation inside a cohort).
type perEvent struct {
	stages   []refStage
	order    []int
	sources  []int
	nSources int
	srcW     []float64
	srcAcc   []float64 // routing credit of the external stream per source replica
	slices   int
	rateAcc  float64
	lat      []float64
	now      float64
	// Physics.HopCurve: the curve, the fixed hops it leaves in place and
	// the step's hops, per task (nil: fixed hops).
	curve           *curveRun
	hopBase, hopNow []float64

	emitted, sinkEvents float64
	cumEmit, cumSink    float64
	ph                  *physicsRun
	next                float64 // random arrivals: time of the next arrival
	msgs                uint64  // external messages emitted so far (their ids)
	// pending counts, per join task and message, the siblings that have
	// left the join's replicas (looked up only, never iterated).
	pending map[joinKey]int
}

func newPerEvent(c *Config, t topology) *perEvent {
	f := newFluid(c, t) // reuse the wiring
	p := &perEvent{order: f.order, sources: f.sources, nSources: f.nSources, srcW: f.srcW, slices: f.slices}
	if f.curve != nil {
		p.curve, p.hopBase, p.hopNow = f.curve, f.hopBase, slices.Clone(f.hop)
	}
	p.srcAcc = make([]float64, len(f.sources))
	p.stages = make([]refStage, len(f.stages))
	for i, s := range f.stages {
		p.stages[i] = refStage{task: s.task, replica: s.replica, service: s.service, delay: s.delay, sel: s.sel,
			out: s.out, outW: s.outW, outAcc: make([]float64, len(s.out)), sink: s.sink, headRem: 1,
			cpu: cpuOf{service: s.service, work: s.service, speed: 1, quota: math.Inf(1)}}
		if s.task >= 0 {
			if len(s.out) > 0 {
				p.stages[i].hop = f.hop[s.task]
			}
			if fork, _ := c.App.joinFork(s.task); fork >= 0 {
				p.stages[i].joinN = int(c.App.Tasks[fork].Selectivity)
				p.pending = map[joinKey]int{}
			}
		}
	}
	return p
}

func (p *perEvent) reset() {
	for i := range p.stages {
		s := &p.stages[i]
		s.queue, s.inbox = s.queue[:0], s.inbox[:0]
		s.free, s.headRem, s.selAcc = 0, 1, 0
		s.headWork, s.qused, s.period = 0, 0, -1
		clear(s.outAcc)
		s.in, s.done, s.delayW, s.cumPushed, s.cumDeparted = 0, 0, 0, 0, 0
	}
	clear(p.srcAcc)
	p.rateAcc, p.now, p.emitted, p.sinkEvents, p.cumEmit, p.cumSink = 0, 0, 0, 0, 0, 0
	p.next = -1
	p.lat = p.lat[:0]
	p.msgs = 0
	clear(p.pending)
}

func (p *perEvent) setCPU(k int, c cpuOf) {
	p.stages[k].service = c.service
	p.stages[k].cpu = c
}

func (p *perEvent) attach(ph *physicsRun) { p.ph = ph }

// stepLen is the step's length, seconds (Physics.StepSeconds; 1 without
// physics attached).
func (p *perEvent) stepLen() float64 {
	if p.ph == nil {
		return 1
	}
	return p.ph.stepLen
}

func (p *perEvent) push(i int, ev event) {
	s := &p.stages[i]
	s.inbox = append(s.inbox, ev)
	s.in++
	s.cumPushed++
}

func (p *perEvent) step(stepIndex int, rate float64) {
	if p.curve != nil {
		if sp := p.curve.at(rate, p.hopBase, p.hopNow, nil, nil); sp >= 0 && p.ph != nil {
			p.ph.hopSpread = sp
		}
		for i := range p.stages {
			if s := &p.stages[i]; s.task >= 0 && len(s.out) > 0 {
				s.hop = p.hopNow[s.task]
			}
		}
	}
	t0 := p.now
	T := t0 + p.stepLen()
	p.lat = p.lat[:0]
	p.emitted, p.sinkEvents = 0, 0
	for i := range p.stages {
		s := &p.stages[i]
		s.in, s.done, s.delayW = 0, 0, 0
	}
	if p.ph != nil {
		p.ph.drawRates()
	}
	if p.ph != nil && p.ph.arrivalsRandom {
		// A Poisson or gamma renewal process at each slice's rate,
		// restarted at every slice boundary (exact for Poisson, which is
		// memoryless).
		dt := p.stepLen() / float64(p.slices)
		for j := 0; j < p.slices; j++ {
			lo, hi := t0+float64(j)*dt, t0+float64(j+1)*dt
			r := rate * p.ph.mult[j]
			if !(r > 0) {
				p.next = -1
				continue
			}
			p.next = lo + p.ph.gap(r)
			for p.next < hi {
				p.emit(p.next)
				p.next += p.ph.gap(r)
			}
			p.next = -1 // the next slice draws anew at its own rate
		}
	} else {
		p.uniformArrivals(t0, rate)
	}
	p.cumEmit += p.emitted
	for _, i := range p.order {
		if p.ph != nil && p.ph.tracing {
			p.processStochastic(i, T)
		} else {
			p.process(i, T)
		}
	}
	p.cumSink += p.sinkEvents
	p.now = T
}

// processStochastic serves stage i's queue up to time T under stochastic
// physics: each event's work is its replica's mean work times a
// log-normal factor (network flows: deterministic), run at the replica's
// speed and, under CFS, only while quota is left in the current period.
func (p *perEvent) processStochastic(i int, T float64) {
	s := &p.stages[i]
	p.merge(s)
	c := s.cpu
	if !(c.speed > 0) || math.IsInf(c.work, 1) {
		return
	}
	P := p.ph.cfsPeriod
	n := 0
	for n < len(s.queue) {
		ev := s.queue[n]
		t := max(ev.a, s.free)
		if t >= T {
			break
		}
		if s.headWork <= 0 {
			s.headWork = c.work
			if s.task >= 0 {
				s.headWork *= p.ph.serviceFactor()
			}
		}
		for s.headWork > 0 && t < T {
			if math.IsInf(c.quota, 1) || P <= 0 {
				end := min(T, t+s.headWork/c.speed)
				if end == T {
					s.headWork -= (end - t) * c.speed
				} else {
					s.headWork = 0
				}
				t = end
				continue
			}
			if s.period < 0 || t >= float64(s.period+1)*P {
				s.period, s.qused = int(math.Floor(t/P+1e-9)), 0
			}
			avail := c.quota - s.qused
			pEnd := float64(s.period+1) * P
			if avail <= 1e-15 {
				if pEnd >= T {
					t = T
					break
				}
				t = pEnd
				s.period++
				s.qused = 0
				continue
			}
			need := min(s.headWork, avail)
			end := min(T, pEnd, t+need/c.speed)
			done := (end - t) * c.speed
			if end == t+need/c.speed {
				done = need
			}
			s.headWork -= done
			s.qused += done
			t = end
		}
		if s.headWork > 0 {
			s.free = T
			break
		}
		s.headWork = 0
		s.free = t
		n++
		p.finish(s, ev, t)
	}
	s.queue = slices.Delete(s.queue, 0, n)
}

// merge moves stage s's inbox into its queue in arrival order (the head in
// service stays first).
func (p *perEvent) merge(s *refStage) {
	s.queue = append(s.queue, s.inbox...)
	s.inbox = s.inbox[:0]
	lo := 0
	if s.headRem < 1 || s.headWork > 0 {
		lo = 1
	}
	tail := s.queue[lo:]
	if !sort.SliceIsSorted(tail, func(a, b int) bool { return tail[a].a < tail[b].a }) {
		sort.SliceStable(tail, func(a, b int) bool { return tail[a].a < tail[b].a })
	}
}

// finish records event ev leaving stage s at time fin and forwards its
// outputs.
func (p *perEvent) finish(s *refStage, ev event, fin float64) {
	s.done++
	s.cumDeparted++
	s.delayW += fin - ev.a
	var outs float64
	if s.joinN > 0 {
		// A join emits the message's one output when its last sibling
		// leaves (on whichever replica that is).
		k := joinKey{s.task, ev.id}
		if n := p.pending[k] + 1; n < s.joinN {
			p.pending[k] = n
		} else {
			delete(p.pending, k)
			outs = 1
		}
	} else {
		s.selAcc += s.sel
		outs = math.Floor(s.selAcc + 1e-9)
		s.selAcc -= outs
	}
	for o := 0; o < int(outs); o++ {
		if s.sink {
			p.sinkEvents++
			p.lat = append(p.lat, fin-ev.o)
		}
		for j, d := range s.out {
			s.outAcc[j] += s.outW[j]
			if s.outAcc[j] >= 1-1e-9 {
				s.outAcc[j]--
				h := s.hop
				if h > 0 && p.ph != nil {
					h *= p.ph.hopFactorOf(ev.id, d)
				}
				p.push(d, event{a: fin + s.delay + h, o: ev.o, id: ev.id})
			}
		}
	}
}

// emit sends one external event, emitted at time at, to the sources.
func (p *perEvent) emit(at float64) {
	p.emitted += float64(p.nSources)
	p.msgs++
	// Each source task receives the event; its replicas take turns by
	// credit in proportion to their shares.
	for si, k := range p.sources {
		p.srcAcc[si] += p.srcW[si]
		if p.srcAcc[si] >= 1-1e-9 {
			p.srcAcc[si]--
			p.push(k, event{a: at, o: at, id: p.msgs})
		}
	}
}

// uniformArrivals spaces the step's events evenly inside each slice.
func (p *perEvent) uniformArrivals(t0, rate float64) {
	dt := p.stepLen() / float64(p.slices)
	for j := 0; j < p.slices; j++ {
		r := rate
		if p.ph != nil {
			r *= p.ph.mult[j]
		}
		p.rateAcc += r * dt
		n := math.Floor(p.rateAcc + 1e-9)
		p.rateAcc -= n
		start := t0 + float64(j)*dt
		for e := 0; e < int(n); e++ {
			p.emit(start + (float64(e)+0.5)*dt/n)
		}
	}
}

func (p *perEvent) process(i int, T float64) {
	s := &p.stages[i]
	p.merge(s)
	n := 0
	for n < len(s.queue) {
		ev := s.queue[n]
		st := max(ev.a, s.free)
		if st >= T {
			break
		}
		fin := st + s.headRem*s.service
		if fin > T {
			s.headRem -= (T - st) / s.service
			s.free = T
			break
		}
		s.free = fin
		s.headRem = 1
		n++
		p.finish(s, ev, fin)
	}
	s.queue = slices.Delete(s.queue, 0, n)
}

func (p *perEvent) collect(st *stepStats) {
	T := p.now
	st.emitted, st.sinkEvents = p.emitted, p.sinkEvents
	st.completed = len(p.lat) > 0
	st.mean, st.p95 = 0, 0
	if st.completed {
		sort.Float64s(p.lat)
		st.mean = sum(p.lat) / float64(len(p.lat))
		st.p95 = p.lat[int(math.Ceil(0.95*float64(len(p.lat))))-1]
	}
	st.inFlight = 0
	st.oldest = math.Inf(1)
	clear(st.tasks)
	for i := range p.stages {
		s := &p.stages[i]
		waiting, future := 0.0, 0.0
		for _, ev := range s.queue {
			st.oldest = min(st.oldest, ev.o)
			if ev.a > T {
				future++
			} else {
				waiting++
			}
		}
		if s.task < 0 {
			st.inFlight += waiting + future
			continue
		}
		st.inFlight += future
		st.addReplica(s.task, s.replica, taskStats{in: s.in, done: s.done, delayW: s.delayW, queue: waiting})
	}
}

func (p *perEvent) balance() (float64, float64, []float64) {
	res := make([]float64, len(p.stages))
	for i := range p.stages {
		s := &p.stages[i]
		res[i] = s.cumPushed - s.cumDeparted - float64(len(s.queue))
	}
	return p.cumEmit, p.cumSink, res
}
