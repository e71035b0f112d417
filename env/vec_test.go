package env

import (
	"slices"
	"testing"
)

func vecConfigs(t *testing.T, n int, w Workload) []Config {
	t.Helper()
	var cfgs []Config
	for i := 0; i < n; i++ {
		c, err := EdgeConfig("pred", uint64(40+i), w)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, c)
	}
	return cfgs
}

func choices(v *VecEnv, step int) []Action {
	acts := make([]Action, v.NumEnvs())
	for i := range acts {
		c := make([]int, v.Env(i).NumTasks())
		for k := range c {
			c[k] = (step + i + k) % 5
		}
		acts[i] = Action{Choices: c}
	}
	return acts
}

func TestVecSameStepAutoreset(t *testing.T) {
	w := diurnal(7)
	v, err := NewVec(vecConfigs(t, 3, w), SameStep, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref := make([]*Env, 3)
	for i := range ref {
		ref[i] = newTestEnv(t, "pred", uint64(40+i), w)
		ref[i].Reset(VecSeed(100, i, 0))
	}
	if _, err := v.Reset(100); err != nil {
		t.Fatal(err)
	}
	ret := make([]float64, 3)
	for s := 0; s < 7; s++ {
		acts := choices(v, s)
		res, err := v.Step(acts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ref {
			sr, _ := ref[i].Step(acts[i])
			obs := sr.Obs
			rew := sr.Reward
			tr := sr.Truncated
			ret[i] += rew
			if res.Rewards[i] != rew || res.Truncated[i] != tr || res.Terminated[i] {
				t.Fatalf("step %d env %d: vec (%v, %v) vs single (%v, %v)", s, i, res.Rewards[i], res.Truncated[i], rew, tr)
			}
			if !tr {
				if !slices.Equal(res.Obs[i].Task, obs.Task) {
					t.Fatalf("step %d env %d: observations differ", s, i)
				}
				continue
			}
			if !slices.Equal(res.FinalObs[i].Task, obs.Task) || !slices.Equal(res.FinalObs[i].App, obs.App) {
				t.Fatalf("env %d: final observation is not the last observation", i)
			}
			if res.EpisodeReturn[i] != ret[i] || res.EpisodeLength[i] != 7 {
				t.Fatalf("env %d: episode return %v len %d, want %v 7", i, res.EpisodeReturn[i], res.EpisodeLength[i], ret[i])
			}
			// Infos[i] is the ending step's, not the reset's that followed.
			for _, p := range [][2][]float64{{res.Infos[i].Applied, sr.Info.Applied}, {res.Infos[i].Requested, sr.Info.Requested},
				{res.Infos[i].Queue, sr.Info.Queue}, {res.Infos[i].StateMB, sr.Info.StateMB}} {
				if !slices.Equal(p[0], p[1]) {
					t.Fatalf("env %d: the ending step's info has %v, the single env's %v", i, p[0], p[1])
				}
			}
			// Obs is the first observation of the next episode.
			fresh, _, _ := ref[i].Reset(VecSeed(100, i, 1))
			if !slices.Equal(res.Obs[i].Task, fresh.Task) || res.Obs[i].Task[TaskInputRate] != 0 {
				t.Fatalf("env %d: obs after autoreset is not a reset observation", i)
			}
			if v.Env(i).StepIndex() != 0 {
				t.Fatalf("env %d not reset", i)
			}
		}
	}
}

func TestVecNextStepAutoreset(t *testing.T) {
	w := diurnal(4)
	v, err := NewVec(vecConfigs(t, 2, w), NextStep, 1)
	if err != nil {
		t.Fatal(err)
	}
	v.Reset(5)
	var res *VecResult
	for s := 0; s < 4; s++ {
		if res, err = v.Step(choices(v, s)); err != nil {
			t.Fatal(err)
		}
	}
	if !res.Truncated[0] || !slices.Equal(res.Obs[0].Task, res.FinalObs[0].Task) {
		t.Fatal("next-step mode must return the final observation as Obs")
	}
	// The next step resets, ignoring the (here invalid) action.
	acts := choices(v, 4)
	acts[1] = Action{Choices: []int{9}}
	if res, err = v.Step(acts); err != nil {
		t.Fatalf("reset step must ignore actions: %v", err)
	}
	if res.Rewards[0] != 0 || res.Truncated[0] || v.Env(0).StepIndex() != 0 {
		t.Fatal("reset step wrong")
	}
}

func TestVecParallelDeterministic(t *testing.T) {
	w := diurnal(50)
	run := func(workers int) []float64 {
		v, err := NewVec(vecConfigs(t, 5, w), SameStep, workers)
		if err != nil {
			t.Fatal(err)
		}
		v.Reset(1)
		var out []float64
		for s := 0; s < 120; s++ {
			res, err := v.Step(choices(v, s))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, res.Rewards...)
			for i := range res.Obs {
				out = append(out, res.Obs[i].App...)
			}
		}
		return out
	}
	if a, b := run(1), run(3); !slices.Equal(a, b) {
		t.Fatal("results depend on the number of workers")
	}
}

func TestVecInvalidActionChangesNothing(t *testing.T) {
	v, err := NewVec(vecConfigs(t, 3, diurnal(20)), SameStep, 2)
	if err != nil {
		t.Fatal(err)
	}
	v.Reset(1)
	acts := choices(v, 0)
	acts[2] = Action{Choices: []int{1, 2}}
	if _, err := v.Step(acts); err == nil {
		t.Fatal("invalid action accepted")
	}
	for i := 0; i < 3; i++ {
		if v.Env(i).StepIndex() != 0 {
			t.Fatalf("env %d moved on an invalid batch", i)
		}
	}
	if _, err := v.Step(acts[:2]); err == nil {
		t.Fatal("wrong number of actions accepted")
	}
	if _, err := NewVec(nil, SameStep, 1); err == nil {
		t.Fatal("empty vector env accepted")
	}
}
