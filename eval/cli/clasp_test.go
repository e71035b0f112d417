package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"clasp", "-out", t.TempDir(), "-frob"}, "flag provided but not defined"},
		{[]string{"clasp", "-out", t.TempDir(), "extra"}, "unexpected argument"},
	} {
		code, _, errs := call(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want 2 and %q)", tc.args, code, errs, tc.want)
		}
	}
}

// TestClaspDeterminism runs a small reproduction twice: identical bytes.
func TestClaspDeterminism(t *testing.T) {
	var outs [][]byte
	for range 2 {
		dir := t.TempDir()
		code, stdout, errs := call(t, "clasp", "-out", dir, "-apps", "syn", "-iters", "4", "-seeds", "1", "-json")
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
		if _, err := os.Stat(filepath.Join(dir, "clasp.md")); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, js)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("two runs wrote different clasp.json")
	}
}
