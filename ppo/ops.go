package ppo

import (
	"bytes"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"unsafe"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"streamscale/ppo/internal/nn"
	"streamscale/ppo/internal/sgemm"
)

// catLogSoftmax is a gorgonia op: the log-softmax of each action
// dimension's block of logits, row by row. For a [B, Σnvec] input x and
// the block s of dimension d,
//
//	y[b, s] = x[b, s] − max_s x[b, s] − log Σ_s exp(x[b, s] − max_s x[b, s])
//
// It exists because gorgonia's LogSoftMax spawns a goroutine per row, and
// reshaping around it aliases memory that the tape machine's in-place ops
// then overwrite (a wrong gradient that TestLossGradientFiniteDifference
// catches). Its gradient is catLogSoftmaxDiff.
//
// With exp (float32 only) it also computes math.Exp of its output into
// exp, for the Exp op on that output and for its own gradient.
type catLogSoftmax struct {
	nvec []int
	buf  *outBuf
	exp  *expCache // handed to the gradient; nil: none
}

func (op catLogSoftmax) Arity() int { return 1 }
func (op catLogSoftmax) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op catLogSoftmax) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return shapeOf(in[0])
}
func (op catLogSoftmax) Do(vals ...G.Value) (G.Value, error) {
	x := vals[0].(tensor.Tensor)
	out := op.buf.get(x.Dtype(), x.Shape()...)
	return op.UsePreallocDo(out, vals...)
}
func (op catLogSoftmax) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	switch x := vals[0].Data().(type) {
	case []float32:
		y := prealloc.Data().([]float32)
		nn.LogSoftmaxRows(y, x, op.nvec)
		if op.exp != nil {
			op.exp.size(len(y))
			op.exp.expRange(y, 0, len(y))
		}
	case []float64:
		nn.LogSoftmaxRows(prealloc.Data().([]float64), x, op.nvec)
	default:
		return nil, fmt.Errorf("ppo: catLogSoftmax: unsupported input %T", x)
	}
	return prealloc, nil
}
func (op catLogSoftmax) ReturnsPtr() bool      { return false }
func (op catLogSoftmax) CallsExtern() bool     { return false }
func (op catLogSoftmax) OverwritesInput() int  { return -1 }
func (op catLogSoftmax) WriteHash(h hash.Hash) { fmt.Fprintf(h, "catLogSoftmax%v", op.nvec) }
func (op catLogSoftmax) Hashcode() uint32      { return hashOp(op) }
func (op catLogSoftmax) String() string        { return fmt.Sprintf("CatLogSoftmax%v", op.nvec) }
func (op catLogSoftmax) DiffWRT(int) []bool    { return []bool{true} }
func (op catLogSoftmax) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(catLogSoftmaxDiff{nvec: op.nvec, buf: op.buf.sibling(), exp: op.exp}, output, grad)
	return G.Nodes{dx}, err
}

// catLogSoftmaxDiff maps (y, ∂L/∂y) to ∂L/∂x = ∂L/∂y − exp(y)·Σ_s ∂L/∂y,
// block by block.
type catLogSoftmaxDiff struct {
	nvec []int
	buf  *outBuf
	exp  *expCache // exp(y) if an Exp op on y has computed it; nil: none
}

func (op catLogSoftmaxDiff) Arity() int { return 2 }
func (op catLogSoftmaxDiff) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op catLogSoftmaxDiff) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return shapeOf(in[0])
}
func (op catLogSoftmaxDiff) Do(vals ...G.Value) (G.Value, error) {
	y := vals[0].(tensor.Tensor)
	out := op.buf.get(y.Dtype(), y.Shape()...)
	return op.UsePreallocDo(out, vals...)
}
func (op catLogSoftmaxDiff) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	switch y := vals[0].Data().(type) {
	case []float32:
		if e := op.exp.of(y); e != nil {
			logSoftmaxGradExp(prealloc.Data().([]float32), e, vals[1].Data().([]float32), op.nvec)
			break
		}
		logSoftmaxGrad(prealloc.Data().([]float32), y, vals[1].Data().([]float32), op.nvec)
	case []float64:
		logSoftmaxGrad(prealloc.Data().([]float64), y, vals[1].Data().([]float64), op.nvec)
	default:
		return nil, fmt.Errorf("ppo: catLogSoftmaxDiff: unsupported input %T", y)
	}
	return prealloc, nil
}
func (op catLogSoftmaxDiff) ReturnsPtr() bool      { return false }
func (op catLogSoftmaxDiff) CallsExtern() bool     { return false }
func (op catLogSoftmaxDiff) OverwritesInput() int  { return -1 }
func (op catLogSoftmaxDiff) WriteHash(h hash.Hash) { fmt.Fprintf(h, "catLogSoftmaxDiff%v", op.nvec) }
func (op catLogSoftmaxDiff) Hashcode() uint32      { return hashOp(op) }
func (op catLogSoftmaxDiff) String() string        { return fmt.Sprintf("CatLogSoftmaxDiff%v", op.nvec) }

