package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"streamscale/eval/paired"
	"streamscale/eval/report"
)

const testIntel = "testdata/intel-head-120.csv"

func pairedArgs(out string, extra ...string) []string {
	return append([]string{"paired", "-out", out, "-profiles", "pred,etl", "-traces", testTrace + "," + testIntel,
		"-placements", "3", "-steps", "40", "-controllers", "static:500,static:2000,static:10000",
		"-candidate", "static:2000"}, extra...)
}

var artifacts = []string{FileIntervals, FileRuns, FileSummary, FileReport,
	report.FigP95Time, report.FigP95Paired, report.FigViolation, report.FigCPU, report.FigThroughpt, report.FigPareto}

func TestPairedDeterminism(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if code, _, errs := call(t, pairedArgs(d)...); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
	}
	for _, f := range artifacts {
		x, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs with the same flags", f)
		}
	}
	// Another root seed changes the episode seeds and the bootstrap.
	if code, _, errs := call(t, pairedArgs(c, "-seed", "2")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, f := range []string{FileSummary, FileIntervals} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(c, f))
		if bytes.Equal(x, y) {
			t.Errorf("%s is the same for seeds 1 and 2", f)
		}
	}
}

func TestPairedArtifacts(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := call(t, pairedArgs(dir, "-json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	js, _ := os.ReadFile(filepath.Join(dir, FileSummary))
	if out != string(js) {
		t.Error("-json output differs from summary.json")
	}
	var sum paired.Summary
	if err := json.Unmarshal(js, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Commit != "test-commit" || sum.GoVersion != "test-go" || sum.Seed != 1 || len(sum.ConfigSHA256) != 64 {
		t.Errorf("provenance %q %q %d %q", sum.Commit, sum.GoVersion, sum.Seed, sum.ConfigSHA256)
	}
	if sum.Protocol.Scenario != "realistic" {
		t.Errorf("protocol scenario %q, want the default realistic", sum.Protocol.Scenario)
	}
	if len(sum.Combinations) != 4 {
		t.Fatalf("%d combinations, want 4", len(sum.Combinations))
	}
	for _, c := range sum.Combinations {
		if len(c.Controllers) != 3 || len(c.Comparisons) != 2 {
			t.Fatalf("%s/%s: %d controllers, %d comparisons", c.Profile, c.Trace, len(c.Controllers), len(c.Comparisons))
		}
		// static:2000 uses less CPU than static:10000 at no more
		// violations, and more CPU than static:500, in every scenario.
		for _, cmp := range c.Comparisons {
			if cmp.Baseline == "static:10000" && !cmp.H2.Holds {
				t.Errorf("%s/%s: H2 vs static:10000 fails: %+v", c.Profile, c.Trace, cmp.H2)
			}
			if cmp.Baseline == "static:500" && cmp.H2.Holds {
				t.Errorf("%s/%s: H2 vs static:500 holds: %+v", c.Profile, c.Trace, cmp.H2)
			}
		}
	}
	runs, err := parquet.ReadFile[report.RunRow](filepath.Join(dir, FileRuns))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2*2*3*3 {
		t.Fatalf("%d runs, want 36", len(runs))
	}
	// Cell order: profile, trace, placement, controller.
	if r := runs[4]; r.Profile != "pred" || r.Trace != testTrace || r.Scenario != "realistic" || r.PlacementSeed != 102 || r.Controller != "static:2000" {
		t.Errorf("run 4 is %+v", r)
	}
	// Controllers of one placement share the episode seed.
	if runs[3].Seed != runs[4].Seed || runs[3].Seed == runs[0].Seed {
		t.Errorf("episode seeds %d %d %d", runs[0].Seed, runs[3].Seed, runs[4].Seed)
	}
	rows, err := parquet.ReadFile[report.IntervalRow](filepath.Join(dir, FileIntervals))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 36*40 {
		t.Fatalf("%d interval rows, want %d", len(rows), 36*40)
	}
	// The per-run summary matches its intervals.
	viol := 0
	for _, r := range rows[40*5 : 40*6] {
		if r.Violated {
			viol++
		}
	}
	if got := float64(viol) / 40; got != runs[5].ViolationRate {
		t.Errorf("run 5: violation rate %v from intervals, %v in runs.parquet", got, runs[5].ViolationRate)
	}
	md, _ := os.ReadFile(filepath.Join(dir, FileReport))
	for _, s := range []string{"## Verdicts", "static:2000", "Scenario: `realistic`", "p95_over_time.png", "## etl / " + testIntel} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}

func TestPairedBadFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	type bad struct {
		args []string
		want string
	}
	var cases []bad
	for _, tc := range append(cases, []bad{
		{[]string{"-profiles", "pred,foo"}, `unknown profile "foo"`},
		{[]string{"-profiles", "pred,,etl"}, "empty entry"},
		{[]string{"-traces", "taxi,moon"}, `unknown trace "moon"`},
		{[]string{"-placements", "0"}, "-placements 0"},
		{[]string{"-placement-seeds", "42,x"}, `-placement-seeds: "x" is not a seed`},
		{[]string{"-steps", "-5"}, "-steps -5"},
		{[]string{"-scenario", "Paper"}, `-scenario: env: scenario "Paper" is neither a preset`},
		{[]string{"-scenario", "realistic", "-steps", "1"}, "actuation_delay_steps 2"},
		{[]string{"-rate-mult", "nan"}, "rate multiplier NaN"},
		{[]string{"-controllers", "static:500,static:abc"}, `"abc" is not a positive number`},
		{[]string{"-controllers", "static:500,static:500"}, `lists "static:500" twice`},
		{[]string{"-controllers", "static:500,static:500.0"}, "static:500 twice"},
		{[]string{"-candidate", "static:700"}, "candidate static:700 is not among -controllers"},
		{[]string{"-controllers", "static:500,magic"}, `unknown controller "magic"`},
		{[]string{"-seed", "x"}, `invalid value "x" for flag -seed`},
		{[]string{"-frob"}, "flag provided but not defined: -frob"},
		{[]string{"-controllers", "ppo,static:500", "-policies", "/nonexistent"}, "no trained policy: /nonexistent/pred/policy.json does not exist"},
		{[]string{"-controllers", "ppo:/nonexistent/x,static:500"}, "no trained policy"},
		{[]string{"-candidate", "ppo", "-policies", "/nonexistent"}, "candidate ppo is not among -controllers"},
	}...) {
		args := append(pairedArgs(dir), tc.args...)
		code, stdout, stderr := call(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr %q, want it to mention %q", tc.args, stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("%v: stdout %q", tc.args, stdout)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Fatalf("%v: created %s before failing", tc.args, dir)
		}
	}
}

// TestPairedCandidateWithoutPolicy asks for the PPO candidate explicitly
// with the default controller list and no trained policy.
func TestPairedCandidateWithoutPolicy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	code, _, errs := call(t, "paired", "-out", dir, "-traces", testTrace, "-candidate", "ppo", "-policies", "/nonexistent")
	if code != 2 || !strings.Contains(errs, "no trained policy: /nonexistent/pred/policy.json") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("created the output directory")
	}
}

