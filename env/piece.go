package env

import "math"

// piece is a cohort of events that travel together: w events whose
// arrivals at the current stage are spread uniformly over [as, ae] and
// whose emission times at the source are spread uniformly over [os, oe],
// in the same (FIFO) order. Times are absolute simulated seconds.
type piece struct {
	w      float64
	as, ae float64
	os, oe float64
	bl     bool // (overlap stages) arrived before the step began: backlog
}

// absorb merges q into p (coalescing: weights add, intervals span both).
func (p *piece) absorb(q piece) {
	p.w += q.w
	p.as = min(p.as, q.as)
	p.ae = max(p.ae, q.ae)
	p.os = min(p.os, q.os)
	p.oe = max(p.oe, q.oe)
}

// ring is a fixed-capacity FIFO of pieces. When full, a pushed piece is
// coalesced into the newest one, so memory and per-step cost stay bounded
// however long a backlog grows; no event is ever dropped.
type ring struct {
	buf   []piece
	mask  int // len(buf) − 1; the length is a power of two
	head  int
	n     int
	total float64 // Σ w over the ring
	limit int     // the most pieces the ring grows to
}

// ringStart is a ring's initial length: enough for normal operation, small
// enough to stay in cache. A ring doubles (once per size, kept across
// resets) while a backlog outgrows it, up to its capacity.
const ringStart = 32

// newRing returns a ring that holds up to capacity pieces (rounded up to a
// power of two).
func newRing(capacity int) ring {
	c := 1
	for c < capacity {
		c <<= 1
	}
	start := min(c, ringStart)
	return ring{buf: make([]piece, start), mask: start - 1, limit: c}
}

// grow doubles the ring's length, keeping its pieces in order.
func (r *ring) grow() {
	buf := make([]piece, 2*len(r.buf))
	for i := 0; i < r.n; i++ {
		buf[i] = *r.at(i)
	}
	r.buf, r.mask, r.head = buf, len(buf)-1, 0
}

func (r *ring) len() int { return r.n }

func (r *ring) at(i int) *piece { return &r.buf[(r.head+i)&r.mask] }

func (r *ring) front() *piece { return &r.buf[r.head] }

func (r *ring) push(p piece) {
	r.total += p.w
	if r.n == len(r.buf) {
		if len(r.buf) >= r.limit {
			r.at(r.n - 1).absorb(p)
			return
		}
		r.grow()
	}
	// Field by field: a whole-struct copy goes through a stack spill of p
	// and 16-byte loads that stall store-to-load forwarding.
	b := &r.buf[(r.head+r.n)&r.mask]
	b.w, b.as, b.ae, b.os, b.oe, b.bl = p.w, p.as, p.ae, p.os, p.oe, p.bl
	r.n++
}

func (r *ring) pop() {
	r.total -= r.buf[r.head].w
	r.head = (r.head + 1) & r.mask
	r.n--
	if r.n == 0 {
		r.total = 0 // shed rounding drift
	}
}

func (r *ring) clear() {
	r.head, r.n, r.total = 0, 0, 0
}

// split divides p into its first n events and the rest (0 < n < p.w),
// keeping the event spacing: event k (0-based) of a piece of w ≥ 1 events
// arrives at as + k·(ae−as)/(w−1) and was emitted at os + k·(oe−os)/(w−1),
// so both parts keep the spacing of p. Pieces of less than one event split
// in proportion.
func (p piece) split(n float64) (head, rest piece) {
	head, rest = p, p
	head.w, rest.w = n, p.w-n
	if p.w <= 1 {
		f := n / p.w
		head.ae = p.as + f*(p.ae-p.as)
		head.oe = p.os + f*(p.oe-p.os)
		rest.as, rest.os = head.ae, head.oe
		return head, rest
	}
	ta := (p.ae - p.as) / (p.w - 1)
	to := (p.oe - p.os) / (p.w - 1)
	last := max(n-1, 0)
	head.ae = p.as + last*ta
	head.oe = p.os + last*to
	rest.as = min(p.as+n*ta, p.ae)
	rest.os = min(p.os+n*to, p.oe)
	return head, rest
}

// countBy is the number of p's events that arrive by time t.
func (p piece) countBy(t float64) float64 {
	switch {
	case t >= p.ae:
		return p.w
	case t < p.as:
		return 0
	case p.w <= 1:
		return p.w * (t - p.as) / (p.ae - p.as)
	}
	return min(1+(t-p.as)*(p.w-1)/(p.ae-p.as), p.w)
}

// batch adds to every event of p an independent wait uniform on [0, b]
// (timer batching, Config.Worker). The piece's latency so far is uniform on
// [lo, hi] = [as − os, ae − oe] (how the sink reads it); the sum is
// replaced by the uniform distribution of the same mean and variance: mean
// + b/2, width √(width² + b²). The piece arrives b/2 later (the mean wait;
// shifting every arrival alike keeps consecutive pieces from overlapping,
// which a FIFO stage would serialize) and its emission window narrows by
// the width's growth about its centre (at most to a point), which widens
// the latency without moving its mean. One batched hop is exact ([lo, lo +
// b]); over k hops the width grows as √k, as the sum of independent waits
// does.
func (p *piece) batch(b float64) {
	p.as, p.ae, p.os, p.oe = batchTimes(p.as, p.ae, p.os, p.oe, b)
}

// batchTimes is piece.batch on a piece's times, for callers that keep a
// piece in registers.
func batchTimes(as, ae, os, oe, b float64) (float64, float64, float64, float64) {
	lo, hi := as-os, ae-oe
	width := max(hi-lo, 0)
	grow := min(math.Sqrt(width*width+b*b)-width, oe-os)
	return as + b/2, ae + b/2, os + grow/2, oe - grow/2
}
