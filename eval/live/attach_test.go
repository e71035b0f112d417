package live

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner"
	"streamscale/serve/runtime/provider/local"
)

// serveService serves a planner service for app on loopback whose workers
// are processes of this test binary, and returns its control address.
func serveService(t *testing.T, appName string) string {
	t.Helper()
	app, err := ops.AppByName(appName)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	prov := &local.Provider{Bin: bin, Args: []string{"live-worker"}, Env: []string{TokenEnv + "=tok"}}
	if testing.Verbose() {
		prov.Output = os.Stderr
	}
	s, err := planner.NewService(planner.ServiceConfig{
		Base:        planner.Config{App: app, Token: "tok", Workers: 1, Provider: prov, JoinTimeout: 60 * time.Second},
		ControlAddr: "127.0.0.1:0",
		Spawn: func(addr string, report time.Duration, alloc []int) {
			prov.Planner = addr
			prov.Extra = []string{"-app", app.Name, "-report", report.String()}
			if len(alloc) > 0 {
				var parts []string
				for _, mc := range alloc {
					parts = append(parts, strconv.Itoa(mc))
				}
				prov.Extra = append(prov.Extra, "-alloc", strings.Join(parts, ","))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- s.Serve(ctx, func(a string) { addrc <- a }) }()
	addr := <-addrc
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		prov.Close()
	})
	return addr
}

// TestAttach runs the same short vertical run in process and attached to
// a planner service on loopback: both complete with results of the same
// shape (intervals, tasks, allocations, inputs offered); a run whose
// profile is not the service's application is refused before anything
// starts, with an error naming both.
func TestAttach(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the live runtime")
	}
	addr := serveService(t, "pred")
	inproc := liveConfig(t, "pred", 4000, 1000, 8, 0.01)
	want, wantInfo, err := Run(context.Background(), inproc)
	if err != nil {
		t.Fatal(err)
	}
	att := liveConfig(t, "pred", 4000, 1000, 8, 0.01)
	att.Planner, att.PlannerToken = addr, "tok"
	got, gotInfo, err := Run(context.Background(), att)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Intervals) != len(want.Intervals) || got.Key != want.Key || !slices.Equal(got.Tasks, want.Tasks) || got.SLOMS != want.SLOMS {
		t.Fatalf("attached run %+v / %d intervals, in-process %+v / %d", got.Key, len(got.Intervals), want.Key, len(want.Intervals))
	}
	for i := range got.Intervals {
		g, w := got.Intervals[i], want.Intervals[i]
		if !slices.Equal(g.Applied, w.Applied) || g.TotalCPU != w.TotalCPU || len(g.Queue) != len(w.Queue) {
			t.Fatalf("interval %d: applied %v / %v, total %v / %v", i, g.Applied, w.Applied, g.TotalCPU, w.TotalCPU)
		}
	}
	if gotInfo.Inputs != wantInfo.Inputs || gotInfo.Inputs == 0 || gotInfo.Workers != wantInfo.Workers {
		t.Fatalf("attached %d inputs on %d workers, in-process %d on %d", gotInfo.Inputs, gotInfo.Workers, wantInfo.Inputs, wantInfo.Workers)
	}
	if got.Summary.MeanThroughput <= 0 || gotInfo.Completed == 0 {
		t.Fatalf("attached run completed nothing: %+v", gotInfo)
	}

	wcAddr := serveService(t, "wc")
	bad := liveConfig(t, "pred", 4000, 1000, 8, 0.01)
	bad.Planner, bad.PlannerToken = wcAddr, "tok"
	_, _, err = Run(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "runs app wc") || !strings.Contains(err.Error(), "profile is pred") {
		t.Fatalf("mismatched profile: %v", err)
	}
	cl, _ := planner.NewControlClient(wcAddr, "tok")
	if in, err := cl.Info(context.Background()); err != nil || in.State != "idle" {
		t.Fatalf("after the refusal the service is %q (%v), want idle", in.State, err)
	}
}
