package api

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"streamscale/agents/residual"
	"streamscale/ppo/policy"
	"streamscale/rng"
)

// scratch is everything one request needs beyond the policy itself; the
// server keeps them in a sync.Pool, so a request allocates nothing once
// the buffers have grown to its size.
type scratch struct {
	body, out []byte
	req       actRequest

	actions       []int
	values, logps []float64
	probs         []float64 // n·Σnvec probabilities, when asked
	in            []float64 // a residual policy's inputs: each observation and its features
	targets       []float64 // a residual policy's corrected targets, n·tasks millicores

	// probabilities evaluation: e.rows copies of one observation
	evObs                  []float64
	evAct                  []int
	evLogp, evEnt, evValue []float64

	pcg rand.PCG
	rng *rand.Rand

	job job // place in a combiner's queue
}

func newScratch() *scratch {
	sc := &scratch{}
	sc.rng = rand.New(&sc.pcg)
	sc.job.done = make(chan struct{}, 1)
	return sc
}

func errNonFinite(policy string, i int, v float64) error {
	return fmt.Errorf("api: policy %s: value of observation %d is %v", policy, i, v)
}

// run answers the decoded request: deterministic single observations
// without probabilities go through the combiner, everything else runs
// directly; a residual policy's choices then correct the rule targets.
func (e *entry) run(sc *scratch) error {
	var err error
	if sc.req.n == 1 && !sc.req.sample && !sc.req.probabilities {
		err = e.actCombined(sc)
	} else {
		err = e.infer(sc)
	}
	if err != nil {
		return err
	}
	return e.correct(sc)
}

// inputs returns the policy's input for the decoded request: the flat
// observations, or for a residual policy each observation followed by
// residual.AppendFeatures of its rule targets (built in sc.in).
func (e *entry) inputs(sc *scratch) []float64 {
	n, size := sc.req.n, e.lay.size
	if e.res == nil {
		return sc.req.obs[:n*size]
	}
	w, to := e.lay.rule, e.lay.off[keyTask]
	sc.in = sc.in[:0]
	for r := range n {
		row := sc.req.obs[r*size : (r+1)*size]
		sc.in = append(sc.in, row...)
		sc.in = residual.AppendFeatures(sc.in, sc.req.rule[r*w:(r+1)*w], row[to:to+e.lay.n[keyTask]], e.res.MaxCPU)
	}
	return sc.in
}

// correct writes a residual policy's targets (residual.Apply of the
// chosen corrections to the rule targets) into sc.targets; it leaves
// them empty for any other policy.
func (e *entry) correct(sc *scratch) error {
	sc.targets = sc.targets[:0]
	if e.res == nil {
		return nil
	}
	n, size, w, to := sc.req.n, e.lay.size, e.lay.rule, e.lay.off[keyTask]
	sc.targets = grow(sc.targets, n*w)
	for r := range n {
		task := sc.req.obs[r*size+to : r*size+to+e.lay.n[keyTask]]
		if err := residual.Apply(sc.targets[r*w:(r+1)*w], sc.actions[r*w:(r+1)*w], sc.req.rule[r*w:(r+1)*w], task, e.res.MinCPU, e.res.MaxCPU); err != nil {
			return fmt.Errorf("api: policy %s: %w", e.name, err)
		}
	}
	return nil
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// infer runs the policy on the sc.req.n decoded observations: actions,
// values and, if asked, probabilities land in sc.
//
// Deterministic mode takes the per-dimension argmax. Sample mode draws
// from the stream rng.PPOAction of req.seed, observation after
// observation, exactly as a policy.Controller does after Reset(seed) and
// SetDeterministic(false) when it acts on the observations in order.
func (e *entry) infer(sc *scratch) error {
	n, dims := sc.req.n, len(e.nvec)
	sc.actions = grow(sc.actions, n*dims)
	sc.values = grow(sc.values, n)
	sc.logps = grow(sc.logps, n)
	var sampler *rand.Rand
	if sc.req.sample {
		rng.Reseed(&sc.pcg, sc.req.seed, rng.PPOAction) // policy.Controller's stream, without allocating
		sampler = sc.rng
	}
	in := e.inputs(sc)
	p := e.policy()
	defer e.put(p)
	if err := p.Step(in, !sc.req.sample, sampler, sc.actions, sc.values, sc.logps); err != nil {
		return err
	}
	for i, v := range sc.values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errNonFinite(e.name, i, v)
		}
	}
	if !sc.req.probabilities {
		return nil
	}
	width := 0
	for _, k := range e.nvec {
		width += k
	}
	sc.probs = grow(sc.probs, n*width)
	for i := range n {
		obs := in[i*e.in : (i+1)*e.in]
		if err := e.probabilities(p, sc, obs, sc.actions[i*dims:(i+1)*dims], sc.probs[i*width:(i+1)*width]); err != nil {
			return err
		}
	}
	for i, q := range sc.probs {
		if !(q >= 0 && q <= 1) { // NaN too
			return fmt.Errorf("api: policy %s: probability %d of observation %d is %v", e.name, i%width, i/width, q)
		}
	}
	return nil
}

