package cartpole

import (
	"math"
	"testing"
)

// TestStepByHand computes one Euler step of the Gymnasium equations by
// hand for a non-trivial state and both actions.
func TestStepByHand(t *testing.T) {
	s := [4]float64{0.01, -0.2, 0.05, 0.3}
	for _, action := range []int{0, 1} {
		e := New()
		e.SetState(s)
		obs, r, term, trunc, err := e.Step(action)
		if err != nil {
			t.Fatal(err)
		}
		f := -10.0
		if action == 1 {
			f = 10
		}
		c, sn := math.Cos(0.05), math.Sin(0.05)
		temp := (f + 0.05*0.3*0.3*sn) / 1.1
		thAcc := (9.8*sn - c*temp) / (0.5 * (4.0/3 - 0.1*c*c/1.1))
		xAcc := temp - 0.05*thAcc*c/1.1
		want := [4]float64{0.01 + 0.02*-0.2, -0.2 + 0.02*xAcc, 0.05 + 0.02*0.3, 0.3 + 0.02*thAcc}
		for i := range want {
			if math.Abs(e.State()[i]-want[i]) > 1e-15 {
				t.Errorf("action %d: state[%d] = %v, want %v", action, i, e.State()[i], want[i])
			}
			if obs[i] != float64(float32(want[i])) {
				t.Errorf("action %d: obs[%d] = %v, want float32 %v", action, i, obs[i], float32(want[i]))
			}
		}
		if r != 1 || term || trunc {
			t.Errorf("reward %v terminated %v truncated %v", r, term, trunc)
		}
	}
}

func TestTermination(t *testing.T) {
	for _, s := range [][4]float64{
		{2.39, 1, 0, 0},    // cart leaves +2.4 m
		{0, 0, -0.209, -1}, // pole passes −12°
	} {
		e := New()
		e.SetState(s)
		_, r, term, trunc, err := e.Step(1)
		if err != nil || !term || trunc || r != 1 {
			t.Errorf("state %v: terminated %v truncated %v reward %v err %v", s, term, trunc, r, err)
		}
		if _, _, _, _, err := e.Step(0); err != ErrNeedsReset {
			t.Errorf("step after termination: %v", err)
		}
	}
}

func TestTruncationAt500(t *testing.T) {
	e := New()
	e.Reset(1)
	steps := 0
	for {
		// Balance with a simple controller: push towards the lean.
		a := 0
		if st := e.State(); st[2]+0.5*st[3] > 0 {
			a = 1
		}
		_, _, term, trunc, err := e.Step(a)
		if err != nil {
			t.Fatal(err)
		}
		steps++
		if term {
			t.Fatalf("terminated at step %d", steps)
		}
		if trunc {
			break
		}
	}
	if steps != MaxEpisodeSteps {
		t.Errorf("truncated after %d steps, want %d", steps, MaxEpisodeSteps)
	}
}

func TestResetSeeded(t *testing.T) {
	a, b, c := New(), New(), New()
	oa, ob, oc := a.Reset(5), b.Reset(5), c.Reset(6)
	if oa != ob || oa == oc {
		t.Errorf("seed 5 twice: %v %v; seed 6: %v", oa, ob, oc)
	}
	for _, v := range a.State() {
		if v < -0.05 || v >= 0.05 {
			t.Errorf("initial state %v outside ±0.05", a.State())
		}
	}
}

// TestVecAutoreset: an ended episode's last observation goes to FinalObs,
// the next episode starts in Obs, and the Episode is reported.
func TestVecAutoreset(t *testing.T) {
	v, err := NewVec(2)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([]float64, 8)
	if err := v.Reset(3, obs); err != nil {
		t.Fatal(err)
	}
	r := &StepResult{Obs: make([]float64, 8), FinalObs: make([]float64, 8), Rewards: make([]float64, 2), Terminated: make([]bool, 2), Truncated: make([]bool, 2)}
	steps := 0
	for len(r.Episodes) == 0 {
		if err := v.Step([]int{1, 1}, r); err != nil {
			t.Fatal(err)
		}
		steps++
	}
	ep := r.Episodes[0]
	if !r.Terminated[ep.Env] || ep.Length != steps || ep.Return != float64(steps) {
		t.Fatalf("episode %+v after %d steps, terminated %v", ep, steps, r.Terminated)
	}
	final := r.FinalObs[ep.Env*4 : ep.Env*4+4]
	next := r.Obs[ep.Env*4 : ep.Env*4+4]
	if math.Abs(final[2]) < ThetaThreshold && math.Abs(final[0]) < XThreshold {
		t.Errorf("final observation %v is not terminal", final)
	}
	for _, x := range next {
		if math.Abs(x) > 0.05 {
			t.Errorf("next observation %v is not a fresh episode", next)
		}
	}
	// State round trip continues identically.
	state, err := v.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	w, _ := NewVec(2)
	if err := w.UnmarshalBinary(state); err != nil {
		t.Fatal(err)
	}
	r2 := &StepResult{Obs: make([]float64, 8), FinalObs: make([]float64, 8), Rewards: make([]float64, 2), Terminated: make([]bool, 2), Truncated: make([]bool, 2)}
	for range 30 {
		if err := v.Step([]int{0, 1}, r); err != nil {
			t.Fatal(err)
		}
		if err := w.Step([]int{0, 1}, r2); err != nil {
			t.Fatal(err)
		}
		for i := range r.Obs {
			if r.Obs[i] != r2.Obs[i] {
				t.Fatal("restored vec diverged")
			}
		}
	}
	if err := v.Step([]int{0, 2}, r); err == nil {
		t.Error("action 2 accepted")
	}
	if err := w.UnmarshalBinary(state[:10]); err == nil {
		t.Error("truncated state accepted")
	}
}
