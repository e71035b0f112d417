package agents

import (
	"strings"
	"testing"

	"streamscale/env"
)

// steps is a workload of the given rates.
type steps []float64

func (s steps) Len() int           { return len(s) }
func (s steps) Rate(i int) float64 { return s[i] }

// TestClairvoyantLooksAhead: the bound raises the base rule's targets by
// the coming peak over the rate its metrics saw, never lowers them, and
// starts over at Reset.
func TestClairvoyantLooksAhead(t *testing.T) {
	base, _ := NewStatic(1000)
	sc := env.Config{Workload: steps{100, 100, 100, 150, 100, 50, 50, 50}, MaxCPU: 10000}
	sc.Physics.MetricLagSteps = 1
	c, err := NewClairvoyant(base, sc, 1, 50)
	if err != nil {
		t.Fatal(err)
	}
	obs := taskObs([][6]float64{{1000, 100, 100, 0, 0.01, 0.5}})
	// t = 0…5: measured at t−2 (clamped to 0), peak of t, t+1.
	want := []float64{1000, 1000, 1500, 1500, 1000, 1000}
	for run := range 2 {
		if err := c.Reset(0); err != nil {
			t.Fatal(err)
		}
		for step, w := range want {
			a, err := c.Act(obs)
			if err != nil {
				t.Fatal(err)
			}
			if a.Targets[0] != w {
				t.Errorf("run %d step %d: target %v, want %v", run, step, a.Targets[0], w)
			}
		}
	}
	for name, tc := range map[string]struct {
		sc      env.Config
		horizon int
	}{"no workload": {env.Config{}, 1}, "horizon": {sc, -1}} {
		if _, err := NewClairvoyant(base, tc.sc, tc.horizon, 50); err == nil || !strings.Contains(err.Error(), strings.Fields(name)[len(strings.Fields(name))-1]) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
