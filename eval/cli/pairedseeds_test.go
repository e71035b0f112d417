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

// seedPolicies lays out a `train -seeds 1,2` directory per profile under
// a temporary -policies directory, with the shipped default and paper
// policies standing in for two trained seeds (training is too slow for a
// test).
func seedPolicies(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, prof := range []string{"pred", "etl"} {
		for seed, set := range map[string]string{"seed-1": "default", "seed-2": "paper"} {
			dir := filepath.Join(root, prof, seed)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"policy.json", "policy.safetensors"} {
				b, err := os.ReadFile(filepath.Join("..", "..", "policies", set, prof, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.WriteFile(filepath.Join(root, prof, "seeds.json"), []byte(`{"runs": [{"seed": 2}, {"seed": 1}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestPairedSeeds runs a tiny paired evaluation of a controller of two
// seeds: one controller in the summary with its seed-level figures and
// verdicts, every seed's runs in runs.parquet in seed order, the same
// bytes twice.
func TestPairedSeeds(t *testing.T) {
	pol := seedPolicies(t)
	a, b := t.TempDir(), t.TempDir()
	var stdout string
	for _, d := range []string{a, b} {
		code, out, errs := call(t, "paired", "-out", d, "-profiles", "pred,etl", "-traces", testTrace, "-placements", "3", "-steps", "30",
			"-controllers", "ppo,threshold,static:2000", "-candidate", "ppo", "-policies", pol)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		stdout = out
	}
	for _, f := range []string{FileSummary, FileRuns, FileIntervals, FileReport, report.FigCPU} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs with the same flags", f)
		}
	}
	if !strings.Contains(stdout, "ppo (seeds: 2, IQM over seeds) against the best rule: dominates") {
		t.Errorf("stdout lacks the seed-level tally:\n%s", stdout)
	}
	js, _ := os.ReadFile(filepath.Join(a, FileSummary))
	var sum paired.Summary
	if err := json.Unmarshal(js, &sum); err != nil {
		t.Fatal(err)
	}
	if p := sum.Protocol; len(p.Controllers) != 3 || p.Controllers[0] != "ppo" || len(p.Seeded) != 1 ||
		strings.Join(p.Seeded[0].Seeds, ",") != "ppo#seed-1,ppo#seed-2" {
		t.Fatalf("protocol %+v", p)
	}
	for _, c := range sum.Combinations {
		cs := c.Controllers[0]
		if cs.Seeds != 2 || cs.SeedLevel == nil || len(cs.SeedLevel.PerSeed) != 2 || cs.Runs != 3 {
			t.Errorf("%s/%s: ppo stats %+v", c.Profile, c.Trace, cs)
			continue
		}
		// Two seeds: the IQM is their mean, the mean over seeds'.
		if d := float64(cs.SeedLevel.CPU.IQM - cs.MeanCPU); d*d > 1e-12 {
			t.Errorf("%s/%s: IQM CPU %v, mean of seeds %v", c.Profile, c.Trace, cs.SeedLevel.CPU.IQM, cs.MeanCPU)
		}
		if c.BestRule == "ppo" {
			t.Errorf("%s/%s: the learned controller is the best rule", c.Profile, c.Trace)
		}
		for _, v := range c.VsBestRule {
			if (v.Controller == "ppo") != (v.SeedLevel != nil) {
				t.Errorf("%s/%s: %s seed level %v", c.Profile, c.Trace, v.Controller, v.SeedLevel)
			}
		}
	}
	md, _ := os.ReadFile(filepath.Join(a, FileReport))
	if !strings.Contains(string(md), "## Seeds") || !strings.Contains(string(md), "| `ppo` | 2 | the best rule |") {
		t.Errorf("report.md lacks the seed tables:\n%s", md)
	}
	runs, err := parquet.ReadFile[report.RunRow](filepath.Join(a, FileRuns))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2*1*3*4 {
		t.Fatalf("%d runs, want 24", len(runs))
	}
	var names []string
	for _, r := range runs[:4] {
		names = append(names, r.Controller)
	}
	if got := strings.Join(names, ","); got != "ppo#seed-1,ppo#seed-2,threshold,static:2000" {
		t.Errorf("first placement's runs %s", got)
	}
}
