package ppo

import (
	"fmt"
	"sync"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"streamscale/ppo/internal/nn"
)

// scalar is the element type of a loss graph: float32 for training (as
// PyTorch/SB3 train, and gonum's Sgemm is ~3.7× faster than Dgemm at these
// shapes), float64 for the finite-difference gradient tests.
type scalar = nn.Scalar

func dtypeOf[T scalar]() tensor.Dtype {
	var z T
	if _, ok := any(z).(float32); ok {
		return tensor.Float32
	}
	return tensor.Float64
}

// lossGraph is the PPO loss of one minibatch size B, built once and re-run
// for every minibatch of that size. It is two independent gorgonia graphs,
// each with its own program (exec.go):
//
//	actor:  L_π = −mean(min(Â·ρ, Â·clip(ρ, 1−ε, 1+ε))) + c_ent·(−mean(H))
//	critic: L_V = c_vf · mean((R − V_pred)²),  V_pred = V_old + clip(V − V_old, ±ε_vf)
//
// where ρ = exp(log π(a|s) − log π_old(a|s)) (Schulman et al. 2017, eq. 7
// and 9). The total loss is L_π + L_V; because the nets share no
// parameters, ∂L/∂θ_actor = ∂L_π/∂θ_actor and ∂L/∂θ_critic = ∂L_V/∂θ_critic,
// so the halves may run on two goroutines without changing any bit.
//
// Inputs are tensors bound once whose backing slices the caller overwrites
// before run; parameters are views of the caller's flat parameter vector,
// so an optimiser step in place is seen by the next run.
type lossGraph[T scalar] struct {
	arch  *nn.Arch
	batch int
	clipV bool

	actor  graphHalf
	critic graphHalf

	// actor inputs
	aObs, onehot, oldLogp, adv, lo, hi []T
	// critic inputs (cObs is aObs)
	cObs, ret, oldV, vlo, vhi []T
	// output nodes and their values after the last run (overwritten by
	// the next)
	pgN, entN, logpN, ratioN, vfN, valueN *G.Node
	pg, ent, logp, ratio, vf, value       G.Value
}

type graphHalf struct {
	g      *G.ExprGraph
	prog   *program
	params []*G.Node
	gradN  []*G.Node // ∂loss/∂params
	lossN  *G.Node
	loss   G.Value // after the last run
	first  int     // index of the half's first parameter in arch.Params
}

// finish adds the gradient nodes and compiles the half, computing the
// loss, the gradients and outs.
func (h *graphHalf) finish(loss *G.Node, outs ...*G.Node) {
	h.lossN = loss
	h.gradN = must2(G.Grad(loss, h.params...))
	p, err := compile(h.g, append(append([]*G.Node{loss}, h.gradN...), outs...)...)
	if err != nil {
		panic(err)
	}
	h.prog = p
}

func newLossGraph[T scalar](a *nn.Arch, batch int, theta []T, entCoef, vfCoef float64, clipV bool) (*lossGraph[T], error) {
	if len(theta) != a.Size {
		return nil, fmt.Errorf("ppo: parameter vector has %d entries, want %d", len(theta), a.Size)
	}
	lg := &lossGraph[T]{arch: a, batch: batch, clipV: clipV}
	B := batch
	mk := func(n int) []T { return make([]T, n) }
	lg.aObs, lg.onehot, lg.oldLogp, lg.adv, lg.lo, lg.hi = mk(B*a.Obs), mk(B*a.Logits), mk(B), mk(B), mk(B), mk(B)
	lg.ret, lg.oldV, lg.vlo, lg.vhi = mk(B), mk(B), mk(B), mk(B)
	// Both halves only read the observation batch (no op writes an input
	// and its gradient is never formed), so they share one copy.
	lg.cObs = lg.aObs

	if err := lg.buildActor(theta, T(entCoef)); err != nil {
		return nil, fmt.Errorf("ppo: building actor graph: %w", err)
	}
	if err := lg.buildCritic(theta, T(vfCoef)); err != nil {
		return nil, fmt.Errorf("ppo: building critic graph: %w", err)
	}
	return lg, nil
}

