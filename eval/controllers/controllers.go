package controllers

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/eval/claspexp"
)

// ErrUnavailable is wrapped by Parse's error for a controller the registry
// knows whose implementation is not available yet.
var ErrUnavailable = errors.New("not available yet")

// Options configures the registry.
type Options struct {
	// PoliciesDir holds trained PPO policies, one directory per profile
	// (<PoliciesDir>/<profile>/policy.json and .safetensors, as
	// `go run ./train -out <PoliciesDir>/<profile>` writes them).
	PoliciesDir string
}

// Spec is a parsed, available controller spec. The zero value is invalid.
//
// A spec is one of two kinds. Vertical controllers (static, threshold,
// vrebalance, ppo) set per-task CPU on the edge scenario and are fed the
// observation (agents.Controller, built by New). Horizontal controllers
// (clasp) re-plan replicas on a scenario of their own, derived from the
// edge scenario by Scenario, and are fed the step's env.Info
// (claspexp.HorizontalController, built by NewHorizontal).
type Spec struct {
	spec      string
	build     func(scenario env.Config) (agents.Controller, error)
	buildInfo func(scenario env.Config) (claspexp.HorizontalController, error)
	scenario  func(base env.Config) (env.Config, error)
}

// String returns the canonical spec string, e.g. "static:2000".
func (s Spec) String() string { return s.spec }

// Horizontal reports whether the controller re-plans replicas and is fed
// the step's Info (build it with NewHorizontal).
func (s Spec) Horizontal() bool { return s.buildInfo != nil }

// Scenario returns the scenario the controller runs on, given the edge
// scenario base: base itself for vertical controllers (and the zero Spec),
// the horizontal counterpart for horizontal ones.
func (s Spec) Scenario(base env.Config) (env.Config, error) {
	if s.scenario == nil {
		return base, nil
	}
	sc, err := s.scenario(base)
	if err != nil {
		return env.Config{}, fmt.Errorf("eval: controller %s: %w", s.spec, err)
	}
	return sc, nil
}

// New builds a fresh observation-fed controller for scenario. It fails
// for a horizontal spec.
func (s Spec) New(scenario env.Config) (agents.Controller, error) {
	if s.build == nil {
		if s.buildInfo != nil {
			return nil, fmt.Errorf("eval: controller %s is fed the step's Info; build it with NewHorizontal", s.spec)
		}
		return nil, errors.New("eval: zero controller spec")
	}
	c, err := s.build(scenario)
	if err != nil {
		return nil, fmt.Errorf("eval: controller %s: %w", s.spec, err)
	}
	return c, nil
}

// NewHorizontal builds a fresh Info-fed controller for scenario (which
// must come from Scenario). It fails for a vertical spec.
func (s Spec) NewHorizontal(scenario env.Config) (claspexp.HorizontalController, error) {
	if s.buildInfo == nil {
		if s.build != nil {
			return nil, fmt.Errorf("eval: controller %s is fed the observation; build it with New", s.spec)
		}
		return nil, errors.New("eval: zero controller spec")
	}
	c, err := s.buildInfo(scenario)
	if err != nil {
		return nil, fmt.Errorf("eval: controller %s: %w", s.spec, err)
	}
	return c, nil
}

// Check builds the controller of either kind for the edge scenario base
// (through Scenario) and discards it, so that a command can refuse a spec
// that cannot run (a missing PPO policy) before doing any work.
func (s Spec) Check(base env.Config) error {
	sc, err := s.Scenario(base)
	if err != nil {
		return err
	}
	if s.Horizontal() {
		_, err = s.NewHorizontal(sc)
	} else {
		_, err = s.New(sc)
	}
	return err
}

// entry is one kind of controller. parse validates the argument after the
// colon (empty when there is none) and returns the spec with its canonical
// string and constructors; nil parse means the kind is not available yet.
type entry struct {
	name  string
	usage string
	parse func(arg string, o Options) (Spec, error)
}

// Registry maps spec strings to controllers.
type Registry struct {
	opts    Options
	entries []entry // in documentation order
}

// New returns the registry of every controller kind, with those whose
// implementation exists wired in.
func New(opts Options) *Registry {
	return &Registry{opts: opts, entries: []entry{
		{name: "ppo", usage: "ppo[:DIR]", parse: ppoParser()},
		{name: "vrebalance", usage: "vrebalance", parse: vrebalanceParser()},
		{name: "threshold", usage: "threshold", parse: thresholdParser()},
		{name: "static", usage: "static:N", parse: parseStatic},
		{name: "clasp", usage: "clasp", parse: claspParser()},
	}}
}

// Kinds lists the usage form of every controller kind the registry knows,
// available or not, in a fixed order.
func (r *Registry) Kinds() []string {
	out := make([]string, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.usage
	}
	return out
}

// Available reports whether the controller kind name ("ppo", "static", …)
// has an implementation.
func (r *Registry) Available(name string) bool {
	for _, e := range r.entries {
		if e.name == name {
			return e.parse != nil
		}
	}
	return false
}

// Parse parses a spec string. It fails for an unknown name, a malformed
// argument, and (wrapping ErrUnavailable) a controller that is not
// available yet.
func (r *Registry) Parse(spec string) (Spec, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(spec), ":")
	for _, e := range r.entries {
		if e.name != name {
			continue
		}
		if e.parse == nil {
			return Spec{}, fmt.Errorf("eval: controller %q is %w", spec, ErrUnavailable)
		}
		if hasArg && arg == "" {
			return Spec{}, fmt.Errorf("eval: controller %q: empty argument after ':' (want %s)", spec, e.usage)
		}
		s, err := e.parse(arg, r.opts)
		if err != nil {
			return Spec{}, fmt.Errorf("eval: controller %q: %w", spec, err)
		}
		return s, nil
	}
	return Spec{}, fmt.Errorf("eval: unknown controller %q (known: %s)", spec, strings.Join(r.Kinds(), ", "))
}

func parseStatic(arg string, _ Options) (Spec, error) {
	if arg == "" {
		return Spec{}, errors.New("want static:N with N the millicores per task")
	}
	mc, err := strconv.ParseFloat(arg, 64)
	if err != nil || !(mc > 0) || math.IsInf(mc, 0) {
		return Spec{}, fmt.Errorf("allocation %q is not a positive number of millicores", arg)
	}
	canon := "static:" + strconv.FormatFloat(mc, 'f', -1, 64)
	return Spec{spec: canon, build: func(env.Config) (agents.Controller, error) { return agents.NewStatic(mc) }}, nil
}

// noArg makes the parser of a controller kind that takes no argument.
func noArg(name string, s Spec) func(string, Options) (Spec, error) {
	s.spec = name
	return func(arg string, _ Options) (Spec, error) {
		if arg != "" {
			return Spec{}, fmt.Errorf("%s takes no argument", name)
		}
		return s, nil
	}
}
