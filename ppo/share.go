package ppo

import "sync/atomic"

// rowShare lets the goroutine that runs the actor half hand the rows of
// its costliest op — the per-dimension log-softmax and the exponentials
// of its output, a third of the actor's CPU in float64 math.Exp and
// math.Log — to the critic worker as well. Rows are independent (each is
// computed by the same code whichever goroutine computes it), so the
// result is the same bits however the rows are split; the split only
// decides how soon the op is done. The two goroutines claim chunks of
// rows from a shared counter until none is left, so a worker that comes
// late (busy, or descheduled on a loaded machine) takes fewer chunks
// rather than delaying the op.
//
// Protocol: while a rowShare is on (the trainer's two-worker update turns
// it on for the actor half of every minibatch), every actor run posts
// exactly one rowTask on tasks — the log-softmax's, or an empty one if the
// run fails before it (endRun) — and the worker receives exactly one per
// minibatch. Off, or nil, it runs every task on the caller.
type rowShare struct {
	tasks  chan *rowTask
	on     bool
	posted bool // a task has been posted in the current run
}

// rowTask is one op's rows: f(lo, hi) computes rows [lo, hi).
type rowTask struct {
	f     func(lo, hi int)
	rows  int
	chunk int
	next  atomic.Int64  // first row not yet claimed
	left  atomic.Int64  // rows not yet computed
	done  chan struct{} // closed when left reaches 0
}

// shareChunk is the rows per claim: 16 chunks of a 256-row minibatch,
// each some 20 µs of the log-softmax.
const shareChunk = 16

func newRowShare() *rowShare { return &rowShare{tasks: make(chan *rowTask, 1)} }

// run computes rows [0, rows) with f, on the caller and (if s is not nil)
// the worker.
func (s *rowShare) run(rows int, f func(lo, hi int)) {
	if s == nil || !s.on || s.posted || rows == 0 {
		f(0, rows)
		return
	}
	t := &rowTask{f: f, rows: rows, chunk: shareChunk, done: make(chan struct{})}
	t.left.Store(int64(rows))
	s.posted = true
	s.tasks <- t
	t.work()
	<-t.done
}

// endRun ends an actor run: if the run posted no task (it failed before
// the log-softmax), it posts an empty one, so that the worker does not
// wait for it.
func (s *rowShare) endRun() {
	if s == nil || !s.on {
		return
	}
	if !s.posted {
		t := &rowTask{done: make(chan struct{})}
		close(t.done)
		s.tasks <- t
	}
	s.posted = false
}

// work claims and computes chunks until none is left.
func (t *rowTask) work() {
	for {
		lo := int(t.next.Add(int64(t.chunk))) - t.chunk
		if lo >= t.rows {
			return
		}
		hi := min(lo+t.chunk, t.rows)
		t.f(lo, hi)
		if t.left.Add(int64(lo-hi)) == 0 {
			close(t.done)
		}
	}
}
