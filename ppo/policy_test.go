package ppo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"streamscale/ppo/internal/nn"
	"streamscale/ppo/policy"
	"streamscale/rng"
)

// TestOrthogonalInit: weights have orthonormal rows or columns times the
// gain; biases are zero; the same seed gives the same bits.
func TestOrthogonalInit(t *testing.T) {
	a, err := nn.NewArch(10, []int{8, 8}, []int{3, 3})
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float32, a.Size)
	initParams(a, theta, rng.Source(7, rng.PPOInit))
	for _, q := range a.Params {
		v := theta[q.Off : q.Off+q.Len()]
		if q.Bias {
			for _, x := range v {
				if x != 0 {
					t.Fatalf("%s not zero", q.Name)
				}
			}
			continue
		}
		// Gram matrix of the smaller side: (W Wᵀ or WᵀW)/gain² = I.
		rows, cols := q.Rows, q.Cols // stored [in, out]
		small, large := min(rows, cols), max(rows, cols)
		for i := range small {
			for j := range small {
				var s float64
				for k := range large {
					var x, y float32
					if rows <= cols {
						x, y = v[i*cols+k], v[j*cols+k]
					} else {
						x, y = v[k*cols+i], v[k*cols+j]
					}
					s += float64(x) * float64(y)
				}
				want := 0.0
				if i == j {
					want = q.Gain * q.Gain
				}
				if math.Abs(s-want) > 1e-5 {
					t.Fatalf("%s: gram[%d,%d] = %v, want %v", q.Name, i, j, s, want)
				}
			}
		}
	}
	again := make([]float32, a.Size)
	initParams(a, again, rng.Source(7, rng.PPOInit))
	other := make([]float32, a.Size)
	initParams(a, other, rng.Source(8, rng.PPOInit))
	same, diff := true, false
	for i := range theta {
		same = same && math.Float32bits(theta[i]) == math.Float32bits(again[i])
		diff = diff || theta[i] != other[i]
	}
	if !same || !diff {
		t.Errorf("same seed identical: %v; other seed differs: %v", same, diff)
	}
}

// TestPolicyMatchesGraph: plain-Go inference gives the training graph's
// values bit for bit and its log-probabilities and entropy to rounding,
// with one architecture for both nets and with a critic of its own.
func TestPolicyMatchesGraph(t *testing.T) {
	for _, critic := range [][]int{{16, 16}, {32, 8, 4}} {
		t.Run(fmt.Sprint(critic), func(t *testing.T) { testPolicyMatchesGraph(t, critic) })
	}
}

func testPolicyMatchesGraph(t *testing.T, critic []int) {
	a, err := nn.NewSplitArch(11, []int{16, 16}, critic, []int{5, 5, 5})
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float32, a.Size)
	initParams(a, theta, rng.Source(1, rng.PPOInit))
	r := rand.New(rand.NewPCG(5, 6))
	for i := range theta { // move off the init so the heads are not tiny
		theta[i] += float32(r.NormFloat64() * 0.1)
	}
	const B = 9
	lg, err := newLossGraph(a, B, theta, 0.05, 0.5, true)
	if err != nil {
		t.Fatal(err)
	}
	fillLossInputs(lg, r)
	lg.setClip(0.2, 0.2)
	if err := lg.run(make([]float32, a.Size), false); err != nil {
		t.Fatal(err)
	}
	obs := make([]float64, len(lg.aObs))
	for i, v := range lg.aObs {
		obs[i] = float64(v)
	}
	actions := make([]int, B*3)
	for b := range B {
		for d := range 3 {
			for k := range 5 {
				if lg.onehot[b*15+d*5+k] == 1 {
					actions[b*3+d] = k
				}
			}
		}
	}
	p, err := policy.NewSplit(a.Obs, a.Hidden, a.CriticHidden, a.Nvec, theta)
	if err != nil {
		t.Fatal(err)
	}
	lps, ents, vals := make([]float64, B), make([]float64, B), make([]float64, B)
	if err := p.Evaluate(obs, actions, lps, ents, vals); err != nil {
		t.Fatal(err)
	}
	gv, glp := vectorOf[float32](lg.value), vectorOf[float32](lg.logp)
	var meanEnt float64
	for b := range B {
		if math.Float32bits(float32(vals[b])) != math.Float32bits(gv[b]) {
			t.Errorf("value %d: policy %v, graph %v", b, vals[b], gv[b])
		}
		if math.Abs(lps[b]-float64(glp[b])) > 1e-5 {
			t.Errorf("log-prob %d: policy %v, graph %v", b, lps[b], glp[b])
		}
		meanEnt += ents[b] / B
	}
	if ge := scalarOf(lg.ent); math.Abs(-meanEnt-ge) > 1e-5 {
		t.Errorf("entropy loss: policy %v, graph %v", -meanEnt, ge)
	}
}

// TestTrainerPolicyFollowsWeights: the trainer's policy views weights
// that every update rewrites; after training it must answer as a fresh
// policy over a copy of the final weights, not from stale packed ones.
func TestTrainerPolicyFollowsWeights(t *testing.T) {
	tr, _ := train(t, smallConfig(5), 1)
	direct, err := policy.New(tr.arch.Obs, tr.arch.Hidden, tr.arch.Nvec, append([]float32(nil), tr.theta...))
	if err != nil {
		t.Fatal(err)
	}
	obs := []float64{0.1, -0.2, 0.03, 0.4}
	for _, p := range []*policy.Policy{tr.policy, tr.Policy()} {
		var got, want [1]float64
		if err := p.Values(obs, got[:]); err != nil {
			t.Fatal(err)
		}
		if err := direct.Values(obs, want[:]); err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(got[0]) != math.Float64bits(want[0]) {
			t.Errorf("value %v, reference over the trained weights %v", got[0], want[0])
		}
	}
}
