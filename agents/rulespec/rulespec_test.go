package rulespec

import (
	"strings"
	"testing"

	"streamscale/agents"
	"streamscale/env"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]string{
		"threshold":          "threshold",
		"threshold:measured": "threshold:measured",
		"threshold:measured:window=10:target=0.70": "threshold:measured:target=0.7:window=10",
		"flink:catchup=30:target=0.7":              "flink:target=0.7:catchup=30",
	} {
		r, err := Parse(in)
		if err != nil || r.String() != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, r, err, want)
		}
	}
	for in, msg := range map[string]string{
		"hpa":                           "want threshold",
		"threshold:target=9":            "target \"9\" is not a number in [0.05, 5]",
		"threshold:window=1.5":          "not a whole number",
		"threshold:tol=0.1:tol=0.2":     "repeated key",
		"flink:lag=1":                   "unknown or repeated key \"lag\"",
		"threshold:measured:target":     "want KEY=VALUE",
		"threshold:measured:target=NaN": "is not a number",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q): %v, want an error containing %q", in, err, msg)
		}
	}
	if _, err := (Rule{}).New(env.Config{}); err == nil {
		t.Error("the zero Rule built a controller")
	}
}

// TestNewUsesTheScenario: the rule takes the scenario's bounds and, for
// "measured", its metric lag.
func TestNewUsesTheScenario(t *testing.T) {
	r, _ := Parse("threshold:measured:target=0.6")
	sc := env.Config{MinCPU: 300, MaxCPU: 8000}
	sc.Physics.MetricLagSteps = 2
	c, err := r.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.(*agents.Threshold).Config()
	if cfg.MinCPU != 300 || cfg.MaxCPU != 8000 || cfg.MetricLagSteps != 2 || cfg.Target != 0.6 {
		t.Errorf("config %+v", cfg)
	}
}

// FuzzParse: no spec panics, and a parsed spec's canonical form parses to
// itself.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, spec string) {
		r, err := Parse(spec)
		if err != nil {
			return
		}
		again, err := Parse(r.String())
		if err != nil || again.String() != r.String() {
			t.Fatalf("canonical %q of %q reparses to %q, %v", r, spec, again, err)
		}
	})
}
