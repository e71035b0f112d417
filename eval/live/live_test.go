package live

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"streamscale/agents"
	"streamscale/env"
	"streamscale/serve/runtime/ops"
	"streamscale/traces"
)

// TestMain doubles as the worker process: Run execs this test binary
// with the "live-worker" argument.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "live-worker" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := RunWorker(ctx, os.Args[2:], os.Getenv, os.Stderr)
		stop()
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func liveConfig(t testing.TB, profile string, mc float64, rate float64, intervals int, scale float64) Config {
	t.Helper()
	tr := &traces.Trace{Name: "const", Counts: []float64{rate}, Scale: 1}
	sc, err := env.EdgeConfig(profile, 101, tr)
	if err != nil {
		t.Fatal(err)
	}
	app, err := ops.AppByName(profile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := agents.NewStatic(mc)
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Scenario: sc, App: app, Trace: tr, Step: 250 * time.Millisecond, Intervals: intervals, Seed: 1,
		CPUScale: scale, Controller: st, Name: "static", WorkerArgs: []string{"live-worker"}}
	if testing.Verbose() {
		c.Log = os.Stderr
	}
	return c
}
