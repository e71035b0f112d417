package planner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"streamscale/serve/runtime/planner/core"
	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
)

// conn is one worker stream; the core knows it by serial.
type conn struct {
	serial  uint64
	id      uint32
	bound   bool // the core accepted it as member id
	out     *outbox
	cancel  context.CancelFunc
	metrics wire.Metrics
	fresh   bool // metrics not yet read by the controller
	// bye: the stream is being ended (dismiss); its outbox holds the Bye
	// as its last frame. refusal is why the core refused the hello.
	bye     bool
	refusal error
	ended   chan struct{} // closed when the handler returned
}

// handleWorker serves one worker's stream: it checks the hello and the
// token, then turns every frame into an event of the core.
func (p *Planner) handleWorker(ctx context.Context, s *transport.Stream) {
	k, b, buf, err := wire.ReadFrame(s.R, nil)
	if err == nil && k != wire.KindHello {
		err = fmt.Errorf("first frame %v, want hello", k)
	}
	var h wire.Hello
	if err == nil {
		h, err = wire.DecodeHello(b)
	}
	if err == nil && h.Token != p.cfg.Token {
		err = errors.New("wrong token")
	}
	if err != nil {
		p.refuse(fmt.Errorf("planner: refused a worker: %w", err))
		// The worker is told (and can say so, and give up), not left to
		// guess from a stream that ended.
		bye := wire.Bye{Reason: wire.ByeRefused, Text: err.Error()}
		s.Write(bye.Append(nil)) //nolint:errcheck // the stream ends either way
		return
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.mu.Lock()
	p.nextConn++
	c := &conn{serial: p.nextConn, out: &outbox{kick: make(chan struct{}, 1)}, cancel: cancel, ended: make(chan struct{})}
	defer close(c.ended)
	p.conns[c.serial] = c
	stopped := p.stopped
	p.step(core.Hello{Conn: c.serial, ID: h.ID, Addr: h.Addr})
	bound := c.bound
	if !bound {
		delete(p.conns, c.serial)
	}
	p.mu.Unlock()
	if !bound {
		bye := wire.Bye{Reason: wire.ByeRefused, Text: strings.TrimPrefix(fmt.Sprint(c.refusal), "planner: ")}
		if stopped {
			bye = wire.Bye{Reason: wire.ByeDone, Text: "the run is over"}
		}
		s.Write(bye.Append(nil)) //nolint:errcheck // the stream ends either way
		return
	}
	defer func() {
		p.mu.Lock()
		delete(p.conns, c.serial)
		p.mu.Unlock()
	}()
	// The stream belongs to this handler: once it returns, net/http forbids
	// writes, so the send loop must have ended by then. A send loop that
	// wrote a Bye ends the stream (s.Close ends the reads below).
	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		if p.sendLoop(mctx, c, s) {
			s.Close()
		}
	}()
	defer func() { cancel(); <-sendDone }()
	var entries []wire.DoneEntry
	for {
		k, b, buf, err = wire.ReadFrame(s.R, buf)
		if err != nil {
			if mctx.Err() == nil && !errors.Is(err, io.EOF) {
				p.logf("worker %d: stream: %v", c.id, err)
			}
			p.mu.Lock()
			p.step(core.StreamEnded{Conn: c.serial})
			p.mu.Unlock()
			return
		}
		if entries, err = p.frame(c, k, b, entries); err != nil {
			p.refuse(fmt.Errorf("planner: worker %d: %w", c.id, err))
		}
	}
}