func shapeOf(d G.DimSizer) (tensor.Shape, error) {
	s, ok := d.(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("ppo: expected a shape, got %T", d)
	}
	return s.Clone(), nil
}

func hashOp(op G.Op) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// logSoftmaxGrad writes ∂L/∂x for log-softmax output y and upstream g.
func logSoftmaxGrad[T scalar](dx, y, g []T, nvec []int) {
	switch y := any(y).(type) {
	case []float32:
		dx, g := any(dx).([]float32), any(g).([]float32)
		nn.Blocks(len(y), nvec, func(off, n int) {
			var sum float64
			for _, v := range g[off : off+n] {
				sum += float64(v)
			}
			for i := off; i < off+n; i++ {
				dx[i] = float32(float64(g[i]) - math.Exp(float64(y[i]))*sum)
			}
		})
	case []float64:
		dx, g := any(dx).([]float64), any(g).([]float64)
		nn.Blocks(len(y), nvec, func(off, n int) {
			var sum float64
			for _, v := range g[off : off+n] {
				sum += v
			}
			for i := off; i < off+n; i++ {
				dx[i] = g[i] - math.Exp(y[i])*sum
			}
		})
	}
}

// logSoftmaxGradExp is logSoftmaxGrad with exp(y) given (e), as the
// float64 values math.Exp returned for y: the same result bit for bit.
func logSoftmaxGradExp(dx []float32, e []float64, g []float32, nvec []int) {
	w := 0
	for _, n := range nvec {
		w += n
	}
	// nn.Blocks' order, without its closure calls.
	for off := 0; w > 0 && off+w <= len(e); {
		for _, n := range nvec {
			gb, eb, db := g[off:off+n], e[off:off+n], dx[off:off+n]
			var sum float64
			for _, v := range gb {
				sum += float64(v)
			}
			for i, v := range gb {
				db[i] = float32(float64(v) - eb[i]*sum)
			}
			off += n
		}
	}
}

// expCache holds the log-softmax's float32 output and math.Exp of it in
// float64 (before rounding to float32), computed with the log-softmax
// (eight lanes at a time), so that the Exp op on that output and the
// log-softmax gradient need not compute them again. of returns the cached
// exponentials only when its argument equals the cached input bit for
// bit, so a stale or foreign cache is never used (the Exp op then
// computes and caches them itself). A nil *expCache caches nothing.
type expCache struct {
	x []float32
	e []float64
}

// of returns exp(y) from the cache, or nil if y is not the cached input
// bit for bit (compared as bytes: one memory compare).
func (c *expCache) of(y []float32) []float64 {
	if c == nil || len(c.x) != len(y) || len(y) == 0 {
		return nil
	}
	if !bytes.Equal(f32bytes(c.x), f32bytes(y)) {
		return nil
	}
	return c.e
}

