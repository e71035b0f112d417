package cli

import (
	"strings"
	"testing"
)

// TestLiveUsage: bad controllers and flags are usage errors (exit 2, one
// line naming what was wrong) before any process starts.
func TestLiveUsage(t *testing.T) {
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-controller", "nosuch"}, "unknown controller"},
		{[]string{"-controller", "static:-3"}, "static:-3"},
		{[]string{"-controller", "clasp"}, "horizontal"},
		{[]string{"-controller", "ppo-sample"}, "argmax"},
		{[]string{"-controller", "ppo:/nonexistent/policy"}, "ppo"},
		{[]string{}, "one of -controller and -controllers"},
		{[]string{"-controller", "threshold", "-controllers", "static:500"}, "one of -controller"},
		{[]string{"-controllers", "threshold,threshold"}, "twice"},
		{[]string{"-controller", "threshold", "-profile", "wc"}, "profile"},
		{[]string{"-controller", "threshold", "-trace", "nope"}, "trace"},
		{[]string{"-controller", "threshold", "-time-scale", "1ms"}, "-time-scale"},
		{[]string{"-controller", "threshold", "-duration", "100ms"}, "-duration"},
		{[]string{"-controller", "threshold", "-rate-mult", "0"}, "rate multiplier"},
		{[]string{"-controller", "threshold", "-cpu-scale", "-1"}, "-cpu-scale"},
		{[]string{"-controller", "threshold", "-workers", "0"}, "-workers"},
		{[]string{"-controller", "threshold", "-start", "-4"}, "-start"},
		{[]string{"-controller", "threshold", "-bogus"}, "bogus"},
	} {
		code, _, stderr := call(t, append([]string{"live", "-out", out, "-traces", "testdata"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
