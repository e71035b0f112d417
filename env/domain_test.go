package env

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func randomizedConfig(t *testing.T) Config {
	t.Helper()
	cfg, err := EdgeConfig("pred", 3, diurnal(80))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Physics, _ = ScenarioPhysics(ScenarioRealistic)
	r := DefaultRanges()
	cfg.Randomize = &r
	return cfg
}

// TestDomainRandomization: every Reset draws the ranged physics from the
// episode seed, inside the ranges; the same seed draws the same physics
// and trajectory; a snapshot restores the episode's draw.
func TestDomainRandomization(t *testing.T) {
	cfg := randomizedConfig(t)
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := DefaultRanges()
	seen := map[Physics]bool{}
	for seed := uint64(1); seed <= 6; seed++ {
		e.Reset(seed)
		p := e.Physics()
		if p.ServiceCV < r.ServiceCV[0] || p.ServiceCV > r.ServiceCV[1] || p.RateCV < r.RateCV[0] || p.RateCV > r.RateCV[1] ||
			p.ActuationDelaySteps < 0 || p.ActuationDelaySteps > 4 || p.CFSPeriodMS != 100 || p.Arrivals != ArrivalsPoisson {
			t.Fatalf("seed %d drew %+v outside the ranges or changed a fixed field", seed, p)
		}
		seen[p] = true
	}
	if len(seen) < 5 {
		t.Errorf("6 seeds drew %d distinct physics", len(seen))
	}
	run := func(e *Env, seed uint64, from, to int) []float64 {
		var out []float64
		if from == 0 {
			e.Reset(seed)
		}
		act := make([]int, e.NumTasks())
		for s := from; s < to; s++ {
			for k := range act {
				act[k] = (s + k) % len(DeltaMillicores)
			}
			sr, err := e.Step(Action{Choices: act})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, sr.Reward, sr.Info.P95MS, sr.Info.Applied[0])
		}
		return out
	}
	a, _ := New(cfg)
	b, _ := New(cfg)
	if !slices.Equal(run(a, 9, 0, 40), run(b, 9, 0, 40)) {
		t.Fatal("the same seed gave different trajectories")
	}
	snap, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	c, _ := New(cfg)
	c.Reset(2) // another draw, replaced by the snapshot's
	if err := c.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	if c.Physics() != a.Physics() {
		t.Fatalf("restored physics %+v, want %+v", c.Physics(), a.Physics())
	}
	if !slices.Equal(run(a, 9, 40, 80), run(c, 9, 40, 80)) {
		t.Fatal("the restored env diverged")
	}
}

func TestDomainRandomizationValidation(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Randomize.ServiceCV = [2]float64{2, 1} }, "service_cv"},
		{func(c *Config) { c.Randomize.MetricNoise = [2]float64{-1, 0} }, "metric_noise"},
		{func(c *Config) { c.Randomize.ActuationDelaySteps = [2]int{0, 80} }, "actuation_delay_steps"},
		{func(c *Config) { c.Physics = Physics{} }, "stochastic base physics"},
	} {
		cfg := randomizedConfig(t)
		tc.edit(&cfg)
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want an error containing %q", err, tc.want)
		}
	}
}