// f32bytes is the memory of x.
func f32bytes(x []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

// expInto writes float32(exp(x)) into y, keeping x and the float64
// exponentials (or taking them from the cache if it holds x).
func (c *expCache) expInto(y, x []float32) {
	e := c.of(x)
	if e == nil {
		c.size(len(x))
		c.expRange(x, 0, len(x))
		e = c.e
	}
	for i, v := range e[:len(y)] {
		y[i] = float32(v)
	}
}

// size makes the cache n elements long (its contents undefined until
// expRange has filled them).
func (c *expCache) size(n int) {
	if cap(c.x) < n {
		c.x, c.e = make([]float32, n), make([]float64, n)
	}
	c.x, c.e = c.x[:n], c.e[:n]
}

// expRange caches x[lo:hi] and math.Exp of it (through nn.ExpSlice, the
// same bits).
func (c *expCache) expRange(x []float32, lo, hi int) {
	copy(c.x[lo:hi], x[lo:hi])
	e := c.e[lo:hi]
	for i, v := range x[lo:hi] {
		e[i] = float64(v)
	}
	nn.ExpSlice(e, e)
}

// elemOp is tanh or exp, element-wise, evaluated through float64 math.Exp
// (gorgonia's float32 versions go through a slow software exp). Its
// gradient is elemDiff, computed from the output: tanh′ = 1 − y², exp′ = y.
type elemOp struct {
	fn  int
	buf *outBuf
	exp *expCache // for Exp on float32: keeps its float64 results; nil: none
}

func (op elemOp) name() string { return [...]string{"Tanh", "Exp"}[op.fn] }

func (op elemOp) Arity() int { return 1 }
func (op elemOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op elemOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return shapeOf(in[0]) }
func (op elemOp) Do(vals ...G.Value) (G.Value, error) {
	x := vals[0].(tensor.Tensor)
	out := op.buf.get(x.Dtype(), x.Shape()...)
	return op.UsePreallocDo(out, vals...)
}
func (op elemOp) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	switch x := vals[0].Data().(type) {
	case []float32:
		if op.fn == nn.Exp && op.exp != nil {
			op.exp.expInto(prealloc.Data().([]float32), x)
			break
		}
		nn.ElemApply(prealloc.Data().([]float32), x, op.fn)
	case []float64:
		nn.ElemApply(prealloc.Data().([]float64), x, op.fn)
	default:
		return nil, fmt.Errorf("ppo: %s: unsupported input %T", op.name(), x)
	}
	return prealloc, nil
}
func (op elemOp) ReturnsPtr() bool      { return false }
func (op elemOp) CallsExtern() bool     { return false }
func (op elemOp) OverwritesInput() int  { return -1 }
func (op elemOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "fast%s", op.name()) }
func (op elemOp) Hashcode() uint32      { return hashOp(op) }
func (op elemOp) String() string        { return "Fast" + op.name() }
func (op elemOp) DiffWRT(int) []bool    { return []bool{true} }
func (op elemOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(elemDiff{fn: op.fn, buf: op.buf.sibling()}, output, grad)
	return G.Nodes{dx}, err
}

type elemDiff struct {
	fn  int
	buf *outBuf
}

func (op elemDiff) Arity() int { return 2 }
func (op elemDiff) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op elemDiff) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return shapeOf(in[0]) }
func (op elemDiff) Do(vals ...G.Value) (G.Value, error) {
	y := vals[0].(tensor.Tensor)
	out := op.buf.get(y.Dtype(), y.Shape()...)
	return op.UsePreallocDo(out, vals...)
}
func (op elemDiff) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	switch y := vals[0].Data().(type) {
	case []float32:
		elemGrad(prealloc.Data().([]float32), y, vals[1].Data().([]float32), op.fn)
	case []float64:
		elemGrad(prealloc.Data().([]float64), y, vals[1].Data().([]float64), op.fn)
	default:
		return nil, fmt.Errorf("ppo: %sDiff: unsupported input %T", elemOp{fn: op.fn}.name(), y)
	}
	return prealloc, nil
}
func (op elemDiff) ReturnsPtr() bool      { return false }
func (op elemDiff) CallsExtern() bool     { return false }
func (op elemDiff) OverwritesInput() int  { return -1 }
func (op elemDiff) WriteHash(h hash.Hash) { fmt.Fprintf(h, "fast%sDiff", elemOp{fn: op.fn}.name()) }
func (op elemDiff) Hashcode() uint32      { return hashOp(op) }
func (op elemDiff) String() string        { return "Fast" + elemOp{fn: op.fn}.name() + "Diff" }

func elemGrad[T scalar](dx, y, g []T, fn int) {
	if y32, ok := any(y).([]float32); ok {
		dx32, g32 := any(dx).([]float32), any(g).([]float32)
		if fn == nn.Exp {
			nn.Mul(dx32, g32, y32)
		} else {
			nn.TanhGrad(dx32, y32, g32)
		}
		return
	}
	if fn == nn.Exp {
		for i := range dx {
			dx[i] = g[i] * y[i]
		}
		return
	}
	for i := range dx {
		dx[i] = g[i] * (1 - y[i]*y[i])
	}
}

