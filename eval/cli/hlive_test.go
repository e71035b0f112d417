package cli

import (
	"strings"
	"testing"
)

// TestHLiveUsage: horizontal profiles take the horizontal controllers and
// their own flags; bad ones are usage errors before any process starts.
func TestHLiveUsage(t *testing.T) {
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-profile", "syn", "-controller", "threshold"}, "for a horizontal profile"},
		{[]string{"-profile", "syn", "-controller", "fixed:9", "-max-workers", "4"}, "fixed:N"},
		{[]string{"-profile", "syn", "-controller", "fixed:x"}, "fixed:N"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-trace", "levels:5"}, "level 0"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-trace", "burst", "-peak", "0"}, "-peak"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-task-mc", "0"}, "-task-mc"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-worker-budget", "-1"}, "-worker-budget"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-worker-budget", "100", "-worker-budget-mode", "kernel"}, "-worker-budget-mode"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-worker-budget-mode", "process"}, "-worker-budget-mode process needs"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-worker-budget", "500", "-planner", "127.0.0.1:1"}, "-worker-budget"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-slo-ms", "0"}, "-slo-ms"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-workers", "9", "-max-workers", "4"}, "above -max-workers"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-max-workers", "40"}, "-max-workers"},
		{[]string{"-profile", "syn", "-controllers", "clasp,clasp"}, "twice"},
		{[]string{"-profile", "syn"}, "one of -controller and -controllers"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-seeds", "0"}, "-seeds"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-seeds", "101"}, "-seeds"},
		{[]string{"-profile", "syn", "-controller", "clasp", "-seeds", "2", "-seed", "18446744073709551615"}, "overflows"},
	} {
		code, _, stderr := call(t, append([]string{"live", "-out", out, "-traces", "testdata"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	code, _, stderr := call(t, "live", "-out", out, "-profile", "pred", "-controller", "threshold", "-seeds", "2")
	if code != 2 || !strings.Contains(stderr, "-seeds is for horizontal profiles") {
		t.Errorf("-seeds on pred: exit %d, %q", code, stderr)
	}
	code, _, stderr = call(t, "simgap", "-out", out, "-profile", "wc", "-controller", "clasp")
	if code != 2 || !strings.Contains(stderr, "horizontal") {
		t.Errorf("simgap on wc: exit %d, %q", code, stderr)
	}
}
