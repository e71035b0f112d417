package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"streamscale/ppo/internal/nn"
)

// randomTheta returns parameters for a: normal weights scaled by
// 1/√fan-in and small normal biases, from a fixed stream.
func randomTheta(a *nn.Arch, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	theta := make([]float32, a.Size)
	for _, q := range a.Params {
		s := 0.1
		if !q.Bias {
			s = 1 / math.Sqrt(float64(q.Rows))
		}
		for i := range q.Len() {
			theta[q.Off+i] = float32(r.NormFloat64() * s)
		}
	}
	return theta
}

// TestDistributionByHand checks log-probabilities, entropy and the
// deterministic action of a MultiDiscrete [3, 2] distribution against
// values computed by hand from the logits.
func TestDistributionByHand(t *testing.T) {
	logits := []float32{1, 2, 2, 0, math.Ln2} // dims: [1 2 2], [0 ln2]
	lp := make([]float32, 5)
	nn.LogSoftmaxRows(lp, logits, []int{3, 2})
	z0 := math.E + 2*math.Exp(2)
	want := []float64{1 - math.Log(z0), 2 - math.Log(z0), 2 - math.Log(z0), -math.Log(3), math.Ln2 - math.Log(3)}
	for i := range want {
		if math.Abs(float64(lp[i])-want[i]) > 1e-6 {
			t.Errorf("log p[%d] = %v, want %v", i, lp[i], want[i])
		}
	}
	// A one-layer policy whose actor head outputs exactly these logits:
	// zero weights, biases = logits.
	a, err := nn.NewArch(1, []int{1}, []int{3, 2})
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float32, a.Size)
	for _, q := range a.Params {
		if q.Net == nn.ActorNet && q.Bias && q.Layer == 1 {
			copy(theta[q.Off:], logits)
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
		a, err := nn.NewArch(sh.obs, sh.hidden, sh.nvec)
		if err != nil {
			t.Fatal(err)
		}
		theta := randomTheta(a, 4)
		r := rand.New(rand.NewPCG(7, 8))
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

// BenchmarkForward is one Step on a pred-shaped policy (181 observations,
// 64×64 hidden, nine 5-way dimensions): one observation (the serving
// case) and 14 (a rollout step), through the packed weights and through
// the reference path that repacks on every call.
func BenchmarkForward(b *testing.B) {
	a, _ := nn.NewArch(181, []int{64, 64}, []int{5, 5, 5, 5, 5, 5, 5, 5, 5})
	theta := randomTheta(a, 1)
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