// rowDot is Σ_j y[b, j]·w[b, j] per row of two [B, n] matrices (log π(a|s)
// from the log-probabilities and the one-hot actions), and sumProd is
// Σ_{b,j} e[b, j]·y[b, j] over all elements (Σ p·log p). They compute what
// gorgonia's Sum of its HadamardProd did, bit for bit: each product
// rounded to the element type, then summed from zero in index order (its
// SumF32 loop, per row for Σ over axis 1). Their gradients skip the
// broadcast that Sum's gradient materialised and the product that
// followed it: ∂/∂y of rowDot is w[b, j]·g[b] (rowScale), those of
// sumProd are y·g and e·g (scaleBy), the same products gorgonia formed.
// Only y gets rowDot's gradient (w is data).
type rowDot struct{ buf *outBuf }

// sumProd: see rowDot.
type sumProd struct{}

// rowScale is x[b, j]·g[b]; scaleBy is x·g for a scalar g.
type rowScale struct{ buf *outBuf }

// scaleBy: see rowScale.
type scaleBy struct{ buf *outBuf }

func matType(d int) G.TensorType { return G.TensorType{Dims: d, Of: hm.TypeVariable('a')} }

func (op rowDot) Arity() int    { return 2 }
func (op rowDot) Type() hm.Type { return hm.NewFnType(matType(2), matType(2), matType(1)) }
func (op rowDot) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := shapeOf(in[0])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{s[0]}, nil
}
func (op rowDot) Do(vals ...G.Value) (G.Value, error) {
	x := vals[0].(tensor.Tensor)
	return op.UsePreallocDo(op.buf.get(x.Dtype(), x.Shape()[0]), vals...)
}
func (op rowDot) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	if !vals[0].Shape().Eq(vals[1].Shape()) {
		return nil, fmt.Errorf("ppo: rowDot: shapes %v and %v differ", vals[0].Shape(), vals[1].Shape())
	}
	switch y := vals[0].Data().(type) {
	case []float32:
		rowDotApply(prealloc.Data().([]float32), y, vals[1].Data().([]float32))
	case []float64:
		rowDotApply(prealloc.Data().([]float64), y, vals[1].Data().([]float64))
	default:
		return nil, fmt.Errorf("ppo: rowDot: unsupported input %T", y)
	}
	return prealloc, nil
}
func (op rowDot) ReturnsPtr() bool      { return false }
func (op rowDot) CallsExtern() bool     { return false }
func (op rowDot) OverwritesInput() int  { return -1 }
func (op rowDot) WriteHash(h hash.Hash) { fmt.Fprint(h, "rowDot") }
func (op rowDot) Hashcode() uint32      { return hashOp(op) }
func (op rowDot) String() string        { return "RowDot" }
func (op rowDot) DiffWRT(int) []bool    { return []bool{true, false} }
func (op rowDot) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	dy, err := G.ApplyOp(rowScale{buf: op.buf.sibling()}, inputs[1], grad)
	return G.Nodes{dy, nil}, err
}

func rowDotApply[T scalar](out, y, w []T) {
	n := len(y) / len(out)
	for r := range out {
		var s T
		for j, v := range y[r*n : r*n+n] {
			s += T(v * w[r*n+j])
		}
		out[r] = s
	}
}

func (op sumProd) Arity() int { return 2 }
func (op sumProd) Type() hm.Type {
	return hm.NewFnType(matType(2), matType(2), hm.TypeVariable('a'))
}
func (op sumProd) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}
func (op sumProd) Do(vals ...G.Value) (G.Value, error) {
	if !vals[0].Shape().Eq(vals[1].Shape()) {
		return nil, fmt.Errorf("ppo: sumProd: shapes %v and %v differ", vals[0].Shape(), vals[1].Shape())
	}
	switch e := vals[0].Data().(type) {
	case []float32:
		return G.NewF32(sumProdApply(e, vals[1].Data().([]float32))), nil
	case []float64:
		return G.NewF64(sumProdApply(e, vals[1].Data().([]float64))), nil
	}
	return nil, fmt.Errorf("ppo: sumProd: unsupported input %T", vals[0].Data())
}
func (op sumProd) ReturnsPtr() bool      { return false }
func (op sumProd) CallsExtern() bool     { return false }
func (op sumProd) OverwritesInput() int  { return -1 }
func (op sumProd) WriteHash(h hash.Hash) { fmt.Fprint(h, "sumProd") }
func (op sumProd) Hashcode() uint32      { return hashOp(op) }
func (op sumProd) String() string        { return "SumProd" }
func (op sumProd) DiffWRT(int) []bool    { return []bool{true, true} }
func (op sumProd) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	de, err := G.ApplyOp(scaleBy{buf: new(outBuf)}, inputs[1], grad)
	if err != nil {
		return nil, err
	}
	dy, err := G.ApplyOp(scaleBy{buf: new(outBuf)}, inputs[0], grad)
	return G.Nodes{de, dy}, err
}