// frame handles one frame of stream c; entries is a buffer for Done
// entries, returned for reuse.
func (p *Planner) frame(c *conn, k wire.Kind, b []byte, entries []wire.DoneEntry) ([]wire.DoneEntry, error) {
	var ev core.Event
	switch k {
	case wire.KindHeartbeat:
		hb, err := wire.DecodeHeartbeat(b)
		if err != nil {
			return entries, err
		}
		ev = core.Beat{Conn: c.serial, From: hb.From}
	case wire.KindMetrics:
		mt, err := wire.DecodeMetrics(b)
		if err != nil {
			return entries, err
		}
		if len(mt.Tasks) != len(p.cfg.App.Operators) || len(mt.Edges) != len(p.cfg.App.Edges) || mt.From != c.id {
			return entries, fmt.Errorf("metrics from %d for %d tasks and %d edges", mt.From, len(mt.Tasks), len(mt.Edges))
		}
		p.mu.Lock()
		c.metrics, c.fresh = mt, true
		p.mu.Unlock()
		return entries, nil
	case wire.KindDone:
		d, err := wire.DecodeDone(b, entries)
		if err != nil {
			return entries, err
		}
		p.mu.Lock()
		p.complete(d.Entries)
		p.step(core.Completed{})
		p.mu.Unlock()
		return d.Entries, nil
	case wire.KindMigrated:
		r, err := wire.DecodeMigrated(b)
		if err != nil {
			return entries, err
		}
		ev = core.Migrated{Conn: c.serial, Report: r}
	case wire.KindSnapshot:
		sn, err := wire.DecodeSnapshot(b)
		if err != nil {
			return entries, err
		}
		ev = core.Snapshot{Conn: c.serial, S: sn}
	case wire.KindSnapshotDone:
		sd, err := wire.DecodeSnapshotDone(b)
		if err != nil {
			return entries, err
		}
		ev = core.SnapshotDone{Conn: c.serial, D: sd}
	default:
		return entries, fmt.Errorf("unexpected %v", k)
	}
	p.mu.Lock()
	p.step(ev)
	p.mu.Unlock()
	return entries, nil
}

func (p *Planner) refuse(err error) {
	p.mu.Lock()
	p.refused++
	p.mu.Unlock()
	p.logf("%v", err)
}

// sendLoop writes a stream's outbox to it; it reports whether it ended
// by writing the stream's Bye (dismiss).
func (p *Planner) sendLoop(ctx context.Context, c *conn, s *transport.Stream) bool {
	tick := p.clock.NewTicker(time.Millisecond)
	defer tick.Stop()
	o := c.out
	for {
		select {
		case <-ctx.Done():
			return false
		case <-o.kick:
		case <-tick.C():
		}
		if ctx.Err() != nil {
			// The stream is ending (the planner shuts down, or the core
			// closed it): in a shutdown the core may still find the
			// member's stream ended and dismiss it, but it was not
			// declared dead and must not be told so.
			return false
		}
		p.mu.Lock()
		if o.open {
			o.buf = o.bw.Finish(o.buf)
			o.open = false
		}
		out := o.buf
		o.buf, o.spare = o.spare[:0], nil
		o.queued = 0
		last := c.bye // out ends with the Bye: nothing is queued after it
		p.mu.Unlock()
		if len(out) == 0 {
			p.mu.Lock()
			o.spare = out
			p.mu.Unlock()
			continue
		}
		if err := s.Write(out); err != nil {
			p.logf("worker %d: write: %v", c.id, err)
			return false
		}
		if last {
			return true
		}
		p.mu.Lock()
		o.spare = out[:0]
		p.mu.Unlock()
	}
}

// dismiss ends stream c with a Bye saying why (p.mu held): what its
// outbox still holds is dropped (nothing queued for a member the core let
// go is delivered), the Bye is its last frame, and once it is written the
// stream ends. A stream the worker can no longer read (a partition) keeps
// the Bye until the link heals or the transport gives up on it.
func (p *Planner) dismiss(c *conn, reason wire.ByeReason, text string) {
	if c.bye {
		return
	}
	o := c.out
	o.buf, o.open, o.queued = o.buf[:0], false, 0
	bye := wire.Bye{Reason: reason, Text: text}
	o.buf = bye.Append(o.buf)
	c.bye = true
	o.wake()
}

// farewell tells every member the run is over (ByeDone) and waits up to
// a second for their streams to end, so that a worker exits cleanly
// rather than finding its planner gone (which it counts as a failure).
func (p *Planner) farewell(ctx context.Context) {
	p.mu.Lock()
	var ended []chan struct{}
	for _, c := range p.conns {
		if c.bound {
			p.dismiss(c, wire.ByeDone, "the run is over")
			ended = append(ended, c.ended)
		}
	}
	p.mu.Unlock()
	t := p.clock.NewTimer(time.Second)
	defer t.Stop()
	for _, ch := range ended {
		select {
		case <-ch:
		case <-t.C():
			return
		case <-ctx.Done():
			return
		}
	}
}
