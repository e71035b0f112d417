package liveexp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/eval/runner"
	"streamscale/serve/client"
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