func sumProdApply[T scalar](e, y []T) T {
	y = y[:len(e)]
	var s T
	for i, v := range e {
		s += T(v * y[i])
	}
	return s
}

func (op rowScale) Arity() int    { return 2 }
func (op rowScale) Type() hm.Type { return hm.NewFnType(matType(2), matType(1), matType(2)) }
func (op rowScale) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return shapeOf(in[0])
}
func (op rowScale) Do(vals ...G.Value) (G.Value, error) {
	x := vals[0].(tensor.Tensor)
	return op.UsePreallocDo(op.buf.get(x.Dtype(), x.Shape()...), vals...)
}
func (op rowScale) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	switch x := vals[0].Data().(type) {
	case []float32:
		rowScaleApply(prealloc.Data().([]float32), x, vals[1].Data().([]float32))
	case []float64:
		rowScaleApply(prealloc.Data().([]float64), x, vals[1].Data().([]float64))
	default:
		return nil, fmt.Errorf("ppo: rowScale: unsupported input %T", x)
	}
	return prealloc, nil
}
func (op rowScale) ReturnsPtr() bool      { return false }
func (op rowScale) CallsExtern() bool     { return false }
func (op rowScale) OverwritesInput() int  { return -1 }
func (op rowScale) WriteHash(h hash.Hash) { fmt.Fprint(h, "rowScale") }
func (op rowScale) Hashcode() uint32      { return hashOp(op) }
func (op rowScale) String() string        { return "RowScale" }

func rowScaleApply[T scalar](out, x, g []T) {
	n := len(x) / len(g)
	if x32, ok := any(x).([]float32); ok {
		out32 := any(out).([]float32)
		for r, gv := range any(g).([]float32) {
			nn.Scale(out32[r*n:r*n+n], x32[r*n:r*n+n], gv)
		}
		return
	}
	for r, gv := range g {
		for j, v := range x[r*n : r*n+n] {
			out[r*n+j] = v * gv
		}
	}
}

func (op scaleBy) Arity() int { return 2 }
func (op scaleBy) Type() hm.Type {
	return hm.NewFnType(matType(2), hm.TypeVariable('a'), matType(2))
}
func (op scaleBy) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return shapeOf(in[0]) }
func (op scaleBy) Do(vals ...G.Value) (G.Value, error) {
	x := vals[0].(tensor.Tensor)
	return op.UsePreallocDo(op.buf.get(x.Dtype(), x.Shape()...), vals...)
}
func (op scaleBy) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	switch x := vals[0].Data().(type) {
	case []float32:
		g, ok := vals[1].Data().(float32)
		if !ok {
			return nil, fmt.Errorf("ppo: scaleBy: factor %T", vals[1].Data())
		}
		nn.Scale(prealloc.Data().([]float32), x, g)
	case []float64:
		g, ok := vals[1].Data().(float64)
		if !ok {
			return nil, fmt.Errorf("ppo: scaleBy: factor %T", vals[1].Data())
		}
		out := prealloc.Data().([]float64)
		for i, v := range x {
			out[i] = v * g
		}
	default:
		return nil, fmt.Errorf("ppo: scaleBy: unsupported input %T", x)
	}
	return prealloc, nil
}
func (op scaleBy) ReturnsPtr() bool      { return false }
func (op scaleBy) CallsExtern() bool     { return false }
func (op scaleBy) OverwritesInput() int  { return -1 }
func (op scaleBy) WriteHash(h hash.Hash) { fmt.Fprint(h, "scaleBy") }
func (op scaleBy) Hashcode() uint32      { return hashOp(op) }
func (op scaleBy) String() string        { return "ScaleBy" }

