package report

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamscale/eval/paired"
	"streamscale/internal/command"
)

func TestNum(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		prec int
		want string
	}{
		{1.23456, 2, "1.23"}, {-0.0001, 2, "0.00"}, {-0, 1, "0.0"}, {-1.5, 0, "-2"}, {-0.4, 0, "0"},
		{math.NaN(), 2, "–"}, {math.Inf(1), 2, "–"}, {12000, 0, "12000"},
	} {
		if got := num(paired.Num(tc.x), tc.prec); got != tc.want {
			t.Errorf("num(%v, %d) = %q, want %q", tc.x, tc.prec, got, tc.want)
		}
	}
}

// summary is a small judged evaluation: one profile, two workloads, two
// controllers, three placements.
func summary() (paired.Summary, []Series) {
	sum := paired.Summary{Seed: 1, ConfigSHA256: "abc", Build: command.Build{Commit: "c", GoVersion: "go"},
		Protocol: paired.Protocol{Profiles: []string{"pred"}, Traces: []paired.TraceInfo{{Name: "taxi", Source: "t.csv"}, {Name: "intel", Source: "i.csv"}},
			PlacementSeeds: []uint64{101, 102, 103}, Controllers: []string{"threshold", "static:500"}, Candidate: "threshold",
			Steps: 50, RateMult: 1, Resamples: 10000, Level: 0.95, MarginPct: 5}}
	var runs []Series
	for ti, tr := range []string{"taxi", "intel"} {
		c := paired.Combination{Profile: "pred", Trace: tr, SLOMS: 180, Steps: 50}
		for k, name := range []string{"threshold", "static:500"} {
			cs := paired.ControllerStats{Controller: name, Runs: 3, ViolationRateMean: paired.Num(0.1 * float64(k+ti)),
				ViolationRateCI: [2]paired.Num{0, paired.Num(0.2 * float64(k+ti))}, MeanP95MS: 100, MeanCPU: 3000, MeanThroughput: 900}
			for l, pl := range []uint64{101, 102, 103} {
				cs.PerRun = append(cs.PerRun, paired.RunValues{PlacementSeed: pl, ViolationRate: paired.Num(0.05 * float64(l+k)), MeanP95MS: paired.Num(50 + 100*float64(k*l))})
				s := Series{Profile: "pred", Trace: tr, Controller: name, PlacementSeed: pl}
				for i := range 50 {
					s.P95MS = append(s.P95MS, float64(40+i*k*10+l))
					s.Offered = append(s.Offered, 1000)
					s.Throughput = append(s.Throughput, 1000-float64(100*k))
					s.CPU = append(s.CPU, float64(3000+i*10))
				}
				runs = append(runs, s)
			}
			c.Controllers = append(c.Controllers, cs)
		}
		e := paired.Estimate{Metric: paired.MetricViolation, Mean: -10, CILow: -15, CIHigh: -5}
		c.Comparisons = []paired.Comparison{{Candidate: "threshold", Baseline: "static:500", Pairs: 3,
			H1: paired.Verdict{Holds: true, Evidence: []paired.Estimate{e}},
			H2: paired.Verdict{Evidence: []paired.Estimate{{Metric: paired.MetricCPU, Mean: 1, CILow: paired.Num(math.NaN()), CIHigh: paired.Num(math.NaN())}, e}},
			H3: paired.Verdict{Holds: true, Evidence: []paired.Estimate{{Metric: paired.MetricThroughput, Mean: 11, CILow: 9, CIHigh: 13}}}}}
		sum.Combinations = append(sum.Combinations, c)
	}
	return sum, runs
}

