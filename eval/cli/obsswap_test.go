package cli

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"streamscale/env"
	"streamscale/eval/runner"
	"streamscale/eval/simgap"
)

// swapFixture writes observations.parquet for controller ctrl of a PRED
// policy: two worlds on two placements, 8 intervals each, random
// features (the simulated world drawn from another range, so the policy
// chooses differently in the two), and returns its path.
func swapFixture(t *testing.T, ctrl string, drop bool) string {
	t.Helper()
	sc, err := runner.Config(runner.Spec{Profile: "pred", Workload: constantRates{2000, 5}, PlacementSeed: 101})
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, k := range sc.App.Tasks {
		tasks = append(tasks, k.Name)
	}
	names := env.FeatureNames(tasks, len(sc.Servers))
	if drop {
		names = names[:len(names)-1]
	}
	r := rand.New(rand.NewPCG(1, 2))
	var runs []simgap.ObsRun
	for _, pl := range []uint64{101, 102} {
		for _, w := range []string{"live", "sim"} {
			run := simgap.ObsRun{World: w, Controller: ctrl, Placement: pl}
			for range 8 {
				row := make([]float64, len(names))
				for i := range row {
					row[i] = r.Float64()
					if w == "sim" {
						row[i] = 2 * row[i]
					}
				}
				run.Rows = append(run.Rows, row)
			}
			runs = append(runs, run)
		}
	}
	path := filepath.Join(t.TempDir(), simgap.FileObservations)
	if err := writeObservations(path, names, runs); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestObsSwap: swapping every feature turns one world's choices into the
// other's exactly, swapping none leaves them, and the worlds' own choices
// differ on the fixture; the report names every task and group.
func TestObsSwap(t *testing.T) {
	const ctrl = "ppo:../../policies/calibrated/pred"
	path := swapFixture(t, ctrl, false)
	code, stdout, stderr := call(t, "obsswap", "-obs", path, "-controller", ctrl, "-skip", "2", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep simgap.SwapReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Intervals != 12 || len(rep.Tasks) != 6 || len(rep.Rows) != 2*(len(simgap.SwapGroups)+1) {
		t.Fatalf("intervals %d, tasks %v, %d rows", rep.Intervals, rep.Tasks, len(rep.Rows))
	}
	row := func(world, swap string) simgap.SwapRow {
		i := slices.IndexFunc(rep.Rows, func(r simgap.SwapRow) bool { return r.World == world && r.Swap == swap })
		if i < 0 {
			t.Fatalf("no row %s/%s", world, swap)
		}
		return rep.Rows[i]
	}
	same := func(a, b simgap.SwapRow) bool { return slices.Equal(a.Mean, b.Mean) && slices.Equal(a.Hold, b.Hold) }
	if !same(row("live", "all"), row("sim", "none")) || !same(row("sim", "all"), row("live", "none")) {
		t.Errorf("swapping every feature: live %+v against sim %+v", row("live", "all"), row("sim", "none"))
	}
	if same(row("live", "none"), row("sim", "none")) {
		t.Errorf("the fixture's worlds give the same choices %+v: the test cannot tell a swap from none", row("live", "none"))
	}
	code, md, stderr := call(t, "obsswap", "-obs", path, "-controller", ctrl)
	if code != 0 || !strings.Contains(md, "| live | ratios |") || !strings.Contains(md, "| SenMLParse |") {
		t.Errorf("markdown: exit %d, %s\n%s", code, stderr, md)
	}
}

// TestObsSwapErrors: missing flags, a controller the file does not hold,
// and a file whose features do not match the policy are refused, naming
// what is wrong.
func TestObsSwapErrors(t *testing.T) {
	const ctrl = "ppo:../../policies/calibrated/pred"
	good, short := swapFixture(t, ctrl, false), swapFixture(t, ctrl, true)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-controller", ctrl}, 2, "-obs is required"},
		{[]string{"-obs", good}, 2, "-controller is required"},
		{[]string{"-obs", good, "-controller", ctrl, "-skip", "-1"}, 2, "-skip -1"},
		{[]string{"-obs", good, "-controller", "threshold"}, 2, `"threshold" names no policy directory`},
		{[]string{"-obs", good, "-controller", "ppo:../../policies/calibrated/etl"}, 2, "no observations of controller"},
		{[]string{"-obs", short, "-controller", ctrl}, 1, "features, the policy"},
		{[]string{"-obs", filepath.Join(t.TempDir(), "none.parquet"), "-controller", ctrl}, 1, "none.parquet"},
		{[]string{"-obs", good, "-controller", ctrl, "-policy", t.TempDir()}, 1, "policy"},
	} {
		code, _, stderr := call(t, append([]string{"obsswap"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}
