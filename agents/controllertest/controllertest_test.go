package controllertest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"streamscale/agents"
	"streamscale/env"
)

// fake is a controller with configurable contract violations.
type fake struct {
	retain       bool // keeps obs.Task and reads it on the next step
	alias        bool // returns a slice of the observation as its targets
	noReset      bool // Reset does not restart its counter
	extraEntry   bool // one target too many
	noCheck      bool // indexes the observation without checking its shape
	acceptEmpty  bool // returns an empty action and no error on an empty observation
	countBadCall bool // counts calls before validating the observation

	prev    []float64
	calls   int
	targets []float64
}

func (f *fake) Reset(uint64) error {
	if !f.noReset {
		f.calls = 0
	}
	f.prev = nil
	return nil
}

func (f *fake) Act(obs env.Observation) (env.Action, error) {
	if f.countBadCall {
		f.calls++
	}
	if f.noCheck {
		_ = obs.Task[env.TaskCPU]
	}
	n := obs.NumTasks()
	if n == 0 {
		if f.acceptEmpty {
			return env.Action{Targets: []float64{}}, nil
		}
		return env.Action{}, errors.New("fake: empty observation")
	}
	if !f.countBadCall {
		f.calls++
	}
	v := 500 + 50*float64(f.calls%3)
	if f.retain {
		if f.prev != nil && math.IsNaN(f.prev[0]) {
			v = 700
		}
		f.prev = obs.Task
	}
	if f.alias {
		t := obs.Task[:n]
		for k := range t {
			t[k] = v
		}
		return env.Action{Targets: t}, nil
	}
	m := n
	if f.extraEntry {
		m++
	}
	f.targets = make([]float64, m)
	for k := range f.targets {
		f.targets[k] = v
	}
	return env.Action{Targets: f.targets}, nil
}

func TestCheckCatchesViolations(t *testing.T) {
	cfg, err := Config("pred")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mk   func(env.Config) (agents.Controller, error)
		want string // substring of the error; "" for none
		is   error
	}{
		{"static passes", func(env.Config) (agents.Controller, error) { return agents.NewStatic(1000) }, "", nil},
		{"well-behaved fake passes", func(env.Config) (agents.Controller, error) { return &fake{}, nil }, "", nil},
		{"retains observation", func(env.Config) (agents.Controller, error) { return &fake{retain: true}, nil }, "retains the observation", nil},
		{"aliases observation", func(env.Config) (agents.Controller, error) { return &fake{alias: true}, nil }, "aliases the observation", nil},
		{"not deterministic", func(env.Config) (agents.Controller, error) { return &fake{noReset: true}, nil }, "not deterministic", nil},
		{"invalid action", func(env.Config) (agents.Controller, error) { return &fake{extraEntry: true}, nil }, "invalid action", nil},
		{"panics on empty observation", func(env.Config) (agents.Controller, error) { return &fake{noCheck: true}, nil }, "panicked", nil},
		{"accepts empty observation", func(env.Config) (agents.Controller, error) { return &fake{acceptEmpty: true}, nil }, "accepted an empty observation", nil},
		{"bad input changes state", func(env.Config) (agents.Controller, error) { return &fake{countBadCall: true}, nil }, "differs from the control", nil},
		{"unsupported scenario", func(env.Config) (agents.Controller, error) {
			return nil, fmt.Errorf("policy for etl only: %w", ErrUnsupported)
		}, "policy for etl only", ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := check(cfg, tc.mk, 100)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected failure: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("violation not caught, want an error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			case tc.is != nil && !errors.Is(err, tc.is):
				t.Fatalf("error %v does not wrap %v", err, tc.is)
			}
		})
	}
}

func TestWorkloadShape(t *testing.T) {
	w := Workload()
	if w.Len() != Steps {
		t.Fatalf("workload has %d steps, want %d", w.Len(), Steps)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 0; i < 250; i++ {
		lo, hi = min(lo, w.Rate(i)), max(hi, w.Rate(i))
	}
	if lo > 500 || hi < 4700 {
		t.Errorf("wave spans [%.0f, %.0f] msg/s, want about [400, 4800]", lo, hi)
	}
	if w.Rate(260) != 6000 || w.Rate(345) != 0 {
		t.Errorf("burst %v, idle %v; want 6000 and 0", w.Rate(260), w.Rate(345))
	}
}
