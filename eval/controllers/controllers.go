package controllers

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"streamscale/agents"
	"streamscale/env"
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
type Spec struct {
	spec  string
	build func(scenario env.Config) (agents.Controller, error)
}

// String returns the canonical spec string, e.g. "static:2000".
func (s Spec) String() string { return s.spec }

// New builds a fresh controller for scenario.
func (s Spec) New(scenario env.Config) (agents.Controller, error) {
	if s.build == nil {
		return nil, errors.New("eval: zero controller spec")
	}
	c, err := s.build(scenario)
	if err != nil {
		return nil, fmt.Errorf("eval: controller %s: %w", s.spec, err)
	}
	return c, nil
}

// entry is one kind of controller. parse validates the argument after the
// colon (empty when there is none) and returns the canonical spec and the
// constructor; nil parse means the kind is not available yet.
type entry struct {
	name  string
	usage string
	parse func(arg string, o Options) (string, func(env.Config) (agents.Controller, error), error)
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
		{name: "clasp", usage: "clasp"}, // not available yet
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
		canon, build, err := e.parse(arg, r.opts)
		if err != nil {
			return Spec{}, fmt.Errorf("eval: controller %q: %w", spec, err)
		}
		return Spec{spec: canon, build: build}, nil
	}
	return Spec{}, fmt.Errorf("eval: unknown controller %q (known: %s)", spec, strings.Join(r.Kinds(), ", "))
}

func parseStatic(arg string, _ Options) (string, func(env.Config) (agents.Controller, error), error) {
	if arg == "" {
		return "", nil, errors.New("want static:N with N the millicores per task")
	}
	mc, err := strconv.ParseFloat(arg, 64)
	if err != nil || !(mc > 0) || math.IsInf(mc, 0) {
		return "", nil, fmt.Errorf("allocation %q is not a positive number of millicores", arg)
	}
	canon := "static:" + strconv.FormatFloat(mc, 'f', -1, 64)
	return canon, func(env.Config) (agents.Controller, error) { return agents.NewStatic(mc) }, nil
}

// noArg wraps a constructor for a controller kind that takes no argument.
func noArg(name string, build func(env.Config) (agents.Controller, error)) func(string, Options) (string, func(env.Config) (agents.Controller, error), error) {
	return func(arg string, _ Options) (string, func(env.Config) (agents.Controller, error), error) {
		if arg != "" {
			return "", nil, fmt.Errorf("%s takes no argument", name)
		}
		return name, build, nil
	}
}
