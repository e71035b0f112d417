package paired

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sync/errgroup"

	"streamscale/env"
	"streamscale/eval/runner"
	"streamscale/rng"
	"streamscale/traces"
)

// DefaultPlacements are the evaluation's placement seeds, disjoint from the
// training placements (42, 37).
var DefaultPlacements = []uint64{101, 102, 103, 104, 105, 106, 107, 108, 109, 110}

// Evaluation constants.
const (
	Resamples            = 10000 // bootstrap resamples
	Level                = 0.95  // confidence level
	NonInferiorityMargin = 5.0   // H3 margin, percent of baseline throughput
)

// Plan is a paired evaluation.
type Plan struct {
	Profiles    []string
	Workloads   []*traces.Trace // by Name ("taxi", "intel", …); read only
	Placements  []uint64
	Controllers []runner.Factory
	Candidate   string      // canonical spec of the candidate; one of Controllers
	Seed        uint64      // root seed
	Steps       int         // intervals per run; 0 = the workload's length
	RateMult    float64     // rate multiplier the workloads were loaded with (recorded only)
	Scenario    string      // physics preset name (env.ScenarioPhysics), recorded
	Physics     env.Physics // the simulator physics of every run
	// Demand, if not nil, are measured task demands (runner.Spec.Demand).
	Demand *env.ScenarioDemand
	// ViolationBudget is the violation rate (a fraction, in (0, 1)) within
	// which a controller meets its SLO when the best controller of a cell
	// is named; 0 means DefaultViolationBudget.
	ViolationBudget float64
}

func (p Plan) budget() float64 {
	if p.ViolationBudget == 0 {
		return DefaultViolationBudget
	}
	return p.ViolationBudget
}

// Validate checks the plan's shape.
func (p Plan) Validate() error {
	switch {
	case len(p.Profiles) == 0:
		return errors.New("eval: no profiles")
	case len(p.Workloads) == 0:
		return errors.New("eval: no workloads")
	case len(p.Placements) == 0:
		return errors.New("eval: no placements")
	case len(p.Controllers) == 0:
		return errors.New("eval: no controllers")
	case p.Steps < 0:
		return fmt.Errorf("eval: steps %d, want ≥ 0", p.Steps)
	case p.ViolationBudget < 0 || p.ViolationBudget >= 1 || p.ViolationBudget != p.ViolationBudget:
		return fmt.Errorf("eval: violation budget %g, want a fraction in (0, 1)", p.ViolationBudget)
	}
	seen := map[string]bool{}
	found := false
	for _, c := range p.Controllers {
		if seen[c.String()] {
			return fmt.Errorf("eval: controller %s listed twice", c)
		}
		seen[c.String()] = true
		found = found || c.String() == p.Candidate
	}
	if !found {
		return fmt.Errorf("eval: candidate %q is not among the controllers", p.Candidate)
	}
	return p.validateSeeds()
}

// EpisodeSeed is the episode seed of a cell, shared by its controllers.
func EpisodeSeed(root uint64, profile, trace string, placement uint64) uint64 {
	return rng.Derive(root, rng.EvalEpisode+profile+"/"+trace+"/"+strconv.FormatUint(placement, 10))
}

// Specs lists the runs of the plan in cell order; a controller of several
// seeds (Seeded) runs as its members, side by side in seed order.
func (p Plan) Specs() []runner.Spec {
	var out []runner.Spec
	for _, prof := range p.Profiles {
		for _, w := range p.Workloads {
			for _, pl := range p.Placements {
				seed := EpisodeSeed(p.Seed, prof, w.Name, pl)
				for _, c := range p.Controllers {
					for _, m := range members(c) {
						out = append(out, runner.Spec{
							Profile: prof, TraceName: w.Name, Workload: w,
							PlacementSeed: pl, Seed: seed, Steps: p.Steps, Controller: m,
							Physics: p.Physics, Scenario: p.Scenario, Demand: p.Demand,
						})
					}
				}
			}
		}
	}
	return out
}

// Labels returns, for each run of Specs in its order, the controller it
// belongs to: a member's seeded controller, else the run's own.
func (p Plan) Labels() []string {
	var out []string
	for range p.Profiles {
		for range p.Workloads {
			for range p.Placements {
				for _, c := range p.Controllers {
					for range members(c) {
						out = append(out, c.String())
					}
				}
			}
		}
	}
	return out
}

// Execute runs specs on at most workers goroutines and calls emit with
// each result in spec order (i = 0, 1, …), from one goroutine at a time.
// progress, if not nil, is called after each run finishes with the number
// finished so far. The first error (from a run or from emit) cancels the
// rest and is returned.
func Execute(ctx context.Context, specs []runner.Spec, workers int, emit func(i int, r runner.Result) error, progress func(done, total int)) error {
	if workers < 1 {
		workers = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type done struct {
		i int
		r runner.Result
	}
	results := make(chan done, len(specs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	submitted := make(chan struct{})
	go func() {
		defer close(submitted)
		for i, s := range specs {
			if gctx.Err() != nil {
				return
			}
			g.Go(func() error {
				r, err := runner.Run(gctx, s)
				if err != nil {
					return fmt.Errorf("%s/%s placement %d %s: %w", s.Profile, s.TraceName, s.PlacementSeed, s.Controller, err)
				}
				results <- done{i, r}
				return nil
			})
		}
	}()
	waitErr := make(chan error, 1)
	go func() {
		<-submitted
		waitErr <- g.Wait()
		close(results)
	}()

	pending := map[int]runner.Result{}
	next, finished := 0, 0
	var emitErr error
	for d := range results {
		finished++
		if progress != nil {
			progress(finished, len(specs))
		}
		if emitErr != nil {
			continue
		}
		pending[d.i] = d.r
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			if err := emit(next, r); err != nil {
				emitErr = err
				cancel()
				break
			}
			next++
		}
	}
	if err := <-waitErr; err != nil {
		if emitErr != nil {
			return emitErr
		}
		return err
	}
	if emitErr != nil {
		return emitErr
	}
	if next != len(specs) {
		return fmt.Errorf("eval: %d of %d runs finished", next, len(specs))
	}
	return nil
}

// ConfigHash hashes the plan: its protocol settings and every run's
// scenario hash, in cell order.
func ConfigHash(p Plan, runConfigHashes []string) (string, error) {
	h := sha256.New()
	proto, err := json.Marshal(p.Protocol())
	if err != nil {
		return "", fmt.Errorf("eval: encoding protocol: %w", err)
	}
	h.Write(proto)
	for _, c := range runConfigHashes {
		h.Write([]byte(c))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
