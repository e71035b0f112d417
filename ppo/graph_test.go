package ppo

import (
	"math"
	"math/rand/v2"
	"testing"

	"streamscale/ppo/internal/nn"
)

// fillLossInputs puts a random but well-conditioned minibatch into lg.
func fillLossInputs[T scalar](lg *lossGraph[T], r *rand.Rand) {
	a := lg.arch
	for i := range lg.aObs {
		lg.aObs[i] = T(r.NormFloat64())
	}
	for i := range lg.onehot {
		lg.onehot[i] = 0
	}
	for b := range lg.batch {
		off := 0
		for _, n := range a.Nvec {
			lg.onehot[b*a.Logits+off+r.IntN(n)] = 1
			off += n
		}
		lg.adv[b] = T(r.NormFloat64())
		lg.ret[b] = T(r.NormFloat64())
		lg.oldV[b] = T(r.NormFloat64() * 0.3)
	}
}

func totalLoss[T scalar](t *testing.T, lg *lossGraph[T], grad []T) float64 {
	t.Helper()
	if err := lg.run(grad, false); err != nil {
		t.Fatal(err)
	}
	return scalarOf(lg.actor.loss) + scalarOf(lg.critic.loss)
}

// TestLossGradientFiniteDifference holds the gorgonia gradient of the full
// PPO loss (clipped surrogate, entropy, clipped value loss) against central
// finite differences, in float64, for uniform and mixed nvec.
func TestLossGradientFiniteDifference(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nvec   []int
		clip   bool
		critic []int // nil: the actor's
	}{{"uniform", []int{3, 3}, true, nil}, {"mixed", []int{3, 2, 4}, true, nil}, {"noclipvf", []int{2}, false, nil}, {"critic_arch", []int{3, 2}, true, []int{8, 5, 3}}} {
		t.Run(tc.name, func(t *testing.T) {
			critic := tc.critic
			if critic == nil {
				critic = []int{6, 4}
			}
			a, err := nn.NewSplitArch(5, []int{6, 4}, critic, tc.nvec)
			if err != nil {
				t.Fatal(err)
			}
			theta := make([]float64, a.Size)
			r := rand.New(rand.NewPCG(1, 2))
			for i := range theta {
				theta[i] = r.NormFloat64() * 0.5
			}
			const B = 7
			lg, err := newLossGraph(a, B, theta, 0.05, 0.5, tc.clip)
			if err != nil {
				t.Fatal(err)
			}
			fillLossInputs(lg, r)
			lg.setClip(0.2, 0.2)
			grad := make([]float64, a.Size)
			totalLoss(t, lg, grad)
			// Old log-probs near the current ones so some ratios are
			// clipped and some are not, none near a kink.
			logp := vectorOf[float64](lg.logp)
			clipped := 0
			for b := range B {
				d := []float64{0.05, -0.4, 0.5, -0.1, 0.35, 0.02, -0.6}[b]
				lg.oldLogp[b] = logp[b] + d
				if math.Abs(d) > 0.25 {
					clipped++
				}
			}
			l0 := totalLoss(t, lg, grad)
			want := append([]float64(nil), grad...)
			const h = 1e-6
			for i := range theta {
				old := theta[i]
				theta[i] = old + h
				lp := totalLoss(t, lg, grad)
				theta[i] = old - h
				lm := totalLoss(t, lg, grad)
				theta[i] = old
				fd := (lp - lm) / (2 * h)
				if d := math.Abs(fd - want[i]); d > 1e-6*math.Max(1, math.Abs(fd)) {
					t.Errorf("param %d: graph %.9g, finite difference %.9g", i, want[i], fd)
				}
			}
			if math.IsNaN(l0) || clipped == 0 {
				t.Fatalf("loss %v, clipped %d", l0, clipped)
			}
		})
	}
}
