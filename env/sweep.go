package env

import (
	"cmp"
	"slices"
)

// sweepEv is a breakpoint of the arrival curve of an overlap stage.
type sweepEv struct {
	t     float64
	j     int  // piece index in scrArr
	start bool // start (true) or end of the piece's arrival interval
}

// processSweep serves stage i for the step [t0, T) when its arrivals may
// overlap in time (several upstream streams). It uses the fluid FIFO
// queue's virtual waiting time: an event arriving at t departs at
// t + s·max(B(t), 1), where B(t) is the backlog in events, computed by
// sweeping the piecewise-constant inflow rate (Σ of the rates of the pieces
// arriving at t) against the service rate 1/s. The backlog carried from
// earlier steps drains first, in FIFO order. For a single non-overlapping
// stream this gives exactly the departures of process.
func (f *fluid) processSweep(i int, t0, T float64) {
	s := &f.stages[i]
	svc := s.service
	bl, arr, keep := f.scrBl[:0], f.scrArr[:0], f.scrKeep[:0]
	for j := 0; j < s.queue.len(); j++ {
		p := *s.queue.at(j)
		if p.bl {
			bl = append(bl, p)
		} else {
			arr = append(arr, p)
		}
	}
	s.queue.clear()
	arr = append(arr, s.inbox...)
	s.inbox = s.inbox[:0]
	if len(arr) <= 32 {
		for a := 1; a < len(arr); a++ {
			for b := a; b > 0 && arr[b].as < arr[b-1].as; b-- {
				arr[b], arr[b-1] = arr[b-1], arr[b]
			}
		}
	} else {
		slices.SortStableFunc(arr, func(a, b piece) int { return cmp.Compare(a.as, b.as) })
	}

	// Backlog from earlier steps departs first, back to back.
	X := 0.0
	for _, p := range bl {
		ds := t0 + (X+min(p.w, 1))*svc
		de := t0 + (X+p.w)*svc
		X += p.w
		keep = f.serve(s, p, ds, de, T, keep)
	}

	// Sweep the arrivals' breakpoints in (t, j) order — a piece's end
	// follows its start — merging the starts (already in order, arr being
	// sorted by start) with the sorted ends.
	ends := f.scrEnds[:0]
	for j, p := range arr {
		if p.ae > p.as {
			ends = append(ends, sweepEv{t: p.ae, j: j})
		}
	}
	if len(ends) <= 32 {
		for a := 1; a < len(ends); a++ {
			for b := a; b > 0 && ends[b].t < ends[b-1].t; b-- {
				ends[b], ends[b-1] = ends[b-1], ends[b]
			}
		}
	} else {
		slices.SortFunc(ends, func(a, b sweepEv) int {
			if c := cmp.Compare(a.t, b.t); c != 0 {
				return c
			}
			return cmp.Compare(a.j, b.j)
		})
	}
	ev := f.scrEv[:0]
	k := 0
	for j, p := range arr {
		for k < len(ends) && (ends[k].t < p.as || ends[k].t == p.as && ends[k].j < j) {
			ev = append(ev, ends[k])
			k++
		}
		ev = append(ev, sweepEv{t: p.as, j: j, start: true})
	}
	ev = append(ev, ends[k:]...)
	if cap(f.scrB) < 2*len(arr) {
		f.scrB = make([]float64, 2*len(arr))
	}
	bAt := f.scrB[:2*len(arr)]
	mu := 1 / svc
	tau, B, r := t0, X, 0.0
	for _, e := range ev {
		B = max(B+(r-mu)*(e.t-tau), 0)
		tau = e.t
		p := &arr[e.j]
		if e.start {
			bAt[2*e.j] = B
			if p.ae > p.as {
				r += p.w / (p.ae - p.as)
			} else {
				B += p.w
				bAt[2*e.j+1] = B
			}
		} else {
			r -= p.w / (p.ae - p.as)
			bAt[2*e.j+1] = B
		}
	}
	for j, p := range arr {
		ds := p.as + svc*(bAt[2*j]+min(p.w, 1))
		de := max(p.ae+svc*max(bAt[2*j+1], 1), ds)
		keep = f.serve(s, p, ds, de, T, keep)
	}

	// Requeue what remains: backlog (arrived by T) first, then future arrivals.
	for _, p := range keep {
		if n := p.countBy(T); n >= p.w {
			p.bl = true
			s.queue.push(p)
		} else if n > 0 {
			q, _ := p.split(n)
			q.bl = true
			s.queue.push(q)
		}
	}
	for _, p := range keep {
		if n := p.countBy(T); n <= 0 {
			s.queue.push(p)
		} else if n < p.w {
			_, q := p.split(n)
			s.queue.push(q)
		}
	}
	f.scrBl, f.scrArr, f.scrKeep, f.scrEv, f.scrEnds = bl, arr, keep, ev, ends
}

// serve departs the share of piece p (departing linearly over [ds, de])
// that leaves by T and appends the rest to keep.
func (f *fluid) serve(s *stage, p piece, ds, de, T float64, keep []piece) []piece {
	switch {
	case de <= T:
		f.depart(s, p, ds, de)
		return keep
	case ds >= T:
		return append(keep, p)
	}
	done, rest := p.split(p.w * splitShare(p.w, ds, de, T))
	f.depart(s, done, ds, T)
	p = rest
	return append(keep, p)
}
