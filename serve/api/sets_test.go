package api

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamscale/policyset"
	"streamscale/ppo/policy"
	"streamscale/serve/internal/fixture"
)

// setsDir writes random policies for the sets of testdata/sets/manifest.json
// (default: etl, pred; paper: pred; calibrated: etl) and the manifest
// named manifest (a file of testdata/sets) as its manifest.json.
func setsDir(t *testing.T, manifest string) string {
	t.Helper()
	dir := t.TempDir()
	for i, sp := range [][2]string{{"default", "etl"}, {"default", "pred"}, {"paper", "pred"}, {"calibrated", "etl"}} {
		if _, err := fixture.Write(filepath.Join(dir, sp[0]), sp[1], sp[1], 16, uint64(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join("testdata", "sets", manifest))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, policyset.ManifestName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestManifestSets: with a manifest, every listed set is served, the
// default set's models by profile and the others' as <set>-<profile>, and
// /v1/policies names each model's set.
func TestManifestSets(t *testing.T) {
	dir := setsDir(t, "manifest.json")
	s := newTestServer(t, dir, "")
	var names []string
	for n := range s.Policies() {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"calibrated-etl", "etl", "paper-pred", "pred"}; !slices.Equal(names, want) {
		t.Fatalf("serving %v, want %v", names, want)
	}
	w := do(s, "GET", "/v1/policies", nil)
	okStatus(t, w)
	list := decodeJSON[struct {
		Policies []struct {
			policyInfo
		} `json:"policies"`
	}](t, w)
	sets := map[string]string{}
	for _, p := range list.Policies {
		sets[p.Name] = p.Set + "/" + p.Profile
	}
	want := map[string]string{"calibrated-etl": "calibrated/etl", "etl": "default/etl", "paper-pred": "paper/pred", "pred": "default/pred"}
	for n, sp := range want {
		if sets[n] != sp {
			t.Errorf("%s: set/profile %q, want %q", n, sets[n], sp)
		}
	}
	// Each model is its own directory's policy.
	_, card := readPolicy(t, filepath.Join(dir, "paper"), "pred")
	if s.Policies()["paper-pred"] != card.WeightsSHA256 || s.Policies()["pred"] == card.WeightsSHA256 {
		t.Fatalf("paper-pred serves %s, want %s", s.Policies()["paper-pred"], card.WeightsSHA256)
	}
	okStatus(t, do(s, "GET", "/v2/models/calibrated-etl", nil))
}

// TestManifestRefused: an invalid manifest, a set it lists that is not on
// disk, and a policy of another profile than listed fail the load (no
// fallback to the directory scan), naming what is wrong.
func TestManifestRefused(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		edit           func(t *testing.T, dir string)
		inMsg          string
	}{
		{"unknown key", "bad-unknown-key.json", nil, "unknown key sets[0].owner"},
		{"missing set", "missing-set.json", nil, "policy absent-pred"},
		{"wrong profile", "manifest.json", func(t *testing.T, dir string) {
			sub := filepath.Join(dir, "paper", "pred")
			if err := os.RemoveAll(sub); err != nil {
				t.Fatal(err)
			}
			if _, err := fixture.Write(filepath.Join(dir, "paper"), "pred", "etl", 16, 3); err != nil {
				t.Fatal(err)
			}
		}, `has profile "etl", the manifest lists "pred"`},
		{"manifest is a directory", "manifest.json", func(t *testing.T, dir string) {
			p := filepath.Join(dir, policyset.ManifestName)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "manifest.json is not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := setsDir(t, tc.manifest)
			if tc.edit != nil {
				tc.edit(t, dir)
			}
			s, err := New(Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Reload(); err == nil || !strings.Contains(err.Error(), tc.inMsg) {
				t.Fatalf("Reload: %v, want an error naming %q", err, tc.inMsg)
			}
			if s.Ready() {
				t.Fatal("ready after a failed load")
			}
		})
	}
}

// TestRealPolicySets (smoke): the repository's three policy sets load
// and self-test as manifest sets: through policies/manifest.json when it
// exists, and always through a manifest written here over the same
// directories.
func TestRealPolicySets(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", "policies"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifest := `{"sets":[`
	for i, set := range []string{"default", "paper", "calibrated"} {
		if err := os.Symlink(filepath.Join(root, set), filepath.Join(dir, set)); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			manifest += ","
		}
		manifest += `{"name":"` + set + `","purpose":"smoke","profiles":["etl","pred"]}`
	}
	manifest += `]}`
	if err := os.WriteFile(filepath.Join(dir, policyset.ManifestName), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := []string{dir}
	if _, err := os.Stat(filepath.Join(root, policyset.ManifestName)); err == nil {
		dirs = append(dirs, root)
	}
	for _, d := range dirs {
		s := newTestServer(t, d, "")
		for _, n := range []string{"pred", "etl", "paper-pred", "paper-etl", "calibrated-pred", "calibrated-etl"} {
			if s.Policies()[n] == "" {
				t.Errorf("%s: %s is not served (serving %v)", d, n, s.Policies())
			}
		}
	}
}

// TestReloadRefusesIrregularFiles: a FIFO in place of policy.safetensors
// fails /admin/reload (it used to block it for the life of the process),
// as a file over the size limit does; the served set stays.
func TestReloadRefusesIrregularFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(t *testing.T, path string)
		inMsg string
	}{
		{"fifo", mkfifo, "policy.safetensors is not a regular file"},
		{"oversized", func(t *testing.T, path string) {
			if err := os.Truncate(path, policy.MaxWeightsBytes+1); err != nil {
				t.Fatal(err)
			}
		}, "limit 67108864 bytes"},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "policy.safetensors is not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testDir(t)
			s := newTestServer(t, dir, testToken)
			before := s.Policies()
			path := filepath.Join(dir, "pred", policy.FileName+".safetensors")
			if tc.name != "oversized" {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
			tc.spoil(t, path)
			w := do(s, "POST", "/admin/reload", nil, "Authorization", "Bearer "+testToken)
			if w.Code != 500 || !strings.Contains(w.Body.String(), tc.inMsg) {
				t.Fatalf("reload: %d %s, want 500 naming %q", w.Code, w.Body, tc.inMsg)
			}
			if got := s.Policies(); got["pred"] != before["pred"] {
				t.Fatal("a failed reload changed the served set")
			}
		})
	}
}
