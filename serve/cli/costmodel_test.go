package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCostModelFlag: serve's -cost-model needs a controller and a file
// with a usable model; each refusal is one usage line naming the problem.
func TestCostModelFlag(t *testing.T) {
	dir := t.TempDir()
	none := filepath.Join(dir, "none.json")
	if err := os.WriteFile(none, []byte(`{"profile": "pred"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"local", "-cost-model", none}, "without a -controller"},
		{[]string{"local", "-controller", "clasp", "-cost-model", filepath.Join(dir, "nope.json")}, "nope.json"},
		{[]string{"planner", "-controller", "clasp", "-cost-model", none}, "no cost model"},
	} {
		code, _, errOut := run(t, context.Background(), c.args, nil)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line naming %q", c.args, code, errOut, c.want)
		}
	}
}
