package worker

import (
	"fmt"
	"time"

	"streamscale/serve/runtime/cfs"
	"streamscale/serve/runtime/kcfs"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// limiter is a task's CPU allocation: a *cfs.Quota, or a task host's
// kernel quota.
type limiter interface {
	Set(millicores int)
	Millicores() int
	Stats() cfs.Stats
}

// TaskHost runs one task's operator work outside the worker (Config.Hosts;
// *kcfs.Host is one). It is used by one slot at a time.
type TaskHost interface {
	// Exec runs the records in order; r.Failed gets one flag per record
	// and r.Emits what they emitted, in order.
	Exec(recs []ops.Record, r *kcfs.Result) error
	// Set changes the CPU allocation, millicores.
	Set(millicores int) error
	Millicores() int
	// Stats are the host's CPU counters (Used: all of its CPU).
	Stats() cfs.Stats
}

// hostLimiter is a TaskHost's allocation as a limiter.
type hostLimiter struct {
	h  TaskHost
	w  *Worker
	op int
}

// Set is called with w.mu held; logf takes no lock.
func (l hostLimiter) Set(mc int) {
	if err := l.h.Set(mc); err != nil {
		l.w.logf("operator %d: task host: %v", l.op, err)
	}
}
func (l hostLimiter) Millicores() int  { return l.h.Millicores() }
func (l hostLimiter) Stats() cfs.Stats { return l.h.Stats() }

// emit is one record an execution emitted, its payload in slot.buf.
type emit struct {
	to       uint16
	key      uint64
	off, n   int32
	parent   int32
	overflow bool
}

// slot is one executor: it runs a batch of one task outside the lock.
type slot struct {
	w       *Worker
	t       *task
	batch   []rec
	outs    []emit
	buf     []byte
	cur     int32
	failed  []bool
	elapsed time.Duration
	recs    []ops.Record // task host input
	res     kcfs.Result  // task host output
}

// Emit implements ops.Emitter.
func (s *slot) Emit(to int, key uint64, payload []byte) {
	off := len(s.buf)
	s.buf = append(s.buf, payload...)
	s.outs = append(s.outs, emit{to: uint16(to), key: key, off: int32(off), n: int32(len(payload)), parent: s.cur})
	if to < 0 || to >= s.w.nOps || s.w.edgeIdx[s.t.op][to] < 0 {
		s.outs[len(s.outs)-1].overflow = true // marked bad; dropped when routed
	}
}

// stateView is the ops.State of one task (only its slot touches it).
type stateView struct{ t *task }

func (v stateView) Get(key uint64) ([]byte, bool) {
	b, ok := v.t.state[ops.KeyGroup(key)][key]
	return b, ok
}

func (v stateView) Put(key uint64, value []byte) {
	m := v.t.state[ops.KeyGroup(key)]
	old := m[key]
	m[key] = append(old[:0], value...)
}

func (v stateView) Delete(key uint64) { delete(v.t.state[ops.KeyGroup(key)], key) }

// runSlot is one executor's loop.
func (w *Worker) runSlot() {
	s := &slot{w: w}
	w.mu.Lock()
	for {
		i := w.readyTask()
		for i < 0 && !w.closing {
			w.idle++
			w.work.Wait()
			w.idle--
			i = w.readyTask()
		}
		if w.closing {
			w.mu.Unlock()
			return
		}
		t := w.tasks[i]
		w.rr = i + 1
		t.running = true
		s.t = t
		s.batch = t.take(s.batch[:0], w.cfg.Batch)
		if t.len() > 0 && w.idle > 0 {
			w.work.Signal() // other tasks may be ready too
		}
		w.mu.Unlock()

		s.execute()

		w.mu.Lock()
		s.finish()
		t.running = false
		w.barrierStep()
		if w.paused {
			w.drained.Broadcast()
		}
	}
}

// execute runs the batch under the task's CPU quota.
func (s *slot) execute() {
	s.outs, s.buf = s.outs[:0], s.buf[:0]
	s.failed = s.failed[:0]
	t := s.t
	st := stateView{t}
	begin := time.Now()
	if t.host != nil {
		s.executeHost()
		s.elapsed = time.Since(begin)
		return
	}
	t.inproc.RunIn(s.w.budget, func() {
		for i := range s.batch {
			r := &s.batch[i]
			s.cur = int32(i)
			mark := len(s.outs)
			err := t.impl.Process(ops.Record{Key: r.Key, Input: r.Input, Seq: r.Seq, Payload: r.Payload}, st, s)
			failed := err != nil
			if failed {
				s.outs = s.outs[:mark]
			}
			s.failed = append(s.failed, failed)
		}
	})
	s.elapsed = time.Since(begin)
}

// executeHost runs the batch in the task's host; if the host fails, every
// record of the batch fails (is dropped and counted) and the error is
// logged.
func (s *slot) executeHost() {
	s.recs = s.recs[:0]
	for i := range s.batch {
		r := &s.batch[i]
		s.recs = append(s.recs, ops.Record{Key: r.Key, Input: r.Input, Seq: r.Seq, Payload: r.Payload})
	}
	if err := s.t.host.Exec(s.recs, &s.res); err != nil {
		// Not logf: it reads w.id, which w.mu guards.
		fmt.Fprintf(s.w.cfg.Log, "worker: operator %d: task host: %v\n", s.t.op, err)
		for range s.batch {
			s.failed = append(s.failed, true)
		}
		return
	}
	s.failed = append(s.failed, s.res.Failed...)
	for _, e := range s.res.Emits {
		s.cur = int32(e.Parent)
		s.Emit(e.To, e.Key, e.Payload)
	}
}

// finish routes the batch's outputs and returns completion weight (w.mu
// held).
func (s *slot) finish() {
	w, t := s.w, s.t
	now := w.stamp()
	t.c.execs += uint64(len(s.batch))
	t.c.execNS += uint64(s.elapsed)
	w.stats.Executed += uint64(len(s.batch))
	j := 0
	for i := range s.batch {
		r := &s.batch[i]
		t.c.latencyNS += uint64(max(0, now-r.at))
		if s.failed[i] {
			w.stats.Dropped++
		}
		k := j
		for k < len(s.outs) && s.outs[k].parent == int32(i) {
			k++
		}
		kids := s.outs[j:k]
		j = k
		bad := 0
		for _, e := range kids {
			if e.overflow {
				bad++
			}
		}
		if bad > 0 {
			w.stats.Dropped += uint64(bad)
		}
		ce, back, ok := wire.Split(r.Exp, len(kids)-bad)
		if !ok {
			w.stats.WeightOverflow++
			kids = nil
		}
		for _, e := range kids {
			if e.overflow {
				continue
			}
			c := rec{Record: wire.Record{Op: e.to, Exp: ce, Key: e.key, Input: r.Input, Seq: r.Seq, Payload: w.alloc(s.buf[e.off : e.off+e.n])}}
			w.inFlight++
			local, dest := w.route(c, w.id)
			if ei := w.edgeIdx[t.op][e.to]; ei >= 0 {
				if local {
					w.edges[ei].Local++
				} else {
					w.edges[ei].Remote++
					w.dests[dest] = true
				}
			}
		}
		if back != (wire.Weight{}) {
			w.addDone(r.Input, back)
		}
	}
	w.inFlight -= len(s.batch)
	w.space.Broadcast()
	clear(s.batch)
	s.batch = s.batch[:0]
}
