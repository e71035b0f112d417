package env

import (
	"fmt"
	"math"
	"math/rand/v2"

	"streamscale/rng"
)

// The raw metrics of one step, as a metrics system scrapes them: one row of
// metricWidth(n) values, per task mIn…mRho, then the application's. These
// are the measured quantities of the observation (Physics.MetricNoise and
// MetricLagSteps act on them); every feature that is not derived from them
// (allocations, host capacity and free CPU, memory, task counts) is read
// exact from the scheduler's state.
const (
	mIn    = iota // events received during the step
	mDone         // input events processed during the step
	mQueue        // events waiting at step end
	mLat          // mean delay of the processed events at the task, s
	mSvc          // measured mean service time (busy time / processed events), s
	mRho          // utilisation: input rate × measured mean service time, max over replicas
	perTask
)

const (
	mP95  = iota // p95 end-to-end latency, s
	mMean        // mean end-to-end latency, s
	mThr         // sink throughput, source-message equivalents per s
	perApp
)

func metricWidth(n int) int { return n*perTask + perApp }

// metrics is the observer's side of the observation: a ring of the last
// MetricLagSteps+1 raw metric rows, the stream of the measurement noise, and
// what the previous observation reported (the change features and the
// violation history are computed from reported values, as a controller
// outside the simulator would). Everything is allocated by newMetrics; a
// step allocates nothing.
type metrics struct {
	noise float64 // Physics.MetricNoise
	sigma float64 // log-normal σ: √log(1 + noise²)
	src   *rand.PCG
	rnd   *rand.Rand // over src

	ring []float64 // (lag+1) rows of width values, oldest overwritten first
	head int       // ring row that holds the newest row
	rows int       // lag + 1
	cur  []float64 // the reported row: ring[lag rows before head] × noise

	hist ObsHistory // what the previous observations reported

	// The batch records' snapshots (HopPoint.Empty): on when the curve
	// lists empty shares; per task the last snapshot, and the stream.
	batch bool
	snapQ []float64
	bsrc  *rand.PCG
	brnd  *rand.Rand
}

func newMetrics(p Physics, n int) *metrics {
	w := metricWidth(n)
	src := rand.NewPCG(0, 0)
	m := &metrics{
		noise: p.MetricNoise, sigma: math.Sqrt(math.Log1p(p.MetricNoise * p.MetricNoise)),
		src: src, rnd: rand.New(src),
		ring: make([]float64, (p.MetricLagSteps+1)*w), rows: p.MetricLagSteps + 1,
		cur: make([]float64, w), hist: NewObsHistory(n),
	}
	if pts := p.HopCurve.Points(); len(pts) > 0 && pts[0].Empty.Len() > 0 {
		m.batch, m.snapQ, m.bsrc = true, make([]float64, n), rand.NewPCG(0, 0)
		m.brnd = rand.New(m.bsrc)
	}
	return m
}

// batchSnapshot draws task k's batch records as a report's snapshot: 0
// with probability empty, else uniform on (0, 2·mean/(1 − empty)), so
// its mean is mean (HopPoint.Empty); nothing is drawn when mean is 0. It
// returns the snapshot and the previous one, and keeps the new.
func (m *metrics) batchSnapshot(k int, mean, empty float64) (q, prev float64) {
	prev = m.snapQ[k]
	if mean > 0 && m.brnd.Float64() >= empty {
		q = m.brnd.Float64() * 2 * mean / (1 - empty)
	}
	m.snapQ[k] = q
	return q, prev
}

// reset starts an episode: the noise stream reseeded from the episode
// seed, and the ring, the reported history and the previous values
// cleared, so the first MetricLagSteps observations report the state at
// Reset (nothing measured yet).
func (m *metrics) reset(seed uint64) {
	rng.Reseed(m.src, seed, rng.EnvMetrics)
	if m.batch {
		rng.Reseed(m.bsrc, seed, rng.EnvBatches)
		clear(m.snapQ)
	}
	clear(m.ring)
	m.head = 0
	m.hist.Reset()
}

// row returns ring row i.
func (m *metrics) row(i int) []float64 {
	w := len(m.cur)
	return m.ring[i*w : (i+1)*w]
}