// addBias adds a [1, n] bias to every row of a [B, n] matrix; its
// gradient is the upstream gradient for the matrix and the column sums
// (colSum) for the bias. It replaces gorgonia's BroadcastAdd, which
// materialises the repeated bias.
type addBias struct{ buf *outBuf }

func (op addBias) Arity() int { return 2 }
func (op addBias) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op addBias) InferShape(in ...G.DimSizer) (tensor.Shape, error) { return shapeOf(in[0]) }
func (op addBias) Do(vals ...G.Value) (G.Value, error) {
	x := vals[0].(tensor.Tensor)
	out := op.buf.get(x.Dtype(), x.Shape()...)
	return op.UsePreallocDo(out, vals...)
}
func (op addBias) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	switch x := vals[0].Data().(type) {
	case []float32:
		nn.BiasApply(prealloc.Data().([]float32), x, vals[1].Data().([]float32))
	case []float64:
		nn.BiasApply(prealloc.Data().([]float64), x, vals[1].Data().([]float64))
	default:
		return nil, fmt.Errorf("ppo: addBias: unsupported input %T", x)
	}
	return prealloc, nil
}
func (op addBias) ReturnsPtr() bool      { return false }
func (op addBias) CallsExtern() bool     { return false }
func (op addBias) OverwritesInput() int  { return -1 }
func (op addBias) WriteHash(h hash.Hash) { fmt.Fprint(h, "addBias") }
func (op addBias) Hashcode() uint32      { return hashOp(op) }
func (op addBias) String() string        { return "AddBias" }
func (op addBias) DiffWRT(int) []bool    { return []bool{true, true} }
func (op addBias) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	db, err := G.ApplyOp(colSum{buf: op.buf.sibling()}, grad)
	return G.Nodes{grad, db}, err
}

// colSum sums a [B, n] matrix over its rows into [1, n], row by row in
// order.
type colSum struct{ buf *outBuf }

func (op colSum) Arity() int { return 1 }
func (op colSum) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op colSum) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, err := shapeOf(in[0])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{1, s[1]}, nil
}
func (op colSum) Do(vals ...G.Value) (G.Value, error) {
	x := vals[0].(tensor.Tensor)
	out := op.buf.get(x.Dtype(), 1, x.Shape()[1])
	return op.UsePreallocDo(out, vals...)
}
func (op colSum) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	switch x := vals[0].Data().(type) {
	case []float32:
		colSumApply(prealloc.Data().([]float32), x)
	case []float64:
		colSumApply(prealloc.Data().([]float64), x)
	default:
		return nil, fmt.Errorf("ppo: colSum: unsupported input %T", x)
	}
	return prealloc, nil
}
func (op colSum) ReturnsPtr() bool      { return false }
func (op colSum) CallsExtern() bool     { return false }
func (op colSum) OverwritesInput() int  { return -1 }
func (op colSum) WriteHash(h hash.Hash) { fmt.Fprint(h, "colSum") }
func (op colSum) Hashcode() uint32      { return hashOp(op) }
func (op colSum) String() string        { return "ColSum" }

func colSumApply[T scalar](s, x []T) {
	clear(s)
	n := len(s)
	if x32, ok := any(x).([]float32); ok {
		s32 := any(s).([]float32)
		for r := 0; r+n <= len(x32); r += n {
			nn.Add(s32, s32, x32[r:r+n]) // s + row, column by column
		}
		return
	}
	for r := 0; r+n <= len(x); r += n {
		for j := range s {
			s[j] += x[r+j]
		}
	}
}

// matMul is C = op(A)·op(B) for [rows, cols] matrices, through sgemm for
// float32 and gonum for float64. As the forward product (no transposes)
// its gradient is ∂A = ∂C·Bᵀ and ∂B = Aᵀ·∂C; noGradA drops ∂A for a
// product whose left operand is data (the observation batch), which
// gorgonia's Mul would compute anyway (a quarter of the update's FLOPs).
type matMul struct {
	buf            *outBuf
	transA, transB bool
	noGradA        bool
}