func TestMarkdown(t *testing.T) {
	sum, _ := summary()
	md := string(Markdown(sum, []string{FigP95Time}))
	for _, s := range []string{
		"| pred | taxi | `static:500` | **holds** | -10.00 [-15.00, -5.00] | fails | 1.00 | **holds** | 11.00 [9.00, 13.00] |",
		"## pred / intel (SLO 180 ms, 50 intervals)",
		"| `static:500` | 20.00% [0.00, 40.00] |",
		"![p95 latency over time",
		"commit `c`",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
	if !bytes.Equal(Markdown(sum, nil), Markdown(sum, nil)) {
		t.Error("Markdown is not deterministic")
	}
}

// TestMarkdownHorizontal marks static:500 as horizontal: the report gains
// the notes and the vertical-against-horizontal table with both sides'
// footprint and the paired differences.
func TestMarkdownHorizontal(t *testing.T) {
	sum, _ := summary()
	if strings.Contains(string(Markdown(sum, nil)), "Vertical against horizontal") {
		t.Error("horizontal section without horizontal controllers")
	}
	sum.Protocol.Horizontal = []string{"static:500"}
	for ci := range sum.Combinations {
		c := &sum.Combinations[ci]
		c.Controllers[0].MeanReservedCPU, c.Controllers[0].MeanActiveServers = 3000, 4
		c.Controllers[1].MeanReservedCPU, c.Controllers[1].MeanActiveServers = 32000, 1
		c.Comparisons[0].Footprint = []paired.Estimate{
			{Metric: paired.MetricReservedCPU, Mean: -90.6, CILow: -91, CIHigh: -90},
			{Metric: paired.MetricActiveServers, Mean: 3, CILow: 3, CIHigh: 3},
		}
	}
	md := string(Markdown(sum, nil))
	for _, s := range []string{
		"Horizontal scaling (`static:500`)",
		"## Vertical against horizontal scaling",
		"| pred | intel | `static:500` | 10.00% vs 20.00% | 3000 vs 32000 | 4.00 vs 1.00 | -10.00 [-15.00, -5.00] | -90.60 [-91.00, -90.00] | 3.00 [3.00, 3.00] |",
		"| `static:500` | 3 | -10.00 [-15.00, -5.00] | 1.00 | 11.00 [9.00, 13.00] | -90.60 [-91.00, -90.00] | 3.00 [3.00, 3.00] |",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
}

func TestFigures(t *testing.T) {
	sum, runs := summary()
	dir, dir2 := t.TempDir(), t.TempDir()
	names, err := Figures(dir, sum, runs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Figures(dir2, sum, runs); err != nil {
		t.Fatal(err)
	}
	if len(names) != 6 {
		t.Fatalf("figures %v", names)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if w := img.Bounds().Dx(); w < 1000 {
			t.Errorf("%s is %d px wide", n, w)
		}
		b2, _ := os.ReadFile(filepath.Join(dir2, n))
		if !bytes.Equal(b, b2) {
			t.Errorf("%s differs between two renderings", n)
		}
	}
	bad := sum
	bad.Protocol.Profiles = []string{"pred", "etl"}
	if _, err := Figures(t.TempDir(), bad, runs); err == nil {
		t.Error("mismatched grid accepted")
	}
}

func TestSummaryJSONKeepsBrackets(t *testing.T) {
	sum, _ := summary()
	sum.Protocol.EpisodeStream = "eval/episode/<profile>"
	b, err := SummaryJSON(sum)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("eval/episode/<profile>")) || !bytes.Contains(b, []byte(`"ci_low": null`)) {
		t.Errorf("summary JSON:\n%s", b)
	}
}

// TestHeadline: the report opens with the best controller per cell, and
// the headline rows give each learned controller's difference from the
// best rule with its verdict.
func TestHeadline(t *testing.T) {
	sum, _ := summary()
	sum.Protocol.Learned = []string{"threshold"} // stands in for a policy
	sum.Protocol.ViolationBudget = 0.02
	for ci := range sum.Combinations {
		c := &sum.Combinations[ci]
		c.Best, c.BestRule = "threshold", "static:500"
		c.VsBestRule = []paired.Versus{{Controller: "threshold",
			Violation: paired.Estimate{Mean: -10, CILow: -15, CIHigh: -5},
			CPU:       paired.Estimate{Mean: 1.5, CILow: 0.5, CIHigh: 1.9}, Verdict: paired.Dominates}}
	}
	md := string(Markdown(sum, nil))
	if i, j := strings.Index(md, "## Best controller per cell"), strings.Index(md, "## Protocol"); i < 0 || j < i {
		t.Fatalf("report does not open with the best controllers:\n%s", md)
	}
	for _, s := range []string{
		"| pred / taxi | `threshold` | `static:500` (10.00%, 3000 mc) | `threshold` | −10.00 pp [−15.00, −5.00] | +1.5% [+0.5, +1.9] | dominates |",
		"| pred / intel | **`threshold`** (best) | 10.00% [0.00, 20.00] | 3000 [0, 0] | −10.00 pp [−15.00, −5.00] | +1.5% [+0.5, +1.9] | dominates |",
		"| pred / intel | `static:500` | 20.00% [0.00, 40.00] | 3000 [0, 0] | – | – | best rule |",
		"within a 2.0% violation budget",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
}
