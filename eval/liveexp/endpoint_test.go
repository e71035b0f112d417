package liveexp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamscale/agents"
	"streamscale/agents/rulespec"
	"streamscale/env"
	"streamscale/eval/internal/policytest"
	"streamscale/eval/runner"
	"streamscale/serve/client"
	"streamscale/traces"
)

// TestEndpointInProcess: the in-process endpoint lists the directory's
// policies, and after Close (twice) nothing answers on its port; a
// directory without policies is refused before anything listens.
func TestEndpointInProcess(t *testing.T) {
	e, err := StartEndpoint(context.Background(), "../../policies/calibrated", "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(e.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := c.Policies(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "pred") {
		t.Errorf("policies %v, want pred among them", names)
	}
	e.Close()
	e.Close()
	if resp, err := http.Get(e.URL + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("the endpoint still answers after Close: %s", resp.Status)
	}
	if _, err := StartEndpoint(context.Background(), t.TempDir(), "", io.Discard); err == nil {
		t.Error("an empty policies directory was served")
	}
}

// TestDefaultCandidate: the first PPO controller listed, else the first.
func TestDefaultCandidate(t *testing.T) {
	for _, c := range []struct {
		specs []string
		want  string
	}{
		{[]string{"static:500", "threshold", "ppo"}, "ppo"},
		{[]string{"ppo:a/pred", "static:500", "ppo"}, "ppo:a/pred"},
		{[]string{"static:500", "threshold"}, "static:500"},
		{nil, ""},
	} {
		var fs []runner.Factory
		for _, s := range c.specs {
			fs = append(fs, name(s))
		}
		if got := DefaultCandidate(fs); got != c.want {
			t.Errorf("%v: %q, want %q", c.specs, got, c.want)
		}
	}
}

// name is a runner.Factory that only has a name.
type name string

func (n name) String() string                          { return string(n) }
func (n name) Horizontal() bool                        { return false }
func (n name) Config(b env.Config) (env.Config, error) { return b, nil }
func (n name) Build(env.Config) (agents.Actor, error)  { return agents.Actor{}, errors.New("not built") }

// TestBuildLiveResidual: a residual policy is served by the in-process
// endpoint (which once refused it at load), and the live controller built
// for ppo:DIR runs its base rule, for no metric lag as the live
// observation has none, and applies the endpoint's targets (the
// follow-biased policy's: the rule's).
func TestBuildLiveResidual(t *testing.T) {
	const rule = "threshold:measured:target=0.7:tol=0.1:window=10"
	tr := &traces.Trace{Name: "steps", Scale: 1}
	for i := range 20 {
		tr.Counts = append(tr.Counts, float64(1000+400*(i%5)))
	}
	sc, err := env.EdgeConfig("pred", 101, tr)
	if err != nil {
		t.Fatal(err)
	}
	sc.Physics.MetricLagSteps = 2
	dir := t.TempDir()
	if err := policytest.WriteFollowResidual(dir, "pred", sc, rule); err != nil {
		t.Fatal(err)
	}
	e, err := StartEndpoint(context.Background(), dir, "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := BuildLive(context.Background(), name("ppo:"+filepath.Join(dir, "pred")), sc, e.URL)
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := rulespec.Parse(rule)
	lsc := sc
	lsc.Physics.MetricLagSteps = 0
	ref, err := spec.New(lsc)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := env.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	obs, _, err := sim.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Reset(1); err != nil {
		t.Fatal(err)
	}
	if err := ref.Reset(1); err != nil {
		t.Fatal(err)
	}
	for step := range 12 {
		a, err := c.Act(obs)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Act(obs)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a.Targets, want.Targets) {
			t.Fatalf("step %d: targets %v, the rule's %v", step, a.Targets, want.Targets)
		}
		sr, err := sim.Step(a)
		if err != nil {
			t.Fatal(err)
		}
		obs = sr.Obs
	}
}
