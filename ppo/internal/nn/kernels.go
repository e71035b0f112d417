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
		logSoftmax32(any(y).([]float32), x, nvec)
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

// logSoftmax32 is LogSoftmaxRows for float32: per block m = max x (math.Max
// in index order), sum = Σ exp(x − m) from zero in index order, lse =
// m + log(sum), y = float32(x − lse). The exponentials of up to
// lsmScratch elements at a time go through ExpSlice (math.Exp's bits,
// eight lanes at a time where the CPU has AVX-512).
func logSoftmax32(y, x []float32, nvec []int) {
	w := 0
	for _, k := range nvec {
		w += k
	}
	if w == 0 {
		return
	}
	var e, ms [lsmScratch]float64
	rows := max(1, lsmScratch/w)
	for r0 := 0; r0+w <= len(x); r0 += rows * w {
		xs := x[r0:min(len(x)/w*w, r0+rows*w)]
		if len(xs) > lsmScratch { // one row wider than the scratch
			logSoftmax32Slow(y[r0:r0+len(xs)], xs, nvec)
			continue
		}
		// Row by row, block by block, without Blocks' closure calls.
		nb := 0
		for off := 0; off < len(xs); {
			for _, n := range nvec {
				b := xs[off : off+n]
				m := float64(b[0])
				for _, v := range b[1:] {
					m = math.Max(m, float64(v))
				}
				eb := e[off : off+n]
				for i, v := range b {
					eb[i] = float64(v) - m
				}
				ms[nb] = m
				nb++
				off += n
			}
		}
		ExpSlice(e[:len(xs)], e[:len(xs)])
		ys := y[r0 : r0+len(xs)]
		nb = 0
		for off := 0; off < len(xs); {
			for _, n := range nvec {
				var sum float64
				for _, v := range e[off : off+n] {
					sum += v
				}
				lse := ms[nb] + math.Log(sum)
				nb++
				yb, b := ys[off:off+n], xs[off:off+n]
				for i, v := range b {
					yb[i] = float32(float64(v) - lse)
				}
				off += n
			}
		}
	}
}

// lsmScratch is logSoftmax32's batch of exponentials (on the stack).
const lsmScratch = 1024

// logSoftmax32Slow is logSoftmax32 one exponential at a time.
func logSoftmax32Slow(y, x []float32, nvec []int) {
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
		tanh32(y, x)
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

// BiasApply writes x + b into y, b added to every row of x (float32 rows
// through Add).
func BiasApply[T Scalar](y, x, b []T) {
	n := len(b)
	if x32, ok := any(x).([]float32); ok {
		y32, b32 := any(y).([]float32), any(b).([]float32)
		for r := 0; r+n <= len(x32); r += n {
			Add(y32[r:r+n], x32[r:r+n], b32)
		}
		return
	}
	for r := 0; r+n <= len(x); r += n {
		for j, v := range b {
			y[r+j] = x[r+j] + v
		}
	}
}

// tanhClamp is where tanh32 saturates: tanh(9) = 1 − 3.0e-8 rounds to
// 1 in float32.
const tanhClamp = 9

// Coefficients of tanh x ≈ x·P(x²)/Q(x²) on [−9, 9], P of degree 5 and Q
// of degree 4 in x². This package fitted them (weighted least squares on
// the relative error over 10⁵ points, reweighted towards the worst
// points); in float64 the fit's relative error is below 1.3e-9, so the
// result rounded to float32 is within 1 ulp of tanh for every float32
// input (correctly rounded for 89% of a dense grid on [−10, 10]:
// TestTanh32).
var (
	tanhP = [...]float64{0x1.fffffff54471ep-1, 0x1.182e101993ec1p-3, 0x1.fb26e5e75cea8p-9, 0x1.d6342af2454f2p-16, 0x1.071d3b7cb4d34p-25, -0x1.ae90c57347088p-37}
	tanhQ = [...]float64{1, 0x1.e16c5c8db9aebp-2, 0x1.be73accc26a43p-6, 0x1.9d2b1045e4118p-12, 0x1.59eddaaa178afp-20}
)

// tanh32Go writes tanh(x) into y: a rational function evaluated in float64
// without branches (the clamp compiles to min/max), about 5× faster than
// through math.Exp. tanh32 runs it four lanes at a time in assembly where
// the CPU has AVX, with the same operations in the same order, so the
// results are the same bits (TestTanh32AssemblyMatchesGo). PyTorch's float32 tanh is a vectorised approximation
// too, not correctly rounded. The explicit float64 conversions keep the
// compiler from fusing multiply-adds, so the bits do not depend on the
// target's FMA support. NaN stays NaN.
func tanh32Go(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		t := min(max(float64(v), -tanhClamp), tanhClamp)
		t2 := t * t
		p := float64(tanhP[5]*t2) + tanhP[4]
		p = float64(p*t2) + tanhP[3]
		p = float64(p*t2) + tanhP[2]
		p = float64(p*t2) + tanhP[1]
		p = float64(p*t2) + tanhP[0]
		q := float64(tanhQ[4]*t2) + tanhQ[3]
		q = float64(q*t2) + tanhQ[2]
		q = float64(q*t2) + tanhQ[1]
		q = float64(q*t2) + tanhQ[0]
		y[i] = float32(t * p / q)
	}
}
