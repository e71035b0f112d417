package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"streamscale/internal/command"
	"streamscale/train/run"
)

// card is what a committed summary.json records of how its policy was
// trained.
type card struct {
	Profile           string    `json:"profile"`
	Scenario          string    `json:"scenario"`
	Randomize         bool      `json:"randomize"`
	TrainPlacements   int       `json:"train_placements"`
	TrainTraces       string    `json:"train_traces"`
	ActionDeltas      []float64 `json:"action_deltas"`
	ActionUtilization []float64 `json:"action_utilization"`
	RewardSpan        float64   `json:"reward_span_per_task"`
	Select            string    `json:"select"`
	Seed              uint64    `json:"seed"`
	Transitions       int       `json:"transitions"`
	ConfigHash        string    `json:"config_hash"`
	NormObs           bool      `json:"norm_obs"`
	NormReward        bool      `json:"norm_reward"`
}

// recipeCase is one committed recipe and the cards of the policies it
// trained. scenarios maps a profile to the scenario the recipe names when
// it is not the card's: the path changed, the file did not (checked by
// TestRecipeCardProvenance where git history is at hand).
type recipeCase struct {
	recipe    string
	cards     string // directory holding <profile>/summary.json
	profiles  []string
	scenarios map[string]string
}

func recipeCases() []recipeCase {
	both := []string{"pred", "etl"}
	cs := []recipeCase{
		{"residual.toml", "../../policies/default", both, nil},
		{"paper.toml", "../../policies/paper", both, nil},
		{"calibrated.toml", "../../policies/calibrated", both, map[string]string{
			// renamed from policies/calibrated-snapshots/ in 1a7b934
			"pred": "policies/calibrated/scenario-pred.json", "etl": "policies/calibrated/scenario-etl.json"}},
	}
	restored := func(name string, ps ...string) map[string]string {
		m := map[string]string{}
		for _, p := range ps {
			m[p] = "configs/ablations/scenarios/" + name + "-" + p + ".json"
		}
		return m
	}
	for _, a := range []struct {
		name     string
		profiles []string
		scen     bool // its scenario files must be restored from a651314
	}{
		{"calibrated-curve", both, true}, {"calibrated-target", both, true}, {"calibrated-step025", both, true},
		{"calibrated-longer", both, true}, {"calibrated-paper", []string{"pred"}, true}, {"root", both, false},
		{"longer", both, false}, {"longest-last", both, false}, {"paper-longer", []string{"pred"}, false},
		{"target", both, false}, {"target-longest", both, false}, {"target-gae07-7x", both, false},
		{"target-gae075-7x", both, false}, {"target-gae08-7x", both, false}, {"target-gae08-lr6e-4-7x", []string{"etl"}, false},
		{"target-gae08-ep10-10x", both, false},
	} {
		c := recipeCase{recipe: "ablations/" + a.name + ".toml", cards: "testdata/cards/" + a.name, profiles: a.profiles}
		if a.scen {
			c.scenarios = restored(a.name, a.profiles...)
		}
		cs = append(cs, c)
	}
	// Recipes of 2026-12-04 to 2026-12-06, cards under
	// testdata/cards-<day>/<name>: the residual policies (the first
	// training seed's run of each; docs/experiments/2026-12-04-residual.md,
	// 2026-12-05-residual-flink.md, 2026-12-06-cold-start.md) and the
	// default set before 2026-12-05
	// (residual-threshold, seed 1).
	pred := []string{"pred"}
	for _, a := range []struct {
		day, name string
		profiles  []string
	}{
		{"2026-12-04", "residual-longer", pred}, {"2026-12-04", "residual-lagrangian-010", pred},
		{"2026-12-04", "residual-lagrangian-025", pred}, {"2026-12-04", "residual-lagrangian-030", pred},
		{"2026-12-04", "residual-lagrangian-035", pred}, {"2026-12-04", "residual-intel", both},
		{"2026-12-05", "residual-threshold", both}, {"2026-12-05", "residual-trend", both},
		{"2026-12-05", "residual-trend-lagrangian-025", pred}, {"2026-12-05", "residual-trend-lagrangian-028", pred},
		{"2026-12-05", "residual-flink-trend", both}, {"2026-12-05", "residual-flink-trend-intel", pred},
		{"2026-12-05", "residual-flink-stack4", both}, {"2026-12-05", "residual-flink-lagrangian-025", pred},
		{"2026-12-05", "residual-flink-lagrangian-030", pred}, {"2026-12-05", "residual-flink-forecast", both},
		{"2026-12-06", "residual-paper", both}, {"2026-12-06", "residual-paper-lagrangian", both},
		{"2026-12-06", "residual-paper-intel", pred}, {"2026-12-06", "residual-paper-intel-lagrangian", pred},
		{"2026-12-06", "residual-paper-kl", both}, {"2026-12-06", "residual-forecast-kl", both},
		{"2026-12-06", "residual-forecast-kl01", both}, {"2026-12-06", "residual-forecast-kl01-longer", pred},
		{"2026-12-06", "residual-flink", both},
	} {
		cs = append(cs, recipeCase{recipe: "ablations/" + a.name + ".toml", cards: "testdata/cards-" + a.day + "/" + a.name, profiles: a.profiles})
	}
	return cs
}

