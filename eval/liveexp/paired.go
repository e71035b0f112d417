package liveexp

import (
	"fmt"

	"streamscale/eval/paired"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/traces"
)

// ScenarioLive is the scenario name of live runs and of their paired plan:
// the runtime, not a simulator physics preset (eval/report labels a paired
// summary of it as live).
const ScenarioLive = "live"

// DefaultCandidate is the paired candidate when none is named: the first
// PPO controller, else the first controller.
func DefaultCandidate(controllers []runner.Factory) string {
	for _, f := range controllers {
		if IsPPO(f.String()) {
			return f.String()
		}
	}
	if len(controllers) == 0 {
		return ""
	}
	return controllers[0].String()
}

// Paired judges out's live runs as eval paired judges simulated ones:
// candidate (DefaultCandidate when "") against every other controller,
// paired by placement, with the same bootstrap and verdicts. It returns
// the summary (stamped with c.Build) and the live runs' series for the
// figures; simulated runs in out are not judged.
func Paired(c Config, out Output, candidate string) (paired.Summary, []report.Series, error) {
	if candidate == "" {
		candidate = DefaultCandidate(c.Controllers)
	}
	var liveRes []runner.Result
	for i, r := range out.Results {
		if c.Sim == nil || i%2 == 0 { // with Sim, live and simulated runs alternate
			liveRes = append(liveRes, r)
		}
	}
	plan := paired.Plan{Profiles: []string{c.Profile}, Workloads: []*traces.Trace{c.Trace},
		Placements: c.PlacementSeeds, Controllers: c.Controllers, Candidate: candidate, Seed: c.Seed, Steps: c.Intervals, RateMult: c.RateMult, Scenario: ScenarioLive}
	psum, err := paired.Analyze(plan, liveRes)
	if err != nil {
		return paired.Summary{}, nil, fmt.Errorf("liveexp: live paired analysis: %w", err)
	}
	psum.Commit, psum.GoVersion = c.Build.Commit, c.Build.GoVersion
	series := make([]report.Series, len(liveRes))
	for i, r := range liveRes {
		series[i] = report.SeriesOf(r)
	}
	return psum, series, nil
}
