package ppo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDistributionByHand checks log-probabilities, entropy and the
// deterministic action of a MultiDiscrete [3, 2] distribution against
// values computed by hand from the logits.
func TestDistributionByHand(t *testing.T) {
	logits := []float32{1, 2, 2, 0, math.Ln2} // dims: [1 2 2], [0 ln2]
	lp := make([]float32, 5)
	logSoftmaxRows(lp, logits, []int{3, 2})
	z0 := math.E + 2*math.Exp(2)
	want := []float64{1 - math.Log(z0), 2 - math.Log(z0), 2 - math.Log(z0), -math.Log(3), math.Ln2 - math.Log(3)}
	for i := range want {
		if math.Abs(float64(lp[i])-want[i]) > 1e-6 {
			t.Errorf("log p[%d] = %v, want %v", i, lp[i], want[i])
		}
	}
	// A one-layer policy whose actor head outputs exactly these logits:
	// zero weights, biases = logits.
	a, err := newArch(1, []int{1}, []int{3, 2})
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float32, a.size)
	for _, q := range a.params {
		if q.net == actorNet && q.bias && q.layer == 1 {
			copy(theta[q.off:], logits)
		}
	}
	p := newPolicy(a, theta)
	obs := []float64{0.3}
	act := make([]int, 2)
	if _, err := p.Act(obs, true, nil, act); err != nil {
		t.Fatal(err)
	}
	if act[0] != 1 || act[1] != 1 { // tie 2,2 → first index; ln2 > 0
		t.Errorf("deterministic action %v, want [1 1]", act)
	}
	lps, ents, vals := make([]float64, 1), make([]float64, 1), make([]float64, 1)
	if err := p.Evaluate(obs, []int{2, 0}, lps, ents, vals); err != nil {
		t.Fatal(err)
	}
	if w := want[2] + want[3]; math.Abs(lps[0]-w) > 1e-6 {
		t.Errorf("log π([2 0]) = %v, want %v", lps[0], w)
	}
	var h float64
	for _, l := range want {
		h -= math.Exp(l) * l
	}
	if math.Abs(ents[0]-h) > 1e-6 {
		t.Errorf("entropy = %v, want %v", ents[0], h)
	}
	// Sampling follows the probabilities.
	r := rand.New(rand.NewPCG(3, 4))
	counts := [3]int{}
	const n = 20000
	for range n {
		if _, err := p.Act(obs, false, r, act); err != nil {
			t.Fatal(err)
		}
		counts[act[0]]++
	}
	for i, c := range counts {
		if pr := math.Exp(want[i]); math.Abs(float64(c)/n-pr) > 0.015 {
			t.Errorf("choice %d sampled %.3f, want %.3f", i, float64(c)/n, pr)
		}
	}
	if err := p.Evaluate(obs, []int{3, 0}, lps, ents, vals); err == nil {
		t.Error("out-of-range action accepted")
	}
	if _, err := p.Act([]float64{1, 2}, true, nil, act); err == nil {
		t.Error("wrong observation size accepted")
	}
}

