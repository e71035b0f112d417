package worker

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
)

// syncBuf is a bytes.Buffer safe for concurrent writes (a worker's log).
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stubPlanner serves streams on loopback: serve gets the n-th stream (from
// 0) with its hello already read. stop ends the planner abruptly, as a
// process that dies: its listener closes and its connections drop.
func stubPlanner(t *testing.T, serve func(n int, h wire.Hello, s *transport.Stream)) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		transport.Serve(ctx, ln, func(ctx context.Context, s *transport.Stream) { //nolint:errcheck
			k, p, _, err := wire.ReadFrame(s.R, nil)
			if err != nil || k != wire.KindHello {
				return
			}
			h, _ := wire.DecodeHello(p)
			mu.Lock()
			i := n
			n++
			mu.Unlock()
			serve(i, h, s)
		}, nil)
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// welcome writes the welcome as member id at epoch 1 and a placement
// giving it every key group of nOps operators.
func welcome(s *transport.Stream, h wire.Hello, id uint32, nOps int) error {
	w := wire.Hello{ID: id, Epoch: 1, Token: h.Token}
	pl := wire.Placement{Epoch: 1, Members: []wire.Member{{ID: id, Addr: h.Addr}}, Owners: make([][ops.KeyGroups]uint32, nOps)}
	for o := range pl.Owners {
		for g := range pl.Owners[o] {
			pl.Owners[o][g] = id
		}
	}
	return s.Write(pl.Append(w.Append(nil)))
}

// serveWorker runs w on loopback and returns Serve's result on a channel.
func serveWorker(t *testing.T, ctx context.Context, w *Worker) <-chan error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() { res <- w.Serve(ctx, ln, nil) }()
	return res
}

// recv receives from ch or fails the test after 10 s.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
	var zero T
	return zero
}

func waitServe(t *testing.T, res <-chan error) error {
	t.Helper()
	select {
	case err := <-res:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not stop")
		return nil
	}
}

// TestPlannerDies: the planner welcomes the worker, places it and dies
// (its process gone: the stream drops and nothing listens any more). The
// worker logs that it lost the planner and why, tries to join again
// JoinTries times, and Serve fails naming the planner and both causes. It
// used to return nil without a line.
func TestPlannerDies(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := runtime.WordCount()
	placed := make(chan struct{})
	var once sync.Once
	addr, stop := stubPlanner(t, func(n int, h wire.Hello, s *transport.Stream) {
		if welcome(s, h, 0, len(app.Operators)) != nil {
			return
		}
		once.Do(func() { close(placed) })
		var b [1]byte
		s.R.Read(b[:]) //nolint:errcheck // until the stream drops
	})
	var log syncBuf
	w, err := New(Config{ID: wire.NoID, App: app, Planner: addr, Interval: -1, Log: &log, JoinTries: 2, JoinBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res := serveWorker(t, ctx, w)
	recv(t, "placement", (<-chan struct{})(placed))
	stop()
	err = waitServe(t, res)
	if err == nil || !strings.Contains(err.Error(), "lost the planner "+addr) || !strings.Contains(err.Error(), "2 joins failed") {
		t.Fatalf("Serve: %v; want the planner lost and 2 joins failed", err)
	}
	if out := log.String(); !strings.Contains(out, "lost the planner "+addr) || !strings.Contains(out, "join 1 of 2 failed") {
		t.Fatalf("log:\n%s", out)
	}
}

// TestByeEnds: the planner's goodbye at the end of a run, or after a
// scale-in, ends Serve with nil at once.
func TestByeEnds(t *testing.T) {
	for _, r := range []wire.ByeReason{wire.ByeDone, wire.ByeLeft} {
		t.Run(r.String(), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			app := runtime.WordCount()
			addr, _ := stubPlanner(t, func(n int, h wire.Hello, s *transport.Stream) {
				if welcome(s, h, 0, len(app.Operators)) != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
				s.Write((&wire.Bye{Reason: r, Text: "bye"}).Append(nil)) //nolint:errcheck
			})
			w, err := New(Config{ID: wire.NoID, App: app, Planner: addr, Interval: -1, JoinTries: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := waitServe(t, serveWorker(t, ctx, w)); err != nil {
				t.Fatalf("Serve: %v, want nil", err)
			}
		})
	}
}

// TestRejoinAsNewMember: a worker the planner declares dead (Bye dead)
// drops everything it held — keyed state, queued requests, completion
// weights, its placement — and joins again asking for no ID, so the
// planner can make it a new member; it then serves under its new ID.
func TestRejoinAsNewMember(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := runtime.WordCount()
	hellos := make(chan wire.Hello, 4)
	dismiss := make(chan struct{})
	addr, _ := stubPlanner(t, func(n int, h wire.Hello, s *transport.Stream) {
		hellos <- h
		id := uint32(4)
		if n > 0 {
			id = 7
		}
		if welcome(s, h, id, len(app.Operators)) != nil {
			return
		}
		if n == 0 {
			<-dismiss
			s.Write((&wire.Bye{Reason: wire.ByeDead, Text: "worker 4 declared dead"}).Append(nil)) //nolint:errcheck
			return
		}
		<-ctx.Done()
	})
	var log syncBuf
	w, err := New(Config{ID: 4, App: app, Planner: addr, Interval: -1, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	res := serveWorker(t, ctx, w)
	if h := recv(t, "hello", (<-chan wire.Hello)(hellos)); h.ID != 4 {
		t.Fatalf("first hello asks for %d, want 4", h.ID)
	}
	waitFor(t, "the first placement", func() bool { return w.Epoch() == 1 })
	if err := w.Inject([]wire.Record{{Op: 0, Key: 1, Input: 1, Payload: []byte("a b c")}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the counts", func() bool { return len(w.StateOf(1)) == 3 })
	close(dismiss)
	if h := recv(t, "second hello (a rejoin)", (<-chan wire.Hello)(hellos)); h.ID != wire.NoID {
		t.Fatalf("the rejoin asks for ID %d, want none (a fresh one)", h.ID)
	}
	waitFor(t, "the new membership", func() bool { return w.ID() == 7 && w.Epoch() == 1 })
	if st := w.Stats(); st.Rejoins != 1 || len(w.StateOf(0)) != 0 || len(w.StateOf(1)) != 0 {
		t.Fatalf("after the rejoin: %d rejoins, state %v %v", st.Rejoins, w.StateOf(0), w.StateOf(1))
	}
	if !strings.Contains(log.String(), "rejoining as a new member") {
		t.Fatalf("log:\n%s", log.String())
	}
	cancel()
	if err := waitServe(t, res); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}