// TestRecipesMatchCards resolves every committed recipe for each profile
// its set has, without training, and checks the resolved ppo.Config's
// hash against the card's config_hash and every environment option
// against the card's record (scenario paths as recipeCase says).
func TestRecipesMatchCards(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range recipeCases() {
		seen[c.recipe] = true
		for _, p := range c.profiles {
			b, err := os.ReadFile(filepath.Join(c.cards, p, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var want card
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			o, err := parse([]string{"-config", filepath.Join("../../configs", c.recipe), "-profile", p}, command.IO{})
			if err != nil {
				t.Errorf("%s -profile %s: %v", c.recipe, p, err)
				continue
			}
			cfg, err := o.Config()
			if err != nil {
				t.Errorf("%s -profile %s: %v", c.recipe, p, err)
				continue
			}
			if got := cfg.Hash(); got != want.ConfigHash {
				t.Errorf("%s -profile %s: config hash %s, card %s", c.recipe, p, got, want.ConfigHash)
			}
			if cfg.Transitions() != want.Transitions {
				t.Errorf("%s -profile %s: %d transitions, card %d", c.recipe, p, cfg.Transitions(), want.Transitions)
			}
			scen := want.Scenario
			if s, ok := c.scenarios[p]; ok {
				scen = s
			}
			sel := ""
			if o.SelectLast {
				sel = "last"
			}
			var util, deltas []float64
			if o.ActionUtilization != ([5]float64{}) {
				util = o.ActionUtilization[:]
			}
			if o.ActionDeltas != ([5]float64{}) {
				deltas = o.ActionDeltas[:]
			}
			traces := ""
			for i, v := range o.TrainTraces {
				if i > 0 {
					traces += ","
				}
				traces += v.String()
			}
			got := card{Profile: o.Profile, Scenario: o.Scenario, Randomize: o.Randomize, TrainPlacements: o.TrainPlacements,
				TrainTraces: traces, ActionDeltas: deltas, ActionUtilization: util, RewardSpan: o.RewardSpan, Select: sel,
				Seed: o.Seed, Transitions: want.Transitions, ConfigHash: want.ConfigHash, NormObs: o.NormObs, NormReward: o.NormReward}
			want.Scenario = scen
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if !bytes.Equal(gj, wj) {
				t.Errorf("%s -profile %s: options\n%s\ncard\n%s", c.recipe, p, gj, wj)
			}
		}
	}
	// Every recipe under configs/ is checked.
	files, _ := filepath.Glob("../../configs/*.toml")
	more, _ := filepath.Glob("../../configs/ablations/*.toml")
	for _, f := range append(files, more...) {
		rel, _ := filepath.Rel("../../configs", f)
		if !seen[filepath.ToSlash(rel)] {
			t.Errorf("%s has no card check", rel)
		}
	}
}

// TestRecipeCardProvenance: the cards under testdata/cards are those of
// commit a651314, byte for byte, and the calibrated set's scenario files
// are the ones its cards name (renamed, not changed). It needs git and
// the history; without them it is skipped.
func TestRecipeCardProvenance(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	show := func(rev, path string) ([]byte, bool) {
		out, err := exec.Command("git", "show", rev+":"+path).Output()
		return out, err == nil
	}
	if _, ok := show("a651314", "policies/pred/summary.json"); !ok {
		t.Skip("commit a651314 is not in this clone's history")
	}
	for _, c := range recipeCases() {
		if !strings.HasPrefix(c.cards, "testdata/cards/") {
			continue
		}
		name := filepath.Base(c.cards)
		for _, p := range c.profiles {
			old := "policies/" + name + "/" + p + "/summary.json"
			switch name {
			case "calibrated-paper":
				old = "policies/calibrated/" + p + "/summary.json"
			case "root":
				old = "policies/" + p + "/summary.json"
			}
			want, ok := show("a651314", old)
			if !ok {
				t.Errorf("a651314:%s missing", old)
				continue
			}
			got, err := os.ReadFile(filepath.Join(c.cards, p, "summary.json"))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s/%s/summary.json is not a651314:%s (%v)", c.cards, p, old, err)
			}
		}
	}
	for _, p := range []string{"pred", "etl"} {
		want, ok := show("a651314", "policies/calibrated-snapshots/scenario-"+p+".json")
		got, err := os.ReadFile("../../policies/calibrated/scenario-" + p + ".json")
		if !ok || err != nil || !bytes.Equal(got, want) {
			t.Errorf("policies/calibrated/scenario-%s.json is not a651314:policies/calibrated-snapshots/scenario-%s.json", p, p)
		}
	}
}

// TestRecipePrecedence: a flag on the command line beats the profile's
// table, which beats the top level, which beats the flag's default; the
// file's path and SHA-256 are recorded.
func TestRecipePrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.toml")
	body := "gamma = 0.9\ngae-lambda = 0.8\nn-epochs = 3\nnet-arch = [32, 16]\nlearning-rate = \"lin_1e-3\"\nprofile = \"etl\"\n\n[profiles.etl]\ngae-lambda = 0.7\nn-epochs = 4\n\n[profiles.pred]\nn-epochs = 5\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	for _, tc := range []struct {
		args          []string
		profile       string
		gamma, lambda float64
		epochs        int
	}{
		{nil, "etl", 0.9, 0.7, 4},
		{[]string{"-profile", "pred"}, "pred", 0.9, 0.8, 5},
		{[]string{"-n-epochs", "9", "-gamma", "0.5"}, "etl", 0.5, 0.7, 9},
		{[]string{"-gae-lambda", "0.1", "-profile", "pred"}, "pred", 0.9, 0.1, 5},
	} {
		o, err := parse(append([]string{"-config", path}, tc.args...), command.IO{})
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if o.Profile != tc.profile || *o.Gamma != tc.gamma || *o.GAELambda != tc.lambda || o.NEpochs != tc.epochs || !slices.Equal(o.NetArch, []int{32, 16}) || o.LearningRate.String() != "lin_0.001" {
			t.Errorf("%q: profile %s γ %v λ %v epochs %d net %v lr %v; want %s %v %v %d", tc.args, o.Profile, *o.Gamma, *o.GAELambda, o.NEpochs, o.NetArch, o.LearningRate, tc.profile, tc.gamma, tc.lambda, tc.epochs)
		}
		if o.ConfigFile != path || o.ConfigSHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%q: config %s %s", tc.args, o.ConfigFile, o.ConfigSHA256)
		}
	}
}

