package controllers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// plantPolicy copies the shipped paper policy of profile into dir.
func plantPolicy(t *testing.T, profile, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"policy.json", "policy.safetensors"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "policies", "paper", profile, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func writeSeeds(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SeedsFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func memberNames(s Spec) []string {
	var out []string
	for _, m := range s.Seeds() {
		out = append(out, m.String())
	}
	return out
}

func TestSeedsSpecs(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "d")
	plantPolicy(t, "pred", SeedDir(d, 1))
	plantPolicy(t, "pred", SeedDir(d, 2))
	writeSeeds(t, d, `{"recipe": {}, "runs": [{"seed": 2, "out": "elsewhere"}, {"seed": 1}]}`)
	reg := New(Options{PoliciesDir: filepath.Join(root, "none")})
	sc := scenario(t, "pred")

	s, err := reg.Parse("ppo:" + d + "/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ppo:" + SeedDir(d, 1), "ppo:" + SeedDir(d, 2)}
	if s.String() != "ppo:"+d || !slices.Equal(memberNames(s), want) {
		t.Fatalf("ppo:DIR with seeds.json: %s %v, want ppo:%s %v", s, memberNames(s), d, want)
	}
	if err := s.Check(sc); err != nil {
		t.Errorf("check: %v", err)
	}
	if _, err := s.Build(sc); err == nil {
		t.Error("a controller of several seeds built as one")
	}
	for _, m := range s.Seeds() {
		if len(m.Seeds()) != 0 {
			t.Errorf("member %s has seeds", m)
		}
		mc, err := m.Config(sc)
		if err == nil {
			_, err = m.Build(mc)
		}
		if err != nil {
			t.Errorf("member %s: %v", m, err)
		}
	}
	if err := s.Check(scenario(t, "etl")); err == nil || !strings.Contains(err.Error(), "trained on profile") {
		t.Errorf("pred seeds on etl: %v", err)
	}

	list := "ppo:" + SeedDir(d, 2) + "+" + SeedDir(d, 1) + "/"
	s, err = reg.Parse(list)
	if err != nil {
		t.Fatal(err)
	}
	if s.String() != "ppo:"+SeedDir(d, 2)+"+"+SeedDir(d, 1) || !slices.Equal(memberNames(s), []string{want[1], want[0]}) {
		t.Errorf("list: %s %v", s, memberNames(s))
	}
	if again, err := reg.Parse(s.String()); err != nil || again.String() != s.String() {
		t.Errorf("canonical list reparses to %v, %v", again, err)
	}

	for _, tc := range []struct{ spec, err string }{
		{"ppo:" + d + "+" + SeedDir(d, 1), "holds a seeds.json"},
		{"ppo:" + SeedDir(d, 1) + "+" + SeedDir(d, 1), "listed twice"},
		{"ppo:" + SeedDir(d, 1) + "+", "empty directory"},
	} {
		if _, err := reg.Parse(tc.spec); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.spec, err, tc.err)
		}
	}
	writeSeeds(t, filepath.Join(root, "broken"), `{"runs": []}`)
	if _, err := reg.Parse("ppo:" + filepath.Join(root, "broken")); err == nil || !strings.Contains(err.Error(), "no runs") {
		t.Errorf("empty seeds.json: %v", err)
	}
}

// TestSeedsPerProfile: bare ppo expands to the seeds of
// <PoliciesDir>/<profile>/seeds.json, the same for every profile.
func TestSeedsPerProfile(t *testing.T) {
	p := t.TempDir()
	for _, prof := range []string{"etl", "pred"} {
		for _, seed := range []uint64{3, 4} {
			plantPolicy(t, prof, SeedDir(filepath.Join(p, prof), seed))
		}
		writeSeeds(t, filepath.Join(p, prof), `{"runs": [{"seed": 3}, {"seed": 4}]}`)
	}
	s, err := New(Options{PoliciesDir: p}).Parse("ppo")
	if err != nil {
		t.Fatal(err)
	}
	if s.String() != "ppo" || !slices.Equal(memberNames(s), []string{"ppo#seed-3", "ppo#seed-4"}) {
		t.Fatalf("%s %v", s, memberNames(s))
	}
	for _, prof := range []string{"etl", "pred"} {
		if err := s.Check(scenario(t, prof)); err != nil {
			t.Errorf("%s: %v", prof, err)
		}
	}
	writeSeeds(t, filepath.Join(p, "pred"), `{"runs": [{"seed": 3}]}`)
	if _, err := New(Options{PoliciesDir: p}).Parse("ppo"); err == nil || !strings.Contains(err.Error(), "same seeds") {
		t.Errorf("different seeds per profile: %v", err)
	}
}

func TestParseSeeds(t *testing.T) {
	got, err := ParseSeeds([]byte(`{"runs": [{"seed": 5}, {"seed": 1}, {"seed": 3}], "iqm_ep_rew_mean_final": null}`))
	if err != nil || !slices.Equal(got, []uint64{1, 3, 5}) {
		t.Errorf("ParseSeeds = %v, %v", got, err)
	}
	for _, tc := range []struct{ in, err string }{
		{`{`, "decoding"},
		{`{"runs": []}`, "no runs"},
		{`{"runs": [{"out": "x"}]}`, "no seed"},
		{`{"runs": [{"seed": 1}, {"seed": 1}]}`, "twice"},
		{`{"runs": [{"seed": -1}]}`, "decoding"},
		{`{"runs": [` + strings.Repeat(`{"seed": 1},`, MaxSeeds) + `{"seed": 2}]}`, "at most"},
	} {
		if _, err := ParseSeeds([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseSeeds(%.40s) = %v, want %q", tc.in, err, tc.err)
		}
	}
}

// FuzzParseSeeds: ParseSeeds never panics and returns 1…MaxSeeds distinct
// seeds in increasing order, or an error.
func FuzzParseSeeds(f *testing.F) {
	for _, s := range []string{`{"runs": [{"seed": 1}, {"seed": 2}]}`, `{"runs": []}`, `{"runs": [{"seed": 1}, {"seed": 1}]}`, `[]`, `{"runs": null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		seeds, err := ParseSeeds(b)
		if err != nil {
			return
		}
		if len(seeds) == 0 || len(seeds) > MaxSeeds {
			t.Fatalf("%d seeds", len(seeds))
		}
		for i := 1; i < len(seeds); i++ {
			if seeds[i] <= seeds[i-1] {
				t.Fatalf("seeds %v not increasing and distinct", seeds)
			}
		}
	})
}
