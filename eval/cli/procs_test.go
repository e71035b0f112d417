package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"streamscale/internal/command"
	servecli "streamscale/serve/cli"
)

// Helper modes of this test binary (helperMain, called first by
// TestMain), selected by $helperEnv:
//
//	main: run the eval command named by the arguments as eval's main does
//	      (SIGINT and SIGTERM cancel its context); the workers it starts
//	      ("live-worker") run this way too
//	api:  a stand-in serve binary for -serve-bin: it starts a grandchild
//	      ("idle", which ignores nothing and sleeps) and then serves
//	      the policies as `serve api` does, or, for a -policies directory
//	      named *fail*, exits at once and leaves the grandchild behind
const helperEnv = "STREAMSCALE_EVAL_TEST_HELPER"

// markerEnv carries a value unique to one test ending: every process
// started on its behalf inherits it, which is how leftovers are found.
const markerEnv = "STREAMSCALE_EVAL_TEST_MARKER"

func helperMain() {
	if os.Getenv(helperEnv) != "main" || len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case "idle":
		for {
			time.Sleep(time.Hour)
		}
	case "api":
		os.Exit(fakeServe(os.Args[1:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], Options{IO: command.IO{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}})
	stop()
	os.Exit(code)
}

// fakeServe is the "api" helper: serve api with a grandchild.
func fakeServe(args []string) int {
	self, err := os.Executable()
	if err != nil {
		return 1
	}
	idle := exec.Command(self, "idle")
	if err := idle.Start(); err != nil {
		return 1
	}
	for i, a := range args {
		if a == "-policies" && i+1 < len(args) && strings.Contains(args[i+1], "fail") {
			return 1 // crashes, its grandchild still running
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return servecli.Main(ctx, append(args, "-drain-delay", "0s"), command.IO{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
}

// markedProcs lists the live (not zombie) processes carrying marker,
// "pid cmdline" each.
func markedProcs(t *testing.T, marker string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte(markerEnv + "=" + marker + "\x00")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue // gone, or not ours
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
			continue // exited; its parent (or init) reaps it
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	return out
}

// awaitProcs polls until ok(marked processes) holds, or fails the test
// after a generous deadline (the wait is for processes to start or die,
// not a measurement).
func awaitProcs(t *testing.T, marker, what string, ok func([]string) bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ps := markedProcs(t, marker)
		if ok(ps) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: processes %q", what, ps)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNothingOutlivesALiveRun runs eval live (a PPO controller, whose
// policy endpoint is a -serve-bin stand-in with a grandchild, and a
// static one; the workers are processes) as eval's main does, and checks
// the process table after each way the command can end: a normal exit
// (also with the endpoint served in process), an error (the endpoint
// crashes before it is ready, leaving its grandchild), SIGINT and
// SIGTERM mid-run. Every process started for the run is gone after the
// command has exited.
func TestNothingOutlivesALiveRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the live runtime")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	failDir := filepath.Join(t.TempDir(), "failset", "pred")
	if err := os.MkdirAll(failDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"policy.json", "policy.safetensors"} {
		b, err := os.ReadFile(filepath.Join("../../policies/calibrated/pred", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(failDir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"live", "-profile", "pred", "-traces", "testdata", "-time-scale", "100ms", "-warmup", "0", "-policies", "../../policies/calibrated"}
	for _, c := range []struct {
		name   string
		args   []string
		signal os.Signal // sent once a worker runs; nil: none
		ok     func(code int) bool
	}{
		{"normal", []string{"-controllers", "ppo,static:4000", "-duration", "300ms", "-serve-bin", self}, nil, func(c int) bool { return c == 0 }},
		{"normal-in-process", []string{"-controllers", "ppo,static:4000", "-duration", "300ms"}, nil, func(c int) bool { return c == 0 }},
		{"error", []string{"-controllers", "static:4000,ppo:" + failDir, "-duration", "300ms", "-serve-bin", self}, nil, func(c int) bool { return c == 1 }},
		{"sigint", []string{"-controllers", "ppo,static:4000", "-duration", "10m", "-serve-bin", self}, os.Interrupt, func(c int) bool { return c != 0 }},
		{"sigterm", []string{"-controllers", "ppo,static:4000", "-duration", "10m", "-serve-bin", self}, syscall.SIGTERM, func(c int) bool { return c != 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := fmt.Sprintf("%d-%s", os.Getpid(), c.name)
			cmd := exec.Command(self, append(append(append([]string(nil), base...), c.args...), "-out", t.TempDir())...)
			cmd.Env = append(os.Environ(), helperEnv+"=main", markerEnv+"="+marker)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if c.signal != nil {
				awaitProcs(t, marker, "waiting for a worker", func(ps []string) bool {
					n := 0
					for _, p := range ps {
						if strings.Contains(p, " live-worker ") || strings.Contains(p, " idle") {
							n++
						}
					}
					return n >= 2 // the endpoint's grandchild and a worker
				})
				if err := cmd.Process.Signal(c.signal); err != nil {
					t.Fatal(err)
				}
			}
			err := cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if !c.ok(code) {
				t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
			}
			awaitProcs(t, marker, "after the command exited", func(ps []string) bool { return len(ps) == 0 })
		})
	}
}
