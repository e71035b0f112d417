package report

import (
	"bytes"
	"encoding/json"
	"fmt"

	"streamscale/eval/paired"
)

// Reported is a committed record of what a paper reports, for the
// reproduction table: per cell, the learned controller's violation rate
// (a fraction) as the paper gives it, and the paired summary of our run of
// the paper's setting.
type Reported struct {
	Paper   string `json:"paper"`   // citation
	Source  string `json:"source"`  // where in the paper (table, figure)
	Summary string `json:"summary"` // our paired summary, path from the repository's root
	// Rule is the controller of ours the goal compares CPU with.
	Rule string `json:"rule"`
	// Candidate is the controller of ours held to the goal; empty for the
	// summary's first learned controller ("our PPO").
	Candidate string         `json:"candidate,omitempty"`
	Cells     []ReportedCell `json:"cells"`
}

// ReportedCell is one profile × trace of a paper.
type ReportedCell struct {
	Profile       string  `json:"profile"`
	Trace         string  `json:"trace"`
	ViolationRate float64 `json:"ppo_violation_rate"`
}

// reproductionTable renders, per cell of a Reported record, the paper's
// PPO violation rate beside our PPO's (or the record's Candidate's) mean
// [CI] and CPU, the rule's, and whether ours meets the reproduction goal:
// violations at or below the paper's and mean CPU at or below the rule's.
func reproductionTable(from []byte, load func(string) ([]byte, error)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(from))
	dec.DisallowUnknownFields()
	var r Reported
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding a reported record: %w", err)
	}
	if r.Summary == "" || r.Rule == "" || len(r.Cells) == 0 {
		return nil, fmt.Errorf("a reported record needs summary, rule and cells")
	}
	sb, err := load(r.Summary)
	if err != nil {
		return nil, err
	}
	sum, err := decodePaired(sb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Summary, err)
	}
	ppo, ours := r.Candidate, "`"+r.Candidate+"`"
	if ppo == "" {
		ours = "our PPO"
		if len(sum.Protocol.Learned) > 0 {
			ppo = sum.Protocol.Learned[0]
		}
	}
	var b bytes.Buffer
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	pf("| profile / trace | paper's PPO violations | %s violations | %s CPU (mc) | `%s` violations | `%s` CPU (mc) | goal met |\n", ours, ours, r.Rule, r.Rule)
	pf("|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cells {
		var comb *paired.Combination
		for i := range sum.Combinations {
			if sum.Combinations[i].Profile == c.Profile && sum.Combinations[i].Trace == c.Trace {
				comb = &sum.Combinations[i]
			}
		}
		if comb == nil {
			return nil, fmt.Errorf("%s has no cell %s/%s", r.Summary, c.Profile, c.Trace)
		}
		p, okP := statsOf(*comb, ppo)
		rule, okR := statsOf(*comb, r.Rule)
		if !okP || !okR {
			return nil, fmt.Errorf("%s: cell %s/%s lacks %q or %q", r.Summary, c.Profile, c.Trace, ppo, r.Rule)
		}
		met := "no"
		if float64(p.ViolationRateMean) <= c.ViolationRate && p.MeanCPU <= rule.MeanCPU {
			met = "yes"
		}
		pf("| %s / %s | %s | %s%s | %s | %s | %s | %s |\n", c.Profile, c.Trace,
			pct(paired.Num(c.ViolationRate), 2), pct(p.ViolationRateMean, 2), pctInterval(p.ViolationRateCI), num(p.MeanCPU, 0),
			pct(rule.ViolationRateMean, 2), num(rule.MeanCPU, 0), met)
	}
	return b.Bytes(), nil
}
