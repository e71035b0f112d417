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
// continues exactly as the original, targets and features, with and
// without the trend context.
func TestStateRoundTrip(t *testing.T) {
	for _, ctx := range []residual.Context{residual.NoContext, residual.Trend, "stack:3"} {
		for _, spec := range []string{tuned, "flink:target=0.7:window=10:catchup=30"} {
			cfg := scenario(t, "etl")
			rule, err := rulespec.Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			e, _ := env.New(cfg)
			obs, _, _ := e.Reset(3)
			a, _ := residual.NewContext(rule, cfg, ctx)
			b, _ := residual.NewContext(rule, cfg, ctx)
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
				return append(slices.Clone(act.Targets), ad.AppendFeatures(nil)...)
			}
			var seen []env.Observation
			for range 40 {
				x := step(a, obs)
				res, err := e.Step(env.Action{Targets: x[:len(obs.Task)/env.TaskFeatures]})
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
			if x, y := a.AppendFeatures(nil), b.AppendFeatures(nil); !slices.Equal(x, y) {
				t.Fatalf("%s %q: restored features %v, original %v", spec, ctx, y, x)
			}
			for i := 0; i < 5; i++ {
				o := seen[len(seen)-1-i]
				if x, y := step(a, o), step(b, o); !slices.Equal(x, y) {
					t.Fatalf("%s %q: after restore, step %d targets and features %v, original %v", spec, ctx, i, y, x)
				}
			}
			for _, cut := range []int{0, 3, len(st) / 2, len(st) - 1} {
				if err := b.UnmarshalBinary(st[:cut]); err == nil {
					t.Errorf("%s %q: state cut at %d bytes accepted", spec, ctx, cut)
				}
			}
		}
	}
}

// TestTrendFeatures: the trend context's values per task are the input
// rate's change, the EWMA trend and the pending move, computed from the
// observations as residual.Trend says; a new episode forgets them.
func TestTrendFeatures(t *testing.T) {
	rule, err := rulespec.Parse(tuned)
	if err != nil {
		t.Fatal(err)
	}
	cfg := scenario(t, "pred")
	_, hi := rulespec.ScenarioBounds(cfg)
	e, _ := env.New(cfg)
	obs, _, _ := e.Reset(2)
	a, err := residual.NewContext(rule, cfg, residual.Trend)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := residual.NewContext(rule, cfg, "memory"); err == nil {
		t.Fatal("an unknown context was accepted")
	}
	n := len(obs.Task) / env.TaskFeatures
	per := residual.Trend.PerTask()
	rate := func(o env.Observation, k int) float64 { return o.Task[k*env.TaskFeatures+env.TaskInputRate] }
	fast, slow, prev := make([]float64, n), make([]float64, n), make([]float64, n)
	var issued []float64
	clip := func(x float64) float64 { return min(max(x, -2), 2) }
	for step := range 30 {
		if err := a.Observe(obs); err != nil {
			t.Fatal(err)
		}
		feat := a.AppendFeatures(nil)
		if len(feat) != per*n {
			t.Fatalf("%d features, want %d", len(feat), per*n)
		}
		for k := range n {
			x := rate(obs, k)
			if step == 0 {
				fast[k], slow[k], prev[k] = x, x, x
			}
			fast[k] += 0.5 * (x - fast[k])
			slow[k] += 0.05 * (x - slow[k])
			pending := 0.0
			if issued != nil {
				pending = math.Log(issued[k] / (obs.Task[k*env.TaskFeatures+env.TaskCPU] * hi))
			}
			want := []float64{clip(x - prev[k]), clip(fast[k] - slow[k]), clip(pending)}
			prev[k] = x
			if got := feat[k*per+residual.FeaturesPerTask : (k+1)*per]; !slices.Equal(got, want) {
				t.Fatalf("step %d task %d: trend features %v, want %v", step, k, got, want)
			}
		}
		ch := make([]int, n)
		for k := range ch {
			ch[k] = (step + k) % 5
		}
		act, err := a.Action(ch)
		if err != nil {
			t.Fatal(err)
		}
		issued = slices.Clone(act.Targets)
		res, err := e.Step(act)
		if err != nil {
			t.Fatal(err)
		}
		obs = res.Obs
	}
	if err := a.Reset(5); err != nil {
		t.Fatal(err)
	}
	obs, _, _ = e.Reset(5)
	if err := a.Observe(obs); err != nil {
		t.Fatal(err)
	}
	feat := a.AppendFeatures(nil)
	for k := range n {
		if got := feat[k*per+residual.FeaturesPerTask : (k+1)*per]; !slices.Equal(got, []float64{0, 0, 0}) {
			t.Errorf("task %d: first features of a new episode %v, want zeros", k, got)
		}
	}
	info := residual.NewInfo(rule, cfg, residual.Trend)
	if err := info.Check(n); err != nil || info.Features != per*n {
		t.Errorf("trend Info %+v: %v", info, err)
	}
	info.Features = residual.FeaturesPerTask * n
	if info.Check(n) == nil {
		t.Error("a trend Info with the context-free feature count passes Check")
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
		for _, ctx := range []residual.Context{residual.NoContext, residual.Trend, "stack:3"} {
			a, err := residual.NewContext(rule, cfg, ctx)
			if err != nil {
				t.Fatal(err)
			}
			if a.UnmarshalBinary(b) != nil {
				continue
			}
			st, err := a.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			b2, _ := residual.NewContext(rule, cfg, ctx)
			if err := b2.UnmarshalBinary(st); err != nil {
				t.Fatalf("%q: an accepted state's marshalling is refused: %v", ctx, err)
			}
		}
	})
}

