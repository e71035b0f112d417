package ppo

import "sync/atomic"

// splitter shares a row-wise op of the actor half with one helper
// goroutine when the update runs with two workers: the critic half is
// shorter than the actor's, and without sharing the second core idles
// once it is done. Rows are claimed in chunks from a counter by the
// calling goroutine and the helper; each row is computed exactly as it
// would be serially (the ops split are row- or element-wise, with no
// reduction across rows), so the result does not depend on who computed
// which chunk. A nil *splitter runs everything on the caller.
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
