package controllers

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/traces"
)

func scenario(t *testing.T, profile string) env.Config {
	t.Helper()
	w, err := traces.Load("testdata/flat.csv", traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := env.EdgeConfig(profile, 101, w)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestParse(t *testing.T) {
	reg := New(Options{PoliciesDir: t.TempDir()})
	for _, tc := range []struct {
		spec, canon, err string
	}{
		{"static:2000", "static:2000", ""},
		{"static:2000.0", "static:2000", ""},
		{"static:1e3", "static:1000", ""},
		{" static:750 ", "static:750", ""},
		{"threshold", "threshold", ""},
		{"vrebalance", "vrebalance", ""},
		{"ppo", "ppo", ""},
		{"ppo:runs/x/", "ppo:runs/x", ""},
		{"ppo-sample:runs/x/", "ppo-sample:runs/x", ""},
		{"static", "", "want static:N"},
		{"static:", "", "empty argument"},
		{"static:abc", "", `"abc" is not a positive number`},
		{"static:0", "", "not a positive number"},
		{"static:-1", "", "not a positive number"},
		{"static:NaN", "", "not a positive number"},
		{"static:Inf", "", "not a positive number"},
		{"threshold:3", "", "want KEY=VALUE"},
		{"threshold:measured", "threshold:measured", ""},
		{"threshold:measured:window=45:target=0.60", "threshold:measured:target=0.6:window=45", ""},
		{"threshold:tol=0.05", "threshold:tol=0.05", ""},
		{"threshold:window=2.5", "", "not a whole number"},
		{"threshold:target=0", "", "not a number in"},
		{"threshold:target=0.5:target=0.6", "", "repeated key"},
		{"threshold:measured:measured", "", "want KEY=VALUE"},
		{"flink", "flink", ""},
		{"flink:catchup=30:target=0.8", "flink:target=0.8:catchup=30", ""},
		{"flink:target=1.5", "", "not a number in"},
		{"flink:speed=2", "", "unknown or repeated key"},
		{"vrebalance:x", "", "want KEY=VALUE"},
		{"vrebalance:evals=16", "vrebalance:evals=16", ""},
		{"vrebalance:objective=violation:evals=5", "vrebalance:evals=5:objective=violation", ""},
		{"vrebalance:evals=0", "", "evals \"0\""},
		{"vrebalance:objective=cubic", "", "objective \"cubic\""},
		{"vrebalance:evals=3:evals=4", "", "repeated key"},
		{"oracle:4:flink:catchup=30", "oracle:4:flink:catchup=30", ""},
		{"oracle:0:threshold:measured", "oracle:0:threshold:measured", ""},
		{"oracle:flink", "", "want oracle:H:RULE"},
		{"oracle:-1:flink", "", "want oracle:H:RULE"},
		{"oracle:2:hpa", "", "want threshold"},
		{"clasp", "clasp", ""},
		{"clasp:2", "", "clasp takes no argument"},
		{"clasp:", "", "empty argument"},
		{"", "", "unknown controller"},
		{"Static:5", "", "unknown controller"},
		{"hpa", "", "known: ppo[:DIR[+DIR…]], ppo-sample[:DIR[+DIR…]], vrebalance[:evals=N][:objective=squared|violation], threshold[:measured][:target=U][:tol=T][:window=N][:start=MC], flink[:target=U][:tol=T][:window=N][:catchup=S][:trend=N[:ahead=S]][:start=MC], oracle:H:RULE, static:N, clasp"},
	} {
		s, err := reg.Parse(tc.spec)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", tc.spec, err)
		case tc.err == "" && s.String() != tc.canon:
			t.Errorf("Parse(%q) = %q, want %q", tc.spec, s, tc.canon)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "eval: ")):
			t.Errorf("Parse(%q) error %v, want one containing %q", tc.spec, err, tc.err)
		}
	}
}

// TestHorizontalSpec checks that clasp runs on the horizontal counterpart
// of the edge scenario and is built only through the Info-fed path, and
// that the vertical kinds keep the edge scenario.
func TestHorizontalSpec(t *testing.T) {
	reg := New(Options{})
	c, err := reg.Parse("clasp")
	if err != nil {
		t.Fatal(err)
	}
	base := scenario(t, "etl")
	if !c.Horizontal() {
		t.Fatal("clasp is not horizontal")
	}
	sc, err := c.Config(base)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.SharedCPU || sc.Requests.BetaUS != 275 || len(sc.Replicas) != len(base.App.Tasks) || sc.Replicas[3][0].Server != base.Placement[3] {
		t.Errorf("clasp scenario: shared %v, requests %+v, replicas %v", sc.SharedCPU, sc.Requests, sc.Replicas)
	}
	h, err := c.Build(sc)
	if err != nil || h.HorizontalController() == nil || h.Controller() != nil {
		t.Fatalf("Build: %+v, %v", h, err)
	}
	if err := c.Check(base); err != nil {
		t.Errorf("Check: %v", err)
	}
	if _, err := c.Build(base); err == nil || !strings.Contains(err.Error(), "shared-CPU scenario") {
		t.Errorf("clasp on the edge scenario: %v", err)
	}
	if _, err := c.Config(sc); err == nil || !strings.Contains(err.Error(), "already horizontal") {
		t.Errorf("horizontal scenario of a horizontal scenario: %v", err)
	}
	v, _ := reg.Parse("threshold")
	if v.Horizontal() {
		t.Error("threshold is horizontal")
	}
	if got, err := v.Config(base); err != nil || got.SharedCPU || got.Replicas != nil {
		t.Errorf("threshold scenario changed: %v", err)
	}
	if a, err := v.Build(base); err != nil || a.Controller() == nil || a.IsHorizontal() {
		t.Errorf("Build(threshold): %+v, %v", a, err)
	}
	var zero Spec
	if _, err := zero.Build(base); err == nil {
		t.Error("zero Spec built a horizontal controller")
	}
	if got, err := zero.Config(base); err != nil || got.SharedCPU {
		t.Errorf("zero Spec changed the scenario: %v", err)
	}
}

