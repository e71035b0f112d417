package api

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// maxCombined is the most single-observation requests one forward pass
// combines (a multiple of the matrix kernel's 6-row panels).
const maxCombined = 24

// combiner merges concurrent deterministic single-observation requests of
// one policy into one batched forward pass ("flat combining" with leader
// hand-off).
//
// Why: policy.Policy's matrix kernel computes 6 rows at a time, so whole
// groups of 6 rows cost less per row than single rows, and one pass pays
// the fixed per-pass costs once for many requests. (Since the policy keeps
// its weights packed, a 1-row pass is cheap too, about 6 µs for pred, and
// the combiner's gain under load is small.) Results are unchanged bit for bit, because every row of
// the product is an independent sequential sum over the row's inputs
// (TestCombinedMatchesPolicy holds it to Policy.Act).
//
// How: a request appends its job to the queue. If no leader is running it
// becomes the leader: it takes the queue (up to maxCombined jobs, its own
// first), runs them as one Step, wakes their owners, and hands leadership
// to the first job still queued, if any, before returning its own answer —
// so no request serves others for longer than one pass. A request that
// finds a leader running waits on its job's channel; it wakes either with
// its answer or as the next leader. Only one pass per policy runs at a
// time; with no concurrency every pass has one row and nothing waits.
type combiner struct {
	mu      sync.Mutex
	queue   []*job
	running bool

	// Owned by the current leader.
	obs           []float64
	actions       []int
	values, logps []float64
	batch         []*job

	passes, rows *atomic.Uint64 // metrics
}

// job is one request's place in the queue; it lives in the request's
// scratch.
type job struct {
	obs    []float64 // the policy's input, e.in values
	action []int     // out: len(nvec) choices
	value  float64   // out
	err    error     // out
	lead   bool      // woken to lead, not answered
	done   chan struct{}
}

// actCombined answers sc's single deterministic observation through the
// combiner; the action and value land in sc as infer would leave them.
func (e *entry) actCombined(sc *scratch) error {
	j := &sc.job
	j.obs = e.inputs(sc)[:e.in]
	j.action = grow(j.action, len(e.nvec))
	j.err, j.lead = nil, false
	c := &e.comb

	c.mu.Lock()
	c.queue = append(c.queue, j)
	if c.running {
		c.mu.Unlock()
		<-j.done
		if !j.lead {
			return e.answer(sc, j)
		}
		j.lead = false
		c.mu.Lock()
	}
	c.running = true
	n := min(len(c.queue), maxCombined)
	c.batch = append(c.batch[:0], c.queue[:n]...)
	c.queue = append(c.queue[:0], c.queue[n:]...)
	c.mu.Unlock()

	e.pass(c.batch)
	for _, o := range c.batch {
		if o != j {
			o.done <- struct{}{}
		}
	}
	clear(c.batch)

	c.mu.Lock()
	if len(c.queue) > 0 {
		next := c.queue[0]
		next.lead = true
		next.done <- struct{}{}
	} else {
		c.running = false
	}
	c.mu.Unlock()
	return e.answer(sc, j)
}

// pass runs one batched deterministic Step over the jobs.
func (e *entry) pass(batch []*job) {
	c := &e.comb
	n, size, dims := len(batch), e.in, len(e.nvec)
	c.obs = grow(c.obs, n*size)
	c.actions = grow(c.actions, n*dims)
	c.values = grow(c.values, n)
	c.logps = grow(c.logps, n)
	for i, o := range batch {
		copy(c.obs[i*size:(i+1)*size], o.obs)
	}
	err := e.step(c.obs, c.actions, c.values, c.logps)
	for i, o := range batch {
		o.err = err
		copy(o.action, c.actions[i*dims:(i+1)*dims])
		o.value = c.values[i]
	}
	if c.passes != nil {
		c.passes.Add(1)
		c.rows.Add(uint64(n))
	}
}

// step runs a deterministic Step on a pooled clone; a panic (never
// expected: the input is validated) becomes an error, so that the leader
// still wakes every waiting request and hands on leadership.
func (e *entry) step(obs []float64, actions []int, values, logps []float64) (err error) {
	p := e.policy()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("api: policy %s: panic in the forward pass: %v", e.name, r)
			return
		}
		e.put(p)
	}()
	return p.Step(obs, true, nil, actions, values, logps)
}

// answer moves a job's result into the scratch's output buffers.
func (e *entry) answer(sc *scratch, j *job) error {
	if j.err != nil {
		return j.err
	}
	sc.actions = append(sc.actions[:0], j.action...)
	sc.values = append(sc.values[:0], j.value)
	if math.IsNaN(j.value) || math.IsInf(j.value, 0) {
		return errNonFinite(e.name, 0, j.value)
	}
	return nil
}
