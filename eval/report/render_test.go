package report

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	sum, _ := summary()
	js, err := SummaryJSON(sum)
	if err != nil {
		t.Fatal(err)
	}
	load := func(p string) ([]byte, error) {
		if p != "results/x.json" {
			return nil, fs.ErrNotExist
		}
		return js, nil
	}
	doc := "# T\n\nintro\n<!-- table paired-headline results/x.json -->\nstale\n<!-- end table -->\nafter\n"
	got, err := Render([]byte(doc), load)
	if err != nil {
		t.Fatal(err)
	}
	want := "# T\n\nintro\n<!-- table paired-headline results/x.json -->\n" + string(HeadlineTable(sum)) + "<!-- end table -->\nafter\n"
	if string(got) != want {
		t.Fatalf("rendered:\n%s\nwant:\n%s", got, want)
	}
	again, err := Render(got, load)
	if err != nil || !bytes.Equal(again, got) {
		t.Fatalf("rendering twice changes the document (%v)", err)
	}
	for _, tc := range []struct{ doc, want string }{
		{"a\n<!-- table nope results/x.json -->\n<!-- end table -->\n", `line 2: unknown table "nope"`},
		{"<!-- table paired-headline results/x.json -->\nno end\n", "line 1: table paired-headline has no"},
		{"\n\n<!-- table paired-headline results/y.json -->\n<!-- end table -->\n", "line 3: table paired-headline"},
		{"<!-- table paired-headline results/x.json -->\n<!-- end table -->\n<!-- table paired-note results/y.json -->\n<!-- end table -->\n", "line 3: table paired-note"},
	} {
		if _, err := Render([]byte(tc.doc), load); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Render(%q) = %v, want an error with %q", tc.doc, err, tc.want)
		}
	}
	if _, err := Render([]byte("<!-- table paired-headline results/x.json -->\n<!-- end table -->\n"),
		func(string) ([]byte, error) { return []byte(`{"combinations": []}`), nil }); err == nil {
		t.Error("a summary without cells rendered")
	}
}

// TestCommittedTablesCurrent renders the results tables of README.md and
// every document under docs/ from the summaries they name and fails when
// a committed table differs (edited by hand, or its summary changed):
// `go run ./eval report` renders them again.
func TestCommittedTablesCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	load := func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(root, filepath.FromSlash(p))) }
	tables := 0
	for _, f := range files {
		doc, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		tables += len(marker.FindAll(doc, -1))
		got, err := Render(doc, load)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if !bytes.Equal(got, doc) {
			t.Errorf("%s: a results table differs from its summary; run `go run ./eval report`", f)
		}
	}
	if tables == 0 {
		t.Error("README.md and docs/ render no results table")
	}
}

func TestValuesTable(t *testing.T) {
	files := map[string]string{
		"r.json": `{"paper": "P", "summary": "s.json", "command": "c", "rows": [
			{"experiment": "speed-up", "ours": "a.b", "format": "x2", "paper": "3.7×"},
			{"experiment": "error", "ours": "c", "format": "pct1", "paper": "< 30%"}]}`,
		"s.json": `{"a": {"b": 3.66387}, "c": 0.2148}`,
	}
	load := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
	got, err := valuesTable([]byte(files["r.json"]), load)
	if err != nil {
		t.Fatal(err)
	}
	want := "| experiment | streamscale | paper |\n|---|---|---|\n| speed-up | 3.66× | 3.7× |\n| error | 21.5% | < 30% |\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{
		`{"summary": "s.json", "rows": [{"experiment": "x", "ours": "a.z", "format": "x2"}]}`,
		`{"summary": "s.json", "rows": [{"experiment": "x", "ours": "a", "format": "x2"}]}`,
		`{"summary": "s.json", "rows": [{"experiment": "x", "ours": "c", "format": "bad"}]}`,
		`{"summary": "s.json", "rows": [], "extra": 1}`,
		`{"summary": "missing.json", "rows": [{"experiment": "x", "ours": "c", "format": "f2"}]}`,
	} {
		if _, err := valuesTable([]byte(bad), load); err == nil {
			t.Errorf("record %s rendered", bad)
		}
	}
}

// TestLiveTable renders a live summary's runs and refuses one without.
func TestLiveTable(t *testing.T) {
	js := `{"profile":"pred","trace":"taxi","intervals":20,"time_scale_s":0.25,"runs":[
	{"controller":"threshold:measured","placement_seed":101,"violation_rate":0.0125,"mean_p95_ms":43.04,"mean_cpu_millicores":3870.4,
	 "mean_throughput":3439.6,"mean_offered":3436.8,"dropped":0,"unfinished":2,"control_failures":1}]}`
	got, err := Tables["live-runs"]([]byte(js), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "| pred / taxi | `threshold:measured` | 101 | 20 × 0.25 s | 1.25% | 43.0 | 3870 | 3439.6 / 3436.8 | 0 | 2 | 1 |\n"
	if !strings.HasSuffix(string(got), want) {
		t.Errorf("got\n%s\nwant a last row\n%s", got, want)
	}
	if _, err := Tables["live-runs"]([]byte(`{"runs":[]}`), nil); err == nil {
		t.Error("a summary without runs rendered")
	}
}