// bindGrads makes the ops that compute the parameters' gradients (the
// products ∂W and the column sums ∂b) write them straight into grad, the
// flat gradient vector, so that a run need not copy them there.
func (lg *lossGraph[T]) bindGrads(grad []T) {
	for _, h := range []*graphHalf{&lg.actor, &lg.critic} {
		for i, gn := range h.gradN {
			p := lg.arch.Params[h.first+i]
			var buf *outBuf
			switch op := gn.Op().(type) {
			case matMul:
				buf = op.buf
			case colSum:
				buf = op.buf
			}
			if buf != nil && gn.Shape().Eq(tensor.Shape{p.Rows, p.Cols}) {
				buf.t = tensor.New(tensor.WithBacking(grad[p.Off:p.Off+p.Len()]), tensor.WithShape(p.Rows, p.Cols))
			}
		}
	}
}

// input binds backing (shape dims) to a new input node of g.
func input[T scalar](g *G.ExprGraph, name string, backing []T, dims ...int) *G.Node {
	t := tensor.New(tensor.WithBacking(backing), tensor.WithShape(dims...))
	if len(dims) == 1 {
		return G.NewVector(g, dtypeOf[T](), G.WithName(name), G.WithShape(dims...), G.WithValue(t))
	}
	return G.NewMatrix(g, dtypeOf[T](), G.WithName(name), G.WithShape(dims...), G.WithValue(t))
}

// bindParams creates the parameter nodes of one net as views of theta.
func bindParams[T scalar](h *graphHalf, a *nn.Arch, net int, theta []T) {
	for i, p := range a.Params {
		if p.Net != net {
			continue
		}
		if len(h.params) == 0 {
			h.first = i
		}
		h.params = append(h.params, input(h.g, p.Name, theta[p.Off:p.Off+p.Len()], p.Rows, p.Cols))
	}
}

// mlp applies the net's linear layers with tanh between them.
func mlp(x *G.Node, params []*G.Node) (*G.Node, error) {
	h := x
	n := len(params) / 2
	for l := range n {
		z, err := G.ApplyOp(matMul{noGradA: l == 0, buf: new(outBuf)}, h, params[2*l])
		if err != nil {
			return nil, err
		}
		if z, err = G.ApplyOp(addBias{buf: new(outBuf)}, z, params[2*l+1]); err != nil {
			return nil, err
		}
		if l < n-1 {
			if z, err = G.ApplyOp(elemOp{fn: nn.Tanh, buf: new(outBuf)}, z); err != nil {
				return nil, err
			}
		}
		h = z
	}
	return h, nil
}

// clamp is torch.clamp(x, lo, hi) = min(max(x, lo), hi), with gradient 1
// where lo ≤ x ≤ hi and 0 elsewhere.
func clamp(x, lo, hi *G.Node) (*G.Node, error) {
	m, err := G.MaxBetween(x, lo)
	if err != nil {
		return nil, err
	}
	return G.MinBetween(m, hi)
}

func (lg *lossGraph[T]) buildActor(theta []T, entCoef T) (err error) {
	a, B := lg.arch, lg.batch
	h := &lg.actor
	h.g = G.NewGraph()
	g := h.g
	bindParams(h, a, nn.ActorNet, theta)
	obs := input(g, "obs", lg.aObs, B, a.Obs)
	onehot := input(g, "onehot", lg.onehot, B, a.Logits)
	oldLogp := input(g, "old_logp", lg.oldLogp, B)
	adv := input(g, "adv", lg.adv, B)
	lo := input(g, "clip_lo", lg.lo, B)
	hi := input(g, "clip_hi", lg.hi, B)

	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	must := func(n *G.Node, e error) *G.Node { return G.Must(n, e) }

	logits := must(mlp(obs, h.params))
	// Log-probabilities of every choice, per action dimension.
	// The entropy's exp(log p) is what the log-softmax gradient needs
	// too: the log-softmax computes it into ec for both.
	ec := new(expCache)
	logpAll := must(G.ApplyOp(catLogSoftmax{nvec: a.Nvec, buf: new(outBuf), exp: ec}, logits))
	// log π(a|s) = Σ_d log p_d(a_d); −mean(H) = Σ_{b,d,k} p·log p / B.
	logp := must(G.ApplyOp(rowDot{buf: new(outBuf)}, logpAll, onehot))
	plogp := must(G.ApplyOp(sumProd{}, must(G.ApplyOp(elemOp{fn: nn.Exp, buf: new(outBuf), exp: ec}, logpAll)), logpAll))
	ent := must(G.Div(plogp, G.NewConstant(T(B))))
	ratio := must(G.Exp(must(G.Sub(logp, oldLogp))))
	s1 := must(G.HadamardProd(adv, ratio))
	s2 := must(G.HadamardProd(adv, must(clamp(ratio, lo, hi))))
	pg := must(G.Neg(must(G.Mean(must(G.MinBetween(s1, s2))))))
	loss := must(G.Add(pg, must(G.Mul(G.NewConstant(entCoef), ent))))
	lg.pgN, lg.entN, lg.logpN, lg.ratioN = pg, ent, logp, ratio
	h.finish(loss, pg, ent, logp, ratio)
	return nil
}

