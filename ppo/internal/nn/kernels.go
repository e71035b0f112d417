package nn

import "math"

// Scalar is the element type of the nets: float32 for training and
// inference, float64 for the finite-difference gradient tests.
type Scalar interface{ float32 | float64 }

// LogSoftmaxRows writes the blockwise log-softmax of x into y (rows of
// Σnvec), computing in float64.
func LogSoftmaxRows[T Scalar](y, x []T, nvec []int) {
	switch x := any(x).(type) {
	case []float32:
		y := any(y).([]float32)
		Blocks(len(x), nvec, func(off, n int) {
			m := float64(x[off])
			for _, v := range x[off+1 : off+n] {
				m = math.Max(m, float64(v))
			}
			var sum float64
			for _, v := range x[off : off+n] {
				sum += math.Exp(float64(v) - m)
			}
			lse := m + math.Log(sum)
			for i := off; i < off+n; i++ {
				y[i] = float32(float64(x[i]) - lse)
			}
		})
	case []float64:
		y := any(y).([]float64)
		Blocks(len(x), nvec, func(off, n int) {
			m := x[off]
			for _, v := range x[off+1 : off+n] {
				m = math.Max(m, v)
			}
			var sum float64
			for _, v := range x[off : off+n] {
				sum += math.Exp(v - m)
			}
			lse := m + math.Log(sum)
			for i := off; i < off+n; i++ {
				y[i] = x[i] - lse
			}
		})
	}
}

// Blocks calls f(offset, size) for every action-dimension block of every
// row of an n-element [B, Σnvec] matrix, in order.
func Blocks(n int, nvec []int, f func(off, size int)) {
	s := 0
	for _, k := range nvec {
		s += k
	}
	for r := 0; r+s <= n; r += s {
		off := r
		for _, k := range nvec {
			f(off, k)
			off += k
		}
	}
}

// Element-wise functions of ElemApply.
const (
	Tanh = iota
	Exp
)

// ElemApply writes fn(x) into y. The loops are written per type: in a
// generic body math.Exp runs several times slower.
func ElemApply[T Scalar](y, x []T, fn int) {
	switch x := any(x).(type) {
	case []float32:
		y := any(y).([]float32)
		if fn == Exp {
			for i, v := range x {
				y[i] = float32(math.Exp(float64(v)))
			}
			return
		}
		// tanh x = (e−1)/(e+1), e = exp(2x), accurate to float32 precision
		// (|error| < 1e-15 before rounding); e overflows to +Inf above
		// x ≈ 354, giving NaN, fixed to 1 in a second pass (a branch in
		// the first loop makes it ~4× slower).
		for i, v := range x {
			e := math.Exp(2 * float64(v))
			y[i] = float32((e - 1) / (e + 1))
		}
		for i, v := range y {
			if v != v && x[i] > 0 {
				y[i] = 1
			}
		}
	case []float64:
		y := any(y).([]float64)
		if fn == Exp {
			for i, v := range x {
				y[i] = math.Exp(v)
			}
			return
		}
		for i, v := range x {
			y[i] = math.Tanh(v)
		}
	}
}

// BiasApply writes x + b into y, b added to every row of x.
func BiasApply[T Scalar](y, x, b []T) {
	n := len(b)
	for r := 0; r+n <= len(x); r += n {
		for j, v := range b {
			y[r+j] = x[r+j] + v
		}
	}
}
