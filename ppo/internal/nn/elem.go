package nn

// Add writes x + y into z, Mul x·y, and TanhGrad g·(1 − y·y) (the
// gradient through tanh from its output y and upstream g), element by
// element in float32, each operation rounded on its own. Where the CPU
// has AVX2 they run eight lanes at a time in assembly with the same
// operations, so the bits are those of the Go loops (TestElemAssemblyMatchesGo).
// All slices have len(x) (TanhGrad: len(y)) elements; z may be x or y.
func Add(z, x, y []float32) { elem(elemAdd, z, x, y) }

// Mul writes x·y into z (see Add).
func Mul(z, x, y []float32) { elem(elemMul, z, x, y) }

// TanhGrad writes g·(1 − y·y) into dx (see Add).
func TanhGrad(dx, y, g []float32) { elem(elemTanhGrad, dx, y, g) }

// Scale writes x·c into z (see Add).
func Scale(z, x []float32, c float32) {
	z = z[:len(x)]
	n := len(x) / 8
	if elemAsm && n > 0 {
		elem8AVX(elemScale, &z[0], &x[0], &c, n)
		z, x = z[8*n:], x[8*n:]
	}
	for i, v := range x {
		z[i] = v * c
	}
}

const (
	elemAdd = iota
	elemMul
	elemTanhGrad
	elemScale // y points to one factor
)

func elem(op int, z, x, y []float32) {
	z, y = z[:len(x)], y[:len(x)]
	n := len(x) / 8
	if elemAsm && n > 0 {
		elem8AVX(op, &z[0], &x[0], &y[0], n)
		z, x, y = z[8*n:], x[8*n:], y[8*n:]
	}
	elemGo(op, z, x, y)
}

// elemGo is elem in Go; the float32 conversion keeps 1 − y·y from being
// fused (as the compiler may on GOAMD64=v3).
func elemGo(op int, z, x, y []float32) {
	z, y = z[:len(x)], y[:len(x)]
	switch op {
	case elemAdd:
		for i, v := range x {
			z[i] = v + y[i]
		}
	case elemMul:
		for i, v := range x {
			z[i] = v * y[i]
		}
	case elemTanhGrad:
		for i, v := range x {
			z[i] = y[i] * (1 - float32(v*v))
		}
	}
}
