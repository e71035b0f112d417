// Package rulespec parses the specs of the tunable vertical rules —
// "threshold[:measured][:target=U][:tol=T][:window=N][:start=MC]"
// (agents.Threshold) and
// "flink[:target=U][:tol=T][:window=N][:catchup=S][:trend=N[:ahead=S]][:start=MC]"
// (agents.RateRule)
// — into builders of controllers for a scenario. The evaluation's
// controller registry and the residual policies' base rules (package
// agents/residual, recorded in a policy card by its spec) both read them,
// so a spec means one controller everywhere.
package rulespec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"streamscale/agents"
	"streamscale/env"
)

// Rule is a parsed rule spec: its canonical form and a builder.
type Rule struct {
	spec  string
	build func(sc env.Config) (agents.Controller, error)
}

// String is the canonical spec: the keys given, in the rule's order, each
// value formatted shortest.
func (r Rule) String() string { return r.spec }

// New builds the rule for the scenario (its allocation bounds and metric
// lag).
func (r Rule) New(sc env.Config) (agents.Controller, error) {
	if r.build == nil {
		return nil, fmt.Errorf("rulespec: empty rule")
	}
	return r.build(sc)
}

// Parse reads a full spec, "threshold…" or "flink…".
func Parse(spec string) (Rule, error) {
	name, arg, _ := strings.Cut(spec, ":")
	switch name {
	case "threshold":
		return ParseThreshold(arg)
	case "flink":
		return ParseFlink(arg)
	}
	return Rule{}, fmt.Errorf("rulespec: rule %q, want threshold[:…] or flink[:…]", spec)
}

// param is one tunable parameter of a rule's spec, KEY=VALUE, parsed as
// a number in [lo, hi] (a whole number when whole is set) and applied
// with set.
type param struct {
	key    string
	lo, hi float64
	whole  bool
	set    func(v float64)
}

// parseParams parses the colon-separated KEY=VALUE parts of a rule's spec
// against params, and returns the canonical form: the keys given, in
// params' order, each with its value formatted shortest.
func parseParams(parts []string, params []param) (string, error) {
	var keys []string
	for _, p := range params {
		keys = append(keys, p.key)
	}
	vals := make([]string, len(params))
	for _, kv := range parts {
		k, v, ok := strings.Cut(kv, "=")
		idx := -1
		for i, p := range params {
			if p.key == k {
				idx = i
			}
		}
		switch {
		case !ok || v == "":
			return "", fmt.Errorf("want KEY=VALUE, got %q (keys: %s)", kv, strings.Join(keys, ", "))
		case idx < 0 || vals[idx] != "":
			return "", fmt.Errorf("unknown or repeated key %q (keys: %s)", k, strings.Join(keys, ", "))
		}
		p := params[idx]
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x >= p.lo && x <= p.hi) || (p.whole && x != math.Trunc(x)) {
			kind := "a number"
			if p.whole {
				kind = "a whole number"
			}
			return "", fmt.Errorf("%s %q is not %s in [%g, %g]", k, v, kind, p.lo, p.hi)
		}
		p.set(x)
		vals[idx] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	var canon []string
	for i, v := range vals {
		if v != "" {
			canon = append(canon, params[i].key+"="+v)
		}
	}
	return strings.Join(canon, ":"), nil
}

func split(arg string) []string {
	if arg == "" {
		return []string{}
	}
	return strings.Split(arg, ":")
}

// ParseThreshold parses the argument of "threshold" (after its colon):
// "" (the HPA-style rule, sizing on the allocation the observation
// shows), "measured" (the same rule sizing on the allocation in force
// when the reported load was measured: agents.ThresholdConfig's
// MetricLagSteps set to the scenario's Physics.MetricLagSteps, a delay an
// operator knows of its metrics pipeline), and either followed by tuned
// parameters ":target=U:tol=T:window=N" (ThresholdConfig's Target,
// Tolerance and ScaleDownWindow), as `eval tune` chooses them, and
// ":start=MC", the allocation asked at an episode's first step, before
// anything is measured (ThresholdConfig.StartCPU; it must lie in the
// scenario's allocation bounds).
func ParseThreshold(arg string) (Rule, error) {
	parts := split(arg)
	measured := len(parts) > 0 && parts[0] == "measured"
	if measured {
		parts = parts[1:]
	}
	tuned := agents.DefaultThresholdConfig()
	canon, err := parseParams(parts, []param{
		{key: "target", lo: 0.05, hi: 5, set: func(v float64) { tuned.Target = v }},
		{key: "tol", lo: 0, hi: 1, set: func(v float64) { tuned.Tolerance = v }},
		{key: "window", lo: 1, hi: 3600, whole: true, set: func(v float64) { tuned.ScaleDownWindow = int(v) }},
		{key: "start", lo: 0, hi: 1e6, set: func(v float64) { tuned.StartCPU = v }},
	})
	if err != nil {
		return Rule{}, fmt.Errorf("threshold takes [measured][:target=U][:tol=T][:window=N][:start=MC]: %w", err)
	}
	spec := "threshold"
	if measured {
		spec += ":measured"
	}
	if canon != "" {
		spec += ":" + canon
	}
	return Rule{spec: spec, build: func(sc env.Config) (agents.Controller, error) {
		cfg := tuned
		cfg.MinCPU, cfg.MaxCPU = CPUBounds(sc, cfg.MinCPU, cfg.MaxCPU)
		if measured {
			cfg.MetricLagSteps = sc.Physics.MetricLagSteps
		}
		return agents.NewThreshold(cfg)
	}}, nil
}

