package residual_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"streamscale/agents"
	"streamscale/agents/controllertest"
	"streamscale/agents/residual"
	"streamscale/agents/rulespec"
	"streamscale/env"
)

const tuned = "threshold:measured:target=0.7:tol=0.1:window=10"

// constActor chooses the same choice for every task.
type constActor int

func (c constActor) Act(_ []float64, choices []int) error {
	for k := range choices {
		choices[k] = int(c)
	}
	return nil
}

func scenario(t *testing.T, profile string) env.Config {
	t.Helper()
	cfg, err := controllertest.Config(profile)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// run drives c over the acceptance scenario and returns every action's
// targets.
func run(t *testing.T, cfg env.Config, c agents.Controller) [][]float64 {
	t.Helper()
	e, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]float64
	err = agents.RunEpisode(t.Context(), e, agents.Vertical(recorder{c, &out}), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type recorder struct {
	agents.Controller
	out *[][]float64
}

func (r recorder) Act(o env.Observation) (env.Action, error) {
	a, err := r.Controller.Act(o)
	*r.out = append(*r.out, slices.Clone(a.Targets))
	return a, err
}

// TestFollowIsTheRule: a policy that always follows is the base rule,
// target for target, over a whole episode of each profile.
func TestFollowIsTheRule(t *testing.T) {
	rule, err := rulespec.Parse(tuned)
	if err != nil {
		t.Fatal(err)
	}
	for _, profile := range []string{"pred", "etl"} {
		cfg := scenario(t, profile)
		base, err := rule.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a, err := residual.New(rule, cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := run(t, cfg, base)
		got := run(t, cfg, residual.NewController(a, constActor(0)))
		if len(got) != len(want) {
			t.Fatalf("%s: %d actions, want %d", profile, len(got), len(want))
		}
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("%s step %d: targets %v, the rule's %v", profile, i, got[i], want[i])
			}
		}
	}
}

// TestChoices: each choice scales the rule's target (clipped to the
// bounds) or holds the allocation shown.
func TestChoices(t *testing.T) {
	cfg := scenario(t, "pred")
	rule, _ := rulespec.Parse(tuned)
	e, err := env.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	obs, _, err := e.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := rule.New(cfg)
	ref, err := base.Act(obs)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := residual.New(rule, cfg)
	if _, err := a.Action([]int{0}); !errors.Is(err, residual.ErrNotObserved) {
		t.Fatalf("Action before Observe: %v, want ErrNotObserved", err)
	}
	if err := a.Observe(obs); err != nil {
		t.Fatal(err)
	}
	n := len(ref.Targets)
	lo, hi := rulespec.ScenarioBounds(cfg)
	for c := range 5 {
		choices := make([]int, n)
		for k := range choices {
			choices[k] = c
		}
		act, err := a.Action(choices)
		if err != nil {
			t.Fatal(err)
		}
		for k, got := range act.Targets {
			want := obs.Task[k*env.TaskFeatures+env.TaskCPU] * hi
			if c < 4 {
				want = ref.Targets[k] * residual.Scales[c]
			}
			want = min(max(want, lo), hi)
			if got != want {
				t.Errorf("choice %d task %d: target %v, want %v", c, k, got, want)
			}
		}
	}
	feat := a.AppendFeatures(nil)
	if len(feat) != residual.FeaturesPerTask*n {
		t.Fatalf("%d features, want %d", len(feat), residual.FeaturesPerTask*n)
	}
	for k := range n {
		if feat[2*k] != ref.Targets[k]/hi || math.IsNaN(feat[2*k+1]) {
			t.Errorf("task %d: features %v, want target share %v and a finite move", k, feat[2*k:2*k+2], ref.Targets[k]/hi)
		}
	}
	for _, bad := range [][]int{{0}, append(make([]int, n-1), 5), append(make([]int, n-1), -1)} {
		if _, err := a.Action(bad); err == nil {
			t.Errorf("Action(%v) accepted", bad)
		}
	}
}

// TestStateRoundTrip: an Adapter restored from a mid-episode state
// continues exactly as the original.
func TestStateRoundTrip(t *testing.T) {
	for _, spec := range []string{tuned, "flink:target=0.7:window=10:catchup=30"} {
		cfg := scenario(t, "etl")
		rule, err := rulespec.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := env.New(cfg)
		obs, _, _ := e.Reset(3)
		a, _ := residual.New(rule, cfg)
		b, _ := residual.New(rule, cfg)
		_ = a.Reset(0)
		choices := []int{0, 1, 2, 3, 4}
		step := func(ad *residual.Adapter, o env.Observation) []float64 {
			if err := ad.Observe(o); err != nil {
				t.Fatal(err)
			}
			ch := make([]int, len(o.Task)/env.TaskFeatures)
			for k := range ch {
				ch[k] = choices[k%len(choices)]
			}
			act, err := ad.Action(ch)
			if err != nil {
				t.Fatal(err)
			}
			return slices.Clone(act.Targets)
		}
		var seen []env.Observation
		for range 40 {
			res, err := e.Step(env.Action{Targets: step(a, obs)})
			if err != nil {
				t.Fatal(err)
			}
			obs = res.Obs
			seen = append(seen, obs.Clone())
		}
		st, err := a.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := b.UnmarshalBinary(st); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			o := seen[len(seen)-1-i]
			if x, y := step(a, o), step(b, o); !slices.Equal(x, y) {
				t.Fatalf("%s: after restore, step %d targets %v, original %v", spec, i, y, x)
			}
		}
		for _, cut := range []int{0, 3, len(st) / 2, len(st) - 1} {
			if err := b.UnmarshalBinary(st[:cut]); err == nil {
				t.Errorf("%s: state cut at %d bytes accepted", spec, cut)
			}
		}
	}
}

func TestInfoCheck(t *testing.T) {
	rule, _ := rulespec.Parse(tuned)
	info := residual.NewInfo(rule, scenario(t, "pred"))
	if info.MinCPU != 500 || info.MaxCPU != 10000 {
		t.Errorf("bounds [%v, %v], want the scenario's [500, 10000]", info.MinCPU, info.MaxCPU)
	}
	if err := info.Check(6); err != nil {
		t.Fatal(err)
	}
	if err := info.Check(5); err == nil {
		t.Error("6-task record accepted for 5 tasks")
	}
	bad := info
	bad.MaxCPU = 0
	if err := bad.Check(6); err == nil {
		t.Error("zero MaxCPU accepted")
	}
	info.Choices[1] = "x0.5"
	if err := info.Check(6); err == nil {
		t.Error("unknown choice accepted")
	}
	if residual.Choices[1] != "x0.85" {
		t.Error("NewInfo's choices alias the package's")
	}
}

// FuzzAdapterState: no input panics an Adapter's UnmarshalBinary, and an
// accepted state round-trips.
func FuzzAdapterState(f *testing.F) {
	rule, err := rulespec.Parse(tuned)
	if err != nil {
		f.Fatal(err)
	}
	cfg, err := controllertest.Config("pred")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := residual.New(rule, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if a.UnmarshalBinary(b) != nil {
			return
		}
		st, err := a.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		b2, _ := residual.New(rule, cfg)
		if err := b2.UnmarshalBinary(st); err != nil {
			t.Fatalf("an accepted state's marshalling is refused: %v", err)
		}
	})
}
