package transport

import (
	"context"
	"io"
	"testing"
)

func TestListenLoopbackOnly(t *testing.T) {
	if ln, err := Listen("0.0.0.0:0", false); err == nil {
		ln.Close()
		t.Fatal("a wildcard address was accepted without public")
	}
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

// TestEcho: bytes written on a dialed stream arrive in order, the answer
// comes back on the same stream, and ending the context ends a blocked
// read.
func TestEcho(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	go Serve(ctx, ln, func(_ context.Context, s *Stream) { //nolint:errcheck
		buf := make([]byte, 5)
		for {
			if _, err := io.ReadFull(s.R, buf); err != nil {
				return
			}
			if s.Write(buf) != nil {
				return
			}
		}
	}, nil)
	c := NewClient()
	defer c.CloseIdle()
	sctx, scancel := context.WithCancel(ctx)
	s, err := c.Dial(sctx, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"hello", "world"} {
		if err := s.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 5)
		if _, err := io.ReadFull(s.R, got); err != nil || string(got) != msg {
			t.Fatalf("echo %q, %v; want %q", got, err, msg)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.R.ReadByte()
		done <- err
	}()
	scancel()
	if err := <-done; err == nil {
		t.Fatal("a read after the context ended returned no error")
	}
}
