package ppo

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Nets.
const (
	actorNet  = 0
	criticNet = 1
)

// param describes one parameter tensor of the actor-critic. Training keeps
// all parameters in one flat float32 vector, actor first, each weight
// stored input-major ([in, out], so a batch is X·W) and each bias as
// [1, out]. Artifacts store PyTorch's layout ([out, in] and [out]).
type param struct {
	name  string  // PyTorch name, e.g. "actor.0.weight"
	net   int     // actorNet or criticNet
	layer int     // index among the net's linear layers
	rows  int     // input width (weights) or 1 (biases)
	cols  int     // output width
	bias  bool    // bias vector rather than weight matrix
	gain  float64 // orthogonal init gain (weights only)
	off   int     // offset in the flat vector
}

func (p param) size() int { return p.rows * p.cols }

// arch is the network shape: two MLPs over the flat observation, tanh
// hidden layers, an actor head of sum(nvec) logits and a critic head of 1.
type arch struct {
	obs    int
	hidden []int
	nvec   []int
	logits int // sum(nvec)
	params []param
	size   int // total parameter count
	split  int // first critic parameter in the flat vector
}

func newArch(obs int, hidden, nvec []int) (*arch, error) {
	if obs < 1 {
		return nil, fmt.Errorf("ppo: observation size must be positive, got %d", obs)
	}
	if len(nvec) == 0 {
		return nil, fmt.Errorf("ppo: action nvec is empty")
	}
	a := &arch{obs: obs, hidden: append([]int(nil), hidden...), nvec: append([]int(nil), nvec...)}
	for i, n := range nvec {
		if n < 1 {
			return nil, fmt.Errorf("ppo: action dimension %d has %d choices", i, n)
		}
		a.logits += n
	}
	for net, name := range []string{"actor", "critic"} {
		if net == criticNet {
			a.split = a.size
		}
		in := obs
		out := a.logits
		if net == criticNet {
			out = 1
		}
		widths := append(append([]int(nil), hidden...), out)
		for l, w := range widths {
			gain := math.Sqrt2
			if l == len(widths)-1 {
				gain = 0.01
				if net == criticNet {
					gain = 1
				}
			}
			idx := 2 * l // nn.Sequential index: Linear, Tanh, Linear, Tanh, Linear
			wp := param{name: fmt.Sprintf("%s.%d.weight", name, idx), net: net, layer: l, rows: in, cols: w, gain: gain, off: a.size}
			a.size += wp.size()
			bp := param{name: fmt.Sprintf("%s.%d.bias", name, idx), net: net, layer: l, rows: 1, cols: w, bias: true, off: a.size}
			a.size += bp.size()
			a.params = append(a.params, wp, bp)
			in = w
		}
	}
	return a, nil
}

// layers is the number of linear layers per net.
func (a *arch) layers() int { return len(a.hidden) + 1 }

// initParams fills theta with SB3's initialisation: orthogonal weights
// (gain √2 for hidden layers, 0.01 for the policy head, 1 for the value
// head) and zero biases. Weights are drawn in SB3's module order — actor
// hidden layers, critic hidden layers, action head, value head — each as
// PyTorch's nn.init.orthogonal_ does it (QR of a standard normal matrix,
// signs fixed by diag R) from the "ppo/init" stream.
func (a *arch) initParams(theta []float32, src rand.Source) {
	r := rand.New(src)
	var order []param
	for _, head := range []bool{false, true} {
		for net := range 2 {
			for _, p := range a.params {
				if !p.bias && p.net == net && (p.layer == a.layers()-1) == head {
					order = append(order, p)
				}
			}
		}
	}
	for i := range theta {
		theta[i] = 0
	}
	for _, p := range order {
		q := orthogonal(p.cols, p.rows, p.gain, r) // PyTorch [out, in]
		for o := 0; o < p.cols; o++ {
			for in := 0; in < p.rows; in++ {
				theta[p.off+in*p.cols+o] = float32(q[o*p.rows+in])
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
