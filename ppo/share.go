package ppo

import "sync/atomic"

// rowShare lets the goroutine that runs the actor half hand parts of its
// ops to the critic worker as well: the rows of the per-dimension
// log-softmax and of the exponentials of its output (float64 math.Exp and
// math.Log), and the 32-column panels of the matrix products. Rows of the
// log-softmax and panels of a product are independent (each is computed
// by the same code whichever goroutine computes it), so the result is the
// same bits however the work is split; the split only decides how soon
// the op is done. The two goroutines claim chunks from a shared counter
// until none is left, so a worker that comes late (busy, or descheduled
// on a loaded machine) takes fewer chunks rather than delaying the op.
//
// Protocol: while a rowShare is on (the trainer's two-worker update turns
// it on for the actor half of every minibatch), the actor posts a task on
// tasks for every shared op, marking the log-softmax's as the end of the
// first phase, and at the end of its run (endRun) a marker ending the
// second. The worker helps with the first phase's tasks until its end
// (helpUntil(phaseSplit)), runs the critic, then helps with the second's
// until its end (helpUntil(phaseEnd)). If the run fails early, endRun
// posts the markers it has not posted. Off, or nil, a rowShare runs every
// task on the caller.
type rowShare struct {
	tasks chan *rowTask
	on    bool
	split bool // the current run has posted the first phase's end
}

// Marks of a rowTask.
const (
	phaseNone  = iota
	phaseSplit // the last task of the first phase
	phaseEnd   // no work: the run is over
)

// rowTask is one op's work: f(lo, hi) computes units [lo, hi).
type rowTask struct {
	f     func(lo, hi int)
	units int
	chunk int
	mark  int
	next  atomic.Int64  // first unit not yet claimed
	left  atomic.Int64  // units not yet computed
	done  chan struct{} // closed when left reaches 0
}

// shareChunk is the log-softmax's rows per claim: 16 chunks of a 256-row
// minibatch.
const shareChunk = 16

// shareTasks bounds the tasks one actor run posts (a product per layer
// forward and two backward, the log-softmax, the markers).
const shareTasks = 32

func newRowShare() *rowShare { return &rowShare{tasks: make(chan *rowTask, shareTasks)} }

// run computes units [0, units) with f, chunk units per claim, on the
// caller and (if s is on) the worker. split marks the first phase's last
// task.
func (s *rowShare) run(units, chunk int, split bool, f func(lo, hi int)) {
	if s == nil || !s.on || units <= chunk || (split && s.split) {
		f(0, units)
		return
	}
	t := &rowTask{f: f, units: units, chunk: chunk, done: make(chan struct{})}
	if split {
		t.mark = phaseSplit
		s.split = true
	}
	t.left.Store(int64(units))
	s.tasks <- t
	t.work()
	<-t.done
}

// endRun ends an actor run: it posts the first phase's end if the run has
// not (it failed before the log-softmax), and the second's.
func (s *rowShare) endRun() {
	if s == nil || !s.on {
		return
	}
	if !s.split {
		s.tasks <- &rowTask{mark: phaseSplit}
	}
	s.tasks <- &rowTask{mark: phaseEnd}
	s.split = false
}

// helpUntil is the worker's side: it works on every task posted until
// the one marked mark.
func (s *rowShare) helpUntil(mark int) {
	for {
		t := <-s.tasks
		t.work()
		if t.mark == mark {
			return
		}
	}
}

// work claims and computes chunks until none is left.
func (t *rowTask) work() {
	for {
		lo := int(t.next.Add(int64(t.chunk))) - t.chunk
		if lo >= t.units {
			return
		}
		hi := min(lo+t.chunk, t.units)
		t.f(lo, hi)
		if t.left.Add(int64(lo-hi)) == 0 {
			close(t.done)
		}
	}
}