// TestRecipeErrors: a bad recipe is one usage line naming the file and
// what is wrong (the key, and its line where TOML knows it).
func TestRecipeErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := write("big.toml", "# "+strings.Repeat("x", run.MaxRecipeBytes)+"\n")
	for _, tc := range []struct {
		path, want string
	}{
		{write("unknown.toml", "gamma = 0.9\ngae_lambda = 0.8\n"), `unknown key "gae_lambda" (line 2)`},
		{write("unknown-table.toml", "[profiles.pred]\nworkers = 2\n"), `unknown key "profiles.pred.workers" (line 2)`},
		{write("invocation.toml", "out = \"runs/x\"\n"), `unknown key "out"`},
		{write("dup.toml", "gamma = 0.9\ngamma = 0.8\n"), `gamma`},
		{write("type.toml", "n-epochs = \"ten\"\n"), `n-epochs`},
		{write("float-int.toml", "steps = 1.5\n"), `steps`},
		{write("syntax.toml", "gamma = \n"), "line 1"},
		{write("profile.toml", "[profiles.lab]\ngamma = 0.9\n"), "[profiles.lab]: unknown profile, want pred or etl"},
		{write("profile-env.toml", "[profiles.pred]\nprofile = \"etl\"\n"), "[profiles.pred] sets env or profile"},
		{write("value.toml", "gae-lambda = 1.5\n"), "train: -gae-lambda 1.5, want a number in [0, 1]"},
		{write("flagvalue.toml", "select = \"best\"\n"), `train: -select "best", want best-dev or last`},
		{write("arch.toml", "net-arch = [64, 0]\n"), `train: -net-arch: "64,0": layer 1 is "0"`},
		{big, "larger than the limit of 65536 bytes"},
		{dir, "not a regular file"},
		{filepath.Join(dir, "missing.toml"), "no such file"},
	} {
		var out, errw bytes.Buffer
		code := Main(t.Context(), []string{"-config", tc.path, "-steps", "1"}, command.IO{Stdout: &out, Stderr: &errw})
		msg := errw.String()
		if code != 2 || strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "train") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line containing %q", filepath.Base(tc.path), code, msg, tc.want)
		}
	}
}

