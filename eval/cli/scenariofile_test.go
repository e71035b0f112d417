package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunScenarioFile: `eval run -scenario FILE` with only the base is
// the preset run byte for byte (same trajectory hash); measured demands
// change the run; a bad file is a usage error naming the field.
func TestRunScenarioFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return writeTemp(t, dir, name, body) }
	hash := func(scenario string) string {
		code, out, errs := call(t, "run", "-profile", "pred", "-trace", testTrace, "-controller", "static:700", "-steps", "30", "-scenario", scenario, "-json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", scenario, code, errs)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		return m["trajectory_sha256"].(string)
	}
	base := write("base.json", `{"version":1,"base":"realistic"}`)
	if hash(base) != hash("realistic") {
		t.Error("a base-only file ran differently from the preset")
	}
	slow := write("slow.json", `{"version":1,"base":"realistic","demand":{"profile":"pred","cpu_scale":0.01,"tasks":[{"task":"SenMLParse","cpu_us_per_event":9}]}}`)
	if hash(slow) == hash("realistic") {
		t.Error("a measured demand did not change the run")
	}
	for file, want := range map[string]string{
		write("neg.json", `{"version":1,"base":"paper","physics":{"service_cv":-1}}`):                                                             "service_cv -1",
		write("etl.json", `{"version":1,"base":"paper","demand":{"profile":"etl","cpu_scale":1,"tasks":[{"task":"Join","cpu_us_per_event":1}]}}`): "demand is for profile etl, not pred",
		write("hop.json", `{"version":1,"base":"paper","physics":{"hop_ms_by_task":{"Join":1}}}`):                                                 `task "Join" is not a task of pred`,
	} {
		code, _, errs := call(t, "run", "-profile", "pred", "-trace", testTrace, "-steps", "5", "-scenario", file)
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, stderr %q, want 2 and %q", file, code, errs, want)
		}
	}
}

type constantRates [2]float64

func (c constantRates) Len() int         { return int(c[1]) }
func (c constantRates) Rate(int) float64 { return c[0] }

// TestCalibrateFromCommand: `eval calibrate -from` writes the three
// files of the recomputed calibration (package calibrate's Derive) and
// prints calibration.md, or with -json calibration.json as written; a bad
// file is a usage error naming what is wrong, and writes nothing.
func TestCalibrateFromCommand(t *testing.T) {
	src := filepath.Join("..", "calibrate", "testdata", "calibration-etl.json")
	dir := t.TempDir()
	code, out, errs := call(t, "calibrate", "-from", src, "-out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "| hop_spread | simulated p95 ms |") || !strings.Contains(out, "Derived values recomputed from "+src+" (probe commit ") {
		t.Errorf("calibration.md:\n%s", out)
	}
	for _, f := range []string{"scenario.json", "calibration.json", "calibration.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "calibration.md"))
	if err != nil || string(md) != out {
		t.Errorf("calibration.md differs from what was printed (%v)", err)
	}
	code, js, errs := call(t, "calibrate", "-from", src, "-out", dir, "-json")
	if b, err := os.ReadFile(filepath.Join(dir, "calibration.json")); code != 0 || err != nil || string(b) != js {
		t.Errorf("-json: exit %d (%s), printed calibration.json differs from the file (%v)", code, errs, err)
	}
	rec, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "calibration.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(rec), `"intervals": 40`, `"intervals": 2`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	o := filepath.Join(t.TempDir(), "out")
	code, _, errs = call(t, "calibrate", "-from", bad, "-out", o)
	if _, err := os.Stat(o); code != 2 || !strings.Contains(errs, "intervals 2, want 8..1e6") || err == nil {
		t.Errorf("bad file: exit %d, stderr %q, out dir %v; want 2, the error named and nothing written", code, errs, err)
	}
	if code, _, errs := call(t, "calibrate", "-from", filepath.Join(t.TempDir(), "nope.json")); code != 2 || !strings.Contains(errs, "-from") {
		t.Errorf("missing file: exit %d, %q", code, errs)
	}
}

// writeTemp writes body to dir/name and returns the path.
func writeTemp(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
