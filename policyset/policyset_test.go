package policyset

import (
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func TestDecodeFixture(t *testing.T) {
	m, err := Read(os.DirFS("testdata"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, md := range m.Models() {
		names = append(names, md.Name+"="+md.Dir)
	}
	want := []string{"etl=default/etl", "pred=default/pred", "paper-pred=paper/pred", "calibrated-etl=calibrated/etl", "calibrated-pred=calibrated/pred"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("models %v, want %v", names, want)
	}
	s, ok := m.Set("default")
	if !ok || s.Recipe != "configs/default.toml" || s.Scenario != "realistic" || s.Headline != "fixture headline" {
		t.Fatalf("default set %+v", s)
	}
	if d := s.Diagnostics["pred"]; d.ExplainedVariance == nil || *d.ExplainedVariance != 0.64 || *d.EntropyFraction != 0.58 {
		t.Fatalf("pred diagnostics %+v", d)
	}
	if d := s.Diagnostics["etl"]; d.EntropyFraction != nil || *d.ExplainedVariance != -0.25 {
		t.Fatalf("etl diagnostics %+v", d)
	}
	if _, ok := m.Set("nope"); ok {
		t.Fatal("found a set that is not there")
	}
}

func TestDecodeRefuses(t *testing.T) {
	const set = `"name":"default","purpose":"p","profiles":["pred"]`
	for _, tc := range []struct{ name, in, want string }{
		{"unknown top key", `{"sets":[{` + set + `}],"version":1}`, "unknown key version"},
		{"unknown set key", `{"sets":[{` + set + `,"owner":"x"}]}`, "unknown key sets[0].owner"},
		{"unknown diagnostics key", `{"sets":[{` + set + `,"diagnostics":{"pred":{"kl":0.1}}}]}`, "unknown key sets[0].diagnostics.pred.kl"},
		{"duplicate top key", `{"sets":[{` + set + `}],"sets":[]}`, "duplicate key sets"},
		{"duplicate set key", `{"sets":[{` + set + `,"purpose":"q"}]}`, "duplicate key sets[0].purpose"},
		{"duplicate profile key", `{"sets":[{` + set + `,"diagnostics":{"pred":{},"pred":{}}}]}`, "duplicate key sets[0].diagnostics.pred"},
		{"duplicate diagnostics key", `{"sets":[{` + set + `,"diagnostics":{"pred":{"entropy_fraction":0.5,"entropy_fraction":0.5}}}]}`, "duplicate key sets[0].diagnostics.pred.entropy_fraction"},
		{"missing sets", `{}`, "key sets is missing"},
		{"empty sets", `{"sets":[]}`, "sets is empty"},
		{"missing name", `{"sets":[{"purpose":"p","profiles":["pred"]}]}`, "key sets[0].name is missing"},
		{"missing purpose", `{"sets":[{"name":"a","profiles":["pred"]}]}`, "key sets[0].purpose is missing"},
		{"missing profiles", `{"sets":[{"name":"a","purpose":"p"}]}`, "key sets[0].profiles is missing"},
		{"empty profiles", `{"sets":[{"name":"a","purpose":"p","profiles":[]}]}`, "sets[0].profiles is empty"},
		{"name of wrong type", `{"sets":[{"name":1,"purpose":"p","profiles":["pred"]}]}`, "sets[0].name is a number, want a string"},
		{"profiles of wrong type", `{"sets":[{"name":"a","purpose":"p","profiles":"pred"}]}`, "sets[0].profiles is a string, want an array"},
		{"diagnostic of wrong type", `{"sets":[{` + set + `,"diagnostics":{"pred":{"entropy_fraction":"0.5"}}}]}`, "entropy_fraction is a string, want a number"},
		{"null sets", `{"sets":null}`, "sets is null, want an array"},
		{"not an object", `[]`, "the top level is an array, want an object"},
		{"trailing data", `{"sets":[{` + set + `}]} {}`, "data after the manifest's object"},
		{"truncated", `{"sets":[{` + set, "unexpected end of input"},
		{"malformed", `{"sets":[{` + set + `,}]}`, "malformed JSON"},
		{"overflowing number", `{"sets":[{` + set + `,"diagnostics":{"pred":{"explained_variance":1e999}}}]}`, "out of range"},
		{"bad set name", `{"sets":[{"name":"Default","purpose":"p","profiles":["pred"]}]}`, "sets[0].name \"Default\" must match"},
		{"path in profile", `{"sets":[{"name":"a","purpose":"p","profiles":["../etc"]}]}`, "sets[0].profiles[0] \"../etc\" must match"},
		{"repeated set", `{"sets":[{` + set + `},{` + set + `}]}`, "sets[1].name \"default\": a set of that name comes earlier"},
		{"repeated profile", `{"sets":[{"name":"a","purpose":"p","profiles":["pred","pred"]}]}`, "sets[0].profiles[1] \"pred\" is listed twice"},
		{"model names collide", `{"sets":[{"name":"default","purpose":"p","profiles":["paper-pred"]},{"name":"paper","purpose":"p","profiles":["pred"]}]}`, "model name \"paper-pred\" is also that of default/paper-pred"},
		{"diagnostics of another profile", `{"sets":[{` + set + `,"diagnostics":{"etl":{}}}]}`, "sets[0].diagnostics.etl: \"etl\" is not one of the set's profiles"},
		{"entropy fraction above 1", `{"sets":[{` + set + `,"diagnostics":{"pred":{"entropy_fraction":1.5}}}]}`, "entropy_fraction 1.5, want in [0, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode([]byte(tc.in))
			if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode = %v, %v; want ErrManifest naming %q", m, err, tc.want)
			}
		})
	}
}

func TestReadFiles(t *testing.T) {
	if _, err := Read(fstest.MapFS{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no manifest: %v, want fs.ErrNotExist", err)
	}
	if _, err := Read(fstest.MapFS{ManifestName: {Mode: fs.ModeDir}}); err == nil || !strings.Contains(err.Error(), "manifest.json is not a regular file") {
		t.Errorf("directory: %v", err)
	}
	big := fstest.MapFS{ManifestName: {Data: make([]byte, MaxManifestBytes+1)}}
	if _, err := Read(big); err == nil || !strings.Contains(err.Error(), "limit 1048576 bytes") {
		t.Errorf("oversized: %v", err)
	}
	if _, err := Read(fstest.MapFS{ManifestName: {Data: []byte(`{"sets":[],"x":1}`)}}); !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), "manifest.json") {
		t.Errorf("invalid: %v", err)
	}
}

func TestModelName(t *testing.T) {
	for _, tc := range []struct{ set, profile, want string }{
		{"default", "pred", "pred"}, {"paper", "pred", "paper-pred"}, {"calibrated", "etl", "calibrated-etl"},
	} {
		if got := ModelName(tc.set, tc.profile); got != tc.want {
			t.Errorf("ModelName(%q, %q) = %q, want %q", tc.set, tc.profile, got, tc.want)
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts validates and
// decodes again to the same manifest.
func FuzzDecode(f *testing.F) {
	b, err := os.ReadFile("testdata/manifest.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := Decode(in)
		if err != nil {
			if !errors.Is(err, ErrManifest) {
				t.Fatalf("error %v does not wrap ErrManifest", err)
			}
			return
		}
		if err := m.validate(); err != nil {
			t.Fatalf("accepted an invalid manifest: %v", err)
		}
		if len(m.Models()) == 0 {
			t.Fatal("accepted a manifest without models")
		}
	})
}
