package env

// A worker's cap on requests in flight (Config.Worker.MaxInFlight; the
// model is documented on WorkerPhysics). Each replica stage keeps serving
// its whole FIFO queue: with the cap at least the slots, an admitted
// request never waits for room to start, so when a request departs does
// not depend on whether it waited upstream or at the worker. What the cap
// decides is which of the waiting requests are at the worker and which
// upstream: holdUpstream.

// holdUpstream sets held[r], for every replica r, to the events waiting
// for it at time f.now that its worker's cap keeps upstream (at the
// ingress for a source, at the sender for requests from other workers).
// A worker w has room f.room[w] for waiting requests (its cap less the
// executions in flight). The cap counts only the requests the worker
// receives from outside (inputs and requests from other workers): those
// its own executions send to itself are passed in memory, always
// admitted and not counted (replicas without outside input). The requests
// from outside are admitted in arrival order while room remains — the
// ones that arrived after the arrival time τ at which the admitted reach
// the room wait upstream (τ by bisection on the piecewise-linear count of
// arrivals, so the admitted never exceed the room). Without a cap (f.room
// nil) every held[r] is 0.
func (f *fluid) holdUpstream(held []float64) {
	clear(held)
	if f.room == nil {
		return
	}
	T := f.now
	for w, room := range f.room {
		external, lo := 0.0, T
		for i := range held {
			s := &f.stages[i]
			if s.server != w || !s.ext {
				continue
			}
			external += max(s.queue.total-s.future(T), 0)
			if s.queue.len() > 0 {
				lo = min(lo, s.queue.front().as)
			}
		}
		free := room
		if external <= free {
			continue
		}
		tau := lo // every outside request waits upstream
		if free > 0 {
			// g(a) ≤ free < g(b): the admitted arrivals by a fit the room.
			a, b := lo-1e-9, T
			for it := 0; it < 60 && b-a > 1e-9; it++ {
				m := (a + b) / 2
				if f.arrivedBy(w, m) > free {
					b = m
				} else {
					a = m
				}
			}
			tau = a
		}
		for i := range held {
			s := &f.stages[i]
			if s.server != w || !s.ext {
				continue
			}
			wait := max(s.queue.total-s.future(T), 0)
			in := 0.0
			if free > 0 {
				in = min(s.arrivedBy(tau), wait)
			}
			held[i] = wait - in
		}
	}
}

// arrivedBy is the number of outside requests waiting at worker w's
// replicas that arrived by time t.
func (f *fluid) arrivedBy(w int, t float64) float64 {
	n := 0.0
	for i := range f.held {
		if s := &f.stages[i]; s.server == w && s.ext {
			n += s.arrivedBy(t)
		}
	}
	return n
}

// arrivedBy is the number of events in stage s's queue that arrive by t.
func (s *stage) arrivedBy(t float64) float64 {
	n := 0.0
	for j := 0; j < s.queue.len(); j++ {
		p := s.queue.at(j)
		n += p.countBy(t)
	}
	return n
}
