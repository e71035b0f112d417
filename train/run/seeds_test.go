package run

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"streamscale/internal/command"
	"streamscale/ppo"
)

// withoutFPS drops the time/fps column (the clock's) from a progress.csv.
func withoutFPS(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, n := range ppo.MetricNames {
		if n == "time/fps" {
			col = i
		}
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		cells := strings.Split(l, ",")
		out = append(out, strings.Join(append(cells[:col:col], cells[col+1:]...), ","))
	}
	return strings.Join(out, "\n")
}

// sameRun fails unless the runs in dirs a and b have the same weights,
// checkpoint, progress rows (but fps) and learning curve… (the curve
// draws fps-free columns only).
func sameRun(t *testing.T, a, b string) {
	t.Helper()
	for _, f := range []string{"policy.safetensors", CheckpointFile, "learning_curve.png"} {
		x, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s: %s differs from %s", f, a, b)
		}
	}
	if withoutFPS(t, filepath.Join(a, CSVFile)) != withoutFPS(t, filepath.Join(b, CSVFile)) {
		t.Errorf("progress.csv: %s differs from %s", a, b)
	}
}

// TestSeedsMatchSingleRuns: each seed of RunSeeds (side by side, each
// with its share of the cores) trains the bytes of its own single run
// with Seed n, and seeds.json lists them with their IQM; on CartPole and
// on the simulator.
func TestSeedsMatchSingleRuns(t *testing.T) {
	for _, base := range []Options{
		{Env: "cartpole", Steps: 1024, Envs: 8, NEpochs: 2},
		{Env: "streamscale", Profile: "etl", Steps: 1, Envs: 4, NEpochs: 1, BatchSize: 2048, SelectLast: true},
	} {
		out := t.TempDir()
		o := base
		o.Seeds, o.Out = []uint64{5, 2, 9}, out
		var stdout, stderr bytes.Buffer
		if err := RunSeeds(context.Background(), o, command.IO{Stdout: &stdout, Stderr: &stderr}); err != nil {
			t.Fatal(err)
		}
		var seeds Seeds
		b, err := os.ReadFile(filepath.Join(out, SeedsFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &seeds); err != nil {
			t.Fatal(err)
		}
		if len(seeds.Runs) != 3 {
			t.Fatalf("%s: seeds.json has %d runs", base.Env, len(seeds.Runs))
		}
		var ents []float64
		for i, seed := range o.Seeds {
			single := base
			single.Seed, single.Out = seed, t.TempDir()
			sum, err := runOne(context.Background(), single, command.IO{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
			if err != nil {
				t.Fatal(err)
			}
			sameRun(t, SeedDir(out, seed), single.Out)
			r := seeds.Runs[i]
			if r.Seed != seed || r.PolicySHA256 != sum.PolicySHA256 || r.Out != SeedDir(out, seed) || r.EntropyFractionFinal == nil || *r.EntropyFractionFinal != *sum.EntropyFractionFinal {
				t.Errorf("%s: seeds.json run %d = %+v, single run sha %s", base.Env, i, r, sum.PolicySHA256)
			}
			ents = append(ents, *sum.EntropyFractionFinal)
		}
		if seeds.IQMEntropyFractionFinal == nil || *seeds.IQMEntropyFractionFinal != *IQM(ents) {
			t.Errorf("%s: IQM entropy %v, want %v", base.Env, seeds.IQMEntropyFractionFinal, *IQM(ents))
		}
		if seeds.Recipe.Seed != nil || *seeds.Recipe.Env != base.Env {
			t.Errorf("%s: seeds.json recipe %+v", base.Env, seeds.Recipe)
		}
		if !strings.Contains(stdout.String(), "train: 3 seeds: IQM final return") || strings.Index(stdout.String(), "seed 5:") > strings.Index(stdout.String(), "seed 2:") {
			t.Errorf("%s: stdout %q", base.Env, stdout.String())
		}
		if stderr.Len() != 0 {
			t.Errorf("%s: progress without Progress: %q", base.Env, stderr.String())
		}
	}
}

// TestSeedsRefuseBeforeWork: a seed whose directory holds a policy stops
// every seed before any trains.
func TestSeedsRefuseBeforeWork(t *testing.T) {
	out := t.TempDir()
	if err := os.MkdirAll(SeedDir(out, 2), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(SeedDir(out, 2), "policy.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Env: "cartpole", Steps: 1024, Envs: 8, Seeds: []uint64{1, 2}, Out: out}
	err := RunSeeds(context.Background(), o, command.IO{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "already holds a policy (policy.json)") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(SeedDir(out, 1)); !os.IsNotExist(err) {
		t.Errorf("seed 1 started: %v", err)
	}
}

func TestIQM(t *testing.T) {
	for _, tc := range []struct {
		v    []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{1, 2, 3}, 2},                      // ⌊3/4⌋ = 0 cut: the mean
		{[]float64{10, 1, 2, 3}, 2.5},                // cut 1 each end
		{[]float64{5, 1, 100, 2, 3, 4, -50, 6}, 3.5}, // cut 2 each end of -50 1 2 3 4 5 6 100
	} {
		if got := IQM(tc.v); got == nil || *got != tc.want {
			t.Errorf("IQM(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
	if IQM(nil) != nil {
		t.Error("IQM of nothing is not nil")
	}
}

// TestRefuseOverwrite: an -out holding a policy is refused before any
// work and left as it was; -force trains over it.
func TestRefuseOverwrite(t *testing.T) {
	o := Options{Env: "cartpole", Steps: 1024, Envs: 8, NEpochs: 1, Out: t.TempDir()}
	io := command.IO{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	if err := Run(context.Background(), o, io); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(o.Out, SummaryFile))
	o2 := o
	o2.Seed = 99
	err := Run(context.Background(), o2, io)
	if err == nil || !strings.Contains(err.Error(), "already holds a policy (policy.json); give -force") {
		t.Fatalf("second run: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(o.Out, SummaryFile))
	if !bytes.Equal(before, after) {
		t.Error("refused run changed summary.json")
	}
	o2.Force = true
	if err := Run(context.Background(), o2, io); err != nil {
		t.Fatalf("-force: %v", err)
	}
	after, _ = os.ReadFile(filepath.Join(o.Out, SummaryFile))
	if bytes.Equal(before, after) {
		t.Error("-force run left summary.json")
	}
}

// TestTrimCSVOldHeader: a progress.csv written before a column existed is
// rewritten in today's columns (the new one empty) and trimmed to the
// checkpoint's iteration.
func TestTrimCSVOldHeader(t *testing.T) {
	var old []string
	for _, n := range ppo.MetricNames {
		if n != "train/explained_variance_mc" {
			old = append(old, n)
		}
	}
	row := func(it int) string {
		cells := make([]string, len(old))
		for i, n := range old {
			cells[i] = "1"
			if n == "time/iterations" {
				cells[i] = strconv.Itoa(it)
			}
		}
		return strings.Join(cells, ",") + "\n"
	}
	path := filepath.Join(t.TempDir(), CSVFile)
	if err := os.WriteFile(path, []byte(strings.Join(old, ",")+"\n"+row(1)+row(2)+row(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	missing, err := trimCSV(path, 2)
	if err != nil || !slices.Equal(missing, []string{"train/explained_variance_mc"}) {
		t.Fatalf("missing %v, %v", missing, err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || lines[0] != strings.Join(ppo.MetricNames, ",") {
		t.Fatalf("rewritten:\n%s", b)
	}
	mc := slices.Index(ppo.MetricNames, "train/explained_variance_mc")
	it := slices.Index(ppo.MetricNames, "time/iterations")
	for k, l := range lines[1:] {
		cells := strings.Split(l, ",")
		if len(cells) != len(ppo.MetricNames) || cells[mc] != "" || cells[it] != strconv.Itoa(k+1) {
			t.Errorf("row %d: %q", k+1, l)
		}
	}
}

// FuzzDecodeRecipe: any bytes decode to a recipe or fail with an error,
// never a panic; a recipe that decodes yields only RecipeKeys, and its
// profile tables only pred or etl.
func FuzzDecodeRecipe(f *testing.F) {
	for _, s := range []string{
		"gamma = 0.9\n", "[profiles.pred]\nscenario = \"x\"\n", "gamma = 0.9\ngamma = 0.8\n", "net-arch = [64, 64]\n",
		"[profiles.lab]\n", "steps = 1.5\n", "seed = -1\n", "learning-rate = 3e-4\n", "a.b.c = 1\n", "[[profiles]]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecipe(b)
		if err != nil {
			return
		}
		for _, kv := range r.Flags() {
			if !slices.Contains(RecipeKeys, kv[0]) {
				t.Fatalf("key %q", kv[0])
			}
		}
		for p := range r.Profiles {
			if p != "pred" && p != "etl" {
				t.Fatalf("profile table %q", p)
			}
		}
	})
}