func TestNewBuildsEachKind(t *testing.T) {
	reg := New(Options{})
	for _, profile := range []string{"pred", "etl"} {
		sc := scenario(t, profile)
		for _, spec := range []string{"static:1500", "threshold", "vrebalance"} {
			s, err := reg.Parse(spec)
			if err != nil {
				t.Fatal(err)
			}
			built, err := s.Build(sc)
			c := built.Controller()
			if err != nil {
				t.Fatalf("%s on %s: %v", spec, profile, err)
			}
			if err := c.Reset(1); err != nil {
				t.Fatal(err)
			}
			e, err := env.New(sc)
			if err != nil {
				t.Fatal(err)
			}
			obs, _, _ := e.Reset(1)
			act, err := c.Act(obs)
			if err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			if err := e.ValidateAction(act); err != nil {
				t.Errorf("%s: invalid action: %v", spec, err)
			}
		}
	}
	s, _ := reg.Parse("static:1500")
	a, _ := s.Build(scenario(t, "pred"))
	c := a.Controller()
	if st, ok := c.(*agents.Static); !ok || st.Millicores() != 1500 {
		t.Errorf("static:1500 built %T", c)
	}
	var zero Spec
	if _, err := zero.Build(scenario(t, "pred")); err == nil {
		t.Error("zero Spec built a controller")
	}
}

func TestPPOMissingPolicy(t *testing.T) {
	dir := t.TempDir()
	reg := New(Options{PoliciesDir: dir})
	for _, spec := range []string{"ppo", "ppo:" + filepath.Join(dir, "elsewhere")} {
		s, err := reg.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Build(scenario(t, "etl"))
		if !errors.Is(err, ErrNoPolicy) || !strings.Contains(err.Error(), "policy.json") {
			t.Errorf("%s: %v, want ErrNoPolicy naming the file", spec, err)
		}
	}
}

// FuzzParse checks that no spec makes Parse panic and that a parsed spec's
// canonical form parses to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"static:2000", "static:1e3", "static:", "threshold", "ppo:dir", "ppo:a+b/", "ppo:a++b", "clasp", ":", "static::1", "static:0x10"} {
		f.Add(s)
	}
	reg := New(Options{})
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := reg.Parse(spec)
		if err != nil {
			return
		}
		again, err := reg.Parse(s.String())
		if err != nil || again.String() != s.String() {
			t.Fatalf("canonical %q of %q reparses to %q, %v", s, spec, again, err)
		}
	})
}

// TestPPOActionSet: a policy runs with the action set its card records
// (env.Config.ActionDeltas), and a card with the paper's set leaves the
// scenario as it is.
func TestPPOActionSet(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "policies", "paper", "pred", "policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	weights, err := os.ReadFile(filepath.Join("..", "..", "policies", "paper", "pred", "policy.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	if err := json.Unmarshal(raw, &card); err != nil {
		t.Fatal(err)
	}
	spaces := card["spaces"].(map[string]any)
	if got := fmt.Sprint(spaces["delta_millicores"]); got != "[-500 -50 0 50 500]" {
		t.Fatalf("the shipped card records the action set %s, want the paper's", got)
	}
	spaces["delta_millicores"] = []float64{-200, -50, 0, 50, 500}
	other, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		card string
		want [5]float64
	}{
		{string(raw), [5]float64{}},
		{string(other), [5]float64{-200, -50, 0, 50, 500}},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "policy.json"), []byte(tc.card), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "policy.safetensors"), weights, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := New(Options{}).Parse("ppo:" + dir)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := s.Config(scenario(t, "pred"))
		if err != nil {
			t.Fatal(err)
		}
		if sc.ActionDeltas != tc.want {
			t.Errorf("scenario action set %v, want %v", sc.ActionDeltas, tc.want)
		}
		if _, err := s.Build(sc); err != nil {
			t.Errorf("build on its own scenario: %v", err)
		}
	}
}
