package ppo

import "sync/atomic"

// splitter shares the actor's backward matrix products (∂X of the upper
// layers and ∂W of the first, the products that run after the critic
// half has usually finished) with one helper goroutine when the update
// runs with two workers: the critic half is shorter than the actor's,
// and without sharing the second core idles for the rest of the actor's
// backward pass. Groups of six rows of C are claimed in chunks from a
// counter by the calling goroutine and the helper; every element is the
// same sum over k whichever call computes it, so the result does not
// depend on who computed which chunk. A nil *splitter runs everything on
// the caller.
type splitter struct{}

// splitChunks is how many pieces a split op is cut into.
const splitChunks = 8

// run calls f(lo, hi) over [0, n) in chunks and returns when all are
// done. The helper claims chunks only while some are left and run waits
// until every chunk has completed, so nothing touches the op's buffers
// after run returns; a helper that starts after the caller has claimed
// every chunk finds none and exits.
func (s *splitter) run(n int, f func(lo, hi int)) {
	if s == nil || n < 2*splitChunks {
		f(0, n)
		return
	}
	size := (n + splitChunks - 1) / splitChunks
	chunks := int64((n + size - 1) / size)
	var next, done atomic.Int64
	fin := make(chan struct{})
	work := func() {
		for {
			c := next.Add(1) - 1
			if c >= chunks {
				return
			}
			f(int(c)*size, min(n, int(c+1)*size))
			if done.Add(1) == chunks {
				close(fin)
			}
		}
	}
	go work()
	work()
	<-fin
}
