package agents

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ringState is the episode state Threshold and RateRule keep between
// Acts: the task count fixed by the first Act (0 before it), the
// recommendation ring with its head and fill, and the ring of allocations
// shown with its head. Its binary form (little-endian) is
//
//	magic "RING", n, head, filled, shownHead (uint32), len(hist),
//	hist… (uint32, float64 bits), len(shown), shown…
//
// so a training run that checkpoints a rule mid-episode resumes it
// bitwise.
type ringState struct {
	n, head, filled, shownHead int
	hist, shown                []float64
}

var ringMagic = [4]byte{'R', 'I', 'N', 'G'}

func (s ringState) marshal() []byte {
	out := append([]byte(nil), ringMagic[:]...)
	for _, v := range []int{s.n, s.head, s.filled, s.shownHead} {
		out = binary.LittleEndian.AppendUint32(out, uint32(v))
	}
	for _, xs := range [][]float64{s.hist, s.shown} {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(xs)))
		for _, x := range xs {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x))
		}
	}
	return out
}

// maxRingEntries bounds a decoded ring (n tasks × a window of at most
// 3,600 steps, for apps of at most 64 tasks).
const maxRingEntries = 64 * 3601

var errRingState = errors.New("agents: rule state is malformed")

// unmarshalRing decodes a ringState whose rings must have the lengths
// the rule's configuration implies for its n (histPer and shownPer
// entries per task).
func unmarshalRing(b []byte, histPer, shownPer int) (ringState, error) {
	var s ringState
	if len(b) < 4+16 || [4]byte(b[:4]) != ringMagic {
		return s, fmt.Errorf("%w: no RING header", errRingState)
	}
	b = b[4:]
	u := func() int { v := binary.LittleEndian.Uint32(b); b = b[4:]; return int(v) }
	s.n, s.head, s.filled, s.shownHead = u(), u(), u(), u()
	for _, dst := range []*[]float64{&s.hist, &s.shown} {
		if len(b) < 4 {
			return s, fmt.Errorf("%w: truncated", errRingState)
		}
		k := u()
		if k > maxRingEntries || len(b) < 8*k {
			return s, fmt.Errorf("%w: ring of %d entries with %d bytes left", errRingState, k, len(b))
		}
		*dst = make([]float64, k)
		for i := range *dst {
			(*dst)[i] = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		}
	}
	switch {
	case len(b) != 0:
		return s, fmt.Errorf("%w: %d trailing bytes", errRingState, len(b))
	case s.n < 0 || s.n > 64:
		return s, fmt.Errorf("%w: %d tasks", errRingState, s.n)
	case s.n > 0 && (len(s.hist) != s.n*histPer || len(s.shown) != s.n*shownPer):
		return s, fmt.Errorf("%w: rings of %d and %d entries for %d tasks, want %d and %d", errRingState, len(s.hist), len(s.shown), s.n, s.n*histPer, s.n*shownPer)
	case s.n > 0 && (s.head >= histPer || s.filled > histPer || s.shownHead >= shownPer):
		return s, fmt.Errorf("%w: ring positions out of range", errRingState)
	}
	return s, nil
}

// MarshalBinary saves the rule's episode state (what Reset clears).
func (t *Threshold) MarshalBinary() ([]byte, error) {
	s := ringState{n: t.n, head: t.head, filled: t.filled, shownHead: t.shownHead}
	if t.n > 0 {
		s.hist, s.shown = t.hist, t.shown
	}
	return s.marshal(), nil
}

// UnmarshalBinary restores a state saved by MarshalBinary under the same
// configuration; on error the rule is unchanged.
func (t *Threshold) UnmarshalBinary(b []byte) error {
	s, err := unmarshalRing(b, t.cfg.ScaleDownWindow, t.cfg.MetricLagSteps+1)
	if err != nil {
		return err
	}
	t.n, t.head, t.filled, t.shownHead = s.n, s.head, s.filled, s.shownHead
	t.last = t.last[:0]
	if s.n > 0 {
		t.hist, t.shown = s.hist, s.shown
		t.targets = grow(t.targets, s.n)
		t.last = make([]ThresholdDecision, s.n)
	}
	return nil
}

// trendMagic opens the block RateRule appends to its ring state when its
// trend is on: magic "TRND", head, filled (uint32), then the
// TrendWindow sums (float64 bits), so its length is fixed by the
// configuration.
var trendMagic = [4]byte{'T', 'R', 'N', 'D'}

// MarshalBinary saves the rule's episode state (what Reset clears).
func (r *RateRule) MarshalBinary() ([]byte, error) {
	s := ringState{n: r.n, head: r.head, filled: r.filled, shownHead: r.sHead}
	if r.n > 0 {
		s.hist, s.shown = r.hist, r.shown
	}
	out := s.marshal()
	if w := r.cfg.TrendWindow; w > 0 {
		out = append(out, trendMagic[:]...)
		out = binary.LittleEndian.AppendUint32(out, uint32(r.srcHead))
		out = binary.LittleEndian.AppendUint32(out, uint32(r.srcFilled))
		for j := range w {
			x := 0.0
			if len(r.src) == w {
				x = r.src[j]
			}
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x))
		}
	}
	return out, nil
}

// UnmarshalBinary restores a state saved by MarshalBinary under the same
// configuration; on error the rule is unchanged.
func (r *RateRule) UnmarshalBinary(b []byte) error {
	var src []float64
	var srcHead, srcFilled int
	if w := r.cfg.TrendWindow; w > 0 {
		tl := 12 + 8*w
		if len(b) < tl || [4]byte(b[len(b)-tl:len(b)-tl+4]) != trendMagic {
			return fmt.Errorf("%w: no TRND block of %d bytes for a trend window of %d steps", errRingState, tl, w)
		}
		t := b[len(b)-tl+4:]
		b = b[:len(b)-tl]
		srcHead, srcFilled = int(binary.LittleEndian.Uint32(t)), int(binary.LittleEndian.Uint32(t[4:]))
		if srcHead >= w || srcFilled > w {
			return fmt.Errorf("%w: trend ring positions %d, %d out of range for %d steps", errRingState, srcHead, srcFilled, w)
		}
		src = make([]float64, w)
		for j := range src {
			src[j] = math.Float64frombits(binary.LittleEndian.Uint64(t[8+8*j:]))
		}
	}
	s, err := unmarshalRing(b, r.cfg.ScaleDownWindow, r.cfg.MetricLagSteps+1)
	if err != nil {
		return err
	}
	r.src, r.srcHead, r.srcFilled = src, srcHead, srcFilled
	r.n, r.head, r.filled, r.sHead = s.n, s.head, s.filled, s.shownHead
	if s.n > 0 {
		r.hist, r.shown = s.hist, s.shown
		r.rate = grow(r.rate, s.n)
		r.targets = grow(r.targets, s.n)
	}
	return nil
}
