package nn

import (
	"fmt"
	"math"
)

// Nets.
const (
	ActorNet  = 0
	CriticNet = 1
)

// Param describes one parameter tensor of the actor-critic in the flat
// vector (see the package doc for the layout).
type Param struct {
	Name  string  // PyTorch name, e.g. "actor.0.weight"
	Net   int     // ActorNet or CriticNet
	Layer int     // index among the net's linear layers
	Rows  int     // input width (weights) or 1 (biases)
	Cols  int     // output width
	Bias  bool    // bias vector rather than weight matrix
	Gain  float64 // orthogonal init gain (weights only)
	Off   int     // offset in the flat vector
}

// Len is the number of values of the parameter.
func (p Param) Len() int { return p.Rows * p.Cols }

// Arch is the network shape: two MLPs over the flat observation, tanh
// hidden layers, an actor head of Σnvec logits and a critic head of 1.
type Arch struct {
	Obs          int
	Hidden       []int // the actor's hidden widths
	CriticHidden []int // the critic's hidden widths
	Nvec         []int
	Logits       int // Σnvec
	Params       []Param
	Size         int // total parameter count
	Split        int // first critic parameter in the flat vector
}

// NewArch returns the layout of an actor-critic with obs inputs, the
// given hidden widths in both nets and a MultiDiscrete nvec head.
func NewArch(obs int, hidden, nvec []int) (*Arch, error) {
	return NewSplitArch(obs, hidden, hidden, nvec)
}

// NewSplitArch is NewArch with separate hidden widths for the actor and
// the critic (SB3's net_arch=dict(pi=actor, vf=critic)).
func NewSplitArch(obs int, actor, critic, nvec []int) (*Arch, error) {
	if obs < 1 {
		return nil, fmt.Errorf("ppo: observation size must be positive, got %d", obs)
	}
	if len(nvec) == 0 {
		return nil, fmt.Errorf("ppo: action nvec is empty")
	}
	for net, hidden := range [][]int{actor, critic} {
		for i, h := range hidden {
			if h < 1 {
				return nil, fmt.Errorf("ppo: %s hidden layer %d has width %d", [2]string{"actor", "critic"}[net], i, h)
			}
		}
	}
	a := &Arch{Obs: obs, Hidden: append([]int(nil), actor...), CriticHidden: append([]int(nil), critic...), Nvec: append([]int(nil), nvec...)}
	for i, n := range nvec {
		if n < 1 {
			return nil, fmt.Errorf("ppo: action dimension %d has %d choices", i, n)
		}
		a.Logits += n
	}
	for net, name := range []string{"actor", "critic"} {
		if net == CriticNet {
			a.Split = a.Size
		}
		in := obs
		out := a.Logits
		if net == CriticNet {
			out = 1
		}
		widths := append(append([]int(nil), a.NetHidden(net)...), out)
		for l, w := range widths {
			gain := math.Sqrt2
			if l == len(widths)-1 {
				gain = 0.01
				if net == CriticNet {
					gain = 1
				}
			}
			idx := 2 * l // nn.Sequential index: Linear, Tanh, Linear, Tanh, Linear
			wp := Param{Name: fmt.Sprintf("%s.%d.weight", name, idx), Net: net, Layer: l, Rows: in, Cols: w, Gain: gain, Off: a.Size}
			a.Size += wp.Len()
			bp := Param{Name: fmt.Sprintf("%s.%d.bias", name, idx), Net: net, Layer: l, Rows: 1, Cols: w, Bias: true, Off: a.Size}
			a.Size += bp.Len()
			a.Params = append(a.Params, wp, bp)
			in = w
		}
	}
	return a, nil
}

// NetHidden is the hidden widths of net (ActorNet or CriticNet).
func (a *Arch) NetHidden(net int) []int {
	if net == CriticNet {
		return a.CriticHidden
	}
	return a.Hidden
}

// Layers is the number of linear layers of net.
func (a *Arch) Layers(net int) int { return len(a.NetHidden(net)) + 1 }

// LayerIndex numbers the linear layers of both nets, actor first: layer l
// of net is LayerIndex(net, l) of Layers(ActorNet)+Layers(CriticNet).
func (a *Arch) LayerIndex(net, l int) int {
	if net == CriticNet {
		return a.Layers(ActorNet) + l
	}
	return l
}

// Layer returns the weight and bias parameters of a net's layer l.
func (a *Arch) Layer(net, l int) (w, b Param) {
	for _, q := range a.Params {
		if q.Net == net && q.Layer == l {
			if q.Bias {
				b = q
			} else {
				w = q
			}
		}
	}
	return w, b
}

// CheckActions reports an action index outside its dimension's range.
func (a *Arch) CheckActions(actions []int) error {
	d := len(a.Nvec)
	for i, c := range actions {
		if c < 0 || c >= a.Nvec[i%d] {
			return fmt.Errorf("ppo: action %d of row %d is %d, want [0, %d)", i%d, i/d, c, a.Nvec[i%d])
		}
	}
	return nil
}

// MaxEntropy is the largest entropy of the MultiDiscrete head, that of
// uniform choices: Σ_d log nvec_d (nats).
func (a *Arch) MaxEntropy() float64 {
	var h float64
	for _, k := range a.Nvec {
		h += math.Log(float64(k))
	}
	return h
}