// TestStackFeatures: a "stack:K" context appends, per task, the stacked
// columns of the K−1 previous observations, newest first, the first
// observation repeated at an episode's start; bad K are refused.
func TestStackFeatures(t *testing.T) {
	rule, err := rulespec.Parse(tuned)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"stack:1", "stack:9", "stack:03", "stack:", "stack:x", "stacks:3"} {
		if _, err := residual.ParseContext(bad); err == nil {
			t.Errorf("context %q accepted", bad)
		}
	}
	const k = 4
	ctx := residual.Context("stack:4")
	if ctx.Stack() != k || ctx.PerTask() != residual.FeaturesPerTask+residual.StackFeatures*(k-1) {
		t.Fatalf("stack:4: K %d, %d values per task", ctx.Stack(), ctx.PerTask())
	}
	cfg := scenario(t, "etl")
	e, _ := env.New(cfg)
	obs, _, _ := e.Reset(4)
	a, err := residual.NewContext(rule, cfg, ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := len(obs.Task) / env.TaskFeatures
	cols := []int{env.TaskInputRate, env.TaskDemandPerCPU, env.TaskQueue, env.TaskCPU}
	var seen []env.Observation
	for step := range 12 {
		seen = append(seen, obs.Clone())
		if err := a.Observe(obs); err != nil {
			t.Fatal(err)
		}
		feat := a.AppendFeatures(nil)
		per := ctx.PerTask()
		if len(feat) != per*n {
			t.Fatalf("%d features, want %d", len(feat), per*n)
		}
		for task := range n {
			var want []float64
			for j := 1; j < k; j++ {
				o := seen[max(step-j, 0)]
				for _, c := range cols {
					want = append(want, o.Task[task*env.TaskFeatures+c])
				}
			}
			if got := feat[task*per+residual.FeaturesPerTask : (task+1)*per]; !slices.Equal(got, want) {
				t.Fatalf("step %d task %d: stacked %v, want %v", step, task, got, want)
			}
		}
		act, err := a.Action(make([]int, n))
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Step(act)
		if err != nil {
			t.Fatal(err)
		}
		obs = res.Obs
	}
}
