package ppo

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"streamscale/ppo/internal/nn"
)

// initParams fills theta with SB3's initialisation: orthogonal weights
// (gain √2 for hidden layers, 0.01 for the policy head, 1 for the value
// head) and zero biases. Weights are drawn in SB3's module order — actor
// hidden layers, critic hidden layers, action head, value head — each as
// PyTorch's nn.init.orthogonal_ does it (QR of a standard normal matrix,
// signs fixed by diag R) from the "ppo/init" stream.
func initParams(a *nn.Arch, theta []float32, src rand.Source) {
	r := rand.New(src)
	var order []nn.Param
	for _, head := range []bool{false, true} {
		for net := range 2 {
			for _, p := range a.Params {
				if !p.Bias && p.Net == net && (p.Layer == a.Layers(net)-1) == head {
					order = append(order, p)
				}
			}
		}
	}
	for i := range theta {
		theta[i] = 0
	}
	for _, p := range order {
		q := orthogonal(p.Cols, p.Rows, p.Gain, r) // PyTorch [out, in]
		for o := 0; o < p.Cols; o++ {
			for in := 0; in < p.Rows; in++ {
				theta[p.Off+in*p.Cols+o] = float32(q[o*p.Rows+in])
			}
		}
	}
}

// setFirstLogitBias sets the bias of the first logit of every action
// dimension to b (Config.FirstLogitBias).
func setFirstLogitBias(a *nn.Arch, theta []float32, b float32) {
	for _, p := range a.Params {
		if p.Bias && p.Net == nn.ActorNet && p.Layer == a.Layers(nn.ActorNet)-1 {
			off := p.Off
			for _, k := range a.Nvec {
				theta[off] = b
				off += k
			}
		}
	}
}

// orthogonal returns a rows×cols (row-major) matrix with orthonormal rows
// or columns, scaled by gain, following torch.nn.init.orthogonal_: draw a
// standard normal rows×cols matrix, transpose it if rows < cols, take Q of
// its QR decomposition with the signs of diag(R) multiplied in, transpose
// back.
func orthogonal(rows, cols int, gain float64, r *rand.Rand) []float64 {
	flat := make([]float64, rows*cols)
	for i := range flat {
		flat[i] = r.NormFloat64()
	}
	m, n := rows, cols
	a := mat.NewDense(rows, cols, flat)
	var src mat.Matrix = a
	if rows < cols {
		m, n = cols, rows
		src = a.T()
	}
	var qr mat.QR
	qr.Factorize(src)
	var q, rr mat.Dense
	qr.QTo(&q)
	qr.RTo(&rr)
	out := make([]float64, rows*cols)
	for j := 0; j < n; j++ {
		d := rr.At(j, j)
		s := 0.0
		switch {
		case d > 0:
			s = 1
		case d < 0:
			s = -1
		}
		for i := 0; i < m; i++ {
			v := q.At(i, j) * s * gain
			if rows < cols {
				out[j*cols+i] = v // transpose back: out is rows(=n)×cols(=m)
			} else {
				out[i*cols+j] = v
			}
		}
	}
	return out
}