// TestOrthogonalInit: weights have orthonormal rows or columns times the
// gain; biases are zero; the same seed gives the same bits.
func TestOrthogonalInit(t *testing.T) {
	a, err := newArch(10, []int{8, 8}, []int{3, 3})
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float32, a.size)
	a.initParams(theta, NewStream(7, StreamInit))
	for _, q := range a.params {
		v := theta[q.off : q.off+q.size()]
		if q.bias {
			for _, x := range v {
				if x != 0 {
					t.Fatalf("%s not zero", q.name)
				}
			}
			continue
		}
		// Gram matrix of the smaller side: (W Wᵀ or WᵀW)/gain² = I.
		rows, cols := q.rows, q.cols // stored [in, out]
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
					want = q.gain * q.gain
				}
				if math.Abs(s-want) > 1e-5 {
					t.Fatalf("%s: gram[%d,%d] = %v, want %v", q.name, i, j, s, want)
				}
			}
		}
	}
	again := make([]float32, a.size)
	a.initParams(again, NewStream(7, StreamInit))
	other := make([]float32, a.size)
	a.initParams(other, NewStream(8, StreamInit))
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
// values bit for bit and its log-probabilities and entropy to rounding.
func TestPolicyMatchesGraph(t *testing.T) {
	a, err := newArch(11, []int{16, 16}, []int{5, 5, 5})
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float32, a.size)
	a.initParams(theta, NewStream(1, StreamInit))
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
	if err := lg.run(make([]float32, a.size), false); err != nil {
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
	p := newPolicy(a, theta)
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

// TestPackedMatchesDirect: the packed-weight forward pass gives exactly
// the bits of the reference path that multiplies through sgemm.Gemm and
// repacks every call, for single observations and batches around the
// kernel's 6-row tiles, on shapes around its 16- and 64-column panels.
func TestPackedMatchesDirect(t *testing.T) {
	for _, sh := range []struct {
		obs    int
		hidden []int
		nvec   []int
	}{
		{181, []int{64, 64}, []int{5, 5, 5, 5, 5, 5, 5, 5, 5}},
		{11, []int{16, 16}, []int{5, 5, 5}},
		{7, []int{70}, []int{3, 17}},
		{1, []int{1}, []int{2}},
	} {
		a, err := newArch(sh.obs, sh.hidden, sh.nvec)
		if err != nil {
			t.Fatal(err)
		}
		theta := make([]float32, a.size)
		a.initParams(theta, NewStream(4, StreamInit))
		r := rand.New(rand.NewPCG(7, 8))
		for i := range theta {
			theta[i] += float32(r.NormFloat64() * 0.1)
		}
		packed := newPolicy(a, theta)
		direct := &Policy{arch: a, theta: theta, direct: true}
		clone := packed.Clone()
		dims := len(sh.nvec)
		for _, n := range []int{1, 2, 5, 6, 7, 13, 24, 25} {
			obs := make([]float64, n*sh.obs)
			for i := range obs {
				obs[i] = r.NormFloat64()
			}
			for _, det := range []bool{true, false} {
				var got [3][]float64
				var acts [3][]int
				for i, p := range []*Policy{direct, packed, clone} {
					acts[i], got[i] = make([]int, n*dims), make([]float64, 2*n)
					if err := p.Step(obs, det, rand.New(rand.NewPCG(1, uint64(n))), acts[i], got[i][:n], got[i][n:]); err != nil {
						t.Fatal(err)
					}
				}
				for i := 1; i < 3; i++ {
					for j := range got[0] {
						if math.Float64bits(got[i][j]) != math.Float64bits(got[0][j]) {
							t.Fatalf("%v n=%d det=%v policy %d: output %d = %v, direct %v", sh, n, det, i, j, got[i][j], got[0][j])
						}
					}
					for j := range acts[0] {
						if acts[i][j] != acts[0][j] {
							t.Fatalf("%v n=%d det=%v policy %d: action %d = %d, direct %d", sh, n, det, i, j, acts[i][j], acts[0][j])
						}
					}
				}
			}
		}
	}
}

// TestTrainerPolicyFollowsWeights: the trainer's policy views weights
// that every update rewrites; after training it must answer as a fresh
// reference policy over the final weights, not from stale packed ones.
func TestTrainerPolicyFollowsWeights(t *testing.T) {
	tr, _ := train(t, smallConfig(5), 1)
	direct := &Policy{arch: tr.arch, theta: append([]float32(nil), tr.theta...), direct: true}
	obs := []float64{0.1, -0.2, 0.03, 0.4}
	for _, p := range []*Policy{tr.policy, tr.Policy()} {
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

// BenchmarkForward is one Step on a pred-shaped policy (181 observations,
// 64×64 hidden, nine 5-way dimensions): one observation (the serving
// case) and 14 (a rollout step), through the packed weights and through
// the reference path that repacks on every call.
func BenchmarkForward(b *testing.B) {
	a, _ := newArch(181, []int{64, 64}, []int{5, 5, 5, 5, 5, 5, 5, 5, 5})
	theta := make([]float32, a.size)
	a.initParams(theta, NewStream(1, StreamInit))
	for _, n := range []int{1, 14} {
		for _, direct := range []bool{false, true} {
			name := fmt.Sprintf("rows=%d/packed", n)
			if direct {
				name = fmt.Sprintf("rows=%d/direct", n)
			}
			b.Run(name, func(b *testing.B) {
				p := newPolicy(a, theta)
				p.direct = direct
				r := rand.New(rand.NewPCG(1, 2))
				obs := make([]float64, n*181)
				for i := range obs {
					obs[i] = r.Float64()
				}
				acts, vals, lps := make([]int, n*9), make([]float64, n), make([]float64, n)
				b.ReportAllocs()
				for b.Loop() {
					if err := p.Step(obs, n == 1, r, acts, vals, lps); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
