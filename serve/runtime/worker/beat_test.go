package worker

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
)

// TestBeatsWhileBusy: a worker keeps beating while its main lock is held
// (as by executors and receivers on a saturated worker): heartbeats do not
// go through w.mu. Beats used to be queued by the send loop, which takes
// the lock, and none arrived until it was released.
func TestBeatsWhileBusy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := runtime.WordCount()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var beats atomic.Int64
	go transport.Serve(ctx, ln, func(ctx context.Context, s *transport.Stream) { //nolint:errcheck
		k, p, _, err := wire.ReadFrame(s.R, nil)
		if err != nil || k != wire.KindHello {
			return
		}
		h, _ := wire.DecodeHello(p)
		welcome := wire.Hello{ID: 0, Epoch: 1, Token: h.Token}
		pl := wire.Placement{Epoch: 1, Members: []wire.Member{{ID: 0, Addr: h.Addr}}, Owners: make([][ops.KeyGroups]uint32, len(app.Operators))}
		if s.Write(pl.Append(welcome.Append(nil))) != nil {
			return
		}
		var buf []byte
		for {
			k, p, b, err := wire.ReadFrame(s.R, buf)
			buf = b
			if err != nil {
				return
			}
			if k == wire.KindHeartbeat {
				if hb, err := wire.DecodeHeartbeat(p); err == nil && hb.From == 0 && hb.Epoch == 1 {
					beats.Add(1)
				}
			}
		}
	}, nil)
	const beat = 20 * time.Millisecond
	w, err := New(Config{ID: wire.NoID, App: app, Planner: ln.Addr().String(), Interval: -1, Heartbeat: beat})
	if err != nil {
		t.Fatal(err)
	}
	go w.Run(ctx, nil) //nolint:errcheck
	select {
	case <-w.ready:
	case <-time.After(10 * time.Second):
		t.Fatal("no placement")
	}
	// The first beat with the placement's epoch.
	for deadline := time.Now().Add(10 * time.Second); beats.Load() == 0; time.Sleep(beat) {
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat")
		}
	}
	const held = 30 * beat
	w.mu.Lock()
	before := beats.Load()
	time.Sleep(held)
	during := beats.Load() - before
	w.mu.Unlock()
	// 30 beats are due; a starved test host may run the beat loop late,
	// but not five times over.
	if during < 6 {
		t.Fatalf("%d beats arrived while the worker's lock was held for %v (one due every %v)", during, held, beat)
	}
}