// push records raw, the exact metrics of the step just simulated (or of
// the state at Reset, which fills every row), and sets cur to what the
// observation reports: the row of MetricLagSteps steps before, each value
// multiplied by independent log-normal noise of mean 1 and relative
// standard deviation MetricNoise, drawn in row order from rng.EnvMetrics.
func (m *metrics) push(raw []float64, atReset bool) {
	if atReset {
		for i := range m.rows {
			copy(m.row(i), raw)
		}
		m.head = 0
	} else {
		m.head = (m.head + 1) % m.rows
		copy(m.row(m.head), raw)
	}
	// The oldest row is the one after head.
	copy(m.cur, m.row((m.head+1)%m.rows))
	if m.noise > 0 {
		mu := -m.sigma * m.sigma / 2
		for i, x := range m.cur {
			m.cur[i] = x * math.Exp(mu+m.sigma*m.rnd.NormFloat64())
		}
	}
}

// writeMetrics appends the observer's state (the noise stream, the ring
// and the reported history) to a snapshot.
func (e *Env) writeMetrics(w *enc) error {
	m := e.met
	if err := writeStream(w, m.src, "metric noise stream"); err != nil {
		return err
	}
	w.i(m.rows, m.head)
	w.f(m.ring...)
	w.f(m.cur...)
	w.f(m.hist.DelayS...)
	w.f(m.hist.Queue...)
	w.f(m.hist.P95S)
	w.bl(m.hist.Violated[:]...)
	if m.batch { // only then: snapshots of other scenarios keep their bytes
		if err := writeStream(w, m.bsrc, "batch snapshot stream"); err != nil {
			return err
		}
		w.f(m.snapQ...)
	}
	return nil
}

// writeStream appends src's state as its length and bytes.
func writeStream(w *enc, src *rand.PCG, name string) error {
	b, err := src.MarshalBinary()
	if err != nil {
		return fmt.Errorf("env: %s: %w", name, err)
	}
	w.i(len(b))
	w.b.Write(b)
	return nil
}

// readStream decodes what writeStream wrote into src.
func readStream(d *dec, src *rand.PCG, name string) error {
	size := d.i()
	if d.err != nil || size < 0 || size > 64 || size > d.r.Len() {
		return fmt.Errorf("%w: %s of %d bytes", ErrSnapshot, name, size)
	}
	b := make([]byte, size)
	d.r.Read(b)
	if err := src.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSnapshot, name, err)
	}
	return nil
}

// readMetrics decodes what writeMetrics wrote into a new metrics value for
// this Env, validated; the caller commits it.
func (e *Env) readMetrics(d *dec) (*metrics, error) {
	m := newMetrics(e.cfg.Physics, e.n)
	if err := readStream(d, m.src, "metric noise stream"); err != nil {
		return nil, err
	}
	rows, head := d.i(), d.i()
	if d.err != nil || rows != m.rows || head < 0 || head >= rows {
		return nil, fmt.Errorf("%w: metric ring of %d rows at %d, want %d rows", ErrSnapshot, rows, head, m.rows)
	}
	m.head = head
	for _, xs := range [][]float64{m.ring, m.cur, m.hist.DelayS, m.hist.Queue} {
		for i := range xs {
			xs[i] = d.f()
		}
	}
	m.hist.P95S = d.f()
	for i := range m.hist.Violated {
		m.hist.Violated[i] = d.bl()
	}
	if m.batch {
		if err := readStream(d, m.bsrc, "batch snapshot stream"); err != nil {
			return nil, err
		}
		for i := range m.snapQ {
			m.snapQ[i] = d.f()
		}
		for _, q := range m.snapQ {
			if !(q >= 0) || math.IsInf(q, 1) {
				return nil, fmt.Errorf("%w: batch snapshot %v malformed", ErrSnapshot, q)
			}
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSnapshot, d.err)
	}
	// Metrics are ≥ 0 (a service time may be +Inf: no CPU); the reported
	// latencies and queues are finite.
	for _, xs := range [][]float64{m.ring, m.cur} {
		for _, x := range xs {
			if !(x >= 0) {
				return nil, fmt.Errorf("%w: metric %v malformed", ErrSnapshot, x)
			}
		}
	}
	if !finite(m.hist.DelayS...) || !finite(m.hist.Queue...) || !finite(m.hist.P95S) {
		return nil, fmt.Errorf("%w: reported metrics malformed", ErrSnapshot)
	}
	return m, nil
}
