package nn

// expLo and expHi bound the inputs for which math.Exp takes its main path
// with a normal result (no overflow, underflow, denormal or special case)
// with room to spare: 2^round(x·log2 e) is then a normal float64. The
// AVX-512 ExpSlice computes such inputs and leaves the rest to math.Exp.
const (
	expLo = -708
	expHi = 709
)
