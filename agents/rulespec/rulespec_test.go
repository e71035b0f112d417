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
		"flink:trend=60:target=0.71":               "flink:target=0.71:trend=60",
		"flink:ahead=2:trend=30":                   "flink:trend=30:ahead=2",
		"flink:start=1000:target=0.9":              "flink:target=0.9:start=1000",
		"threshold:start=3e3":                      "threshold:start=3000",
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
		"flink:ahead=3":                 "ahead needs trend",
		"flink:trend=2":                 "trend \"2\" is not a whole number in [3, 3600]",
		"threshold:measured:target":     "want KEY=VALUE",
		"threshold:measured:target=NaN": "is not a number",
		"flink:start=-1":                "start \"-1\" is not a number in [0, 1e+06]",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q): %v, want an error containing %q", in, err, msg)
		}
	}
	// A start outside the scenario's bounds is refused when the rule is
	// built.
	for _, spec := range []string{"flink:start=20000", "threshold:start=100"} {
		r, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.New(env.Config{App: env.App{Name: "one", SLOMS: 100, Sources: []int{0}, Sinks: []int{0},
			Tasks: []env.Task{{Name: "a", Selectivity: 1, MIPSPerEvent: 1}}}}); err == nil || !strings.Contains(err.Error(), "start allocation") {
			t.Errorf("%s built: %v", spec, err)
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

// TestFlinkTrendHorizon: the trend is projected the scenario's lead
// (metric lag + actuation delay + 1 steps) unless ahead is given.
func TestFlinkTrendHorizon(t *testing.T) {
	sc := env.Config{App: env.App{Name: "one", SLOMS: 100, Sources: []int{0}, Sinks: []int{0},
		Tasks: []env.Task{{Name: "a", Selectivity: 1, MIPSPerEvent: 1}}}}
	sc.Physics.MetricLagSteps, sc.Physics.ActuationDelaySteps = 1, 2
	for spec, want := range map[string]float64{"flink:trend=30": 4, "flink:trend=30:ahead=1.5": 1.5, "flink": 0} {
		r, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.New(sc)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.(*agents.RateRule).Config().TrendAhead; got != want {
			t.Errorf("%s: horizon %v steps, want %v", spec, got, want)
		}
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
