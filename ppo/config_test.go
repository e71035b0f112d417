package ppo

import (
	"encoding/json"
	"math"
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
		{func(c *Config) { c.CriticHidden = []int{} }, "ppo: critic_arch needs at least one hidden layer"},
		{func(c *Config) { c.CriticHidden = []int{256, -1} }, "ppo: critic hidden layer 1 has width -1"},
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
	// Without a critic architecture of its own the encoding (and so the
	// hash of every configuration from before the option) has no
	// critic_arch; with one, the hash changes.
	if j, _ := json.Marshal(a); strings.Contains(string(j), "critic_arch") {
		t.Errorf("default config encodes critic_arch: %s", j)
	}
	c := DefaultConfig()
	c.CriticHidden = []int{64, 64}
	if c.Hash() == a.Hash() {
		t.Error("critic_arch does not change the hash")
	}
}

func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Schedule
	}{
		{"3e-4", Constant(3e-4)},
		{"lin_3e-4", Linear(3e-4, 0)},
		{"1e-3..1e-4", Linear(1e-3, 1e-4)},
		{" 0.5 ", Constant(0.5)},
	} {
		got, err := ParseSchedule(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", `ppo: schedule "": "" is not a finite number`},
		{"lin_", `ppo: schedule "lin_": "" is not a finite number`},
		{"lin_x", `"x" is not a finite number`},
		{"NaN", `"NaN" is not a finite number`},
		{"lin_Inf", `"Inf" is not a finite number`},
		{"0", `ppo: schedule "0": start must be > 0 and end ≥ 0`},
		{"-1e-3", "start must be > 0"},
		{"1e-3..-1", "end ≥ 0"},
		{"1e-3..", `"" is not a finite number`},
		{"1..2..3", `"2..3" is not a finite number`},
	} {
		if _, err := ParseSchedule(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParseSchedule: any string parses to a valid schedule or fails with
// an error, and what parses survives String and parsing again.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{"3e-4", "lin_3e-4", "1e-3..1e-4", "lin_", "..", "NaN", "1e309", "0x1p-3", "lin_lin_1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSchedule(s)
		if err != nil {
			return
		}
		if v.Start <= 0 || v.End < 0 || math.IsInf(v.Start, 0) || math.IsInf(v.End, 0) {
			t.Fatalf("%q parsed to invalid %+v", s, v)
		}
		c := DefaultConfig()
		c.LearningRate = v
		if err := c.Validate(); err != nil {
			t.Fatalf("%q parsed to %+v that Validate refuses: %v", s, v, err)
		}
		w, err := ParseSchedule(v.String())
		if err != nil || w != v {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, v, v.String(), w, err)
		}
	})
}