// TestRecipeKeysAreFlags: every recipe key is a flag of the command, and
// Recipe.Flags yields exactly RecipeKeys for a recipe that sets them all.
func TestRecipeKeysAreFlags(t *testing.T) {
	var out bytes.Buffer
	Main(t.Context(), []string{"-h"}, command.IO{Stdout: &out, Stderr: &out})
	for _, k := range run.RecipeKeys {
		if !strings.Contains(out.String(), "  -"+k+" ") && !strings.Contains(out.String(), "  -"+k+"\n") {
			t.Errorf("recipe key %s is not a flag", k)
		}
	}
	var all strings.Builder
	for _, k := range run.RecipeKeys {
		v := "1"
		switch k {
		case "env", "profile", "scenario", "select", "train-traces", "learning-rate", "residual", "objective", "residual-context":
			v = `"x"`
		case "randomize", "norm-obs", "norm-reward":
			v = "true"
		case "action-utilization", "action-deltas", "net-arch", "critic-arch":
			v = "[1]"
		}
		all.WriteString(k + " = " + v + "\n")
	}
	r, err := run.DecodeRecipe([]byte(all.String()))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range r.Flags() {
		keys = append(keys, kv[0])
	}
	if !slices.Equal(keys, run.RecipeKeys) {
		t.Errorf("Flags keys %v, RecipeKeys %v", keys, run.RecipeKeys)
	}
}

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []uint64
		err  string
	}{
		{"1,2,3", []uint64{1, 2, 3}, ""},
		{"1-5", []uint64{1, 2, 3, 4, 5}, ""},
		{"7, 1-2", []uint64{7, 1, 2}, ""},
		{"4-4", []uint64{4}, ""},
		{"1,1", nil, "repeats seed 1"},
		{"1-3,2", nil, "repeats seed 2"},
		{"5-1", nil, "not a range A-B with A ≤ B"},
		{"", nil, "is not a seed"},
		{"x", nil, "is not a seed"},
		{"-3", nil, "is not a seed"},
		{"1-100", nil, "more than 64 seeds"},
		{"0-18446744073709551615", nil, "more than 64 seeds"},
		{"18446744073709551615", []uint64{18446744073709551615}, ""},
	} {
		got, err := ParseSeeds(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestResolvedRecipeRetrains: the fully resolved recipe a run records
// (summary.json "recipe"), written as a -config file, trains the same
// weights; the second card records the file and its hash.
func TestResolvedRecipeRetrains(t *testing.T) {
	for _, args := range [][]string{
		{"-env", "cartpole", "-steps", "1024", "-envs", "8", "-n-epochs", "2", "-seed", "4", "-learning-rate", "lin_1e-3", "-net-arch", "16,16", "-target-kl", "0.001"},
		{"-profile", "etl", "-steps", "1", "-envs", "4", "-n-epochs", "1", "-batch-size", "2048", "-select", "last", "-action-utilization", "0,0.8,0.6,0.45,0.3", "-reward-span", "8000", "-gamma", "0.9", "-norm-obs", "-norm-reward"},
		{"-steps", "1", "-envs", "4", "-n-epochs", "1", "-batch-size", "4096", "-seed", "11"}, // default deltas, traces, span, placements; dev-reward selection
	} {
		dir := t.TempDir()
		first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
		var out, errw bytes.Buffer
		if code := Main(t.Context(), append(args, "-out", first), command.IO{Stdout: &out, Stderr: &errw}); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errw.String())
		}
		var sum run.Summary
		b, err := os.ReadFile(filepath.Join(first, run.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		if sum.Recipe.Steps == nil || sum.Recipe.Gamma == nil || sum.Recipe.LearningRate == nil || sum.Recipe.Seed == nil {
			t.Fatalf("%q: recipe not resolved: %+v", args, sum.Recipe)
		}
		rec, err := toml.Marshal(sum.Recipe)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "resolved.toml")
		if err := os.WriteFile(path, rec, 0o644); err != nil {
			t.Fatal(err)
		}
		if code := Main(t.Context(), []string{"-config", path, "-out", second}, command.IO{Stdout: &out, Stderr: &errw}); code != 0 {
			t.Fatalf("%q: resolved recipe:\n%s\nexit %d: %s", args, rec, code, errw.String())
		}
		var sum2 run.Summary
		b, _ = os.ReadFile(filepath.Join(second, run.SummaryFile))
		if err := json.Unmarshal(b, &sum2); err != nil {
			t.Fatal(err)
		}
		if sum2.PolicySHA256 != sum.PolicySHA256 || sum2.ConfigHash != sum.ConfigHash {
			t.Errorf("%q: resolved recipe trains %s (config %s), flags %s (config %s)\n%s", args, sum2.PolicySHA256, sum2.ConfigHash, sum.PolicySHA256, sum.ConfigHash, rec)
		}
		h := sha256.Sum256(rec)
		if sum2.ConfigFile != path || sum2.ConfigSHA256 != hex.EncodeToString(h[:]) {
			t.Errorf("%q: summary config file %q %q", args, sum2.ConfigFile, sum2.ConfigSHA256)
		}
		var card struct {
			Recipe run.CardRecipe `json:"recipe"`
		}
		b, _ = os.ReadFile(filepath.Join(second, "policy.json"))
		if err := json.Unmarshal(b, &card); err != nil {
			t.Fatal(err)
		}
		if card.Recipe.ConfigSHA256 != sum2.ConfigSHA256 || card.Recipe.Resolved.Steps == nil || *card.Recipe.Resolved.Steps != *sum.Recipe.Steps {
			t.Errorf("%q: policy card recipe %+v", args, card.Recipe)
		}
	}
}
