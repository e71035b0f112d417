package simvec

import (
	"math"
	"slices"
	"testing"

	"streamscale/agents/residual"
	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/ppo"
)

func residualVec(t *testing.T, obj *Lagrangian) *Residual {
	t.Helper()
	w := make(rates, 40)
	for i := range w {
		w[i] = 1500 + 1400*math.Sin(float64(i)/4)
	}
	var inner []*env.VecEnv
	for _, p := range []uint64{42, 37, 2001} {
		c, err := env.EdgeConfig("etl", p, w)
		if err != nil {
			t.Fatal(err)
		}
		e, err := env.NewVec([]env.Config{c}, env.SameStep, 1)
		if err != nil {
			t.Fatal(err)
		}
		inner = append(inner, e)
	}
	v, err := New(inner, 2)
	if err != nil {
		t.Fatal(err)
	}
	rule, err := rulespec.Parse("threshold:measured:target=0.7:tol=0.1:window=10")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewResidual(v, rule, residual.NoContext, obj)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// trace steps r for steps steps from Reset(root) with actions drawn from a
// fixed pattern and returns every observation, reward and end flag, and
// r's state after cut steps (nil if cut < 0).
func trace(t *testing.T, r *Residual, root uint64, steps, cut int, restore []byte) (out []float64, state []byte) {
	t.Helper()
	n, d := r.NumEnvs(), len(r.Nvec())
	obs := make([]float64, n*r.ObsSize())
	if err := r.Reset(root, obs); err != nil {
		t.Fatal(err)
	}
	res := ppo.NewStepResult(n, r.ObsSize())
	acts := make([]int, n*d)
	for s := range steps {
		if s == cut {
			var err error
			if state, err = r.MarshalBinary(); err != nil {
				t.Fatal(err)
			}
			if restore != nil {
				if err := r.UnmarshalBinary(restore); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range acts {
			acts[i] = (s*7 + i*3) % 5
		}
		if err := r.Step(acts, res); err != nil {
			t.Fatal(err)
		}
		if s >= cut {
			out = append(out, res.Obs...)
			out = append(out, res.Rewards...)
			out = append(out, r.Lambda())
			for i := range n {
				if res.Truncated[i] {
					out = append(out, res.FinalObs[i*r.ObsSize():(i+1)*r.ObsSize()]...)
				}
			}
		}
	}
	return out, state
}

// TestResidualDeterministicAndResumable: the same seed gives the same
// observations, rewards and multiplier; a state saved mid-run (across an
// episode boundary and a dual update) and restored into another run that
// had gone elsewhere continues bitwise as the original.
func TestResidualDeterministicAndResumable(t *testing.T) {
	obj := &Lagrangian{Budget: 0.01, Init: 1, LR: 20, Window: 7}
	a, _ := trace(t, residualVec(t, obj), 9, 90, -1, nil)
	b, _ := trace(t, residualVec(t, obj), 9, 90, -1, nil)
	if !slices.Equal(a, b) {
		t.Fatal("two runs of one seed differ")
	}
	full, state := trace(t, residualVec(t, obj), 9, 90, 50, nil)
	// A run from another root that restores, at step 50, the state of
	// the first run's step 50 must reproduce the first run's tail.
	other := residualVec(t, &Lagrangian{Budget: 0.01, Init: 1, LR: 20, Window: 7})
	tail, diverged := trace(t, other, 10, 90, 50, state)
	if slices.Equal(diverged, state) {
		t.Fatal("the other run (another root) reached the same state: the restore is not tested")
	}
	if !slices.Equal(full, tail) {
		t.Fatal("a run restored from a mid-run state does not continue as the original")
	}
	// The multiplier moved: the dual step ran.
	if a[len(a)-1] == 1 {
		t.Error("λ never moved from its initial value")
	}
	r := residualVec(t, obj)
	for _, cut := range []int{0, 10, len(state) - 1} {
		if err := r.UnmarshalBinary(state[:cut]); err == nil {
			t.Errorf("state cut at %d bytes accepted", cut)
		}
	}
}

// TestLagrangianReward: the reward is −CPU share − λ·violated, and λ
// follows the projected dual step.
func TestLagrangianReward(t *testing.T) {
	r := residualVec(t, &Lagrangian{Budget: 0.5, Init: 3, LR: 2, Window: 1})
	n, d := r.NumEnvs(), len(r.Nvec())
	obs := make([]float64, n*r.ObsSize())
	if err := r.Reset(1, obs); err != nil {
		t.Fatal(err)
	}
	res := ppo.NewStepResult(n, r.ObsSize())
	lambda := r.Lambda()
	for range 5 {
		if err := r.Step(make([]int, n*d), res); err != nil {
			t.Fatal(err)
		}
		viol := 0.0
		for i := range n {
			info := r.v.results[i].Infos[0]
			want := -info.TotalCPU / (float64(d) * 10000)
			if info.Violated {
				want -= lambda
				viol++
			}
			if res.Rewards[i] != want {
				t.Fatalf("env %d: reward %v, want %v", i, res.Rewards[i], want)
			}
		}
		lambda = max(0, lambda+2*(viol/float64(n)-0.5))
		if r.Lambda() != lambda {
			t.Fatalf("λ %v, want %v", r.Lambda(), lambda)
		}
	}
}

func TestParseLagrangian(t *testing.T) {
	l, err := ParseLagrangian("lagrangian:lr=5:budget=0.02")
	if err != nil || l.Budget != 0.02 || l.LR != 5 || l.Init != 1 {
		t.Fatalf("%+v %v", l, err)
	}
	if l.String() != "lagrangian:budget=0.02:lambda=1:lr=5" {
		t.Errorf("String %q", l.String())
	}
	if d, err := ParseLagrangian("lagrangian"); err != nil || d.Budget != 0.01 {
		t.Errorf("defaults %+v %v", d, err)
	}
	for _, bad := range []string{"", "lagrange", "lagrangian:budget=1", "lagrangian:budget=-0.1", "lagrangian:lr=NaN",
		"lagrangian:budget=0.1:budget=0.2", "lagrangian:x=1", "lagrangian:budget", "lagrangian:lambda=-1"} {
		if _, err := ParseLagrangian(bad); err == nil {
			t.Errorf("ParseLagrangian(%q) accepted", bad)
		}
	}
}

// FuzzParseLagrangian: no spec panics, and an accepted one's String
// parses to the same objective.
func FuzzParseLagrangian(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLagrangian(s)
		if err != nil {
			return
		}
		again, err := ParseLagrangian(l.String())
		if err != nil || again != l {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, l, l.String(), again, err)
		}
	})
}
