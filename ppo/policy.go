package ppo

import (
	"fmt"
	"math"
	"math/rand/v2"

	"streamscale/ppo/internal/sgemm"
)

// Policy is the trained actor-critic, evaluated in plain Go (no graph):
// float32 weights, the same matrix kernel, tanh and log-softmax as the
// training graph, so its outputs equal the graph's bit for bit. Calls
// write into caller buffers and reuse internal scratch, so after the first
// call at a batch size they do not allocate; a Policy is therefore not
// safe for concurrent use (Clone one per goroutine).
//
// Each layer's weights are kept packed in the matrix kernel's panel layout
// (sgemm.Pack), so a forward pass multiplies without repacking; a
// single-observation pass is one matrix-vector product per layer. The
// packed weights are read-only and shared between clones; a Policy that
// views weights someone else updates (the Trainer's) is told through
// weightsChanged and repacks on its next pass.
type Policy struct {
	arch  *arch
	theta []float32

	packed []*sgemm.Packed // per net and layer (net·layers + l); nil when stale
	direct bool            // multiply through sgemm.Gemm, repacking every call (the reference path)

	// scratch, grown on demand
	x, h, h2, out []float32
	logp          []float32
}

// newPolicy returns a policy over theta with its weights packed.
func newPolicy(a *arch, theta []float32) *Policy {
	p := &Policy{arch: a, theta: theta}
	p.pack()
	return p
}

// Clone returns an independent copy of p (weights included). The copy
// shares p's packed weights, which are never written, so Clone does not
// modify p and may be called concurrently.
func (p *Policy) Clone() *Policy {
	theta := append([]float32(nil), p.theta...)
	if p.packed == nil {
		return newPolicy(p.arch, theta)
	}
	return &Policy{arch: p.arch, theta: theta, packed: p.packed}
}

// pack packs every layer's weights into a new slice (never into the old
// one: clones may share it).
func (p *Policy) pack() {
	a := p.arch
	packed := make([]*sgemm.Packed, 2*a.layers())
	for net := range 2 {
		for l := range a.layers() {
			w, _ := a.layer(net, l)
			packed[net*a.layers()+l] = sgemm.Pack(false, w.cols, w.rows, p.theta[w.off:w.off+w.size()], w.cols)
		}
	}
	p.packed = packed
}

// weightsChanged drops the packed weights after theta was written; the
// next forward pass repacks them.
func (p *Policy) weightsChanged() { p.packed = nil }

// ObsSize is the length of the flat observation the policy expects.
func (p *Policy) ObsSize() int { return p.arch.obs }

// Nvec is the MultiDiscrete action shape: choices per action dimension.
func (p *Policy) Nvec() []int { return append([]int(nil), p.arch.nvec...) }

func growF(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func (p *Policy) check(obs []float64, n int) error {
	if n < 1 || len(obs) != n*p.arch.obs {
		return fmt.Errorf("ppo: observation batch has %d values, want %d×%d", len(obs), n, p.arch.obs)
	}
	for i, v := range obs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("ppo: observation value %d is %v", i, v)
		}
	}
	return nil
}

// forward evaluates one net on p.x (n rows) into p.out.
func (p *Policy) forward(net, n int) []float32 {
	a := p.arch
	if p.packed == nil && !p.direct {
		p.pack()
	}
	in := p.x
	width := a.obs
	bufs := [2]*[]float32{&p.h, &p.h2}
	var out []float32
	for l := range a.layers() {
		w, b := a.layer(net, l)
		dst := bufs[l%2]
		if l == a.layers()-1 {
			dst = &p.out
		}
		*dst = growF(*dst, n*w.cols)
		out = *dst
		if p.direct {
			sgemm.Gemm(false, false, n, w.cols, width, 1, in, width, p.theta[w.off:w.off+w.size()], w.cols, 0, out, w.cols)
		} else {
			sgemm.MulPacked(n, in, width, p.packed[net*a.layers()+l], out, w.cols)
		}
		biasApply(out, out, p.theta[b.off:b.off+b.size()])
		if l < a.layers()-1 {
			elemApply(out, out, fnTanh)
		}
		in, width = out, w.cols
	}
	return out
}

func (p *Policy) load(obs []float64, n int) {
	p.x = growF(p.x, n*p.arch.obs)
	for i, v := range obs {
		p.x[i] = float32(v)
	}
}

// logits runs the actor on the loaded batch and leaves the per-dimension
// log-probabilities in p.logp.
func (p *Policy) actor(n int) []float32 {
	out := p.forward(actorNet, n)
	p.logp = growF(p.logp, len(out))
	logSoftmaxRows(p.logp, out, p.arch.nvec)
	return p.logp
}

