package planner

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"streamscale/serve/runtime/worker"
)

// gate holds up the connections it wraps while it is shut: a network
// partition of those links that heals. Nothing is lost — bytes sent during
// the partition arrive after it, as TCP retransmits them — as long as it
// is shorter than the transport's ping timeout (5 s + 5 s), after which a
// real link would be dropped instead.
type gate struct {
	mu   sync.Mutex
	cond *sync.Cond
	shut bool
}

func newGate() *gate {
	g := &gate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) set(shut bool) {
	g.mu.Lock()
	g.shut = shut
	g.cond.Broadcast()
	g.mu.Unlock()
}

func (g *gate) pass() {
	g.mu.Lock()
	for g.shut {
		g.cond.Wait()
	}
	g.mu.Unlock()
}

// gatedConn is a connection through a gate: what it reads while the gate
// is shut is held until it opens, and writes wait for it.
type gatedConn struct {
	net.Conn
	g *gate
}

func (c gatedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.g.pass()
	return n, err
}

func (c gatedConn) Write(b []byte) (int, error) {
	c.g.pass()
	return c.Conn.Write(b)
}

// gatedListener accepts connections through a gate.
type gatedListener struct {
	net.Listener
	g *gate
}

func (l gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return gatedConn{c, l.g}, nil
}

// gatedProxy forwards loopback connections to addr through g, and returns
// its address.
func gatedProxy(t *testing.T, addr string, g *gate) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				up, err := net.Dial("tcp", addr)
				if err != nil {
					c.Close()
					return
				}
				gc := gatedConn{c, g}
				var wg sync.WaitGroup
				wg.Go(func() { io.Copy(up, gc); up.Close() }) //nolint:errcheck // either side ending ends both
				wg.Go(func() { io.Copy(gc, up); c.Close() })  //nolint:errcheck
				wg.Wait()
			}()
		}
	}()
	return ln.Addr().String()
}

// TestPartitionRejoin: worker 1 of three is cut off by a network partition
// (from the planner both ways, and from its peers' streams to it) under
// load with barrier checkpoints. The planner declares it dead and restores
// the last checkpoint on the other two; when the link heals the worker
// reads the planner's goodbye (dead), drops everything it held, and
// rejoins as a new member under a fresh ID (3), which the planner places
// again. Nothing it held is counted twice: every input completes once,
// none is lost, every key's sequence arrives in order without repeats,
// and the word counts — on the workers and in the final checkpoint — are
// exactly the oracle's. Before, the worker stayed a member of nothing,
// silent, and the run ended on two workers.
func TestPartitionRejoin(t *testing.T) {
	var violations, dupes atomic.Int64
	app := checkedWC(&violations, &dupes)
	cfg := Config{App: app, Seed: 13, Rate: 1500, Duration: 4 * time.Second, Workers: 3, Miss: 10, CheckpointInterval: 300 * time.Millisecond, CheckpointMode: ModeBarrier}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := newGate()
	prov := &inproc{t: t, planner: ln.Addr().String(), app: app, cfg: worker.Config{Interval: 5 * time.Millisecond, Check: time.Millisecond, Slots: 4},
		fault: func(i int, planner string, ln net.Listener) (string, net.Listener) {
			if i != 1 {
				return planner, ln
			}
			return gatedProxy(t, planner, g), gatedListener{ln, g}
		}}
	defer prov.Close()
	cfg.Provider = prov
	if testing.Verbose() {
		cfg.Log = os.Stderr
		prov.cfg.Log = os.Stderr
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var once sync.Once
	p.cfg.Rows = func(r Row) {
		p.mu.Lock()
		id, _, _ := p.core.Checkpoint()
		p.mu.Unlock()
		if r.T >= 1 && id > 0 {
			once.Do(func() {
				g.set(true)
				go func() {
					awaitFailover(ctx, p, 1)
					g.set(false)
				}()
			})
		}
	}
	res, err := p.Serve(ctx, ln, nil)
	g.set(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inputs %d completed %d lost %d dup %d failures %d workers %d; restores %+v; seq gaps %d repeats %d",
		res.Inputs, res.Completed, res.Lost, res.Duplicated, res.Failures, res.WorkersEnded, res.Restores, violations.Load(), dupes.Load())
	rejoined := false
	for _, m := range res.Migrations {
		t.Logf("  %+v", m)
		rejoined = rejoined || m.Reason == "rejoin" && m.Complete && m.To == 3
	}
	if res.Failures != 1 || res.Inputs != 6000 || res.Completed != res.Inputs || res.Lost != 0 || res.Duplicated != 0 || len(res.Restores) != 1 {
		t.Fatalf("failures %d, inputs %d, completed %d, lost %d, duplicated %d, restores %d", res.Failures, res.Inputs, res.Completed, res.Lost, res.Duplicated, len(res.Restores))
	}
	w1 := prov.current()[1]
	if !rejoined || res.WorkersEnded != 3 || w1.ID() != 3 || w1.Stats().Rejoins != 1 {
		t.Fatalf("the partitioned worker did not rejoin as member 3 (rejoin placed %v, workers at the end %d, its ID %d, rejoins %d)", rejoined, res.WorkersEnded, w1.ID(), w1.Stats().Rejoins)
	}
	if v, d := violations.Load(), dupes.Load(); v != 0 || d != 0 {
		t.Fatalf("sequence check: %d gaps or reorderings, %d repeats", v, d)
	}
	got := map[uint64][]byte{}
	for k, n := range wordCounts(prov.current()) {
		got[k] = binary.LittleEndian.AppendUint64(nil, n)
	}
	checkExact(t, app, cfg.Seed, int(res.Inputs), got, nil)
	counts, covered := p.CheckpointState(1)
	if covered != int(res.Inputs) {
		t.Fatalf("the final checkpoint covers %d of %d inputs", covered, res.Inputs)
	}
	checkExact(t, app, cfg.Seed, int(res.Inputs), counts, nil)
}
