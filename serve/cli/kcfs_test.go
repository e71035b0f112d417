package cli

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"streamscale/internal/command"
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
		{[]string{"worker", "-planner", "127.0.0.1:1", "-process-budget", "-1"}, "-process-budget -1"},
		{[]string{"worker", "-planner", "127.0.0.1:1", "-process-budget", "2000000"}, "-process-budget 2000000"},
		{[]string{"worker", "-planner", "127.0.0.1:1", "-app", "syn", "-process-budget", "100", "-cpu-enforce", "kernel"}, "-process-budget needs -cpu-enforce inprocess"},
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

// TestWorkerKernelMode runs a planner and one worker with -cpu-enforce
// kernel on the stateless syn app: every input completes with each task in
// its own task-host process under a cgroup quota, and no cgroup is left.
func TestWorkerKernelMode(t *testing.T) {
	c, err := kcfs.Detect()
	if err != nil {
		t.Skipf("kernel CPU enforcement not testable here: %v", err)
	}
	t.Setenv(reexecEnv, "1") // the task hosts are this binary as serve taskhost
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var pout, perr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"planner", "-addr", "127.0.0.1:0", "-app", "syn", "-workers", "1", "-rate", "100", "-duration", "2s", "-drain", "30s", "-json"},
			command.IO{Stdout: &pout, Stderr: &perr})
	}()
	var addr string
	for addr == "" {
		if ctx.Err() != nil {
			t.Fatalf("planner did not listen: %s", perr.String())
		}
		if _, a, ok := strings.Cut(perr.String(), "planner listening on "); ok {
			addr, _, _ = strings.Cut(a, "\n")
			if !strings.Contains(a, "\n") {
				addr = ""
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	wctx, wcancel := context.WithCancel(ctx)
	var werr syncBuffer
	wdone := make(chan int, 1)
	go func() {
		wdone <- Main(wctx, []string{"worker", "-planner", addr, "-app", "syn", "-cpu-enforce", "kernel", "-millicores", "400", "-v"},
			command.IO{Stderr: &werr, Getenv: os.Getenv})
	}()
	// The worker starts its 10 hosts one after another: collect the
	// cgroups seen until the planner ends.
	seen := map[string]bool{}
	var code int
	for polling := true; polling; {
		for _, n := range ourCgroups(t, c.Parent) {
			seen[n] = true
		}
		select {
		case code = <-done:
			polling = false
		case <-time.After(20 * time.Millisecond):
		}
	}
	wcancel()
	wcode := <-wdone
	hosts := len(seen)
	if code != 0 {
		t.Fatalf("planner exit %d: %s\nworker: %s", code, perr.String(), werr.String())
	}
	if wcode != 0 {
		t.Errorf("worker exit %d: %s", wcode, werr.String())
	}
	var res struct{ Inputs, Completed, Lost uint64 }
	if err := json.Unmarshal([]byte(pout.String()), &res); err != nil {
		t.Fatalf("%v: %s", err, pout.String())
	}
	if res.Inputs == 0 || res.Completed != res.Inputs || res.Lost != 0 {
		t.Errorf("inputs %d completed %d lost %d", res.Inputs, res.Completed, res.Lost)
	}
	if hosts != 10 {
		t.Errorf("%d task-host cgroups while running, want 10 (one per syn operator)", hosts)
	}
	if left := ourCgroups(t, c.Parent); len(left) != 0 {
		t.Errorf("cgroups of this process left after the worker stopped: %v", left)
	}
}

// ourCgroups lists the kcfs cgroups of this process under parent.
func ourCgroups(t *testing.T, parent string) []string {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), kcfs.Prefix+strconv.Itoa(os.Getpid())+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}