// TestPairedCandidateJoinsDefaults checks that an explicit candidate is
// added to the default controller list.
func TestPairedCandidateJoinsDefaults(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := call(t, "paired", "-out", dir, "-profiles", "pred", "-traces", testTrace, "-placements", "2", "-steps", "10",
		"-candidate", "static:700", "-policies", t.TempDir(), "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	js, _ := os.ReadFile(filepath.Join(dir, FileSummary))
	var sum paired.Summary
	if err := json.Unmarshal(js, &sum); err != nil {
		t.Fatal(err)
	}
	if p := sum.Protocol; p.Candidate != "static:700" || p.Controllers[0] != "static:700" || len(sum.Combinations[0].Comparisons) != len(p.Controllers)-1 {
		t.Errorf("protocol %+v", p)
	}
}

// TestPairedPlacementSeeds: -placement-seeds runs on exactly the seeds
// given, in order (the development placements for choosing a recipe).
func TestPairedPlacementSeeds(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := call(t, "paired", "-out", dir, "-profiles", "pred", "-traces", testTrace, "-placement-seeds", "42,2001", "-steps", "10",
		"-controllers", "static:500,static:2000", "-candidate", "static:500", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	js, _ := os.ReadFile(filepath.Join(dir, FileSummary))
	var sum paired.Summary
	if err := json.Unmarshal(js, &sum); err != nil {
		t.Fatal(err)
	}
	if got := sum.Protocol.PlacementSeeds; len(got) != 2 || got[0] != 42 || got[1] != 2001 {
		t.Errorf("placement seeds %v, want [42 2001]", got)
	}
}

// TestPairedDefaultsSkipUnavailable checks that the default controller
// list drops controllers that do not exist yet and falls back to the first
// available candidate, saying so on stderr.
func TestPairedDefaultsSkipUnavailable(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := call(t, "paired", "-out", dir, "-profiles", "etl", "-traces", testTrace, "-placements", "2", "-steps", "20",
		"-policies", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "controller ppo: no trained policy") || !strings.Contains(errs, "judging vrebalance against the others") {
		t.Errorf("stderr %q", errs)
	}
	js, _ := os.ReadFile(filepath.Join(dir, FileSummary))
	var sum paired.Summary
	if err := json.Unmarshal(js, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Protocol.Candidate != "vrebalance" || len(sum.Protocol.Controllers) != 11 || len(sum.Protocol.Horizontal) != 1 || sum.Protocol.Horizontal[0] != "clasp" {
		t.Errorf("protocol %+v", sum.Protocol)
	}
}

// TestPairedWithCLASP runs a small paired evaluation with the horizontal
// controller: its runs are marked horizontal, every comparison carries the
// footprint differences, and the report compares the candidate with it.
func TestPairedWithCLASP(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := call(t, "paired", "-out", dir, "-profiles", "etl", "-traces", testTrace, "-placements", "2", "-steps", "30",
		"-controllers", "threshold,clasp,static:2000", "-candidate", "threshold")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	js, _ := os.ReadFile(filepath.Join(dir, FileSummary))
	var sum paired.Summary
	if err := json.Unmarshal(js, &sum); err != nil {
		t.Fatal(err)
	}
	if h := sum.Protocol.Horizontal; len(h) != 1 || h[0] != "clasp" {
		t.Errorf("horizontal controllers %v", h)
	}
	c := sum.Combinations[0]
	for _, cs := range c.Controllers {
		if !(cs.MeanActiveServers >= 1) || !(cs.MeanReservedCPU > 0) || cs.ReservedCPUCI[0] > cs.MeanReservedCPU {
			t.Errorf("%s: reserved %v %v, active %v", cs.Controller, cs.MeanReservedCPU, cs.ReservedCPUCI, cs.MeanActiveServers)
		}
	}
	for _, cmp := range c.Comparisons {
		if len(cmp.Footprint) != 2 || cmp.Footprint[0].Metric != paired.MetricReservedCPU || cmp.Footprint[1].Metric != paired.MetricActiveServers {
			t.Errorf("%s: footprint %+v", cmp.Baseline, cmp.Footprint)
		}
	}
	runs, err := parquet.ReadFile[report.RunRow](filepath.Join(dir, FileRuns))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Horizontal != (r.Controller == "clasp") || !(r.MeanActiveServers >= 1) {
			t.Errorf("run %s placement %d: horizontal %v, %v active servers", r.Controller, r.PlacementSeed, r.Horizontal, r.MeanActiveServers)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, FileReport))
	for _, s := range []string{"## Vertical against horizontal scaling", "| etl | " + testTrace + " | `clasp` |", "Δ active servers", "Horizontal scaling (`clasp`)"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}
