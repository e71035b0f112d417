package ppo

import (
	"sync/atomic"
	"testing"
)

// TestSplitterCoversEveryRowOnce: run hands every row of [0, n) to
// exactly one call, in disjoint chunks, for sizes below, at and above the
// split threshold, with and without a splitter, and returns only when all
// are done.
func TestSplitterCoversEveryRowOnce(t *testing.T) {
	for _, s := range []*splitter{nil, new(splitter)} {
		for _, n := range []int{0, 1, 15, 16, 17, 40, 256, 11520} {
			seen := make([]atomic.Int32, n)
			s.run(n, func(lo, hi int) {
				if lo < 0 || hi > n || lo > hi {
					t.Errorf("n=%d: chunk [%d, %d)", n, lo, hi)
					return
				}
				for i := lo; i < hi; i++ {
					seen[i].Add(1)
				}
			})
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("splitter %v, n=%d: row %d computed %d times", s != nil, n, i, c)
				}
			}
		}
	}
}
