package ppo

import (
	"math"
	"testing"

	"streamscale/ppo/internal/nn"
)

// TestAdamStepByHand checks two Adam steps against the update written
// out with PyTorch's formula.
func TestAdamStepByHand(t *testing.T) {
	a := newAdam(2, 1e-5)
	theta := []float32{1, -2}
	lr := 0.1
	grads := [][]float32{{0.5, -1}, {-0.25, 2}}
	want := []float64{1, -2}
	m, v := []float64{0, 0}, []float64{0, 0}
	for step, g := range grads {
		a.update(theta, g, lr)
		k := float64(step + 1)
		for i := range want {
			m[i] = 0.9*m[i] + 0.1*float64(g[i])
			v[i] = 0.999*v[i] + 0.001*float64(g[i])*float64(g[i])
			mh := m[i] / (1 - math.Pow(0.9, k))
			denom := math.Sqrt(v[i])/math.Sqrt(1-math.Pow(0.999, k)) + 1e-5
			want[i] -= lr * mh / denom
		}
		for i := range want {
			if math.Abs(float64(theta[i])-want[i]) > 1e-6 {
				t.Fatalf("step %d: θ[%d] = %v, want %v", step+1, i, theta[i], want[i])
			}
		}
	}
}

func TestClipGradNorm(t *testing.T) {
	a, err := nn.NewArch(2, []int{1}, []int{2})
	if err != nil {
		t.Fatal(err)
	}
	grad := make([]float32, a.Size)
	grad[0], grad[len(grad)-1] = 3, 4 // global norm 5
	n := clipGradNorm(grad, a.Params, 0.5)
	if n != 5 {
		t.Errorf("norm = %v, want 5", n)
	}
	c := 0.5 / (5 + 1e-6)
	if math.Abs(float64(grad[0])-3*c) > 1e-7 || math.Abs(float64(grad[len(grad)-1])-4*c) > 1e-7 {
		t.Errorf("clipped = %v, %v", grad[0], grad[len(grad)-1])
	}
	// Below the limit nothing changes.
	grad[0], grad[len(grad)-1] = 0.03, 0.04
	clipGradNorm(grad, a.Params, 0.5)
	if grad[0] != 0.03 || grad[len(grad)-1] != 0.04 {
		t.Errorf("unclipped gradient changed: %v", grad)
	}
}
