package layering

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// imports returns, for every package of the module, its direct imports
// and its transitive dependencies (go list).
func imports(t *testing.T) (direct, deps map[string][]string) {
	t.Helper()
	direct, deps = map[string][]string{}, map[string][]string{}
	for _, q := range []struct {
		format string
		m      map[string][]string
		flag   []string
	}{
		{`{{.ImportPath}} {{join .Imports " "}}`, direct, nil},
		{`{{.ImportPath}} {{join .Deps " "}}`, deps, nil},
	} {
		cmd := exec.Command("go", append([]string{"list", "-f", q.format}, append(q.flag, "streamscale/...")...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) > 0 {
				q.m[f[0]] = f[1:]
			}
		}
	}
	if len(direct) < 20 {
		t.Fatalf("go list found %d packages", len(direct))
	}
	return direct, deps
}

func hasPrefix(xs []string, prefix string) []string {
	var out []string
	for _, x := range xs {
		if x == prefix || strings.HasPrefix(x, prefix+"/") {
			out = append(out, x)
		}
	}
	return out
}

// TestHeavyDependencies: gorgonia is imported only by the training package
// ppo (and its internals); gin only by serve/api; no package of serve or
// eval links gorgonia.
func TestHeavyDependencies(t *testing.T) {
	direct, deps := imports(t)
	for pkg, imps := range direct {
		if g := hasPrefix(imps, "gorgonia.org"); len(g) > 0 && pkg != "streamscale/ppo" {
			t.Errorf("%s imports %v; gorgonia belongs to streamscale/ppo only", pkg, g)
		}
		if g := hasPrefix(imps, "github.com/gin-gonic/gin"); len(g) > 0 && pkg != "streamscale/serve/api" {
			t.Errorf("%s imports %v; gin belongs to streamscale/serve/api only", pkg, g)
		}
	}
	for pkg, d := range deps {
		if !strings.HasPrefix(pkg, "streamscale/serve") && !strings.HasPrefix(pkg, "streamscale/eval") {
			continue
		}
		if g := hasPrefix(d, "gorgonia.org/gorgonia"); len(g) > 0 {
			t.Errorf("%s links gorgonia (through %v)", pkg, whoImports(direct, deps, pkg, "gorgonia.org/gorgonia"))
		}
	}
}

// whoImports names the project packages on pkg's dependency list that
// import target directly.
func whoImports(direct, deps map[string][]string, pkg, target string) []string {
	var out []string
	for _, d := range append([]string{pkg}, deps[pkg]...) {
		if slices.Contains(direct[d], target) {
			out = append(out, d)
		}
	}
	return out
}

// TestLayers: arrows point toward env. The leaf packages import no project
// package beyond the allowed ones, and no library imports a command.
func TestLayers(t *testing.T) {
	direct, _ := imports(t)
	allowed := map[string][]string{
		"streamscale/rng":              nil,
		"streamscale/internal/dag":     nil,
		"streamscale/internal/command": nil,
		"streamscale/bo":               nil,
		"streamscale/traces":           {"streamscale/rng"},
		"streamscale/env":              {"streamscale/rng", "streamscale/internal/dag"},
		"streamscale/clasp":            {"streamscale/internal/dag"},
		"streamscale/agents":           {"streamscale/env"},
	}
	for pkg, ok := range allowed {
		imps, found := direct[pkg]
		if !found {
			t.Errorf("package %s not found", pkg)
			continue
		}
		for _, imp := range hasPrefix(imps, "streamscale") {
			if !slices.Contains(ok, imp) {
				t.Errorf("%s imports %s (allowed: %v)", pkg, imp, ok)
			}
		}
	}
	commands := []string{"streamscale/train", "streamscale/eval", "streamscale/serve"}
	for pkg, imps := range direct {
		lib := true
		for _, c := range commands {
			if pkg == c || strings.HasPrefix(pkg, c+"/") {
				lib = false
			}
		}
		if !lib {
			continue
		}
		for _, c := range commands {
			if g := hasPrefix(imps, c); len(g) > 0 {
				t.Errorf("library %s imports command package %v", pkg, g)
			}
		}
	}
	// The serving and training commands stand on the libraries, not on the
	// evaluation command: serve's CLASP planners come from package clasp.
	for pkg, imps := range direct {
		for _, c := range []string{"streamscale/serve", "streamscale/train"} {
			if pkg != c && !strings.HasPrefix(pkg, c+"/") {
				continue
			}
			if g := hasPrefix(imps, "streamscale/eval"); len(g) > 0 {
				t.Errorf("%s imports %v; the evaluation command is not a library", pkg, g)
			}
		}
	}
	// Only the command layer imports eval's controller registry.
	for pkg, imps := range direct {
		if slices.Contains(imps, "streamscale/eval/controllers") && pkg != "streamscale/eval/cli" {
			t.Errorf("%s imports the controller registry; only eval/cli may", pkg)
		}
	}
}

// TestCommandLayer: a command's cli package (flags, files, printing) is
// imported by that command's main package only, so that what a library
// or another command needs of it lives in a library. Every command has
// one: a check against no cli package cannot pass.
func TestCommandLayer(t *testing.T) {
	direct, _ := imports(t)
	var clis []string
	for pkg := range direct {
		if strings.HasSuffix(pkg, "/cli") {
			clis = append(clis, pkg)
		}
	}
	slices.Sort(clis)
	for _, want := range []string{"streamscale/eval/cli", "streamscale/serve/cli", "streamscale/train/cli"} {
		if !slices.Contains(clis, want) {
			t.Errorf("no package %s (found %v)", want, clis)
		}
	}
	for pkg, imps := range direct {
		for _, imp := range imps {
			if !strings.HasPrefix(imp, "streamscale/") || !strings.HasSuffix(imp, "/cli") {
				continue
			}
			if main := strings.TrimSuffix(imp, "/cli"); pkg != main {
				t.Errorf("%s imports %s; only %s (the command's main) may", pkg, imp, main)
			}
		}
	}
}
