package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"streamscale/internal/command"
	"streamscale/serve/envserver"
)

// TestEnvUnixSocketAndStreams: serve env -addr unix:PATH prints
// "unix:PATH" and serves frames there; a stream left open does not keep
// the command from stopping (CloseStreams), and the socket file is gone
// after it. -addr unix: with no path is a usage error.
func TestEnvUnixSocketAndStreams(t *testing.T) {
	if code, _, stderr := run(t, context.Background(), []string{"env", "-addr", "unix:"}, nil); code != 2 || !strings.Contains(stderr, "names no path") {
		t.Errorf("-addr unix: exit %d, stderr %q", code, stderr)
	}
	sock := filepath.Join(t.TempDir(), "env.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"env", "-addr", "unix:" + sock, "-traces", t.TempDir()}, command.IO{Stdout: &out, Stderr: &errb})
	}()
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		addr = strings.TrimSpace(out.String())
	}
	if addr != "unix:"+sock {
		t.Fatalf("printed %q, want unix:%s; stderr %q", addr, sock, errb.String())
	}
	c, err := dialFrames(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if _, err := c.call(envserver.OpCreate, 0, []byte(`{"profile":"etl"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.call(envserver.OpReset, 1, []byte(`{"seed":2}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.call(envserver.OpStep, 1, envserver.AppendInt64s(nil, make([]int64, 9))); err != nil {
		t.Fatal(err)
	}
	cancel() // the stream stays open on the client's side
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve env did not stop with a stream open")
	}
	if _, err := c.call(envserver.OpStep, 1, envserver.AppendInt64s(nil, make([]int64, 9))); err == nil {
		t.Error("the stream still answers after serve env stopped")
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket file after exit: %v", err)
	}
}
