package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"streamscale/serve/runtime/ckptstore"
)

// serveProc starts this test binary as `serve ARGS…` in a process group of
// its own (its workers join it), and kills the whole group when the test
// ends, so no process it started outlives the test.
func serveProc(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *syncBuffer) {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), reexecEnv+"=1")
	var out bytes.Buffer
	var errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGKILL) //nolint:errcheck // the group may be gone
		cmd.Wait()                           //nolint:errcheck // killed or exited
	})
	return cmd, &out, &errb
}

// groupGone waits up to d for every process of group pgid to exit.
func groupGone(pgid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
	}
	return false
}

// TestPlannerRestart is the planner's failover test between real
// processes: `serve local` (a planner process and its worker processes)
// writes checkpoints to a directory and is killed with SIGKILL mid-run —
// its workers die with it; a new `serve local -restore DIR` resumes the
// job from the latest checkpoint on fresh workers and runs it to the end.
// Its final keyed state (every word's count, every operator) equals that
// of a fault-free run of the same job, beside it.
func TestPlannerRestart(t *testing.T) {
	job := []string{"local", "-app", "wc", "-workers", "2", "-rate", "2000", "-duration", "2s", "-seed", "7", "-checkpoint-interval", "150ms", "-json"}
	crashDir, cleanDir := t.TempDir(), t.TempDir()
	clean, cleanOut, cleanErr := serveProc(t, append(job, "-checkpoint-dir", cleanDir)...)
	crash, _, crashErr := serveProc(t, append(job, "-checkpoint-dir", crashDir)...)

	// Kill the planner once two checkpoints are on disk: mid-run.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ids, _ := ckptstore.List(crashDir)
		if len(ids) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two checkpoints within 30 s: %s", crashErr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := crash.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	crash.Wait() //nolint:errcheck // killed
	if !groupGone(crash.Process.Pid, 5*time.Second) {
		t.Fatal("worker processes outlived their planner's SIGKILL")
	}

	restored, out, errOut := serveProc(t, append(job, "-restore", crashDir)...)
	if err := restored.Wait(); err != nil {
		t.Fatalf("restored run: %v: %s", err, errOut.String())
	}
	if err := clean.Wait(); err != nil {
		t.Fatalf("fault-free run: %v: %s", err, cleanErr.String())
	}
	var res, ref struct {
		Inputs, Completed, Duplicated int
		Saved                         int `json:"checkpoints_saved"`
		Resumed                       *struct {
			Checkpoint uint64
			Cut        int
		}
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := json.Unmarshal(cleanOut.Bytes(), &ref); err != nil {
		t.Fatalf("%v: %s", err, cleanOut)
	}
	t.Logf("restored %+v, resumed %+v; fault-free %+v", res, res.Resumed, ref)
	if res.Resumed == nil || res.Resumed.Cut <= 0 || res.Resumed.Cut >= res.Inputs || res.Saved == 0 {
		t.Fatalf("the restored run resumed %+v and saved %d checkpoints, want a cut inside its %d inputs", res.Resumed, res.Saved, res.Inputs)
	}
	if res.Inputs != ref.Inputs || res.Completed != res.Inputs || ref.Completed != ref.Inputs || res.Duplicated != 0 {
		t.Fatalf("restored: %d inputs, %d complete, %d duplicated; fault-free %d, %d", res.Inputs, res.Completed, res.Duplicated, ref.Inputs, ref.Completed)
	}
	got, gotPath, err := ckptstore.Latest(crashDir)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := ckptstore.Latest(cleanDir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cut != uint64(ref.Inputs) || want.Cut != got.Cut || got.ID <= res.Resumed.Checkpoint {
		t.Fatalf("final checkpoints: restored %s cut %d, fault-free cut %d; want both %d", filepath.Base(gotPath), got.Cut, want.Cut, ref.Inputs)
	}
	keys := 0
	for g, w := range want.State {
		keys += len(w)
		if !maps.EqualFunc(got.State[g], w, bytes.Equal) {
			t.Fatalf("operator %d key group %d: the restored job's state differs from the fault-free run's (%d keys, %d keys)", g>>8, g&0xff, len(got.State[g]), len(w))
		}
	}
	if len(got.State) != len(want.State) || keys == 0 {
		t.Fatalf("restored state has %d key groups, fault-free %d (%d keys)", len(got.State), len(want.State), keys)
	}
}

// TestRestoreFlags: the checkpoint-directory flags are checked before
// anything starts, and a restore from a directory whose latest file is
// corrupt, that holds none, or from another job's file, fails with an
// error naming the file and what is wrong.
func TestRestoreFlags(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"local", "-checkpoint-interval", "0", "-checkpoint-dir", dir}, 2, "-checkpoint-dir needs -checkpoint-interval > 0"},
		{[]string{"planner", "-checkpoint-interval", "1s", "-checkpoint-dir", dir, "-checkpoint-keep", "0"}, 2, "-checkpoint-keep 0, want ≥ 1"},
		{[]string{"local", "-restore", filepath.Join(dir, "missing")}, 1, "-restore: stat"},
		{[]string{"local", "-restore", dir}, 1, "no checkpoint"},
	} {
		code, _, errOut := run(t, ctx, c.args, nil)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errOut, c.code, c.msg)
		}
	}
	s, err := ckptstore.Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	other := &ckptstore.Checkpoint{Job: "app=etl seed=1", ID: 1, Ops: 2}
	if _, err := s.Save(other); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, ctx, []string{"local", "-restore", dir}, nil)
	if code == 0 || !strings.Contains(errOut, filepath.Join(dir, ckptstore.Name(1))) || !strings.Contains(errOut, `is of the job "app=etl seed=1"`) {
		t.Errorf("another job's checkpoint: exit %d, %q", code, errOut)
	}
	bad := *other
	bad.ID = 2
	path, err := s.Save(&bad)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)-2], 0o644) //nolint:errcheck // checked by the restore
	code, _, errOut = run(t, ctx, []string{"local", "-restore", dir}, nil)
	if code != 1 || !strings.Contains(errOut, path) || !strings.Contains(errOut, "truncated") || !strings.Contains(errOut, ckptstore.Name(1)) {
		t.Errorf("a truncated latest checkpoint: exit %d, %q", code, errOut)
	}
}
