package claspexp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"streamscale/clasp"
)

// reducedOptions is a reproduction small enough for the test suite that
// still runs every stage of Reproduce and every controller: one app of
// the scaling, placement, worker-count and load-mode experiments (SYN),
// one stateful app to migrate (WC), 3 bisection steps of 10 s trials,
// one transition pair, one load-mode seed and a short state fill.
func reducedOptions() Options {
	o := DefaultOptions()
	o.Apps = []clasp.App{clasp.SYN()}
	o.WorkerApps, o.ModeApps, o.RoutingApps = o.Apps, o.Apps, o.Apps
	o.MigrateApps = []clasp.App{clasp.WC()}
	o.Probe.Iters, o.Probe.Steps = 3, 10
	o.Transition.Fractions = []float64{0.5, 1}
	o.CoefSteps = 10
	o.ModeSeeds = []uint64{1}
	o.MigrateFillS = 10
	return o
}

// reproduce runs Reproduce and writes what `eval clasp` writes (JSON,
// Markdown, figures) into a new directory; it returns the files by name.
func reproduce(t *testing.T, o Options) (Report, map[string][]byte) {
	t.Helper()
	start := time.Now()
	var stages []string
	rep, err := Reproduce(context.Background(), o, func(s string) {
		t.Logf("%6.2fs %s", time.Since(start).Seconds(), s)
		stages = append(stages, s)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stages, Stages) { // eval clasp's progress counts them
		t.Errorf("stages %v, want %v", stages, Stages)
	}
	dir := t.TempDir()
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clasp.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clasp.md"), []byte(rep.Markdown()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Figures(dir, &rep); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return rep, files
}

func methodSet[T any](rows []T, method func(T) string) []string {
	var out []string
	for _, r := range rows {
		if m := method(r); !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// TestReproduceDeterminism runs the reduced reproduction twice: every
// experiment filled in, every worker-count method and every load-mode
// controller present, every file written, and identical bytes in each.
// Another load-mode seed (the only randomness of the reproduction) must
// change the load-mode runs.
func TestReproduceDeterminism(t *testing.T) {
	o := reducedOptions()
	rep, a := reproduce(t, o)
	_, b := reproduce(t, o)

	if got, want := methodSet(rep.Transitions, func(r TransitionRow) string { return r.Method }), []string{"clasp", "clasp-nodrain", "clasp-paper", "ds2", "faasflow", "zhang24"}; !slices.Equal(got, want) {
		t.Errorf("worker-count methods %v, want %v", got, want)
	}
	var all []string
	for _, m := range Methods(10) {
		all = append(all, m.Name)
	}
	slices.Sort(all)
	if got := methodSet(rep.ModeRuns, func(r ModeRow) string { return r.Method }); !slices.Equal(got, all) {
		t.Errorf("load-mode methods %v, want every controller %v", got, all)
	}
	if len(rep.Scaling) != 1 || len(rep.Overprovision) != 1 || len(rep.OverprovisionPS) != 1 ||
		rep.Coefficients.Samples == 0 || len(rep.Placements) != 1 || len(rep.PlacementsLocalFirst) != 1 || len(rep.MigrationRuns) == 0 {
		t.Errorf("an experiment is empty: %d scaling, %d overprovision, %d processor-sharing, %d coefficient samples, %d placements, %d local-first, %d migrations",
			len(rep.Scaling), len(rep.Overprovision), len(rep.OverprovisionPS), rep.Coefficients.Samples, len(rep.Placements), len(rep.PlacementsLocalFirst), len(rep.MigrationRuns))
	}
	if _, ok := rep.Migration["wc"]; !ok {
		t.Errorf("no migration figures for wc: %v", rep.Migration)
	}
	for _, f := range []string{"clasp.json", "clasp.md", FigScaling, FigPlacement, FigModes} {
		if _, ok := a[f]; !ok {
			t.Errorf("%s not written", f)
		}
	}
	if len(a) != len(b) {
		t.Fatalf("the runs wrote %d and %d files", len(a), len(b))
	}
	for f, x := range a {
		if !bytes.Equal(x, b[f]) {
			t.Errorf("two runs wrote different %s", f)
		}
	}

	// Another load-mode seed changes the load-mode runs (CLASP's, at the
	// 10-worker rate of the scaling experiment).
	top := rep.Scaling[0].MaxRate[len(rep.Scaling[0].MaxRate)-1]
	var runs [2][]byte
	for i, sd := range []uint64{1, 2} {
		rows, err := Modes(o.ModeApps[0], top, 10, pick(Methods(10), "clasp"), []uint64{sd}, o.MaxInFlight)
		if err != nil || len(rows) == 0 {
			t.Fatalf("seed %d: %d rows, %v", sd, len(rows), err)
		}
		for j := range rows {
			rows[j].Seed = 0
		}
		runs[i], _ = json.Marshal(rows)
	}
	if bytes.Equal(runs[0], runs[1]) {
		t.Error("load-mode seeds 1 and 2 gave the same runs")
	}
}

// TestReproduceCancelled: a cancelled context stops Reproduce before its
// first stage with the context's error.
func TestReproduceCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stages []string
	_, err := Reproduce(ctx, reducedOptions(), func(s string) { stages = append(stages, s) })
	if !errors.Is(err, context.Canceled) || len(stages) != 0 {
		t.Fatalf("err %v after stages %v, want context.Canceled before any", err, stages)
	}
}
