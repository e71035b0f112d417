package cli

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"streamscale/internal/command"
	"streamscale/serve/runtime/planner"
)

// TestServiceCommand runs `serve planner -serve -provider local`: a
// replay started through the control API runs on worker processes of
// this binary (started with the replay's -report and -alloc) and
// completes; SIGTERM (ctx) ends the service with exit 0. -serve without a
// token and -provider local without -serve are usage errors.
func TestServiceCommand(t *testing.T) {
	for _, args := range [][]string{
		{"planner", "-serve", "-provider", "local"},
		{"planner", "-provider", "local"},
	} {
		code, _, errOut := run(t, context.Background(), args, func(string) string { return "" })
		if code != 2 || !strings.Contains(errOut, "-serve") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	t.Setenv(reexecEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"planner", "-serve", "-provider", "local", "-app", "wc", "-addr", "127.0.0.1:0", "-control-addr", "127.0.0.1:0", "-token", "0123456789abcdef"},
			command.IO{Stdout: &out, Stderr: &errb, Getenv: os.Getenv})
	}()
	var addr string
	for addr == "" {
		if ctx.Err() != nil {
			t.Fatalf("no listening line: %s", errb.String())
		}
		for _, line := range strings.Split(errb.String(), "\n") {
			if _, rest, ok := strings.Cut(line, "control API on "); ok {
				addr, _, _ = strings.Cut(rest, ",")
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	cl, err := planner.NewControlClient(addr, "0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Start(ctx, planner.StartRequest{App: "wc", Mode: planner.ModeVertical, Rates: []float64{500}, RateMult: 1, Seed: 1,
		Intervals: 4, TimeScaleMS: 250, Alloc: []int{800, 800}, DrainMS: 30_000}); err != nil { // the drain ends when every input completed
		t.Fatal(err)
	}
	var st planner.Status
	for st.State == "" || st.State == "running" {
		if ctx.Err() != nil {
			t.Fatalf("replay did not end: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
		if st, err = cl.Status(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st.State != "done" || st.Result == nil || st.Result.Inputs != 500 || st.Result.Completed != 500 {
		t.Fatalf("status %+v, result %+v", st, st.Result)
	}
	ivs, err := cl.Intervals(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ivs.Intervals) != 4 || len(ivs.Intervals[3].Tasks) != 2 || ivs.Intervals[3].Tasks[0].Millicores != 800 {
		t.Fatalf("intervals %+v", ivs.Intervals)
	}
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
}
