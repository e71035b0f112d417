package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"streamscale/eval/tune"
)

// TestTunedDefaultsMatchResults: the tuned rules in DefaultControllers are
// the ones the committed tuning results chose.
func TestTunedDefaultsMatchResults(t *testing.T) {
	for file, spec := range map[string]string{"threshold-measured.json": TunedThreshold, "flink.json": TunedFlink} {
		b, err := os.ReadFile(filepath.Join("..", "..", "results", "tune", file))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Result tune.Result `json:"result"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Result.Chosen != spec {
			t.Errorf("%s chose %s; DefaultControllers has %s", file, r.Result.Chosen, spec)
		}
		if !strings.Contains(DefaultControllers, spec) {
			t.Errorf("DefaultControllers lacks %s", spec)
		}
		for _, p := range r.Result.Placements {
			if p >= 101 && p <= 110 {
				t.Errorf("%s was tuned on evaluation placement %d", file, p)
			}
		}
	}
}

func TestTuneRefusesEvaluationPlacements(t *testing.T) {
	code, _, errs := call(t, "tune", "-placements", "42,105", "-out", t.TempDir())
	if code != 2 || !strings.Contains(errs, "placement 105 is an evaluation placement") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	code, _, errs = call(t, "tune", "-rule", "static:5", "-out", t.TempDir())
	if code != 2 || !strings.Contains(errs, "-rule") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	code, _, errs = call(t, "tune", "-grid", "target=0.5,0.5", "-out", t.TempDir())
	if code != 2 || !strings.Contains(errs, "repeated") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// TestTuneSmall runs a two-point grid on one cell and checks the choice
// and the files.
func TestTuneSmall(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := call(t, "tune", "-rule", "flink", "-grid", "target=0.6,0.8", "-profiles", "pred", "-traces", testTrace,
		"-placements", "42,37", "-steps", "60", "-out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(out, "chosen flink") {
		t.Errorf("stdout %q", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tune.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Result tune.Result `json:"result"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Result.Points) != 3 || r.Result.Points[0].Spec != "flink" || r.Result.Points[1].Spec != "flink:target=0.6" {
		t.Errorf("points %+v", r.Result.Points)
	}
}