func (op matMul) Arity() int { return 2 }
func (op matMul) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op matMul) dims(a, b tensor.Shape) (m, n, k int, err error) {
	if a.Dims() != 2 || b.Dims() != 2 {
		return 0, 0, 0, fmt.Errorf("ppo: matMul: shapes %v and %v are not matrices", a, b)
	}
	m, k = a[0], a[1]
	if op.transA {
		m, k = k, m
	}
	kb, n := b[0], b[1]
	if op.transB {
		kb, n = n, kb
	}
	if k != kb {
		return 0, 0, 0, fmt.Errorf("ppo: matMul: inner sizes of %v and %v differ", a, b)
	}
	return m, n, k, nil
}
func (op matMul) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	a, err := shapeOf(in[0])
	if err != nil {
		return nil, err
	}
	b, err := shapeOf(in[1])
	if err != nil {
		return nil, err
	}
	m, n, _, err := op.dims(a, b)
	return tensor.Shape{m, n}, err
}
func (op matMul) Do(vals ...G.Value) (G.Value, error) {
	a, b := vals[0].(tensor.Tensor), vals[1].(tensor.Tensor)
	m, n, _, err := op.dims(a.Shape(), b.Shape())
	if err != nil {
		return nil, err
	}
	return op.UsePreallocDo(op.buf.get(a.Dtype(), m, n), vals...)
}
func (op matMul) UsePreallocDo(prealloc G.Value, vals ...G.Value) (G.Value, error) {
	a, b := vals[0].(tensor.Tensor), vals[1].(tensor.Tensor)
	m, n, k, err := op.dims(a.Shape(), b.Shape())
	if err != nil {
		return nil, err
	}
	lda, ldb := a.Shape()[1], b.Shape()[1]
	switch ad := a.Data().(type) {
	case []float32:
		sgemm.Gemm(op.transA, op.transB, m, n, k, 1, ad, lda, b.Data().([]float32), ldb, 0, prealloc.Data().([]float32), n)
	case []float64:
		tA, tB := blas.NoTrans, blas.NoTrans
		if op.transA {
			tA = blas.Trans
		}
		if op.transB {
			tB = blas.Trans
		}
		gonum.Implementation{}.Dgemm(tA, tB, m, n, k, 1, ad, lda, b.Data().([]float64), ldb, 0, prealloc.Data().([]float64), n)
	default:
		return nil, fmt.Errorf("ppo: matMul: unsupported input %T", ad)
	}
	return prealloc, nil
}
func (op matMul) ReturnsPtr() bool     { return false }
func (op matMul) CallsExtern() bool    { return false }
func (op matMul) OverwritesInput() int { return -1 }
func (op matMul) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "matMul%v%v%v", op.transA, op.transB, op.noGradA)
}
func (op matMul) Hashcode() uint32 { return hashOp(op) }
func (op matMul) String() string {
	return fmt.Sprintf("MatMul{tA:%v tB:%v}", op.transA, op.transB)
}
func (op matMul) DiffWRT(int) []bool { return []bool{!op.noGradA, true} }
func (op matMul) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	if op.transA || op.transB {
		return nil, fmt.Errorf("ppo: matMul: only the plain product is differentiable")
	}
	db, err := G.ApplyOp(matMul{transA: true, buf: op.buf.sibling()}, inputs[0], grad)
	if err != nil || op.noGradA {
		return G.Nodes{nil, db}, err
	}
	da, err := G.ApplyOp(matMul{transB: true, buf: op.buf.sibling()}, grad, inputs[1])
	return G.Nodes{da, db}, err
}

// outBuf holds one graph node's output tensor across runs, so that Do
// need not allocate it anew each run (a program passes an op's previous
// output to UsePreallocDo anyway; outBuf also serves a graph run by a
// TapeMachine, whose Reset clears its registers). Each
// node needs its own outBuf (a shared one would alias two nodes' outputs);
// a nil *outBuf allocates every time. Every op overwrites its whole
// output, so reusing the memory does not change results.
type outBuf struct{ t *tensor.Dense }

// get returns the cached tensor if it has this dtype and shape, or a new
// one (cached from then on).
func (b *outBuf) get(dt tensor.Dtype, shape ...int) *tensor.Dense {
	if b == nil {
		return tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	}
	if b.t == nil || b.t.Dtype() != dt || !b.t.Shape().Eq(tensor.Shape(shape)) {
		b.t = tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	}
	return b.t
}

// sibling returns a fresh outBuf for a node derived from b's (its
// gradient), or nil if b is nil, so graphs built without buffers stay so.
func (b *outBuf) sibling() *outBuf {
	if b == nil {
		return nil
	}
	return new(outBuf)
}
