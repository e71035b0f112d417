package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"streamscale/internal/command"
	"streamscale/serve/runtime/planner"
)

// reexecEnv makes the test binary act as the serve command, so that
// `serve local` can start its workers as real processes of this binary.
const reexecEnv = "STREAMSCALE_SERVE_REEXEC"

func TestMain(m *testing.M) {
	if os.Getenv(reexecEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, os.Args[1:], command.Process())
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestLocalCommand runs `serve local` end to end: a planner and real
// worker processes over loopback sockets, scaled 2 → 3 → 1 under load.
func TestLocalCommand(t *testing.T) {
	t.Setenv(reexecEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pq := filepath.Join(t.TempDir(), "rows.parquet")
	code, out, errOut := run(t, ctx, []string{"local", "-app", "wc", "-workers", "2", "-rate", "2000", "-duration", "3s", "-scale-at", "1s:3,2s:1", "-json", "-parquet", pq}, os.Getenv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Inputs, Completed, Lost, Duplicated uint64
		P95MS                               float64 `json:"p95_ms"`
		PlannerMS                           float64 `json:"migration_planner_ms"`
		PauseMS                             float64 `json:"migration_worker_pause_ms_max"`
		Started                             int     `json:"workers_started"`
		Workers                             int     `json:"workers_ended"`
		Migrations                          []struct{ Complete bool }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("%s", strings.Join(strings.Fields(out), " "))
	if res.Inputs != 6000 || res.Completed != res.Inputs || res.Lost != 0 || res.Duplicated != 0 {
		t.Fatalf("inputs %d completed %d lost %d duplicated %d", res.Inputs, res.Completed, res.Lost, res.Duplicated)
	}
	if len(res.Migrations) != 2 || !res.Migrations[0].Complete || !res.Migrations[1].Complete || res.Workers != 1 || res.Started != 2 {
		t.Fatalf("migrations %+v, workers at the end %d", res.Migrations, res.Workers)
	}
	if !(res.P95MS > 0 && res.PlannerMS > 0 && res.PauseMS >= 0) {
		t.Fatalf("p95 %v ms, planner %v ms, pause %v ms", res.P95MS, res.PlannerMS, res.PauseMS)
	}
	rows, err := parquet.ReadFile[planner.Row](pq)
	if err != nil {
		t.Fatal(err)
	}
	offered := int64(0)
	for _, r := range rows {
		offered += r.Offered
	}
	if len(rows) < 3 || offered != int64(res.Inputs) || rows[0].T != 1 {
		t.Fatalf("%d Parquet rows offering %d inputs (first at t=%v), want ≥ 3 rows offering %d", len(rows), offered, rows[0].T, res.Inputs)
	}
}

// TestLocalKillCheckpoint runs `serve local` with checkpoints (in both
// modes) and a worker process killed with SIGKILL at t = 1 s and restarted
// 1 s later: every input completes, the failover restores a checkpoint,
// and the JSON carries the checkpoint figures.
func TestLocalKillCheckpoint(t *testing.T) {
	t.Setenv(reexecEnv, "1")
	for _, mode := range []string{"barrier", "pause"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			code, out, errOut := run(t, ctx, []string{"local", "-app", "wc", "-workers", "3", "-rate", "1000", "-duration", "3s", "-checkpoint-interval", "300ms", "-checkpoint-mode", mode, "-kill-at", "1:1", "-miss", "10", "-json"}, os.Getenv)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var res struct {
				Inputs, Completed, Duplicated uint64
				Failures, Checkpoints         int
				Mode                          string  `json:"checkpoint_mode"`
				Restored                      int     `json:"restored_groups"`
				Replayed                      int     `json:"replayed"`
				PauseMax                      float64 `json:"checkpoint_ms_max"`
				AlignMax                      float64 `json:"checkpoint_align_ms_max"`
				Duration                      float64 `json:"checkpoint_duration_ms_mean"`
				Bytes                         uint64  `json:"checkpoint_bytes_max"`
				Restores                      []struct{ Checkpoint uint64 }
				Log                           []struct {
					Mode     string
					Complete bool
					Bytes    uint64
				} `json:"checkpoint_log"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			t.Logf("%+v", res)
			if res.Inputs != 3000 || res.Completed != res.Inputs || res.Duplicated != 0 || res.Failures != 1 || len(res.Restores) != 1 {
				t.Fatalf("inputs %d completed %d duplicated %d failures %d restores %d: %s", res.Inputs, res.Completed, res.Duplicated, res.Failures, len(res.Restores), errOut)
			}
			if res.Checkpoints < 2 || res.Restored == 0 || res.Replayed == 0 || res.Bytes == 0 || !(res.Duration > 0) || res.Mode != mode || len(res.Log) < res.Checkpoints || res.Log[0].Mode != mode {
				t.Fatalf("checkpoints %d (log %d), restored groups %d, replayed %d, %d bytes, duration %v ms, mode %q", res.Checkpoints, len(res.Log), res.Restored, res.Replayed, res.Bytes, res.Duration, res.Mode)
			}
			if (mode == "pause") != (res.PauseMax > 0) || (mode == "barrier") != (res.AlignMax > 0) {
				t.Fatalf("%s: ingress pause ≤ %v ms, alignment ≤ %v ms", mode, res.PauseMax, res.AlignMax)
			}
			if !strings.Contains(errOut, "killed worker 1") || !strings.Contains(errOut, "restarted worker 1") {
				t.Fatalf("no kill or restart line: %s", errOut)
			}
		})
	}
}

// TestLocalAllDeadFails: `serve local` whose only worker is SIGKILLed
// and not restarted, without checkpoints (so without a restart
// strategy), fails visibly: exit 1, status failed with the reason, the
// inputs that could not complete dropped. It used to exit 0 with them
// counted as lost among the backlog (issue #34, item 1).
func TestLocalAllDeadFails(t *testing.T) {
	t.Setenv(reexecEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, out, errOut := run(t, ctx, []string{"local", "-app", "wc", "-workers", "1", "-rate", "500", "-duration", "3s", "-checkpoint-interval", "0", "-kill-at", "1:0", "-restart-after", "0", "-json"}, os.Getenv)
	var res struct {
		Status, Reason             string
		Inputs, Completed, Dropped uint64
		Unfinished, Lost           uint64
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("exit %d, %v: %s %s", code, err, out, errOut)
	}
	if code != 1 || res.Status != "failed" || !strings.Contains(res.Reason, "no live worker left") || !strings.Contains(errOut, "the job failed") ||
		res.Lost != res.Dropped || res.Inputs != res.Completed+res.Dropped+res.Unfinished || res.Inputs >= 1500 {
		t.Fatalf("exit %d, %+v: %s", code, res, errOut)
	}
}

// TestLocalStateLossExitsNonZero: without checkpoints a worker's death
// loses its key groups' state; every input still completes (at least
// once), but the run exits 1 naming the loss, since the state is not a
// fault-free run's.
func TestLocalStateLossExitsNonZero(t *testing.T) {
	t.Setenv(reexecEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, out, errOut := run(t, ctx, []string{"local", "-app", "wc", "-workers", "2", "-rate", "500", "-duration", "2s", "-checkpoint-interval", "0", "-kill-at", "1:1", "-restart-after", "0", "-json"}, os.Getenv)
	var res struct {
		Status    string
		Guarantee string
		Lost      int `json:"state_lost_groups"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("exit %d, %v: %s %s", code, err, out, errOut)
	}
	if code != 1 || res.Lost == 0 || res.Guarantee != "at-least-once" || !strings.Contains(errOut, "lost their state") {
		t.Fatalf("exit %d, %+v: %s", code, res, errOut)
	}
}

func TestRuntimeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"worker"},
		{"worker", "-planner", "x:1", "-slots", "0"},
		{"worker", "-planner", "x:1", "-app", "nope"},
		{"worker", "-planner", "x:1", "-join-tries", "0"},
		{"worker", "-planner", "x:1", "-join-backoff", "0s"},
		{"local", "-workers", "0"},
		{"local", "-scale-at", "5s"},
		{"local", "-scale-at", "5s:0"},
		{"local", "-controller", "nope"},
		{"planner", "-rate", "-3"},
		{"planner", "-trace", "/no/such/file.csv"},
		{"local", "-checkpoint-interval", "-1s"},
		{"local", "-checkpoint-timeout", "0s"},
		{"local", "-checkpoint-mode", "async"},
		{"local", "-kill-at", "3"},
		{"local", "-kill-at", "0:1"},
		{"local", "-kill-at", "2.5:1"},
		{"local", "-kill-at", "2:-1"},
		{"local", "-restart-after", "-1s"},
		{"local", "-kill-at", "2:1,x"},
		{"local", "-restart-strategy", "always"},
		{"local", "-restart-attempts", "0"},
		{"planner", "-restart-delay", "-1s"},
		{"planner", "-restart-strategy", "failure-rate", "-restart-interval", "0s"},
		{"planner", "-kill-at", "2:1"},
	} {
		code, _, errOut := run(t, context.Background(), args, nil)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, errOut)
		}
	}
	for _, sub := range []string{"planner", "worker", "local"} {
		code, out, _ := run(t, context.Background(), []string{sub, "-h"}, nil)
		if code != 0 || !strings.Contains(out, "usage: serve "+sub) {
			t.Errorf("%s -h: exit %d, %q", sub, code, out)
		}
	}
}

