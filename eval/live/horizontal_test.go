package live

import (
	"context"
	"math"
	"os"
	"testing"
	"time"

	"streamscale/clasp"
	"streamscale/serve/runtime/ops"
	"streamscale/traces"
)

// TestRunHorizontal runs word count live for 1.5 s at 800 inputs/s with
// CLASP's placement loop: every input is offered once and accounted for,
// the intervals carry the workers in use and the quotas in force, and the
// summary's per-step series have one entry per interval.
func TestRunHorizontal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the live runtime")
	}
	app, err := ops.AppByName("wc")
	if err != nil {
		t.Fatal(err)
	}
	c := HConfig{App: app, Trace: &traces.Trace{Name: "levels", Counts: []float64{800}, Scale: 1}, Step: 250 * time.Millisecond, Intervals: 6,
		Seed: 1, MaxWorkers: 2, TaskMillicores: 500, Name: "clasp", WorkerArgs: []string{"live-worker"},
		NewPlacer: func() (clasp.Planner, error) {
			cfg := clasp.DefaultConfig()
			cfg.MaxWorkers = 2
			return clasp.New(cfg)
		}}
	if testing.Verbose() {
		c.Log = os.Stderr
	}
	res, info, err := RunHorizontal(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if info.Inputs != 1200 || info.Completed+info.Dropped+info.Unfinished != info.Inputs || info.Completed == 0 || info.Lost != info.Dropped {
		t.Fatalf("inputs %d, completed %d, dropped %d, unfinished %d, lost %d; want 1200 offered and accounted for", info.Inputs, info.Completed, info.Dropped, info.Unfinished, info.Lost)
	}
	n := len(res.Intervals)
	if n < 3 || n > 6 || len(info.WorkersPerStep) != n || len(info.P95PerStep) != n || res.Key.Controller != "clasp" || len(res.Tasks) != 2 {
		t.Fatalf("%d intervals, series %d/%d, key %+v, tasks %v", n, len(info.WorkersPerStep), len(info.P95PerStep), res.Key, res.Tasks)
	}
	for i, iv := range res.Intervals {
		// The quotas in force: 500 mc for each of the 2 tasks on every
		// reporting worker (0 before the first report).
		if iv.ActiveServers < 1 || iv.ActiveServers > 2 || math.Mod(iv.TotalCPU, 1000) != 0 || iv.TotalCPU > 2000 {
			t.Errorf("interval %d: %d workers, total quota %v", i, iv.ActiveServers, iv.TotalCPU)
		}
	}
	if info.PeakWorkers < 1 || info.MeanWorkers <= 0 {
		t.Fatalf("workers mean %v peak %d", info.MeanWorkers, info.PeakWorkers)
	}
}
