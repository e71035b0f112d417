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

// listeningPlanner welcomes one worker as ID 0 at epoch 1 with every key
// group on it, counts its heartbeats of epoch 1 and delivers its metrics
// reports.
func listeningPlanner(t *testing.T, ctx context.Context, app ops.App) (addr string, beats *atomic.Int64, reports <-chan wire.Metrics) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	beats = new(atomic.Int64)
	rep := make(chan wire.Metrics, 1024)
	go transport.Serve(ctx, ln, func(ctx context.Context, s *transport.Stream) { //nolint:errcheck
		if !greet(s, len(app.Operators)) {
			return
		}
		var buf []byte
		for {
			k, p, b, err := wire.ReadFrame(s.R, buf)
			buf = b
			if err != nil {
				return
			}
			switch k {
			case wire.KindHeartbeat:
				if hb, err := wire.DecodeHeartbeat(p); err == nil && hb.From == 0 && hb.Epoch == 1 {
					beats.Add(1)
				}
			case wire.KindMetrics:
				if m, err := wire.DecodeMetrics(p); err == nil {
					select {
					case rep <- m:
					default:
					}
				}
			}
		}
	}, nil)
	return ln.Addr().String(), beats, rep
}

// placedWorker starts a worker of cfg and waits until its first placement
// is installed.
func placedWorker(t *testing.T, ctx context.Context, cfg Config) *Worker {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go w.Run(ctx, nil) //nolint:errcheck
	select {
	case <-w.ready:
	case <-time.After(10 * time.Second):
		t.Fatal("no placement")
	}
	return w
}

// startListened starts a worker of app against a listeningPlanner and
// waits for its placement.
func startListened(t *testing.T, ctx context.Context, app ops.App, cfg Config) (*Worker, *atomic.Int64, <-chan wire.Metrics) {
	t.Helper()
	addr, beats, reports := listeningPlanner(t, ctx, app)
	cfg.ID, cfg.App, cfg.Planner = wire.NoID, app, addr
	return placedWorker(t, ctx, cfg), beats, reports
}

// TestBeatsWhileBusy: a worker keeps beating while its main lock is held
// (as by executors and receivers on a saturated worker): heartbeats do not
// go through w.mu. Beats used to be queued by the send loop, which takes
// the lock, and none arrived until it was released.
func TestBeatsWhileBusy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const beat = 20 * time.Millisecond
	w, beats, _ := startListened(t, ctx, runtime.WordCount(), Config{Interval: -1, Heartbeat: beat})
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

// TestReportIntervalCoversCounts: a report's interval is the time between
// the two readings of its counters. With the lock held across a tick, the
// report read when it is released covers the whole hold; it used to claim
// one tick's interval (the ticks' difference) for the counts of the whole
// span, and the next report the rest.
func TestReportIntervalCoversCounts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const every = 100 * time.Millisecond
	w, _, reports := startListened(t, ctx, runtime.WordCount(), Config{Interval: -1, Report: every})
	next := func() wire.Metrics {
		t.Helper()
		select {
		case m := <-reports:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no report")
		}
		return wire.Metrics{}
	}
	next()
	// Hold the lock from just after a report arrived: the next one is
	// read when the hold ends.
	for len(reports) > 0 {
		<-reports
	}
	next()
	const held = 5 * every
	w.mu.Lock()
	time.Sleep(held)
	w.mu.Unlock()
	if m := next(); m.IntervalS < 0.8*held.Seconds() {
		t.Fatalf("the report read after a %v hold claims %.3f s", held, m.IntervalS)
	}
}
