package worker

import (
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

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
	t.quota.Run(func() {
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

// finish routes the batch's outputs and returns completion weight (w.mu
// held).
func (s *slot) finish() {
	w, t := s.w, s.t
	now := w.now()
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
