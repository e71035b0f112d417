package cli

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"streamscale/eval/claspexp"
	"streamscale/eval/liveclasp"
	"streamscale/internal/command"
)

// TestMain doubles as the live worker process: a horizontal live run
// execs this test binary with the "live-worker" argument.
func TestMain(m *testing.M) {
	helperMain() // procs_test.go: the command, endpoint and idle helper modes
	if len(os.Args) > 1 && os.Args[1] == "live-worker" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], Options{IO: command.IO{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}})
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestHLiveEndToEnd runs two horizontal controllers live on two seeds
// (word count, 3 intervals of 200 ms) through the command: summary.json
// holds the four runs in seed order and the comparison over the two pairs
// (the workers difference is the mean of the per-seed differences, inside
// its interval), report.md the paired table, and the Parquet table and the
// load-mode figure are written. About 4 s.
func TestHLiveEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the live runtime")
	}
	dir := t.TempDir()
	code, _, stderr := call(t, "live", "-profile", "wc", "-controllers", "clasp,fixed:1", "-trace", "levels:300x3", "-time-scale", "200ms",
		"-max-workers", "2", "-task-mc", "500", "-seeds", "2", "-out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, FileSummary))
	if err != nil {
		t.Fatal(err)
	}
	var s liveclasp.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Runs) != 4 || s.Runs[2].Key.Seed != 2 || s.Runs[3].Controller != "fixed:1" || s.Paired == nil || s.Paired.Candidate != "clasp" || len(s.Paired.Comparisons) != 1 {
		t.Fatalf("summary: %d runs, paired %+v", len(s.Runs), s.Paired)
	}
	c := s.Paired.Comparisons[0]
	if c.Baseline != "fixed:1" || c.Pairs != 2 || len(c.Verdicts) != 5 {
		t.Fatalf("comparison %+v", c)
	}
	w := c.Estimates[0]
	want := (s.Runs[0].HInfo.MeanWorkers - s.Runs[1].HInfo.MeanWorkers + s.Runs[2].HInfo.MeanWorkers - s.Runs[3].HInfo.MeanWorkers) / 2
	if math.Abs(float64(w.Mean)-want) > 1e-9 || !(w.CILow <= w.Mean && w.Mean <= w.CIHigh) {
		t.Fatalf("workers difference %+v, want mean %v", w, want)
	}
	md, err := os.ReadFile(filepath.Join(dir, FileReport))
	if err != nil || !strings.Contains(string(md), "| fixed:1 | 2 |") {
		t.Fatalf("report.md: %v\n%s", err, md)
	}
	for _, f := range []string{FileIntervals, claspexp.FigModes} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
