package controllers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"streamscale/agents"
	"streamscale/agents/horizontal"
	"streamscale/agents/rulespec"
	"streamscale/agents/vrebalance"
	"streamscale/env"
	"streamscale/ppo/policy"
)

// ErrNoPolicy is wrapped by Spec.New's error when a PPO policy file does
// not exist.
var ErrNoPolicy = errors.New("no trained policy")

// thresholdParser parses "threshold[:measured][:target=U][:tol=T][:window=N][:start=MC]"
// (rulespec.ParseThreshold).
func thresholdParser() func(string, Options) (Spec, error) {
	return ruleParser(rulespec.ParseThreshold)
}

// flinkParser parses "flink[:target=U][:tol=T][:window=N][:catchup=S][:trend=N[:ahead=S]][:start=MC]"
// (rulespec.ParseFlink): the Flink-autoscaler / DS2-style rule.
func flinkParser() func(string, Options) (Spec, error) {
	return ruleParser(rulespec.ParseFlink)
}

// oracleParser parses "oracle:H:RULE", RULE a threshold or flink spec
// (rulespec.Parse) run under agents.Clairvoyant with a look-ahead of H
// steps: an analysis bound that reads the episode's workload ahead, not a
// deployable controller.
func oracleParser() func(string, Options) (Spec, error) {
	return func(arg string, _ Options) (Spec, error) {
		hs, rule, ok := strings.Cut(arg, ":")
		h, err := strconv.Atoi(hs)
		if !ok || err != nil || h < 0 || h > 3600 {
			return Spec{}, fmt.Errorf("want oracle:H:RULE with H the look-ahead in steps in [0, 3600] and RULE a threshold or flink spec, got %q", arg)
		}
		r, err := rulespec.Parse(rule)
		if err != nil {
			return Spec{}, err
		}
		q := agents.DefaultRateConfig().Quantum
		return Spec{spec: "oracle:" + strconv.Itoa(h) + ":" + r.String(), build: func(sc env.Config) (agents.Controller, error) {
			base, err := r.New(sc)
			if err != nil {
				return nil, err
			}
			return agents.NewClairvoyant(base, sc, h, q)
		}}, nil
	}
}

func ruleParser(parse func(string) (rulespec.Rule, error)) func(string, Options) (Spec, error) {
	return func(arg string, _ Options) (Spec, error) {
		r, err := parse(arg)
		if err != nil {
			return Spec{}, err
		}
		return Spec{spec: r.String(), build: r.New}, nil
	}
}

// vrebalanceParser parses "vrebalance" (the default configuration) and
// "vrebalance:KEY=VALUE[:KEY=VALUE]" (colons, since controller lists are
// comma-separated) with keys evals (the exploration
// budget per tier, ExplorationEvals) and objective (squared or
// violation); the canonical form lists the keys given, in that order.
func vrebalanceParser() func(string, Options) (Spec, error) {
	return func(arg string, _ Options) (Spec, error) {
		cfg := vrebalance.DefaultConfig()
		canon := "vrebalance"
		if arg != "" {
			var evals, objective string
			for _, kv := range strings.Split(arg, ":") {
				k, v, ok := strings.Cut(kv, "=")
				switch {
				case !ok || v == "":
					return Spec{}, fmt.Errorf("want KEY=VALUE, got %q (keys: evals, objective)", kv)
				case k == "evals" && evals == "":
					n, err := strconv.Atoi(v)
					if err != nil || n < 1 {
						return Spec{}, fmt.Errorf("evals %q is not a whole number ≥ 1", v)
					}
					cfg.ExplorationEvals, evals = n, strconv.Itoa(n)
				case k == "objective" && objective == "":
					if v != vrebalance.ObjectiveSquared && v != vrebalance.ObjectiveViolation {
						return Spec{}, fmt.Errorf("objective %q, want %s or %s", v, vrebalance.ObjectiveSquared, vrebalance.ObjectiveViolation)
					}
					cfg.Objective, objective = v, v
				default:
					return Spec{}, fmt.Errorf("unknown or repeated key %q (keys: evals, objective)", k)
				}
			}
			var parts []string
			if evals != "" {
				parts = append(parts, "evals="+evals)
			}
			if objective != "" {
				parts = append(parts, "objective="+objective)
			}
			canon += ":" + strings.Join(parts, ":")
		}
		return Spec{spec: canon, build: func(sc env.Config) (agents.Controller, error) {
			return vrebalance.New(cfg, sc)
		}}, nil
	}
}

