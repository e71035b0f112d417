package ppo

import (
	"fmt"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// program runs the ops of a gorgonia graph (the forward pass and the
// gradient nodes that G.Grad added) in a topological order on the calling
// goroutine. It does what a TapeMachine's RunAll does for a CPU graph
// without what RunAll costs on every run at these sizes: RunAll locks the
// caller's OS thread and runs the tape on a new goroutine (two thread
// hand-offs per run), formats a log line per instruction, and clones every
// value it reads out. Each op computes what it computes under the tape
// machine — the same Do on the same input values — so the results are the
// same bits; only the memory differs: every node keeps its own output
// (reused from run to run when the op can write into a given tensor), so
// no value is overwritten within a run.
//
// A program is not safe for concurrent use.
type program struct {
	steps []step
	vals  []G.Value       // by node index: leaves bound at compile, op outputs set by run
	index map[int64]int32 // node ID → index in vals
}

type step struct {
	node *G.Node
	op   G.Op
	in   []int32   // indices of the inputs in vals
	args []G.Value // scratch for the inputs
	out  int32
	// canReuse: the op can write into a given tensor. reuse: it can, and
	// its first output shares no memory with its inputs, so from the
	// second run on it writes into its previous output.
	canReuse, reuse bool
	ran             bool
}

// compile orders the ancestors of outputs topologically (every node after
// its inputs), binding the leaves (inputs and constants) to their values.
// The leaves' values must not be replaced after compile; their contents
// may change between runs.
func compile(g *G.ExprGraph, outputs ...*G.Node) (*program, error) {
	sorted, err := G.Sort(g) // roots first
	if err != nil {
		return nil, err
	}
	slices.Reverse(sorted)
	need := map[int64]bool{}
	var mark func(n *G.Node)
	mark = func(n *G.Node) {
		if need[n.ID()] {
			return
		}
		need[n.ID()] = true
		for _, c := range children(g, n) {
			mark(c)
		}
	}
	for _, n := range outputs {
		mark(n)
	}
	p := &program{index: map[int64]int32{}}
	for _, n := range sorted {
		if !need[n.ID()] {
			continue
		}
		i := int32(len(p.vals))
		p.index[n.ID()] = i
		cs := children(g, n)
		if len(cs) == 0 {
			v := n.Value()
			if v == nil {
				return nil, fmt.Errorf("ppo: graph leaf %v has no value", n)
			}
			p.vals = append(p.vals, v)
			continue
		}
		p.vals = append(p.vals, nil)
		s := step{node: n, op: n.Op(), out: i, args: make([]G.Value, len(cs))}
		for _, c := range cs {
			j, ok := p.index[c.ID()]
			if !ok {
				return nil, fmt.Errorf("ppo: graph node %v comes before its input %v", n, c)
			}
			s.in = append(s.in, j)
		}
		_, s.canReuse = s.op.(G.UsePreallocDoer)
		p.steps = append(p.steps, s)
	}
	return p, nil
}

// children are n's inputs in argument order.
func children(g *G.ExprGraph, n *G.Node) []*G.Node {
	var cs []*G.Node
	for it := g.From(n.ID()); it.Next(); {
		cs = append(cs, it.Node().(*G.Node))
	}
	return cs
}

// run executes every step once.
func (p *program) run() error {
	for k := range p.steps {
		s := &p.steps[k]
		for i, j := range s.in {
			s.args[i] = p.vals[j]
		}
		var v G.Value
		var err error
		if s.reuse {
			v, err = s.op.(G.UsePreallocDoer).UsePreallocDo(p.vals[s.out], s.args...)
		} else {
			v, err = s.op.Do(s.args...)
		}
		if err != nil {
			return fmt.Errorf("ppo: %v: %w", s.node, err)
		}
		if !s.ran {
			s.ran = true
			_, isTensor := v.(tensor.Tensor)
			s.reuse = s.canReuse && isTensor && !overlapsAny(v, s.args)
		}
		p.vals[s.out] = v
	}
	return nil
}

// overlapsAny reports whether v's memory overlaps that of any of vs.
func overlapsAny(v G.Value, vs []G.Value) bool {
	lo, hi := v.Uintptr(), v.Uintptr()+v.MemSize()
	for _, w := range vs {
		if wlo := w.Uintptr(); wlo < hi && lo < wlo+w.MemSize() {
			return true
		}
	}
	return false
}

// value is n's value after the last run (nil if n is not in p).
func (p *program) value(n *G.Node) G.Value {
	i, ok := p.index[n.ID()]
	if !ok {
		return nil
	}
	return p.vals[i]
}