// probabilities writes the policy's per-dimension action distribution for
// obs into dst (Σnvec entries, dimension-major).
//
// Policy exposes only joint log-probabilities (Evaluate sums the
// per-dimension log-softmax values), so the distribution of dimension d
// comes from differences: with a the chosen action and a[d→j] the same
// action but j in dimension d, log π(a[d→j]) − log π(a) = log π_d(j) −
// log π_d(a_d), and π_d(j) = exp of that difference normalised over j.
// One Evaluate call over 1 + Σ(nvec−1) copies of obs gives every term,
// computed by the policy's own numerics.
func (e *entry) probabilities(p *policy.Policy, sc *scratch, obs []float64, act []int, dst []float64) error {
	rows, size, dims := e.rows, e.in, len(e.nvec)
	sc.evObs = grow(sc.evObs, rows*size)
	sc.evAct = grow(sc.evAct, rows*dims)
	sc.evLogp = grow(sc.evLogp, rows)
	sc.evEnt = grow(sc.evEnt, rows)
	sc.evValue = grow(sc.evValue, rows)
	for r := range rows {
		copy(sc.evObs[r*size:(r+1)*size], obs)
		copy(sc.evAct[r*dims:(r+1)*dims], act)
	}
	r := 1
	for d, k := range e.nvec {
		for j := range k {
			if j != act[d] {
				sc.evAct[r*dims+d] = j
				r++
			}
		}
	}
	if err := p.Evaluate(sc.evObs, sc.evAct, sc.evLogp, sc.evEnt, sc.evValue); err != nil {
		return err
	}
	r, off := 1, 0
	for d, k := range e.nvec {
		q := dst[off : off+k]
		sum := 0.0
		for j := range k {
			if j == act[d] {
				q[j] = 1
			} else {
				q[j] = math.Exp(sc.evLogp[r] - sc.evLogp[0])
				r++
			}
			sum += q[j]
		}
		for j := range q {
			q[j] /= sum
		}
		off += k
	}
	return nil
}

// appendResult appends the JSON object of observation i's result without
// its closing brace: {"action":[…],"deltas":[…],"value":v[,"probabilities":[[…],…]]
// ("target_utilization" in place of "deltas" for a target-utilization
// action set; "choices":["follow",…],"targets":[…] for a residual policy)
func (e *entry) appendResult(b []byte, sc *scratch, i int) []byte {
	dims := len(e.nvec)
	act := sc.actions[i*dims : (i+1)*dims]
	b = append(b, `{"action":[`...)
	for d, a := range act {
		if d > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(a), 10)
	}
	b = append(b, e.choiceKey...)
	for d, a := range act {
		if d > 0 {
			b = append(b, ',')
		}
		if e.res != nil {
			b = append(b, e.choiceNames[a]...)
		} else {
			b = strconv.AppendFloat(b, e.deltas[a], 'g', -1, 64)
		}
	}
	if e.res != nil {
		b = append(b, `],"targets":[`...)
		for k, t := range sc.targets[i*dims : (i+1)*dims] {
			if k > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, t, 'g', -1, 64)
		}
	}
	b = append(b, `],"value":`...)
	b = strconv.AppendFloat(b, sc.values[i], 'g', -1, 64)
	if sc.req.probabilities {
		width := len(sc.probs) / sc.req.n
		q := sc.probs[i*width : (i+1)*width]
		b = append(b, `,"probabilities":[`...)
		off := 0
		for d, k := range e.nvec {
			if d > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			for j, v := range q[off : off+k] {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, v, 'g', -1, 64)
			}
			b = append(b, ']')
			off += k
		}
		b = append(b, ']')
	}
	return b
}

// appendAct appends the response to a single-observation request.
func (e *entry) appendAct(b []byte, sc *scratch) []byte {
	b = e.appendResult(b, sc, 0)
	b = append(b, `,"version":"`...)
	b = append(b, e.version...)
	return append(b, `"}`...)
}

// appendBatch appends the response to a batch request.
func (e *entry) appendBatch(b []byte, sc *scratch) []byte {
	b = append(b, `{"results":[`...)
	for i := range sc.req.n {
		if i > 0 {
			b = append(b, ',')
		}
		b = e.appendResult(b, sc, i)
		b = append(b, '}')
	}
	b = append(b, `],"version":"`...)
	b = append(b, e.version...)
	return append(b, `"}`...)
}
