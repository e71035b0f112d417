package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"streamscale/internal/command"
)

// startPlanner runs `serve planner` with args in the background and
// returns its address and its exit status (delivered when ctx ends or
// the run does).
func startPlanner(t *testing.T, ctx context.Context, args ...string) (string, <-chan int) {
	t.Helper()
	var out, errb syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, append([]string{"planner", "-addr", "127.0.0.1:0"}, args...), command.IO{Stdout: &out, Stderr: &errb})
	}()
	for {
		for _, line := range strings.Split(errb.String(), "\n") {
			if a, ok := strings.CutPrefix(line, "serve: planner listening on "); ok {
				return a, code
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no listening line: %s", errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestWorkerWrongToken: a worker whose token the planner refuses says so
// — naming the planner and the refusal — on every try, backs off, and
// after -join-tries exits with status 1 and the cause. (It used to exit 0
// at once without a line, and under a supervisor that restarts it, retry
// silently forever.)
func TestWorkerWrongToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pctx, stopPlanner := context.WithCancel(ctx)
	defer stopPlanner()
	addr, _ := startPlanner(t, pctx, "-workers", "1", "-duration", "1s", "-token", "0123456789abcdef")
	begin := time.Now()
	code, _, errOut := run(t, ctx, []string{"worker", "-planner", addr, "-token", "not-the-planners", "-join-tries", "3", "-join-backoff", "20ms"}, nil)
	took := time.Since(begin)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		fmt.Sprintf("join 1 of 3 failed: planner %s refused this worker: wrong token; retrying in 20ms", addr),
		fmt.Sprintf("join 2 of 3 failed: planner %s refused this worker: wrong token; retrying in 40ms", addr),
		fmt.Sprintf("3 joins of planner %s failed, the last: planner %s refused this worker: wrong token", addr, addr),
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if took < 60*time.Millisecond {
		t.Errorf("three tries took %v: no backoff of 20 ms + 40 ms", took)
	}
}

// TestWorkerPlannerStops: the planner is interrupted in the middle of its
// run (its context ends, as on Ctrl-C). Its workers are not told the run is
// over, so each says it lost the planner, tries to join again, and exits
// with status 1 naming the planner. (They used to exit 0 without a line.)
func TestWorkerPlannerStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pctx, stopPlanner := context.WithCancel(ctx)
	defer stopPlanner()
	addr, pcode := startPlanner(t, pctx, "-workers", "1", "-rate", "100", "-duration", "20s", "-token", "0123456789abcdef")
	var errb syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- Main(ctx, []string{"worker", "-planner", addr, "-token", "0123456789abcdef", "-join-tries", "2", "-join-backoff", "10ms"}, command.IO{Stderr: &errb})
	}()
	for !strings.Contains(errb.String(), "joined planner "+addr) {
		select {
		case <-ctx.Done():
			t.Fatalf("the worker did not join: %s", errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	stopPlanner()
	<-pcode
	select {
	case c := <-code:
		out := errb.String()
		if c != 1 || !strings.Contains(out, "lost the planner "+addr) || !strings.Contains(out, "then 2 joins failed") {
			t.Fatalf("exit %d, want 1 with the planner lost and 2 joins failed; stderr:\n%s", c, out)
		}
	case <-ctx.Done():
		t.Fatalf("the worker did not exit: %s", errb.String())
	}
}
