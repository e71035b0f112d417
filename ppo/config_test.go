package ppo

import (
	"strings"
	"testing"
)

func TestDefaultConfigDerived(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"rollout", c.RolloutSize(), 28672},
		{"iterations", c.Iterations(), 18},
		{"transitions", c.Transitions(), 516096},
		{"minibatches", c.Minibatches(), 112},
		{"updates", c.Updates(), 40320},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	// The last minibatch is kept, not dropped.
	c.BatchSize = 300
	if c.Minibatches() != 96 {
		t.Errorf("minibatches of 300 = %d, want 96", c.Minibatches())
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.BatchSize = 300000 }, "ppo: batch size 300000 exceeds rollout size 28672"},
		{func(c *Config) { c.NumEnvs = 0 }, "ppo: need at least one environment, got 0"},
		{func(c *Config) { c.LearningRate = Constant(-1) }, "ppo: learning rate must be positive"},
		{func(c *Config) { c.ClipRange = Constant(0) }, "ppo: clip range must be positive"},
		{func(c *Config) { c.Gamma = 1.5 }, "ppo: gamma 1.5 outside [0, 1]"},
		{func(c *Config) { c.EntCoef = -0.1 }, "ppo: entropy coefficient must be non-negative"},
		{func(c *Config) { c.MaxGradNorm = 0 }, "ppo: max grad norm must be positive"},
		{func(c *Config) { c.Epochs = 0 }, "ppo: n_epochs must be positive"},
		{func(c *Config) { c.TotalTimesteps = 0 }, "ppo: total timesteps must be positive"},
		{func(c *Config) { c.Hidden = []int{64, 0} }, "ppo: hidden layer 1 has width 0"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestScheduleMatchesSB3(t *testing.T) {
	s := Linear(1e-3, 0) // rl-zoo lin_1e-3: progress_remaining · 1e-3
	if got := s.At(0.25); got != 0.25e-3 {
		t.Errorf("lin at 0.25 = %v", got)
	}
	if got := Constant(3e-4).At(-0.03); got != 3e-4 {
		t.Errorf("constant = %v", got)
	}
}

func TestConfigHashChanges(t *testing.T) {
	a, b := DefaultConfig(), DefaultConfig()
	b.Seed++
	if a.Hash() == b.Hash() || a.Hash() != DefaultConfig().Hash() {
		t.Error("hash must depend on every field and nothing else")
	}
}