// ParseFlink parses the argument of "flink" (after its colon):
// "[target=U][:tol=T][:window=N][:catchup=S][:trend=N[:ahead=S]][:start=MC]", the
// Flink-autoscaler / DS2-style rule (agents.RateRule: target rates from
// the sources along the DAG with measured selectivities, sizing to a
// target utilization, catch-up capacity for backlog, stabilized
// scale-down), sizing on the allocation in force when the metrics were
// measured (the scenario's Physics.MetricLagSteps). trend=N makes it
// predictive (RateConfig.TrendWindow, N steps), projecting the sources'
// trend ahead=S steps on (RateConfig.TrendAhead), by default the
// scenario's agents.LeadSteps: the metric lag and actuation delay an
// operator knows of the pipeline, plus the step. start=MC is the
// allocation asked at an episode's first step (RateConfig.StartCPU).
func ParseFlink(arg string) (Rule, error) {
	tuned := agents.DefaultRateConfig()
	ahead := -1.0
	const usage = "flink takes [:target=U][:tol=T][:window=N][:catchup=S][:trend=N[:ahead=S]][:start=MC]"
	canon, err := parseParams(split(arg), []param{
		{key: "target", lo: 0.05, hi: 1, set: func(v float64) { tuned.Target = v }},
		{key: "tol", lo: 0, hi: 1, set: func(v float64) { tuned.Tolerance = v }},
		{key: "window", lo: 1, hi: 3600, whole: true, set: func(v float64) { tuned.ScaleDownWindow = int(v) }},
		{key: "catchup", lo: 0.1, hi: 3600, set: func(v float64) { tuned.CatchUpSeconds = v }},
		{key: "trend", lo: 3, hi: 3600, whole: true, set: func(v float64) { tuned.TrendWindow = int(v) }},
		{key: "ahead", lo: 0, hi: 3600, set: func(v float64) { ahead = v }},
		{key: "start", lo: 0, hi: 1e6, set: func(v float64) { tuned.StartCPU = v }},
	})
	if err != nil {
		return Rule{}, fmt.Errorf("%s: %w", usage, err)
	}
	if ahead >= 0 && tuned.TrendWindow == 0 {
		return Rule{}, fmt.Errorf("%s: ahead needs trend", usage)
	}
	spec := "flink"
	if canon != "" {
		spec += ":" + canon
	}
	return Rule{spec: spec, build: func(sc env.Config) (agents.Controller, error) {
		cfg := tuned
		cfg.MinCPU, cfg.MaxCPU = CPUBounds(sc, cfg.MinCPU, cfg.MaxCPU)
		cfg.MetricLagSteps = sc.Physics.MetricLagSteps
		switch {
		case ahead >= 0:
			cfg.TrendAhead = ahead
		case cfg.TrendWindow > 0:
			cfg.TrendAhead = float64(agents.LeadSteps(sc.Physics))
		}
		return agents.NewRateRule(cfg, sc.App)
	}}, nil
}

// ScenarioBounds returns the allocation bounds a rule uses in the
// scenario: its MinCPU and MaxCPU, or the rules' defaults
// (agents.DefaultThresholdConfig's) where it leaves them unset.
func ScenarioBounds(sc env.Config) (lo, hi float64) {
	d := agents.DefaultThresholdConfig()
	return CPUBounds(sc, d.MinCPU, d.MaxCPU)
}

// CPUBounds returns the scenario's allocation bounds, each falling back
// on the rule's default where the scenario leaves it unset.
func CPUBounds(sc env.Config, lo, hi float64) (float64, float64) {
	if sc.MinCPU > 0 {
		lo = sc.MinCPU
	}
	if sc.MaxCPU > 0 {
		hi = sc.MaxCPU
	}
	return lo, hi
}
