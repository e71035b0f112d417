package cli

import (
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
