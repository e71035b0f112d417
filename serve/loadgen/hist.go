package loadgen

import (
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: values below 2^(subBits+1) ns
// are exact, larger ones fall in buckets 2^-subBits of their size wide.
const subBits = 7

const histSize = 1<<(subBits+1) + (64-subBits-1)<<subBits

// hist is a log-linear histogram of nanosecond durations.
type hist struct {
	counts [histSize]uint64
	n      uint64
	max    uint64
}

func bucket(ns uint64) int {
	if ns < 1<<(subBits+1) {
		return int(ns)
	}
	e := bits.Len64(ns) - (subBits + 1)
	m := ns >> e // in [2^subBits, 2^(subBits+1))
	return 1<<(subBits+1) + (e-1)<<subBits + int(m-1<<subBits)
}

// upper is the largest value of bucket i.
func upper(i int) uint64 {
	if i < 1<<(subBits+1) {
		return uint64(i)
	}
	i -= 1 << (subBits + 1)
	e := i>>subBits + 1
	m := uint64(i&(1<<subBits-1)) + 1<<subBits
	return (m+1)<<e - 1
}

func (h *hist) add(d time.Duration) {
	ns := uint64(max(d, 0))
	h.counts[bucket(ns)]++
	h.n++
	h.max = max(h.max, ns)
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the upper bound of the bucket holding the q-quantile
// (the ⌈q·n⌉-th smallest value), at most the maximum.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999999)
	rank = min(max(rank, 1), h.n)
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			return time.Duration(min(upper(i), h.max))
		}
	}
	return time.Duration(h.max)
}
