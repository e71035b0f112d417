package cli

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"streamscale/serve/runtime/kcfs"
)

// TestCFSCheckCommand runs serve cfscheck end to end with the real
// taskhost subcommand (this test binary re-executed as serve), briefly.
func TestCFSCheckCommand(t *testing.T) {
	t.Setenv(reexecEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, derr := kcfs.Detect()
	modes := "inprocess,kernel"
	if derr != nil {
		modes = "inprocess"
	}
	code, out, errOut := run(t, ctx, []string{"cfscheck", "-op", "wc/split", "-millicores", "300", "-loads", "0,0.5", "-modes", modes,
		"-duration", "700ms", "-warmup", "200ms", "-json"}, os.Getenv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep kcfs.CheckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := 2 * len(strings.Split(modes, ","))
	if rep.App != "wc" || rep.Op != "split" || len(rep.Points) != want {
		t.Fatalf("report for %s/%s with %d points, want wc/split with %d: %s", rep.App, rep.Op, len(rep.Points), want, out)
	}
	for _, p := range rep.Points {
		if p.Events == 0 || p.Cores <= 0 || p.P50 <= 0 || p.P99 < p.P50 {
			t.Errorf("point %+v", p)
		}
	}
	if derr != nil {
		t.Skipf("in-process mode run; kernel mode not testable here: %v", derr)
	}
}

func TestCFSCheckUsage(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"cfscheck", "-millicores", "5"}, "-millicores 5"},
		{[]string{"cfscheck", "-millicores", "a"}, "-millicores"},
		{[]string{"cfscheck", "-loads", "2"}, "-loads"},
		{[]string{"cfscheck", "-modes", "cgroup"}, "-modes"},
		{[]string{"cfscheck", "-app", "nope"}, "-app"},
		{[]string{"cfscheck", "-duration", "0s"}, "-duration"},
		{[]string{"cfscheck", "-host-procs", "0"}, "-host-procs"},
		{[]string{"taskhost", "x"}, "takes no arguments"},
		{[]string{"worker", "-planner", "127.0.0.1:1", "-cpu-enforce", "cgroup"}, "-cpu-enforce"},
	} {
		code, _, errOut := run(t, ctx, c.args, nil)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestWorkerKernelRefusesStateful: word count's count keeps keyed state,
// so -cpu-enforce kernel refuses to start, naming it (or, without a
// writable CPU cgroup, says why there is none).
func TestWorkerKernelRefusesStateful(t *testing.T) {
	code, _, errOut := run(t, context.Background(), []string{"worker", "-planner", "127.0.0.1:1", "-app", "wc", "-cpu-enforce", "kernel"}, nil)
	want := "operator count keeps keyed state"
	if _, err := kcfs.Detect(); err != nil {
		want = "no writable CPU cgroup"
	}
	if code == 0 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, %q; want a failure with %q", code, errOut, want)
	}
}