// TestPlannerAndWorkers runs `serve planner` and two `serve worker`
// commands that join it by address, as on separate machines.
func TestPlannerAndWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"planner", "-addr", "127.0.0.1:0", "-workers", "2", "-rate", "500", "-duration", "2s", "-token", "0123456789abcdef", "-json"}, command.IO{Stdout: &out, Stderr: &errb})
	}()
	var addr string
	for addr == "" {
		if ctx.Err() != nil {
			t.Fatalf("no listening line: %s", errb.String())
		}
		for _, line := range strings.Split(errb.String(), "\n") {
			if a, ok := strings.CutPrefix(line, "serve: planner listening on "); ok {
				addr = a
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	wcode := make(chan int, 2)
	for range 2 {
		go func() {
			wcode <- Main(wctx, []string{"worker", "-planner", addr}, command.IO{Getenv: func(k string) string {
				if k == RuntimeTokenEnv {
					return "0123456789abcdef"
				}
				return ""
			}})
		}()
	}
	if c := <-code; c != 0 {
		t.Fatalf("planner exit %d: %s", c, errb.String())
	}
	var res struct {
		Inputs, Completed int
		Workers           int `json:"workers_ended"`
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatal(err)
	}
	if res.Inputs != 1000 || res.Completed != 1000 || res.Workers != 2 {
		t.Fatalf("result %+v", res)
	}
	for range 2 { // the workers end with the planner's stream
		if c := <-wcode; c != 0 {
			t.Fatalf("worker exit %d", c)
		}
	}
}