// claspParser parses "clasp": the CLASP planner on the horizontal
// counterpart of the edge scenario (package horizontal documents the
// scenario and the mapping of CLASP's workers onto the servers).
func claspParser() func(string, Options) (Spec, error) {
	return noArg("clasp", Spec{
		scenario: horizontal.Counterpart,
		buildInfo: func(sc env.Config) (agents.HorizontalController, error) {
			return horizontal.NewEdge(sc)
		},
	})
}

// ppoParser parses "ppo" (the policy for the scenario's profile, from
// <PoliciesDir>/<profile>/policy.*) and "ppo:DIR" (the policy in DIR, for
// whichever profile it was trained on), and the same under the name
// "ppo-sample"; and their forms of several seeds (seedsParser). Policies
// are read once per directory and shared read-only; each controller acts
// on a private copy, by the per-dimension argmax (deterministic) or, for
// ppo-sample, by sampling each dimension from the policy's distribution on
// the stream rng.PPOAction of the episode seed (so the same seed gives the
// same run).
func ppoParser(name string, deterministic bool) func(string, Options) (Spec, error) {
	return func(arg string, o Options) (Spec, error) {
		if s, ok, err := seedsParser(name, deterministic, arg, o); ok || err != nil {
			return s, err
		}
		if arg == "" {
			return ppoSpec(name, deterministic, name, func(profile string) string { return filepath.Join(o.PoliciesDir, profile) }), nil
		}
		dir := filepath.Clean(arg)
		return ppoSpec(name, deterministic, name+":"+dir, func(string) string { return dir }), nil
	}
}

// ppoSpec is the spec canon of the policy in dirOf(profile).
func ppoSpec(name string, deterministic bool, canon string, dirOf func(profile string) string) Spec {
	cache := &policyCache{m: map[string]policyEntry{}}
	// The policy runs with the action set it was trained with (its
	// card's Spaces; env.Config.ActionDeltas or ActionUtilization), whatever the base
	// scenario's; the baselines beside it emit Targets and are not
	// affected.
	scenario := func(base env.Config) (env.Config, error) {
		_, card, err := cache.load(dirOf(base.App.Name))
		if err != nil {
			return env.Config{}, err
		}
		if card.Residual != nil { // corrections of a rule's targets: no action set
			return base, nil
		}
		if u := card.Spaces.TargetUtilization; len(u) > 0 {
			if len(u) != len(base.ActionUtilization) {
				return env.Config{}, fmt.Errorf("policy in %s has %d action choices, want %d", dirOf(base.App.Name), len(u), len(base.ActionUtilization))
			}
			copy(base.ActionUtilization[:], u)
			base.ActionDeltas = [5]float64{}
			return base, nil
		}
		d := card.Spaces.DeltaMillicores
		switch {
		case len(d) == 0: // cards that predate the record: the paper's
			return base, nil
		case len(d) != len(base.ActionDeltas):
			return env.Config{}, fmt.Errorf("policy in %s has %d action choices, want %d", dirOf(base.App.Name), len(d), len(base.ActionDeltas))
		}
		var set [5]float64
		copy(set[:], d)
		if set != env.DeltaMillicores {
			base.ActionDeltas = set
		}
		return base, nil
	}
	return Spec{spec: canon, scenario: scenario, build: func(sc env.Config) (agents.Controller, error) {
		profile := sc.App.Name
		p, card, err := cache.load(dirOf(profile))
		if err != nil {
			return nil, err
		}
		if card.Profile != "" && card.Profile != profile {
			return nil, fmt.Errorf("policy in %s was trained on profile %q, scenario is %q", dirOf(profile), card.Profile, profile)
		}
		if card.Residual != nil {
			return policy.NewResidualController(p, card.Residual, sc, deterministic)
		}
		c, err := policy.NewController(p, sc.Spaces())
		if err != nil {
			return nil, err
		}
		c.SetDeterministic(deterministic)
		return c, nil
	}}
}

type policyEntry struct {
	p    *policy.Policy
	card *policy.Card
	err  error
}

// policyCache reads each policy directory once.
type policyCache struct {
	mu sync.Mutex
	m  map[string]policyEntry
}

func (c *policyCache) load(dir string) (*policy.Policy, *policy.Card, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[dir]; ok {
		return e.p, e.card, e.err
	}
	var e policyEntry
	if _, err := os.Stat(filepath.Join(dir, policy.FileName+".json")); errors.Is(err, fs.ErrNotExist) {
		e.err = fmt.Errorf("%w: %s does not exist (train one with go run ./train -out %s, or pass -policies)",
			ErrNoPolicy, filepath.Join(dir, policy.FileName+".json"), dir)
	} else {
		e.p, e.card, e.err = policy.Read(os.DirFS(dir), policy.FileName)
	}
	c.m[dir] = e
	return e.p, e.card, e.err
}