func (lg *lossGraph[T]) buildCritic(theta []T, vfCoef T) (err error) {
	a, B := lg.arch, lg.batch
	h := &lg.critic
	h.g = G.NewGraph()
	g := h.g
	bindParams(h, a, nn.CriticNet, theta)
	obs := input(g, "obs", lg.cObs, B, a.Obs)
	ret := input(g, "returns", lg.ret, B)
	oldV := input(g, "old_values", lg.oldV, B)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	must := func(n *G.Node, e error) *G.Node { return G.Must(n, e) }

	v := must(G.Sum(must(mlp(obs, h.params)), 1)) // [B,1] → [B] without a reshape (see catLogSoftmax)
	pred := v
	if lg.clipV {
		vlo := input(g, "vclip_lo", lg.vlo, B)
		vhi := input(g, "vclip_hi", lg.vhi, B)
		pred = must(G.Add(oldV, must(clamp(must(G.Sub(v, oldV)), vlo, vhi))))
	}
	vf := must(G.Mean(must(G.Square(must(G.Sub(ret, pred))))))
	loss := must(G.Mul(G.NewConstant(vfCoef), vf))
	lg.vfN, lg.valueN = vf, v
	h.finish(loss, vf, v)
	return nil
}

func must2(n G.Nodes, err error) G.Nodes {
	if err != nil {
		panic(err)
	}
	return n
}

// setClip fills the clip bounds for the policy ratio and the value change.
func (lg *lossGraph[T]) setClip(eps, epsV float64) {
	for i := range lg.batch {
		lg.lo[i], lg.hi[i] = T(1-eps), T(1+eps)
		lg.vlo[i], lg.vhi[i] = T(-epsV), T(epsV)
	}
}

// run executes both halves (concurrently when parallel) and writes ∂L/∂θ
// into grad. Each half touches only its own graph, machine and grad range.
func (lg *lossGraph[T]) run(grad []T, parallel bool) error {
	var errs [2]error
	if parallel {
		var wg sync.WaitGroup
		wg.Go(func() { errs[1] = lg.runCritic(grad) })
		errs[0] = lg.runActor(grad)
		wg.Wait()
	} else {
		errs[0], errs[1] = lg.runActor(grad), lg.runCritic(grad)
	}
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("ppo: running loss graph: %w", err)
		}
	}
	return nil
}

// runActor runs the actor half, writing its gradient into grad.
func (lg *lossGraph[T]) runActor(grad []T) error {
	h := &lg.actor
	if err := h.run(lg.arch, grad); err != nil {
		return err
	}
	p := h.prog
	lg.pg, lg.ent, lg.logp, lg.ratio = p.value(lg.pgN), p.value(lg.entN), p.value(lg.logpN), p.value(lg.ratioN)
	return nil
}

// runCritic runs the critic half, writing its gradient into grad.
func (lg *lossGraph[T]) runCritic(grad []T) error {
	h := &lg.critic
	if err := h.run(lg.arch, grad); err != nil {
		return err
	}
	lg.vf, lg.value = h.prog.value(lg.vfN), h.prog.value(lg.valueN)
	return nil
}

func (h *graphHalf) run(a *nn.Arch, grad any) error {
	if err := h.prog.run(); err != nil {
		return err
	}
	h.loss = h.prog.value(h.lossN)
	for i, gn := range h.gradN {
		p := a.Params[h.first+i]
		gv := h.prog.value(gn)
		switch g := grad.(type) {
		case []float32:
			if d := gv.Data().([]float32); &d[0] != &g[p.Off] { // not bound by bindGrads
				copy(g[p.Off:p.Off+p.Len()], d)
			}
		case []float64:
			if d := gv.Data().([]float64); &d[0] != &g[p.Off] {
				copy(g[p.Off:p.Off+p.Len()], d)
			}
		}
	}
	return nil
}

// scalarOf reads a scalar output as float64.
func scalarOf(v G.Value) float64 {
	switch x := v.Data().(type) {
	case float32:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("ppo: value %v is not a float scalar", v))
}

// vectorOf returns a vector output's data (overwritten by the next run).
func vectorOf[T scalar](v G.Value) []T { return v.Data().([]T) }
