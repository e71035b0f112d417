package env

import "math"

// taskStats is what a simulator core reports for one task after a step.
type taskStats struct {
	in     float64 // events received during the step
	done   float64 // input events processed during the step
	delayW float64 // Σ over processed events of (departure − arrival), event-seconds
	queue  float64 // events that have arrived and wait (or are in service) at step end
	// held is the part of queue a worker's cap on requests in flight
	// keeps upstream, at the ingress or the sender (Config.Worker.MaxInFlight).
	held float64
}

// stepStats is what a simulator core reports after a step.
type stepStats struct {
	tasks      []taskStats // per task: the sum over its replicas
	replicas   []taskStats // per replica
	emitted    float64     // events emitted by the sources
	sinkEvents float64     // events delivered to the sink
	mean, p95  float64     // end-to-end latency of delivered events, seconds
	completed  bool        // whether any event reached the sink
	inFlight   float64     // events on network flows or propagating
	oldest     float64     // emission time of the oldest event still in the system (+Inf if none)
}

// perSecond turns the step's counts into rates per second for a step of
// 1/k seconds (Physics.StepSeconds): the events received, processed,
// emitted and delivered, and the processed events' summed delay (so the
// mean delay is unchanged). Queues, latencies and what is in flight are
// levels and times and stay.
func (st *stepStats) perSecond(k float64) {
	for _, ts := range [][]taskStats{st.tasks, st.replicas} {
		for i := range ts {
			ts[i].in *= k
			ts[i].done *= k
			ts[i].delayW *= k
		}
	}
	st.emitted *= k
	st.sinkEvents *= k
}

// simCore is implemented by the fluid and the per-event simulator.
type simCore interface {
	reset()
	// attach gives the core the episode's physics (once, before reset).
	attach(ph *physicsRun)
	// setCPU sets replica r's execution parameters (service time per
	// event, and what the stochastic physics need).
	setCPU(replica int, c cpuOf)
	step(stepIndex int, rate float64)
	collect(st *stepStats)
	// balance returns, for conservation checks, the events emitted and
	// delivered to the sink so far and per-stage (received − processed −
	// waiting) residuals.
	balance() (emitted, sunk float64, residual []float64)
}

func (f *fluid) collect(st *stepStats) {
	T := f.now
	st.emitted, st.sinkEvents = f.emitted, f.sinkEvents
	if f.tr != nil && f.tr.valid {
		// The tracer gives the latencies (below); the fluid says only
		// whether anything reached the sink.
		st.mean, st.p95, st.completed = 0, 0, false
		for _, l := range f.sinkLat {
			if l.w > 0 {
				st.completed = true
				break
			}
		}
	} else {
		st.mean, st.p95, st.completed = quantileMixture(f.sinkLat, 0.95)
	}
	st.inFlight = 0
	st.oldest = math.Inf(1)
	clear(st.tasks)
	for i := range f.stages {
		s := &f.stages[i]
		future := s.future(T)
		if s.queue.len() > 0 {
			st.oldest = min(st.oldest, s.queue.front().os)
		}
		if s.task < 0 {
			st.inFlight += s.queue.total
			continue
		}
		st.inFlight += future
		x := taskStats{in: s.pushed, done: s.departed, delayW: s.delayW, queue: max(s.queue.total-future, 0)}
		if f.tr != nil && f.tr.valid {
			// The sampled physics: each processed event's mean delay is
			// the mean wait plus its service; the queue holds at least
			// what Little's law puts in front of the server (the
			// arrival rate, per second, times the wait).
			w := f.tr.wbar[i]
			x.delayW = x.done * (w + s.service)
			x.queue = max(x.queue, s.pushed/f.ph.stepLen*w)
		}
		st.addReplica(s.task, s.replica, x)
	}
	if f.tr != nil && f.tr.valid && st.completed {
		st.mean, st.p95 = f.tr.mean, f.tr.p95
	}
	if f.room != nil {
		f.holdUpstream(f.held)
		for r, h := range f.held {
			st.replicas[r].held = h
			st.tasks[f.stages[r].task].held += h
		}
	}
}

// future is the part of stage s's queue that arrives after T (events on
// their way: a piece arriving across T counts its share after T).
func (s *stage) future(T float64) float64 {
	future := 0.0
	for j := s.queue.len() - 1; j >= 0; j-- {
		p := s.queue.at(j)
		if p.ae <= T {
			break
		}
		if p.as >= T || p.ae == p.as {
			future += p.w
		} else {
			future += p.w * (p.ae - T) / (p.ae - p.as)
		}
	}
	return future
}

func (f *fluid) balance() (float64, float64, []float64) {
	res := make([]float64, len(f.stages))
	for i := range f.stages {
		s := &f.stages[i]
		res[i] = s.cumPushed - s.cumDeparted - s.queue.total
	}
	return f.cumEmit, f.cumSink, res
}

// addReplica records replica r's statistics and adds them to its task's.
func (st *stepStats) addReplica(task, r int, x taskStats) {
	st.replicas[r] = x
	t := &st.tasks[task]
	t.in += x.in
	t.done += x.done
	t.delayW += x.delayW
	t.queue += x.queue
}
