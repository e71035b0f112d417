package env

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// HopCurve makes the dispatch latencies depend on the input rate
// (Physics.HopCurve): a table of points, each the application's input
// rate (events/s over its sources) with the hop after each forwarding
// task and the batching wait at each receiving task measured at that rate.
//
// Why a curve. The live runtime dispatches a receiving queue when it holds
// 64 records or its oldest record is 20 ms old (serve/runtime/worker), so
// a record's wait depends on how fast its queue fills: `eval calibrate`
// measured ETL's mean per-hop delay at 9.2–9.4 ms at 1,700 inputs/s
// against 3.9–4.3 ms at 3,000 (Annotate's wait 22 against 7 ms), and the
// records waiting for their batch are in the queues the workers report.
// A hop fixed at one rate's value misstates both at the others. The
// waits do not follow the two-trigger formula of a Poisson stream (a
// queue fed by a batch of its predecessor receives bursts), so the curve
// is measured, not modelled: linear interpolation in the rate between
// the points, held at the end points outside them.
//
// It is a value: two curves with the same points are == (one canonical
// encoding), so Physics stays comparable. The zero HopCurve is empty. On
// disk it is a JSON array of {"rate": r, "hop_ms_by_task": {…},
// "wait_ms_by_task": {…}} in increasing rate.
type HopCurve struct {
	enc string // canonical JSON array; "" when empty
}

// HopPoint is one point of a HopCurve.
type HopPoint struct {
	// Rate is the application's input rate, events/s, summed over its
	// sources (the simulator's trace rate of the step; the live
	// generator's inputs/s).
	Rate float64 `json:"rate"`
	// Hops is the dispatch latency after each listed forwarding task, ms
	// (as Physics.HopMSByTask).
	Hops TaskHops `json:"hop_ms_by_task"`
	// Waits is the mean wait of a record in each listed task's receiving
	// queue before its batch is dispatched, ms: the observation's
	// per-task queue holds in × wait of these records (Little's law) and
	// its mean delay adds the wait, as the workers' reports do. Tasks it
	// does not list hold none.
	Waits TaskHops `json:"wait_ms_by_task,omitzero"`
	// Spread is the hops' spread at this rate (as Physics.HopSpread, in
	// [0, 2]). When any point's spread is above 0 the step's spread is
	// interpolated as the hops are and replaces Physics.HopSpread (the
	// live waits' spread changes with the rate as their mean does: a
	// queue dispatched by its timer waits up to 20 ms, one filled in a
	// burst hardly at all); when every point's is 0, Physics.HopSpread
	// applies.
	Spread float64 `json:"hop_spread,omitempty"`
	// Empty is, per listed task, the share of the workers' reports in
	// which its receiving queue was empty, in [0, 1]: the live queue is
	// reported as a snapshot at each report, and a batching queue is
	// either empty or holds part of a batch (measured on ETL at about
	// 3,000 inputs/s: empty in 49–71% of the reports, else up to about
	// 60 records). When the curve lists it, the observation reports a
	// task's batch records as such a snapshot instead of their mean
	// in × wait: empty with this probability, else uniform on
	// (0, 2·in·wait/(1 − Empty)), so the mean stays in × wait (Little's
	// law); and its processed count as the input less the snapshot's
	// change, as the workers' exact counters make it (processed = input
	// − Δqueue), so the throughput and I/O ratios vary from interval to
	// interval as live (rng.EnvBatches). The uniform is a choice of shape,
	// not measured; the input counts stay the fluid's. Tasks with a wait
	// that it does not list keep the mean.
	Empty TaskHops `json:"queue_empty_by_task,omitzero"`
}

// maxHopPoints bounds a HopCurve's points.
const maxHopPoints = 64

