package policy

import (
	"fmt"
	"math"
	"math/rand/v2"

	"streamscale/ppo/internal/nn"
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
// WeightsChanged and repacks on its next pass.
type Policy struct {
	arch  *nn.Arch
	theta []float32

	packed []*sgemm.Packed // per net and layer (arch.LayerIndex); nil when stale
	direct bool            // multiply through sgemm.Gemm, repacking every call (the reference path)

	norm *Normalization // VecNormalize statistics applied on entry; nil: none
	std  []float64      // √(ObsVar + Epsilon) of norm

	// scratch, grown on demand
	x, h, h2, out []float32
	logp          []float32
}

// New returns the policy of an actor-critic with obs inputs, hidden
// widths hidden (both nets) and a MultiDiscrete nvec head over the flat
// parameter vector theta, in the trainer's layout: actor then critic, each
// layer's weight input-major ([in, out]) followed by its bias. theta is
// viewed, not copied: whoever writes it must call WeightsChanged before
// the next pass. Use Load for a saved policy.
func New(obs int, hidden, nvec []int, theta []float32) (*Policy, error) {
	return NewSplit(obs, hidden, hidden, nvec, theta)
}

// NewSplit is New with separate hidden widths for the actor and the
// critic.
func NewSplit(obs int, actor, critic, nvec []int, theta []float32) (*Policy, error) {
	a, err := nn.NewSplitArch(obs, actor, critic, nvec)
	if err != nil {
		return nil, err
	}
	if len(theta) != a.Size {
		return nil, fmt.Errorf("policy: %d parameters, layout needs %d", len(theta), a.Size)
	}
	return newPolicy(a, theta), nil
}

// newPolicy returns a policy over theta with its weights packed.
func newPolicy(a *nn.Arch, theta []float32) *Policy {
	p := &Policy{arch: a, theta: theta}
	p.pack()
	return p
}

// Clone returns an independent copy of p (weights included). The copy
// shares p's packed weights, which are never written, so Clone does not
// modify p and may be called concurrently.
func (p *Policy) Clone() *Policy {
	theta := append([]float32(nil), p.theta...)
	var c *Policy
	if p.packed == nil {
		c = newPolicy(p.arch, theta)
	} else {
		c = &Policy{arch: p.arch, theta: theta, packed: p.packed}
	}
	c.norm, c.std = p.norm.clone(), append([]float64(nil), p.std...)
	return c
}

// pack packs every layer's weights into a new slice (never into the old
// one: clones may share it).
func (p *Policy) pack() {
	a := p.arch
	packed := make([]*sgemm.Packed, a.Layers(nn.ActorNet)+a.Layers(nn.CriticNet))
	for net := range 2 {
		for l := range a.Layers(net) {
			w, _ := a.Layer(net, l)
			packed[a.LayerIndex(net, l)] = sgemm.Pack(false, w.Cols, w.Rows, p.theta[w.Off:w.Off+w.Len()], w.Cols)
		}
	}
	p.packed = packed
}

// WeightsChanged tells a policy made by New that its parameter vector was
// written: it drops the packed weights, and the next forward pass repacks
// them. Not needed for a policy from Load or Clone, which own theirs.
func (p *Policy) WeightsChanged() { p.packed = nil }

// ObsSize is the length of the flat observation the policy expects.
func (p *Policy) ObsSize() int { return p.arch.Obs }

// Nvec is the MultiDiscrete action shape: choices per action dimension.
func (p *Policy) Nvec() []int { return append([]int(nil), p.arch.Nvec...) }

// Hidden is the hidden layer widths of the actor (SB3's net_arch; the
// critic's too unless CriticHidden differs).
func (p *Policy) Hidden() []int { return append([]int(nil), p.arch.Hidden...) }

// CriticHidden is the hidden layer widths of the critic.
func (p *Policy) CriticHidden() []int { return append([]int(nil), p.arch.CriticHidden...) }

func growF(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func (p *Policy) check(obs []float64, n int) error {
	if n < 1 || len(obs) != n*p.arch.Obs {
		return fmt.Errorf("policy: observation batch has %d values, want %d×%d", len(obs), n, p.arch.Obs)
	}
	for i, v := range obs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("policy: observation value %d is %v", i, v)
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
	width := a.Obs
	bufs := [2]*[]float32{&p.h, &p.h2}
	var out []float32
	layers := a.Layers(net)
	for l := range layers {
		w, b := a.Layer(net, l)
		dst := bufs[l%2]
		if l == layers-1 {
			dst = &p.out
		}
		*dst = growF(*dst, n*w.Cols)
		out = *dst
		if p.direct {
			sgemm.Gemm(false, false, n, w.Cols, width, 1, in, width, p.theta[w.Off:w.Off+w.Len()], w.Cols, 0, out, w.Cols)
		} else {
			sgemm.MulPacked(n, in, width, p.packed[a.LayerIndex(net, l)], out, w.Cols)
		}
		nn.BiasApply(out, out, p.theta[b.Off:b.Off+b.Len()])
		if l < layers-1 {
			nn.ElemApply(out, out, nn.Tanh)
		}
		in, width = out, w.Cols
	}
	return out
}

// load converts (and, with statistics, normalises) the raw batch into p.x.
func (p *Policy) load(obs []float64, n int) {
	p.x = growF(p.x, n*p.arch.Obs)
	p.NormalizeObs(p.x, obs)
}

// logits runs the actor on the loaded batch and leaves the per-dimension
// log-probabilities in p.logp.
func (p *Policy) actor(n int) []float32 {
	out := p.forward(nn.ActorNet, n)
	p.logp = growF(p.logp, len(out))
	nn.LogSoftmaxRows(p.logp, out, p.arch.Nvec)
	return p.logp
}

// Step evaluates a batch of n = len(obs)/ObsSize observations: for each it
// chooses an action (per-dimension argmax, first index on ties, when
// deterministic; otherwise one sample per dimension by inverse CDF from
// rng.Float64()), and reports the critic's value and the action's
// log-probability. actions has n·len(Nvec) entries; values and logps n.
func (p *Policy) Step(obs []float64, deterministic bool, rng *rand.Rand, actions []int, values, logps []float64) error {
	a := p.arch
	n := len(obs) / max(1, a.Obs)
	if err := p.check(obs, n); err != nil {
		return err
	}
	if len(actions) != n*len(a.Nvec) || len(values) != n || len(logps) != n {
		return fmt.Errorf("policy: step buffers have %d/%d/%d entries, want %d/%d/%d", len(actions), len(values), len(logps), n*len(a.Nvec), n, n)
	}
	if !deterministic && rng == nil {
		return fmt.Errorf("policy: sampling needs a random source")
	}
	p.load(obs, n)
	v := p.forward(nn.CriticNet, n)
	for i := range n {
		values[i] = float64(v[i])
	}
	lp := p.actor(n)
	for i := range n {
		row := lp[i*a.Logits : (i+1)*a.Logits]
		act := actions[i*len(a.Nvec) : (i+1)*len(a.Nvec)]
		var sum float64
		off := 0
		for d, k := range a.Nvec {
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
	v := p.forward(nn.CriticNet, n)
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
	if len(actions) != n*len(a.Nvec) || len(logps) != n || len(entropies) != n {
		return fmt.Errorf("policy: evaluate buffers have %d/%d/%d entries, want %d/%d/%d", len(actions), len(logps), len(entropies), n*len(a.Nvec), n, n)
	}
	if err := a.CheckActions(actions); err != nil {
		return err
	}
	if err := p.Values(obs, values); err != nil {
		return err
	}
	lp := p.actor(n)
	for i := range n {
		row := lp[i*a.Logits : (i+1)*a.Logits]
		var sum, ent float64
		off := 0
		for d, k := range a.Nvec {
			sum += float64(row[off+actions[i*len(a.Nvec)+d]])
			for _, l := range row[off : off+k] {
				ent -= math.Exp(float64(l)) * float64(l)
			}
			off += k
		}
		logps[i], entropies[i] = sum, ent
	}
	return nil
}
