package ops

import (
	"bytes"
	"hash/fnv"
	"slices"
	"testing"
)

// memState is a map store that keeps what Put gives it (as the contract
// allows).
type memState map[uint64][]byte

func (m memState) Get(k uint64) ([]byte, bool) { v, ok := m[k]; return v, ok }
func (m memState) Put(k uint64, v []byte)      { m[k] = v }
func (m memState) Delete(k uint64)             { delete(m, k) }

func (m memState) clone() memState {
	c := make(memState, len(m))
	for k, v := range m {
		c[k] = slices.Clone(v)
	}
	return c
}

func (m memState) equal(o memState) bool {
	if len(m) != len(o) {
		return false
	}
	for k, v := range m {
		if w, ok := o[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

type emitted struct {
	to  int
	key uint64
	p   []byte
}

// collector copies what it is given (payloads are valid only during Emit).
type collector struct{ out []emitted }

func (c *collector) Emit(to int, key uint64, p []byte) {
	c.out = append(c.out, emitted{to, key, slices.Clone(p)})
}

type discard struct{}

func (discard) Emit(int, uint64, []byte) {}

// run is a reference executor: one instance per operator, one store per
// operator, every input processed to completion (FIFO) before the next.
type run struct {
	app       App
	ops       []Operator
	states    []memState
	processed []int          // records per operator
	edges     map[[2]int]int // records per edge
	errs      []error        // operator errors
	digest    uint64         // FNV of every emitted record, in order
	inputs    [][]Record     // the first keep records each operator saw
	outputs   [][]emitted    // what each operator emitted (only if trace)
	trace     bool
	keep      int
	h         interface {
		Write([]byte) (int, error)
		Sum64() uint64
	}
}

func newRun(app App) *run {
	r := &run{app: app, edges: map[[2]int]int{}, keep: 2000, h: fnv.New64a()}
	for _, s := range app.Operators {
		r.ops = append(r.ops, s.New())
		r.states = append(r.states, memState{})
	}
	r.processed = make([]int, len(app.Operators))
	r.inputs = make([][]Record, len(app.Operators))
	r.outputs = make([][]emitted, len(app.Operators))
	return r
}

func (r *run) feed(t testing.TB, seed uint64, n int) {
	t.Helper()
	src := r.app.NewSource(seed)
	var buf []byte
	succ := r.app.Successors()
	for i := range n {
		key, p := src.Next(buf)
		buf = p
		type item struct {
			op  int
			rec Record
		}
		queue := []item{{0, Record{Key: key, Input: uint64(i + 1), Payload: slices.Clone(p)}}}
		for len(queue) > 0 {
			it := queue[0]
			queue = queue[1:]
			r.processed[it.op]++
			if len(r.inputs[it.op]) < r.keep {
				rec := it.rec
				rec.Payload = slices.Clone(rec.Payload)
				r.inputs[it.op] = append(r.inputs[it.op], rec)
			}
			var c collector
			if err := r.ops[it.op].Process(it.rec, r.states[it.op], &c); err != nil {
				r.errs = append(r.errs, err)
				continue
			}
			if r.trace {
				r.outputs[it.op] = append(r.outputs[it.op], c.out...)
			}
			for _, e := range c.out {
				if !slices.Contains(succ[it.op], e.to) {
					t.Fatalf("%s/%s emitted to %d, not a successor", r.app.Name, r.app.Operators[it.op].Name, e.to)
				}
				r.edges[[2]int{it.op, e.to}]++
				var hdr [16]byte
				putU64(putU64(hdr[:0], uint64(e.to)), e.key)
				r.h.Write(hdr[:])
				r.h.Write(e.p)
				queue = append(queue, item{e.to, Record{Key: e.key, Input: it.rec.Input, Payload: e.p}})
			}
		}
	}
	r.digest = r.h.Sum64()
}