// NewHopCurve returns the curve of pts: at least one point, rates finite,
// > 0 and strictly increasing, every point's hops naming the same tasks
// and every point's waits naming the same tasks (interpolation needs each
// value at every point). An error names the point and field.
func NewHopCurve(pts []HopPoint) (HopCurve, error) {
	c, err := newHopCurve(pts)
	if err != nil {
		return HopCurve{}, fmt.Errorf("env: %w", err)
	}
	return c, nil
}

func newHopCurve(pts []HopPoint) (HopCurve, error) {
	if len(pts) == 0 {
		return HopCurve{}, nil
	}
	if len(pts) > maxHopPoints {
		return HopCurve{}, fmt.Errorf("hop_curve has %d points, want at most %d", len(pts), maxHopPoints)
	}
	names := func(h TaskHops) []string {
		var out []string
		for _, e := range h.Entries() {
			out = append(out, e.Task)
		}
		return out
	}
	hop0, wait0, empty0 := names(pts[0].Hops), names(pts[0].Waits), names(pts[0].Empty)
	var b strings.Builder
	b.WriteByte('[')
	for i, p := range pts {
		if !(p.Rate > 0) || math.IsInf(p.Rate, 0) {
			return HopCurve{}, fmt.Errorf("hop_curve point %d: rate %v, want a finite number > 0 (events/s)", i, p.Rate)
		}
		if i > 0 && !(p.Rate > pts[i-1].Rate) {
			return HopCurve{}, fmt.Errorf("hop_curve point %d: rate %v after %v, want rates strictly increasing", i, p.Rate, pts[i-1].Rate)
		}
		if p.Hops.Len() == 0 {
			return HopCurve{}, fmt.Errorf("hop_curve point %d (rate %v): hop_ms_by_task is empty", i, p.Rate)
		}
		if got := names(p.Hops); !slices.Equal(got, hop0) {
			return HopCurve{}, fmt.Errorf("hop_curve point %d (rate %v): hop_ms_by_task names %v, point 0 names %v (every point lists the same tasks)", i, p.Rate, got, hop0)
		}
		if got := names(p.Waits); !slices.Equal(got, wait0) {
			return HopCurve{}, fmt.Errorf("hop_curve point %d (rate %v): wait_ms_by_task names %v, point 0 names %v (every point lists the same tasks)", i, p.Rate, got, wait0)
		}
		if got := names(p.Empty); !slices.Equal(got, empty0) {
			return HopCurve{}, fmt.Errorf("hop_curve point %d (rate %v): queue_empty_by_task names %v, point 0 names %v (every point lists the same tasks)", i, p.Rate, got, empty0)
		}
		for _, e := range p.Empty.Entries() {
			if !(e.MS >= 0 && e.MS <= 1) {
				return HopCurve{}, fmt.Errorf("hop_curve point %d (rate %v): queue_empty_by_task task %q: %v, want a share in [0, 1]", i, p.Rate, e.Task, e.MS)
			}
		}
		if !(p.Spread >= 0 && p.Spread <= 2) {
			return HopCurve{}, fmt.Errorf("hop_curve point %d (rate %v): hop_spread %v, want a number in [0, 2]", i, p.Rate, p.Spread)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"rate":`)
		b.WriteString(strconv.FormatFloat(p.Rate, 'g', -1, 64))
		b.WriteString(`,"hop_ms_by_task":`)
		b.WriteString(p.Hops.String())
		if p.Waits.Len() > 0 {
			b.WriteString(`,"wait_ms_by_task":`)
			b.WriteString(p.Waits.String())
		}
		if p.Spread > 0 {
			b.WriteString(`,"hop_spread":`)
			b.WriteString(strconv.FormatFloat(p.Spread, 'g', -1, 64))
		}
		if p.Empty.Len() > 0 {
			b.WriteString(`,"queue_empty_by_task":`)
			b.WriteString(p.Empty.String())
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return HopCurve{enc: b.String()}, nil
}

// Points returns the curve's points in increasing rate.
func (c HopCurve) Points() []HopPoint {
	if c.enc == "" {
		return nil
	}
	var pts []HopPoint
	if err := json.Unmarshal([]byte(c.enc), &pts); err != nil {
		panic("env: corrupt HopCurve: " + err.Error()) // enc was written by newHopCurve
	}
	return pts
}

// Len returns the number of points.
func (c HopCurve) Len() int { return len(c.Points()) }

// IsZero reports whether c is empty (for the omitzero JSON option).
func (c HopCurve) IsZero() bool { return c.enc == "" }

// String returns c as its JSON array ("[]" when empty).
func (c HopCurve) String() string {
	if c.enc == "" {
		return "[]"
	}
	return c.enc
}

// MarshalJSON writes c as its canonical JSON array.
func (c HopCurve) MarshalJSON() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalJSON reads a JSON array of points (or null: empty), refusing
// unknown keys and every curve NewHopCurve refuses.
func (c *HopCurve) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*c = HopCurve{}
		return nil
	}
	type point struct {
		Rate   *float64        `json:"rate"`
		Hops   TaskHops        `json:"hop_ms_by_task"`
		Waits  json.RawMessage `json:"wait_ms_by_task"`
		Spread float64         `json:"hop_spread"`
		Empty  json.RawMessage `json:"queue_empty_by_task"`
	}
	var raw []point
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("hop_curve: %w", err)
	}
	if len(raw) == 0 {
		return errors.New("hop_curve: an empty array (leave the key out for none)")
	}
	pts := make([]HopPoint, len(raw))
	for i, p := range raw {
		if p.Rate == nil {
			return fmt.Errorf("hop_curve point %d: no rate", i)
		}
		var w TaskHops
		if len(p.Waits) > 0 {
			if err := w.UnmarshalJSON(p.Waits); err != nil {
				// TaskHops names its own field; this table is the waits.
				return fmt.Errorf("hop_curve point %d: %s", i, strings.Replace(err.Error(), "hop_ms_by_task", "wait_ms_by_task", 1))
			}
		}
		var em TaskHops
		if len(p.Empty) > 0 {
			if err := em.UnmarshalJSON(p.Empty); err != nil {
				// TaskHops names its own field and unit; this table is shares.
				msg := strings.Replace(err.Error(), "hop_ms_by_task", "queue_empty_by_task", 1)
				return fmt.Errorf("hop_curve point %d: %s", i, strings.ReplaceAll(msg, " ms", ""))
			}
		}
		pts[i] = HopPoint{Rate: *p.Rate, Hops: p.Hops, Waits: w, Spread: p.Spread, Empty: em}
	}
	h, err := newHopCurve(pts)
	if err != nil {
		return err
	}
	*c = h
	return nil
}

// curveRun is a HopCurve resolved against an application: per point, the
// hop after each task and the wait at each task, seconds, in task order
// (NaN: a hop the curve does not list, which keeps its fixed value).
type curveRun struct {
	rates  []float64
	hop    [][]float64
	wait   [][]float64
	empty  [][]float64 // per point and task: HopPoint.Empty (NaN: not listed); nil when no point lists any
	spread []float64   // per point; nil when every point's is 0
}

// resolve returns c against a (nil when c is empty); a has passed
// Physics.checkTasks.
func (c HopCurve) resolve(a App) *curveRun {
	pts := c.Points()
	if len(pts) == 0 {
		return nil
	}
	idx := func(name string) int { return slices.IndexFunc(a.Tasks, func(t Task) bool { return t.Name == name }) }
	cr := &curveRun{}
	for _, p := range pts {
		h, w := make([]float64, len(a.Tasks)), make([]float64, len(a.Tasks))
		for k := range h {
			h[k] = math.NaN()
		}
		for _, e := range p.Hops.Entries() {
			if k := idx(e.Task); k >= 0 {
				h[k] = e.MS / 1000
			}
		}
		for _, e := range p.Waits.Entries() {
			if k := idx(e.Task); k >= 0 {
				w[k] = e.MS / 1000
			}
		}
		if c.spreads() {
			cr.spread = append(cr.spread, p.Spread)
		}
		if pts[0].Empty.Len() > 0 {
			em := make([]float64, len(a.Tasks))
			for k := range em {
				em[k] = math.NaN()
			}
			for _, e := range p.Empty.Entries() {
				if k := idx(e.Task); k >= 0 {
					em[k] = e.MS
				}
			}
			cr.empty = append(cr.empty, em)
		}
		cr.rates = append(cr.rates, p.Rate)
		cr.hop = append(cr.hop, h)
		cr.wait = append(cr.wait, w)
	}
	return cr
}

// at writes the hops and waits at input rate r, seconds, into hop and wait,
// and the empty-queue shares into empty (indexed as the application's
// tasks; any may be nil, which skips it; an empty share the curve does not
// list is NaN): each value linear in r between the two points around it,
// held at the end points outside them; a hop the curve does not list is
// base's. It returns the spread at r, or −1 when the points carry none.
// It allocates nothing.
func (cr *curveRun) at(r float64, base, hop, wait, empty []float64) float64 {
	i, u := cr.locate(r)
	for k := range hop {
		if cr.hop[i][k] != cr.hop[i][k] {
			hop[k] = base[k]
		} else {
			hop[k] = lerpAt(cr.hop, i, u, k)
		}
	}
	for k := range wait {
		wait[k] = lerpAt(cr.wait, i, u, k)
	}
	if cr.empty != nil {
		for k := range empty {
			empty[k] = lerpAt(cr.empty, i, u, k)
		}
	}
	if cr.spread == nil {
		return -1
	}
	sp := cr.spread[i]
	if u > 0 {
		sp += u * (cr.spread[i+1] - sp)
	}
	return sp
}

// lerpAt is value k of point i, moved the fraction u of the way to point
// i+1's (u = 0: point i's, which may be the last).
func lerpAt(pts [][]float64, i int, u float64, k int) float64 {
	v := pts[i][k]
	if u > 0 {
		v += u * (pts[i+1][k] - v)
	}
	return v
}

// locate returns the point at or below r and the fraction u of the way to
// the next one (0 at or beyond the end points).
func (cr *curveRun) locate(r float64) (int, float64) {
	n := len(cr.rates)
	if !(r > cr.rates[0]) {
		return 0, 0
	}
	if r >= cr.rates[n-1] {
		return n - 1, 0
	}
	i := 0
	for i+1 < n && cr.rates[i+1] <= r {
		i++
	}
	return i, (r - cr.rates[i]) / (cr.rates[i+1] - cr.rates[i])
}

// positive reports whether any hop of c is above 0.
func (c HopCurve) positive() bool {
	return slices.ContainsFunc(c.Points(), func(p HopPoint) bool { return p.Hops.positive() })
}

// checkTasks checks c against the application a: every hop names a task
// of a that forwards to a successor, every wait a task of a.
func (c HopCurve) checkTasks(a App) error {
	pts := c.Points()
	if len(pts) == 0 {
		return nil
	}
	if err := pts[0].Hops.checkForwarding(a, "hop_curve hop_ms_by_task"); err != nil {
		return err // every point names the same tasks (newHopCurve)
	}
	for _, tab := range []struct {
		name string
		h    TaskHops
	}{{"wait_ms_by_task", pts[0].Waits}, {"queue_empty_by_task", pts[0].Empty}} {
		for _, e := range tab.h.Entries() {
			if !slices.ContainsFunc(a.Tasks, func(t Task) bool { return t.Name == e.Task }) {
				return fmt.Errorf("env: physics hop_curve %s: task %q is not a task of %s", tab.name, e.Task, a.Name)
			}
		}
	}
	return nil
}

// spreads reports whether any point carries a spread above 0.
func (c HopCurve) spreads() bool {
	return slices.ContainsFunc(c.Points(), func(p HopPoint) bool { return p.Spread > 0 })
}
