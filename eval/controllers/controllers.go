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
// observation (agents.Controller). Horizontal controllers (clasp) re-plan
// replicas on a scenario of their own, derived from the edge scenario by
// Config, and are fed the step's env.Info (agents.HorizontalController).
// Build returns either as an agents.Actor.
type Spec struct {
	spec      string
	build     func(scenario env.Config) (agents.Controller, error)
	buildInfo func(scenario env.Config) (agents.HorizontalController, error)
	scenario  func(base env.Config) (env.Config, error)
	seeds     []Spec // members of a controller of several seeds (Seeds)
}

// String returns the canonical spec string, e.g. "static:2000".
func (s Spec) String() string { return s.spec }

// Horizontal reports whether the controller re-plans replicas and is fed
// the step's Info (agents.HorizontalController).
func (s Spec) Horizontal() bool { return s.buildInfo != nil }

// Config returns the scenario the controller runs on, given the edge
// scenario base: base itself for vertical controllers (and the zero Spec),
// the horizontal counterpart for horizontal ones.
func (s Spec) Config(base env.Config) (env.Config, error) {
	if s.scenario == nil {
		return base, nil
	}
	sc, err := s.scenario(base)
	if err != nil {
		return env.Config{}, fmt.Errorf("eval: controller %s: %w", s.spec, err)
	}
	return sc, nil
}

// Build returns a fresh controller of either kind for scenario (which
// must come from Config), as the episode loop drives it.
func (s Spec) Build(scenario env.Config) (agents.Actor, error) {
	switch {
	case len(s.seeds) > 0:
		return agents.Actor{}, fmt.Errorf("eval: controller %s has %d seeds: build each of Seeds", s.spec, len(s.seeds))
	case s.build != nil:
		c, err := s.build(scenario)
		if err != nil {
			return agents.Actor{}, fmt.Errorf("eval: controller %s: %w", s.spec, err)
		}
		return agents.Vertical(c), nil
	case s.buildInfo != nil:
		c, err := s.buildInfo(scenario)
		if err != nil {
			return agents.Actor{}, fmt.Errorf("eval: controller %s: %w", s.spec, err)
		}
		return agents.Horizontal(c), nil
	}
	return agents.Actor{}, errors.New("eval: zero controller spec")
}

// Check builds the controller of either kind for the edge scenario base
// (through Config) and discards it, so that a command can refuse a spec
// that cannot run (a missing PPO policy) before doing any work.
func (s Spec) Check(base env.Config) error {
	for _, m := range s.seeds {
		if err := m.Check(base); err != nil {
			return err
		}
	}
	if len(s.seeds) > 0 {
		return nil
	}
	sc, err := s.Config(base)
	if err != nil {
		return err
	}
	_, err = s.Build(sc)
	return err
}

// entry is one kind of controller. parse validates the argument after the
// colon (empty when there is none) and returns the spec with its canonical
// string and constructors.
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

// New returns the registry of every controller kind.
func New(opts Options) *Registry {
	return &Registry{opts: opts, entries: []entry{
		{name: "ppo", usage: "ppo[:DIR[+DIR…]]", parse: ppoParser("ppo", true)},
		{name: "ppo-sample", usage: "ppo-sample[:DIR[+DIR…]]", parse: ppoParser("ppo-sample", false)},
		{name: "vrebalance", usage: "vrebalance[:evals=N][:objective=squared|violation]", parse: vrebalanceParser()},
		{name: "threshold", usage: "threshold[:measured][:target=U][:tol=T][:window=N][:start=MC]", parse: thresholdParser()},
		{name: "flink", usage: "flink[:target=U][:tol=T][:window=N][:catchup=S][:trend=N[:ahead=S]][:start=MC]", parse: flinkParser()},
		{name: "oracle", usage: "oracle:H:RULE", parse: oracleParser()},
		{name: "static", usage: "static:N", parse: parseStatic},
		{name: "clasp", usage: "clasp", parse: claspParser()},
	}}
}

// Kinds lists the usage form of every controller kind the registry knows,
// in a fixed order.
func (r *Registry) Kinds() []string {
	out := make([]string, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.usage
	}
	return out
}

// Parse parses a spec string. It fails for an unknown name or a malformed
// argument.
func (r *Registry) Parse(spec string) (Spec, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(spec), ":")
	for _, e := range r.entries {
		if e.name != name {
			continue
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

// Selection is the controllers an evaluation runs and its candidate.
type Selection struct {
	Controllers []Spec
	Candidate   string // canonical spec of the candidate; one of Controllers
	// Notes say, one line each, which listed controllers were skipped and
	// why, and whether the candidate was replaced.
	Notes []string
}

// SelectOptions are the inputs of Select.
type SelectOptions struct {
	Specs []string // the controller list, in order
	// SpecsGiven: the list was given by the user (else it is a default
	// list, whose entries that cannot run here, such as a PPO policy not
	// trained yet, are skipped with a note instead of failing).
	SpecsGiven bool
	Candidate  string // the candidate's spec
	// CandidateGiven: the candidate was given by the user (else, if it
	// cannot run, the first controller is judged against the others).
	CandidateGiven bool
	// Check builds a spec for every scenario of the evaluation and
	// discards it (nil: no check).
	Check func(Spec) error
}

// Select parses and checks an evaluation's controllers and picks its
// candidate: a given candidate missing from a default list is put first;
// a default candidate that cannot run gives way to the first controller.
// Errors are the user's (bad, duplicated or unrunnable specs).
func (r *Registry) Select(o SelectOptions) (Selection, error) {
	var sel Selection
	check := func(s Spec) error {
		if o.Check == nil {
			return nil
		}
		return o.Check(s)
	}
	skipped := map[string]error{}
	for _, spec := range o.Specs {
		c, err := r.Parse(spec)
		if err == nil {
			err = check(c)
		}
		if errors.Is(err, ErrNoPolicy) && !o.SpecsGiven {
			sel.Notes = append(sel.Notes, fmt.Sprintf("%v; skipping it", err))
			skipped[spec] = err
			continue
		}
		if err != nil {
			return Selection{}, err
		}
		for _, prev := range sel.Controllers {
			if prev.String() == c.String() {
				return Selection{}, fmt.Errorf("eval: -controllers lists %s twice", c)
			}
		}
		sel.Controllers = append(sel.Controllers, c)
	}
	if len(sel.Controllers) == 0 {
		return Selection{}, fmt.Errorf("eval: no available controllers in -controllers %q", strings.Join(o.Specs, ","))
	}
	cand, err := r.Parse(o.Candidate)
	if err != nil && o.CandidateGiven {
		return Selection{}, err
	}
	if err == nil {
		for _, c := range sel.Controllers {
			if c.String() == cand.String() {
				sel.Candidate = c.String()
			}
		}
		if _, skip := skipped[cand.String()]; sel.Candidate == "" && o.CandidateGiven && !o.SpecsGiven && !skip {
			if err := check(cand); err != nil {
				return Selection{}, err
			}
			sel.Controllers = append([]Spec{cand}, sel.Controllers...)
			sel.Candidate = cand.String()
		}
	}
	if sel.Candidate == "" {
		if o.CandidateGiven {
			if err, ok := skipped[cand.String()]; ok {
				return Selection{}, err
			}
			return Selection{}, fmt.Errorf("eval: candidate %s is not among -controllers", cand)
		}
		sel.Candidate = sel.Controllers[0].String()
		sel.Notes = append(sel.Notes, fmt.Sprintf("eval: candidate %s is not available; judging %s against the others instead", o.Candidate, sel.Candidate))
	}
	return sel, nil
}
