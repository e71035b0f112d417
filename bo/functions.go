package bo

import "math"

// Benchmark functions for testing optimizers (Dixon & Szegő 1978; see also
// Jones, Schonlau & Welch 1998, Table 1). They return NaN for an input of the
// wrong length.

// BraninMin is the global minimum of Branin, attained at (−π, 12.275),
// (π, 2.275) and (9.42478, 2.475).
const BraninMin = 0.397887

// BraninDims returns the domain of Branin, [−5, 10] × [0, 15].
func BraninDims() []Dim { return []Dim{{Low: -5, High: 10}, {Low: 0, High: 15}} }

// Branin returns the Branin–Hoo function
//
//	f(x) = a(x₂ − b x₁² + c x₁ − r)² + s(1 − t) cos x₁ + s,
//
// a = 1, b = 5.1/(4π²), c = 5/π, r = 6, s = 10, t = 1/(8π).
func Branin(x []float64) float64 {
	if len(x) != 2 {
		return math.NaN()
	}
	const (
		a = 1
		r = 6
		s = 10
	)
	b := 5.1 / (4 * math.Pi * math.Pi)
	c := 5 / math.Pi
	t := 1 / (8 * math.Pi)
	u := x[1] - b*x[0]*x[0] + c*x[0] - r
	return a*u*u + s*(1-t)*math.Cos(x[0]) + s
}

// Hartmann6Min is the global minimum of Hartmann6, attained at
// (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573).
const Hartmann6Min = -3.32237

// Hartmann6Dims returns the domain of Hartmann6, [0, 1]⁶.
func Hartmann6Dims() []Dim {
	d := make([]Dim, 6)
	for i := range d {
		d[i] = Dim{Low: 0, High: 1}
	}
	return d
}

// Hartmann6 returns the six-dimensional Hartmann function
//
//	f(x) = −Σ_{i=1}^{4} α_i exp(−Σ_{j=1}^{6} A_ij (x_j − P_ij)²).
func Hartmann6(x []float64) float64 {
	if len(x) != 6 {
		return math.NaN()
	}
	alpha := [4]float64{1.0, 1.2, 3.0, 3.2}
	a := [4][6]float64{
		{10, 3, 17, 3.5, 1.7, 8},
		{0.05, 10, 17, 0.1, 8, 14},
		{3, 3.5, 1.7, 10, 17, 8},
		{17, 8, 0.05, 10, 0.1, 14},
	}
	p := [4][6]float64{
		{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
		{0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
		{0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
		{0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381},
	}
	var f float64
	for i := range alpha {
		var e float64
		for j, xj := range x {
			t := xj - p[i][j]
			e += a[i][j] * t * t
		}
		f -= alpha[i] * math.Exp(-e)
	}
	return f
}