// Step evaluates a batch of n = len(obs)/ObsSize observations: for each it
// chooses an action (per-dimension argmax, first index on ties, when
// deterministic; otherwise one sample per dimension by inverse CDF from
// rng.Float64()), and reports the critic's value and the action's
// log-probability. actions has n·len(Nvec) entries; values and logps n.
func (p *Policy) Step(obs []float64, deterministic bool, rng *rand.Rand, actions []int, values, logps []float64) error {
	a := p.arch
	n := len(obs) / max(1, a.obs)
	if err := p.check(obs, n); err != nil {
		return err
	}
	if len(actions) != n*len(a.nvec) || len(values) != n || len(logps) != n {
		return fmt.Errorf("ppo: step buffers have %d/%d/%d entries, want %d/%d/%d", len(actions), len(values), len(logps), n*len(a.nvec), n, n)
	}
	if !deterministic && rng == nil {
		return fmt.Errorf("ppo: sampling needs a random source")
	}
	p.load(obs, n)
	v := p.forward(criticNet, n)
	for i := range n {
		values[i] = float64(v[i])
	}
	lp := p.actor(n)
	for i := range n {
		row := lp[i*a.logits : (i+1)*a.logits]
		act := actions[i*len(a.nvec) : (i+1)*len(a.nvec)]
		var sum float64
		off := 0
		for d, k := range a.nvec {
			blk := row[off : off+k]
			c := 0
			if deterministic {
				for j := 1; j < k; j++ {
					if blk[j] > blk[c] {
						c = j
					}
				}
			} else {
				u := rng.Float64()
				c = k - 1
				var cum float64
				for j := range k {
					cum += math.Exp(float64(blk[j]))
					if u < cum {
						c = j
						break
					}
				}
			}
			act[d] = c
			sum += float64(blk[c])
			off += k
		}
		logps[i] = sum
	}
	return nil
}

// Act chooses the action for one observation into action (len(Nvec)
// entries) and returns the critic's value.
func (p *Policy) Act(obs []float64, deterministic bool, rng *rand.Rand, action []int) (float64, error) {
	var v, lp [1]float64
	if err := p.Step(obs, deterministic, rng, action, v[:], lp[:]); err != nil {
		return 0, err
	}
	return v[0], nil
}

// Values writes the critic's value of each observation of the batch.
func (p *Policy) Values(obs []float64, values []float64) error {
	n := len(values)
	if err := p.check(obs, n); err != nil {
		return err
	}
	p.load(obs, n)
	v := p.forward(criticNet, n)
	for i := range n {
		values[i] = float64(v[i])
	}
	return nil
}

// Evaluate reports, for each observation and given action, the action's
// log-probability, the policy's entropy (summed over dimensions) and the
// critic's value — SB3's evaluate_actions.
func (p *Policy) Evaluate(obs []float64, actions []int, logps, entropies, values []float64) error {
	a := p.arch
	n := len(values)
	if err := p.check(obs, n); err != nil {
		return err
	}
	if len(actions) != n*len(a.nvec) || len(logps) != n || len(entropies) != n {
		return fmt.Errorf("ppo: evaluate buffers have %d/%d/%d entries, want %d/%d/%d", len(actions), len(logps), len(entropies), n*len(a.nvec), n, n)
	}
	if err := a.checkActions(actions); err != nil {
		return err
	}
	if err := p.Values(obs, values); err != nil {
		return err
	}
	lp := p.actor(n)
	for i := range n {
		row := lp[i*a.logits : (i+1)*a.logits]
		var sum, ent float64
		off := 0
		for d, k := range a.nvec {
			sum += float64(row[off+actions[i*len(a.nvec)+d]])
			for _, l := range row[off : off+k] {
				ent -= math.Exp(float64(l)) * float64(l)
			}
			off += k
		}
		logps[i], entropies[i] = sum, ent
	}
	return nil
}

// layer returns the weight and bias parameters of a net's layer l.
func (a *arch) layer(net, l int) (w, b param) {
	for _, q := range a.params {
		if q.net == net && q.layer == l {
			if q.bias {
				b = q
			} else {
				w = q
			}
		}
	}
	return w, b
}

// checkActions reports an action index outside its dimension's range.
func (a *arch) checkActions(actions []int) error {
	d := len(a.nvec)
	for i, c := range actions {
		if c < 0 || c >= a.nvec[i%d] {
			return fmt.Errorf("ppo: action %d of row %d is %d, want [0, %d)", i%d, i/d, c, a.nvec[i%d])
		}
	}
	return nil
}
