package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamscale/eval/claspexp"
)

func TestClaspBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"clasp"}, "-out is required"},
		{[]string{"clasp", "-out", t.TempDir(), "-apps", "nope"}, "unknown app"},
		{[]string{"clasp", "-out", t.TempDir(), "-iters", "0"}, "-iters 0"},
		{[]string{"clasp", "-out", t.TempDir(), "-seeds", "0"}, "-seeds 0"},
		{[]string{"clasp", "-out", t.TempDir(), "-max-in-flight", "5"}, "-max-in-flight 5"},
		{[]string{"clasp", "-out", t.TempDir(), "-max-in-flight", "-1"}, "-max-in-flight -1"},
		{[]string{"clasp", "-out", t.TempDir(), "-probe-steps", "3"}, "-probe-steps 3"},
		{[]string{"clasp", "-out", t.TempDir(), "-fractions", "0.5"}, "want at least 2"},
		{[]string{"clasp", "-out", t.TempDir(), "-fractions", "0.5,0.2"}, "not strictly ascending"},
		{[]string{"clasp", "-out", t.TempDir(), "-fractions", "0.5,1.5"}, `entry "1.5"`},
		{[]string{"clasp", "-out", t.TempDir(), "-fractions", "0,1"}, `entry "0"`},
		{[]string{"clasp", "-out", t.TempDir(), "-fractions", "0.5,,1"}, `entry ""`},
		{[]string{"clasp", "-out", t.TempDir(), "-frob"}, "flag provided but not defined"},
		{[]string{"clasp", "-out", t.TempDir(), "extra"}, "unexpected argument"},
	} {
		code, _, errs := call(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want 2 and %q)", tc.args, code, errs, tc.want)
		}
	}
}

// TestClaspDeterminism runs a reduced reproduction twice: identical bytes
// in every file written. Reduced (one app, 4 bisection steps, 10 s trials,
// transitions between two rates, one load-mode seed), it still runs every
// experiment of the report and every controller — the six worker-count
// methods and every load-mode method — and writes every file.
func TestClaspDeterminism(t *testing.T) {
	args := []string{"-apps", "syn", "-iters", "4", "-probe-steps", "10", "-fractions", "0.5,1", "-seeds", "1", "-json"}
	var dirs []string
	for range 2 {
		dir := t.TempDir()
		code, stdout, errs := call(t, append([]string{"clasp", "-out", dir}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		js, err := os.ReadFile(filepath.Join(dir, "clasp.json"))
		if err != nil {
			t.Fatal(err)
		}
		if stdout != string(js) || !bytes.Contains(js, []byte(`"syn_speedup_5"`)) || !bytes.Contains(js, []byte(`"coef_rel_error"`)) {
			t.Fatalf("stdout and clasp.json disagree or miss fields:\n%s", js)
		}
		dirs = append(dirs, dir)
	}
	var rep struct {
		Transitions []struct{ Method string } `json:"transitions"`
		ModeRuns    []struct{ Method string } `json:"mode_runs"`
		Scaling     []json.RawMessage         `json:"scaling"`
		Placements  []json.RawMessage         `json:"placements"`
	}
	js, err := os.ReadFile(filepath.Join(dirs[0], "clasp.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	methods := func(rows []struct{ Method string }) []string {
		var out []string
		for _, r := range rows {
			if !slices.Contains(out, r.Method) {
				out = append(out, r.Method)
			}
		}
		slices.Sort(out)
		return out
	}
	var all []string
	for _, m := range claspexp.Methods(10) {
		all = append(all, m.Name)
	}
	slices.Sort(all)
	if got, want := methods(rep.Transitions), []string{"clasp", "clasp-nodrain", "clasp-paper", "ds2", "faasflow", "zhang24"}; !slices.Equal(got, want) {
		t.Errorf("worker-count methods %v, want %v", got, want)
	}
	if got := methods(rep.ModeRuns); !slices.Equal(got, all) {
		t.Errorf("load-mode methods %v, want every controller %v", got, all)
	}
	if len(rep.Scaling) == 0 || len(rep.Placements) == 0 {
		t.Errorf("%d scaling rows, %d placement rows", len(rep.Scaling), len(rep.Placements))
	}
	// Every file, byte for byte.
	var names [2][]string
	for i, dir := range dirs {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			names[i] = append(names[i], e.Name())
		}
	}
	for _, f := range []string{"clasp.json", "clasp.md", claspexp.FigScaling, claspexp.FigPlacement, claspexp.FigModes} {
		if !slices.Contains(names[0], f) {
			t.Errorf("%s not written (wrote %v)", f, names[0])
		}
	}
	if !slices.Equal(names[0], names[1]) {
		t.Fatalf("the runs wrote %v and %v", names[0], names[1])
	}
	for _, f := range names[0] {
		a, errA := os.ReadFile(filepath.Join(dirs[0], f))
		b, errB := os.ReadFile(filepath.Join(dirs[1], f))
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("two runs wrote different %s", f)
		}
	}
}
