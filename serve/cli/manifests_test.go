package cli

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// manifestArgs returns the container args lists of a Kubernetes manifest:
// the "- item" lines under each "args:" key, in order.
func manifestArgs(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	var cur []string
	indent := -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		ind := len(line) - len(trimmed)
		switch {
		case strings.HasPrefix(trimmed, "args:"):
			cur, indent = []string{}, ind
		case cur != nil && strings.HasPrefix(trimmed, "- ") && ind >= indent:
			cur = append(cur, strings.Trim(strings.TrimPrefix(trimmed, "- "), `"'`))
		case cur != nil && trimmed != "" && !strings.HasPrefix(trimmed, "#"):
			out, cur = append(out, cur), nil
		}
	}
	if cur != nil {
		out = append(out, cur)
	}
	return out
}

// TestManifestArgsParse: every container of deploy/k8s runs a serve
// subcommand whose flags this binary accepts (parsed up to -h, so nothing
// starts), with the downward-API variables filled in.
func TestManifestArgsParse(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "deploy", "k8s", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests found: %v", err)
	}
	fill := strings.NewReplacer("$(POD_NAME)", "streamscale-worker-0", "$(POD_NAMESPACE)", "default")
	seen := map[string]bool{}
	for _, p := range paths {
		for _, args := range manifestArgs(t, p) {
			if len(args) == 0 {
				t.Errorf("%s: empty args", p)
				continue
			}
			seen[args[0]] = true
			for i := range args {
				args[i] = fill.Replace(args[i])
			}
			code, _, errOut := run(t, context.Background(), append(args, "-h"), func(string) string { return "" })
			if code != 0 {
				t.Errorf("%s: serve %v: exit %d: %s", filepath.Base(p), args, code, errOut)
			}
		}
	}
	if !seen["planner"] || !seen["worker"] {
		t.Errorf("manifests run %v, want planner and worker", seen)
	}
}
