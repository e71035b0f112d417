package worker

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
)

// fakePlanner welcomes one worker as ID 0 and places every key group on
// it, with a second member (ID 1, the test) that owns nothing.
func fakePlanner(t *testing.T, ctx context.Context, nOps int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go transport.Serve(ctx, ln, func(ctx context.Context, s *transport.Stream) { //nolint:errcheck
		k, p, _, err := wire.ReadFrame(s.R, nil)
		if err != nil || k != wire.KindHello {
			return
		}
		h, _ := wire.DecodeHello(p)
		welcome := wire.Hello{ID: 0, Epoch: 1, Token: h.Token}
		pl := wire.Placement{Epoch: 1, Members: []wire.Member{{ID: 0, Addr: h.Addr}, {ID: 1, Addr: "127.0.0.1:1"}}, Owners: make([][ops.KeyGroups]uint32, nOps)}
		if s.Write(pl.Append(welcome.Append(nil))) != nil {
			return
		}
		<-ctx.Done()
	}, nil)
	return ln.Addr().String()
}

// TestBadPeerFrames: frames that are truncated, of an unknown epoch, for a
// key group the plan does not move, for a missing operator, or from a
// worker that is not a member or lacks the token are refused and change
// no state; a good frame on the same stream afterwards is executed.
func TestBadPeerFrames(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := runtime.WordCount()
	w, err := New(Config{ID: wire.NoID, App: app, Planner: fakePlanner(t, ctx, len(app.Operators)), Token: "tok", JoinWait: 50 * time.Millisecond, Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	go w.Run(ctx, func(a string) { addrc <- a }) //nolint:errcheck
	addr := <-addrc
	select {
	case <-w.ready:
	case <-time.After(10 * time.Second):
		t.Fatal("no placement")
	}
	client := transport.NewClient()
	defer client.CloseIdle()
	dial := func(h wire.Hello) *transport.Stream {
		s, err := client.Dial(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(h.Append(nil)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	waitRefused := func(n uint64, what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for w.Stats().Refused < n {
			if time.Now().After(deadline) {
				t.Fatalf("%s: refused %d frames, want %d", what, w.Stats().Refused, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	good := wire.Batch{From: 1, Epoch: 1, Records: []wire.Record{{Op: 1, Key: 42, Input: 1}}}

	// A non-member, and a member without the token.
	s := dial(wire.Hello{ID: 7, Token: "tok"})
	s.Write(good.Append(nil)) //nolint:errcheck
	waitRefused(1, "non-member")
	s = dial(wire.Hello{ID: 1, Token: "bad"})
	s.Write(good.Append(nil)) //nolint:errcheck
	waitRefused(2, "wrong token")

	// A member with the token sends bad frames on one stream.
	s = dial(wire.Hello{ID: 1, Token: "tok"})
	bad := [][]byte{
		(&wire.Batch{From: 1, Epoch: 9, Records: good.Records}).Append(nil),                                    // unknown epoch
		(&wire.Batch{From: 1, Epoch: 1, Records: []wire.Record{{Op: 1, Key: 1}, {Op: 5, Key: 2}}}).Append(nil), // operator 5 of 2
		(&wire.State{Epoch: 1, From: 1, Op: 1, KG: 3, Keys: []uint64{3}, Values: [][]byte{{1}}}).Append(nil),   // group not moving
		(&wire.Batch{From: 0, Epoch: 1, Records: good.Records}).Append(nil),                                    // forged sender
		(&wire.Mark{Epoch: 40, From: 1}).Append(nil, wire.KindMark),                                            // unknown epoch
		(&wire.Hello{ID: 1}).Append(nil),                                                                       // unexpected kind
	}
	for i, f := range bad {
		if err := s.Write(f); err != nil {
			t.Fatal(err)
		}
		waitRefused(uint64(3+i), "bad frame")
	}
	if st := w.Stats(); st.Executed != 0 {
		t.Fatalf("refused frames executed %d records", st.Executed)
	}
	if n := len(w.StateOf(1)); n != 0 {
		t.Fatalf("refused frames left %d state keys", n)
	}
	// The good batch on the same stream is executed.
	if err := s.Write(good.Append(nil)); err != nil {
		t.Fatal(err)
	}
	waitExecuted(t, w, 1)
	if v := w.StateOf(1)[42]; len(v) != 8 || binary.LittleEndian.Uint64(v) != 1 {
		t.Fatalf("state of key 42 after the good batch: %v", v)
	}
	// A truncated frame ends the stream and changes nothing.
	before := w.Stats()
	f := good.Append(nil)
	s.Write(f[:len(f)-3]) //nolint:errcheck
	s.CloseWrite()        //nolint:errcheck
	waitRefused(before.Refused+1, "truncated frame")
	if st := w.Stats(); st.Executed != before.Executed {
		t.Fatalf("a truncated frame executed %d records", st.Executed-before.Executed)
	}
}
