package local

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"streamscale/serve/runtime/transport"
)

// childEnv makes the test binary a worker stand-in: it listens on its
// -addr through transport.Listen, as the runtime's workers do, and writes
// its address to every connection.
const childEnv = "STREAMSCALE_LOCAL_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

func child() int {
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	addr := fs.String("addr", "", "")
	fs.String("planner", "", "")
	fs.Int("id", -1, "")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	ln, err := transport.Listen(*addr, false)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return 1
		}
		io.WriteString(c, ln.Addr().String()) //nolint:errcheck
		c.Close()
	}
}

// The port Scale returns is bound from the moment it is returned, not only
// once the worker binds it (another process could take a port that is
// free meanwhile), and the worker serves on it.
func TestPortHeldUntilWorkerBinds(t *testing.T) {
	out, err := os.CreateTemp(t.TempDir(), "workers")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p := &Provider{Bin: os.Args[0], Args: []string{}, Planner: "127.0.0.1:1", Env: []string{childEnv + "=1"}, Stop: time.Second, Output: out}
	defer p.Close()
	addrs, err := p.Scale(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ln, err := net.Listen("tcp", a); err == nil {
			ln.Close()
			t.Fatalf("worker port %s free after Scale: another process could take it before the worker binds", a)
		}
	}
	for _, a := range addrs {
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Second)) //nolint:errcheck
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(got) != a {
			log, _ := os.ReadFile(out.Name())
			t.Fatalf("worker at %s answered %q, %v; want its address (worker output: %s)", a, got, err, log)
		}
	}
}
