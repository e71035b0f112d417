package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"streamscale/env"
	"streamscale/eval/controllers"
	"streamscale/eval/report"
	"streamscale/eval/runner"
	"streamscale/internal/command"
	"streamscale/traces"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testTrace is the first 120 windows of the taxi evaluation trace.
const testTrace = "testdata/taxi-head-120.csv"

// call runs the command with fixed build info and returns exit code, stdout and
// stderr.
func call(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, Options{
		IO: command.IO{Stdout: &out, Stderr: &errb}, Commit: "test-commit", GoVersion: "test-go", Workers: 2,
	})
	return code, out.String(), errb.String()
}

var (
	floatRE = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?[eE][-+]?[0-9]+|-?[0-9]+\.[0-9]+`)
	hashRE  = regexp.MustCompile(`"[0-9a-f]{64}"`)
)

// goldenForm prints the floats of a JSON output at fixed precision (6
// decimals) and replaces SHA-256 hashes by a placeholder: the golden file
// pins the numbers to well below their meaning without depending on the
// last bits of floating point (which TestRunDeterminism pins on one
// platform).
func goldenForm(js string) string {
	js = hashRE.ReplaceAllString(js, `"<sha256>"`)
	return floatRE.ReplaceAllStringFunc(js, func(m string) string {
		f, err := strconv.ParseFloat(m, 64)
		if err != nil {
			return m
		}
		return strconv.FormatFloat(f, 'f', 6, 64)
	})
}

// TestRunGolden pins a run on the paper's deterministic physics.
func TestRunGolden(t *testing.T) {
	code, out, errs := call(t, "run", "-profile", "etl", "-trace", testTrace, "-placement-seed", "7",
		"-controller", "static:2000", "-steps", "60", "-scenario", "paper", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden := filepath.Join("testdata", "run_etl_static2000_60.golden.json")
	out = goldenForm(out)
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if out != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", golden, out)
	}
}

// TestRunJSONFields checks the fields the README and other tools rely on.
func TestRunJSONFields(t *testing.T) {
	_, out, _ := call(t, "run", "-profile", "pred", "-trace", testTrace, "-controller", "static:500", "-steps", "30", "-json")
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"steps", "mean_p95_ms", "violation_rate", "mean_cpu_millicores", "mean_throughput",
		"mean_offered", "mean_reward", "trajectory_sha256", "profile", "trace", "scenario", "placement_seed", "seed",
		"config_sha256", "controller", "commit", "go_version"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, out)
		}
	}
	if m["steps"] != 30.0 {
		t.Errorf("steps = %v, want 30", m["steps"])
	}
	if m["scenario"] != "realistic" {
		t.Errorf("scenario = %v, want the default realistic", m["scenario"])
	}
}

func TestRunDeterminism(t *testing.T) {
	dir := t.TempDir()
	args := func(out, placement, ctrl string) []string {
		return []string{"run", "-profile", "pred", "-trace", testTrace, "-placement-seed", placement,
			"-controller", ctrl, "-steps", "80", "-seed", "3", "-json", "-out", filepath.Join(dir, out)}
	}
	_, a, _ := call(t, args("a.parquet", "7", "static:1000")...)
	_, b, _ := call(t, args("b.parquet", "7", "static:1000")...)
	if a != b {
		t.Errorf("same flags, different output:\n%s\n%s", a, b)
	}
	pa, _ := os.ReadFile(filepath.Join(dir, "a.parquet"))
	pb, _ := os.ReadFile(filepath.Join(dir, "b.parquet"))
	if len(pa) == 0 || !bytes.Equal(pa, pb) {
		t.Errorf("same flags, different Parquet files (%d and %d bytes)", len(pa), len(pb))
	}
	hash := func(s string) string {
		var r RunReport
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		return r.TrajectorySHA256
	}
	_, c, _ := call(t, args("c.parquet", "8", "static:1000")...)
	_, d, _ := call(t, args("d.parquet", "7", "static:600")...)
	if hash(a) == hash(c) {
		t.Error("different placements gave the same trajectory")
	}
	if hash(a) == hash(d) {
		t.Error("different controllers gave the same trajectory")
	}
	pc, _ := os.ReadFile(filepath.Join(dir, "c.parquet"))
	if bytes.Equal(pa, pc) {
		t.Error("different placements gave the same Parquet file")
	}
}

// TestRunCLASP runs the horizontal controller through `eval run`: it holds
// whole servers, and the same flags give the same bytes.
func TestRunCLASP(t *testing.T) {
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"run", "-profile", "etl", "-trace", testTrace, "-controller", "clasp", "-steps", "60", "-json",
			"-out", filepath.Join(dir, out)}
	}
	code, a, errs := call(t, args("a.parquet")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	_, b, _ := call(t, args("b.parquet")...)
	pa, _ := os.ReadFile(filepath.Join(dir, "a.parquet"))
	pb, _ := os.ReadFile(filepath.Join(dir, "b.parquet"))
	if a != b || len(pa) == 0 || !bytes.Equal(pa, pb) {
		t.Error("two CLASP runs with the same flags differ")
	}
	var r RunReport
	if err := json.Unmarshal([]byte(a), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Horizontal || r.Controller != "clasp" || r.Replans < 1 || !(r.MeanActiveServers >= 1 && r.MeanActiveServers <= 7) ||
		math.Abs(r.MeanReservedCPU-r.MeanCPU) > 1e-6*r.MeanCPU || !(r.MeanThroughput > 0) {
		t.Errorf("report %+v", r)
	}
	rows, err := parquet.ReadFile[report.IntervalRow](filepath.Join(dir, "a.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 60 || !rows[0].Replanned || rows[0].ActiveServers < 1 || rows[0].ReservedCPU <= 0 {
		t.Errorf("first interval row %+v", rows[0])
	}
	code, out, _ := call(t, "run", "-profile", "pred", "-trace", testTrace, "-controller", "clasp", "-steps", "10")
	if code != 0 || !strings.Contains(out, "active servers") || !strings.Contains(out, "re-plans") {
		t.Errorf("text output (exit %d):\n%s", code, out)
	}
}

func TestRunText(t *testing.T) {
	code, out, errs := call(t, "run", "-trace", testTrace, "-steps", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{"violation rate", "mean p95", "mean CPU", "throughput", "trajectory"} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in\n%s", s, out)
		}
	}
}

func TestRunBadFlags(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.parquet")
	type badRun struct {
		args []string
		want string
	}
	cases := []badRun{
		{[]string{"-steps", "-1"}, "-steps -1"},
		{[]string{"-rate-mult", "0"}, "rate multiplier 0"},
		{[]string{"-rate-mult", "-2"}, "rate multiplier -2"},
		{[]string{"-rate-mult", "NaN"}, "rate multiplier NaN"},
		{[]string{"-rate-mult", "+Inf"}, "rate multiplier +Inf"},
		{[]string{"-controller", "static:abc"}, `"abc" is not a positive number`},
		{[]string{"-controller", "static:"}, "empty argument"},
		{[]string{"-controller", "static"}, "want static:N"},
		{[]string{"-controller", "static:-5"}, "not a positive number"},
		{[]string{"-controller", "magic"}, `unknown controller "magic"`},
		{[]string{"-controller", "clasp:5"}, "clasp takes no argument"},
		{[]string{"-controller", "clasp:"}, "empty argument"},
		{[]string{"-profile", "foo"}, `unknown profile "foo"`},
		{[]string{"-trace", "nope"}, `unknown trace "nope"`},
		{[]string{"-scenario", "lab"}, `-scenario: env: scenario "lab" is neither a preset (realistic or paper) nor a readable scenario file`},
		{[]string{"-scenario", ""}, `-scenario: env: scenario "" is not a preset (realistic or paper)`},
		{[]string{"-scenario", "realistic", "-steps", "2"}, "actuation_delay_steps 2"},
		{[]string{"-trace", "missing.csv"}, `trace "missing.csv"`},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-steps", "ten"}, `invalid value "ten" for flag -steps`},
		{[]string{"-seed", "-1"}, `invalid value "-1" for flag -seed`},
		{[]string{"extra"}, `unexpected argument "extra"`},
	}
	cases = append(cases, badRun{[]string{"-controller", "ppo", "-policies", "/nonexistent"}, "no trained policy: /nonexistent/pred/policy.json"})
	for _, tc := range cases {
		args := append([]string{"run", "-trace", testTrace, "-out", out}, tc.args...)
		code, stdout, stderr := call(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr)
		}
		if !strings.Contains(stderr, tc.want) || !strings.HasPrefix(stderr, "eval") {
			t.Errorf("%v: stderr %q, want it to mention %q", tc.args, stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("%v: wrote %q to stdout", tc.args, stdout)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("%v: wrote %s before failing", tc.args, out)
		}
	}
}

func TestUsage(t *testing.T) {
	if code, _, _ := call(t); code != 2 {
		t.Errorf("no command: exit %d, want 2", code)
	}
	if code, _, errs := call(t, "frobnicate"); code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, %q", code, errs)
	}
	if code, out, _ := call(t, "run", "-h"); code != 0 || !strings.Contains(out, "-controller") {
		t.Errorf("run -h: exit %d, %q", code, out)
	}
}

// TestRunParquetRoundTrip reads the -out file back and checks it against
// the episode run directly through the library.
func TestRunParquetRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.parquet")
	code, _, errs := call(t, "run", "-profile", "etl", "-trace", testTrace, "-placement-seed", "9",
		"-controller", "static:700", "-steps", "90", "-seed", "5", "-out", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := parquet.ReadFile[report.IntervalRow](path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := traces.Load(testTrace, traces.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := controllers.New(controllers.Options{}).Parse("static:700")
	if err != nil {
		t.Fatal(err)
	}
	// The command's default scenario is the realistic physics.
	ph, err := env.ScenarioPhysics(env.ScenarioRealistic)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), runner.Spec{Profile: "etl", TraceName: testTrace, Workload: tr,
		PlacementSeed: 9, Seed: 5, Steps: 90, Controller: spec, Physics: ph, Scenario: env.ScenarioRealistic})
	if err != nil {
		t.Fatal(err)
	}
	want := report.IntervalRows(res)
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i := range rows {
		g, w := rows[i], want[i]
		if g.Step != int64(i) || g.Profile != "etl" || g.Controller != "static:700" || g.PlacementSeed != 9 || g.Seed != 5 {
			t.Fatalf("row %d labels %+v", i, g)
		}
		if g.P95MS != w.P95MS || g.Throughput != w.Throughput || g.Offered != w.Offered || g.TotalCPU != w.TotalCPU ||
			g.Reward != w.Reward || g.RewardReconf != w.RewardReconf || g.Violated != w.Violated || g.MeanMS != w.MeanMS {
			t.Fatalf("row %d: got %+v, want %+v", i, g, w)
		}
		if len(g.Applied) != 9 || len(g.Queue) != 9 {
			t.Fatalf("row %d: %d applied, %d queues, want 9", i, len(g.Applied), len(g.Queue))
		}
		for k := range g.Applied {
			if g.Applied[k] != w.Applied[k] || g.Queue[k] != w.Queue[k] {
				t.Fatalf("row %d task %d: applied %v queue %v, want %v %v", i, k, g.Applied[k], g.Queue[k], w.Applied[k], w.Queue[k])
			}
		}
	}
}

// TestRunNamedTrace runs a short prefix of the named taxi trace when the
// data directory holds it.
func TestRunNamedTrace(t *testing.T) {
	if _, err := os.Stat(filepath.Join(traces.DefaultDir(), "taxi_nab_5min_2015-01-01_3600pts.csv")); err != nil {
		t.Skip("taxi trace not in", traces.DefaultDir())
	}
	code, out, errs := call(t, "run", "-profile", "etl", "-trace", "taxi", "-placement-seed", "7",
		"-controller", "static:2000", "-steps", "50", "-json")
	if code != 0 || strings.Contains(errs, "synthetic") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r RunReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Trace != "taxi" || r.TraceSource != "taxi_nab_5min_2015-01-01_3600pts.csv" || r.Steps != 50 || !(r.MeanOffered > 0) {
		t.Errorf("unexpected report %+v", r)
	}
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(Options{IO: command.IO{Stderr: &b, Terminal: true}}, false, false)
	p.update(1, 4)
	p.update(4, 4)
	p.finish()
	if s := b.String(); !strings.Contains(s, "\r[#######.......................] 1/4 runs") || !strings.HasSuffix(s, "\n") {
		t.Errorf("progress output %q", s)
	}
	b.Reset()
	q := newProgress(Options{IO: command.IO{Stderr: &b}}, false, false)
	q.update(1, 4)
	q.finish()
	if b.Len() != 0 {
		t.Errorf("progress drawn on a non-terminal: %q", b.String())
	}
	b.Reset()
	r := newProgress(Options{IO: command.IO{Stderr: &b}}, true, true)
	r.update(2, 4)
	r.finish()
	if s := b.String(); !strings.HasPrefix(s, "[###############...............] 2/4 runs") || !strings.HasSuffix(s, "left\n") {
		t.Errorf("forced progress output %q", s)
	}
	b.Reset()
	quiet := newProgress(Options{IO: command.IO{Stderr: &b, Terminal: true}}, true, false)
	quiet.update(1, 4)
	if b.Len() != 0 {
		t.Errorf("progress drawn with -json: %q", b.String())
	}
}
