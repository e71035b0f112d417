package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"time"

	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
)

// peer is the outgoing side toward one peer (or the planner): frames
// accumulate in buf under w.mu and a sender goroutine writes them.
type peer struct {
	id      uint32
	addr    string
	buf     []byte
	spare   []byte
	bw      wire.BatchWriter
	open    bool // a batch frame is being built at the end of buf
	kick    chan struct{}
	stop    chan struct{}
	removed bool
	// idle: the send loop found nothing to send and stopped its flush
	// ticker; the next record (or completion weight, for the planner)
	// wakes it (w.mu held).
	idle bool
	// wmu serialises writes to the peer's stream: the send loop's, and
	// for the planner the beat loop's (beatLoop), which must not wait for
	// w.mu.
	wmu sync.Mutex
}

func newPeer(id uint32, addr string) *peer {
	return &peer{id: id, addr: addr, kick: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (p *peer) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// addRecord appends a record to the open batch (w.mu held).
func (p *peer) addRecord(w *Worker, r *wire.Record) {
	if !p.open {
		p.buf = p.bw.Begin(p.buf, w.id, w.epoch)
		p.open = true
	}
	p.buf = p.bw.Add(p.buf, r)
	if len(p.buf) >= w.cfg.FlushBytes || p.idle {
		p.idle = false
		p.wake()
	}
}

// closeBatch finishes the open batch so another frame can follow (w.mu
// held).
func (p *peer) closeBatch() {
	if p.open {
		p.buf = p.bw.Finish(p.buf)
		p.open = false
	}
}

// frame appends a whole frame built by f (w.mu held).
func (p *peer) frame(f func([]byte) []byte) {
	p.closeBatch()
	p.buf = f(p.buf)
	p.wake()
}

// Run serves peers, joins the planner and runs until ctx is done or the
// planner ends the run (see Serve). ready, if not nil, receives the listen
// address.
func (w *Worker) Run(ctx context.Context, ready func(addr string)) error {
	ln, err := transport.Listen(w.cfg.Addr, w.cfg.Public)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return w.Serve(ctx, ln, ready)
}

// Serve is Run on a listener the caller opened. It serves peers on ln
// for the worker's whole life and joins the planner as a member, once per
// session (session); it returns nil when ctx ends, when the planner says
// the run is over, or when the planner scales it in. It starts a new
// session, as a new member, after the planner declared it dead or when it
// lost the planner's stream, and returns an error naming the planner and
// the cause after Config.JoinTries failed joins in a row (the planner
// unreachable, the token refused, no welcome).
func (w *Worker) Serve(ctx context.Context, ln net.Listener, ready func(addr string)) error {
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lerr := make(chan error, 1)
	go func() {
		lerr <- transport.Serve(ctx, ln, w.handlePeer, w.cfg.Log)
		cancel()
	}()
	if ready != nil {
		ready(addr)
	}
	err := w.sessions(ctx, addr)
	cancel()
	if lerr := <-lerr; err == nil && lerr != nil && ctx.Err() == nil {
		err = fmt.Errorf("worker: %w", lerr)
	}
	return err
}

// sessionEnd is how a session ended: joined says the planner welcomed
// the worker; bye is the planner's Bye, if it sent one, else err says why
// the join failed or the stream ended.
type sessionEnd struct {
	joined bool
	bye    *wire.Bye
	err    error
}

// sessions runs sessions until the run is over (see Serve).
func (w *Worker) sessions(ctx context.Context, addr string) error {
	failed := 0 // joins failed in a row
	backoff := w.cfg.JoinBackoff
	var lost error // why the last session ended, if the planner went away
	// resetPending: the planner went away without a goodbye; the state is
	// discarded (rejoin) only once a planner answers again, so a worker
	// whose planner died keeps what it computed (a test or an operator can
	// still read it) rather than wiping it on the way out.
	resetPending := false
	for {
		var end sessionEnd
		if resetPending {
			if err := w.probePlanner(ctx); err != nil {
				end.err = err // a failed join: the state is kept
			} else {
				w.rejoin()
				resetPending = false
			}
		}
		if !resetPending {
			end = w.session(ctx, addr)
		}
		if ctx.Err() != nil {
			return nil
		}
		if end.joined {
			failed, backoff = 0, w.cfg.JoinBackoff
		}
		if b := end.bye; b != nil {
			switch b.Reason {
			case wire.ByeDone, wire.ByeLeft:
				w.notef("planner %s: %s; stopping", w.cfg.Planner, b.Text)
				return nil
			case wire.ByeDead:
				w.notef("planner %s: %s; rejoining as a new member (its state and frames discarded)", w.cfg.Planner, b.Text)
				w.rejoin()
				lost = fmt.Errorf("declared dead by the planner %s (%s)", w.cfg.Planner, b.Text)
				continue
			default:
				end.err = fmt.Errorf("planner %s refused this worker: %s", w.cfg.Planner, b.Text)
			}
		}
		if end.joined {
			// The stream broke or ended without a goodbye: the planner
			// died, or a partition cut the link (the planner then declares
			// this worker dead and fails it over). Join again, as a new
			// member.
			lost = fmt.Errorf("lost the planner %s (%w)", w.cfg.Planner, end.err)
			w.notef("lost the planner %s: %v; rejoining as a new member (its state and frames discarded once the planner answers)", w.cfg.Planner, end.err)
			resetPending = true
			continue
		}
		failed++
		if failed >= w.cfg.JoinTries {
			if lost != nil {
				return fmt.Errorf("worker: %v, then %d joins failed, the last: %w", lost, failed, end.err)
			}
			return fmt.Errorf("worker: %d joins of planner %s failed, the last: %w", failed, w.cfg.Planner, end.err)
		}
		w.notef("join %d of %d failed: %v; retrying in %v", failed, w.cfg.JoinTries, end.err, backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxJoinBackoff)
	}
}

// probePlanner dials the planner's address (TCP, within the join
// timeout) and hangs up: whether a planner is there to rejoin.
func (w *Worker) probePlanner(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.JoinTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", w.cfg.Planner)
	if err != nil {
		return fmt.Errorf("planner %s unreachable: %w", w.cfg.Planner, err)
	}
	return c.Close()
}

// maxJoinBackoff caps the wait between two joins.
const maxJoinBackoff = 5 * time.Second

// session joins the planner and runs as a member until the planner's
// stream ends: the slots, the age check, the migrations, the monitor, the
// beats and the senders run for the session only, and have all ended when
// it returns.
func (w *Worker) session(ctx context.Context, addr string) sessionEnd {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := transport.NewClient()
	defer client.CloseIdle()
	s, bye, err := w.join(ctx, client, addr)
	if err != nil || bye != nil {
		return sessionEnd{bye: bye, err: err}
	}
	defer s.Close()
	w.mu.Lock()
	wg := w.sess
	w.mu.Unlock()
	wg.Go(func() { w.checkAges(ctx) })
	for range w.cfg.Slots {
		wg.Go(w.runSlot)
	}
	wg.Go(func() {
		<-ctx.Done()
		w.mu.Lock()
		w.closing = true
		w.work.Broadcast()
		w.space.Broadcast()
		w.drained.Broadcast()
		for _, p := range w.peers {
			if !p.removed {
				p.removed = true
				close(p.stop)
			}
		}
		w.mu.Unlock()
	})
	wg.Go(func() { w.runMigrations(ctx, client) })
	wg.Go(func() { w.monitor(ctx) })
	wg.Go(func() { w.sendLoop(ctx, w.planner, func() (*transport.Stream, error) { return s, nil }, true) })
	wg.Go(func() { w.beatLoop(ctx, s) })
	end := w.plannerLink(ctx, client, s)
	end.joined = true
	cancel()
	s.Close()
	wg.Wait()
	return end
}

// join dials the planner, says hello and reads its answer: the welcome
// (the stream is returned), or a Bye (refused, or the run is over), or an
// error. Config.JoinTimeout bounds it.
func (w *Worker) join(ctx context.Context, client *transport.Client, addr string) (*transport.Stream, *wire.Bye, error) {
	dctx, stop := context.WithCancel(ctx)
	timer := time.AfterFunc(w.cfg.JoinTimeout, stop)
	fail := func(err error) (*transport.Stream, *wire.Bye, error) {
		if !timer.Stop() {
			err = fmt.Errorf("no welcome within %v (%w)", w.cfg.JoinTimeout, err)
		}
		stop()
		return nil, nil, err
	}
	s, err := client.Dial(dctx, w.cfg.Planner)
	if err != nil {
		return fail(err)
	}
	w.mu.Lock()
	h := wire.Hello{ID: w.id, Addr: addr, Token: w.cfg.Token}
	w.mu.Unlock()
	if err := s.Write(h.Append(nil)); err != nil {
		s.Close()
		return fail(fmt.Errorf("hello: %w", err))
	}
	k, p, _, err := wire.ReadFrame(s.R, nil)
	switch {
	case errors.Is(err, io.EOF):
		err = errors.New("the planner ended the stream without a welcome")
	case err == nil && k == wire.KindBye:
		var b wire.Bye
		if b, err = wire.DecodeBye(p); err == nil {
			s.Close()
			timer.Stop()
			stop()
			return nil, &b, nil
		}
	case err == nil && k != wire.KindHello:
		err = fmt.Errorf("the planner answered %v, want hello", k)
	}
	if err != nil {
		s.Close()
		return fail(fmt.Errorf("welcome: %w", err))
	}
	welcome, err := wire.DecodeHello(p)
	if err != nil || welcome.ID == wire.NoID || welcome.Token != w.cfg.Token {
		s.Close()
		return fail(fmt.Errorf("welcome refused (id %d, %v)", welcome.ID, err))
	}
	if !timer.Stop() {
		s.Close()
		return fail(errors.New("welcome too late"))
	}
	// dctx now lives as long as the session's ctx: stop is its cancel.
	context.AfterFunc(ctx, stop)
	w.mu.Lock()
	w.id = welcome.ID
	w.idNow.Store(welcome.ID)
	w.mu.Unlock()
	w.notef("joined planner %s", w.cfg.Planner)
	return s, nil, nil
}

// plannerLink reads the planner's frames until its stream ends: with a
// Bye, or an error (io.EOF without a Bye counts as one).
func (w *Worker) plannerLink(ctx context.Context, client *transport.Client, s *transport.Stream) sessionEnd {
	var recs []wire.Record
	var rs *restoring // a restore being received
	var buf []byte
	for {
		k, p, nb, err := wire.ReadFrame(s.R, buf)
		buf = nb
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the planner ended the stream without a goodbye")
			}
			return sessionEnd{err: fmt.Errorf("planner stream: %w", err)}
		}
		switch k {
		case wire.KindPlacement:
			pl, err := wire.DecodePlacement(p)
			restore := rs
			rs = nil
			if err == nil && restore != nil {
				err = w.checkRestore(restore, &pl)
			} else if err == nil {
				err = w.checkPlacement(&pl)
			}
			if err != nil {
				w.refuse("planner", err)
				continue
			}
			// Wait until the placement is installed: the planner's
			// next records are addressed under it.
			installed := make(chan struct{})
			select {
			case w.placeCh <- placeReq{pl, installed, restore}:
			case <-ctx.Done():
				return sessionEnd{err: ctx.Err()}
			}
			select {
			case <-installed:
			case <-ctx.Done():
				return sessionEnd{err: ctx.Err()}
			}
		case wire.KindAlloc:
			a, err := wire.DecodeAlloc(p)
			if err == nil {
				err = w.applyAlloc(a)
			}
			if err != nil {
				w.refuse("planner", err)
			}
		case wire.KindBatch:
			var b wire.Batch
			b, err = wire.DecodeBatch(p, recs)
			recs = b.Records
			if err == nil {
				err = w.onBatch(wire.NoID, b)
			}
			if err != nil {
				w.refuse("planner", err)
			}
		case wire.KindBarrier:
			var b wire.Barrier
			if b, err = wire.DecodeBarrier(p); err == nil {
				err = w.onBarrier(wire.NoID, b)
			}
			if err != nil {
				w.refuse("planner", err)
			}
		case wire.KindAbort:
			var a wire.Abort
			if a, err = wire.DecodeAbort(p); err != nil {
				w.refuse("planner", err)
				continue
			}
			w.onAbort(a)
		case wire.KindCheckpoint:
			var c wire.Checkpoint
			if c, err = wire.DecodeCheckpoint(p); err != nil {
				w.refuse("planner", err)
				continue
			}
			w.snapshot(c)
		case wire.KindRestore:
			var r wire.Restore
			if r, err = wire.DecodeRestore(p); err != nil {
				rs = nil
				w.refuse("planner", err)
				continue
			}
			rs = &restoring{r: r, state: map[uint32]map[uint64][]byte{}}
		case wire.KindSnapshot:
			var sn wire.Snapshot
			sn, err = wire.DecodeSnapshot(p)
			if err == nil && rs == nil {
				err = fmt.Errorf("worker: snapshot of checkpoint %d outside a restore", sn.ID)
			}
			if err == nil {
				err = rs.add(sn, w.nOps)
			}
			if err != nil {
				if rs != nil {
					rs.bad = true // the restore cannot complete: its placement is refused
				}
				w.refuse("planner", err)
			}
		case wire.KindBye:
			b, err := wire.DecodeBye(p)
			if err != nil {
				w.refuse("planner", err)
				continue
			}
			return sessionEnd{bye: &b}
		default:
			w.refuse("planner", fmt.Errorf("worker: unexpected %v from the planner", k))
		}
	}
}

func (w *Worker) refuse(from string, err error) {
	w.mu.Lock()
	w.stats.Refused++
	w.mu.Unlock()
	w.logf("refused a frame from %s: %v", from, err)
}

// applyAlloc sets the tasks' CPU allocations.
func (w *Worker) applyAlloc(a wire.Alloc) error {
	if len(a.Millicores) != w.nOps {
		return fmt.Errorf("worker: allocation for %d tasks, want %d", len(a.Millicores), w.nOps)
	}
	// Under the lock the monitor reads allocations with (cfs.Quota is safe
	// for concurrent use by contract; the lock also orders Set before the
	// next report).
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, mc := range a.Millicores {
		w.tasks[i].quota.Set(int(mc))
	}
	return nil
}

// sendLoop writes p's frames to the stream open() returns, flushing every
// Config.Flush or when kicked. For the planner it also flushes completion
// weights and beats. A flush that finds nothing to send stops the ticker
// (peer.idle) until the next record or frame wakes the loop, or, for the
// planner, until the next beat is due: an idle worker used to wake every
// Config.Flush (2 ms) for each peer and the planner, CPU a worker under a
// budget pays out of it.
func (w *Worker) sendLoop(ctx context.Context, p *peer, open func() (*transport.Stream, error), isPlanner bool) {
	var s *transport.Stream
	defer func() {
		if s != nil && !isPlanner {
			s.Close()
		}
	}()
	flush := max(w.cfg.Flush, 100*time.Microsecond)
	tick := time.NewTicker(flush)
	defer tick.Stop()
	idle := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.stop:
			w.mu.Lock()
			if len(p.buf) == 0 {
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
		case <-p.kick:
		case <-tick.C:
		}
		if idle {
			idle = false
			tick.Reset(flush)
		}
		w.mu.Lock()
		if isPlanner {
			w.flushDone()
		}
		p.closeBatch()
		out := p.buf
		p.buf = p.spare[:0]
		p.spare = nil
		if len(out) > maxPeerBuf {
			w.work.Broadcast()
		}
		w.mu.Unlock()
		if len(out) == 0 {
			w.mu.Lock()
			p.spare = out
			if len(p.buf) == 0 && !p.open && (!isPlanner || len(w.done) == 0) {
				p.idle, idle = true, true
				tick.Stop()
			}
			w.mu.Unlock()
			continue
		}
		for s == nil {
			var err error
			s, err = open()
			if err == nil {
				break
			}
			w.logf("peer %d (%s): %v", p.id, p.addr, err)
			select {
			case <-ctx.Done():
				return
			case <-p.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		p.wmu.Lock()
		err := s.Write(out)
		p.wmu.Unlock()
		if err != nil {
			w.logf("peer %d (%s): write: %v; %d bytes lost", p.id, p.addr, err, len(out))
			if isPlanner {
				return
			}
			s.Close()
			s = nil
		}
		w.mu.Lock()
		p.spare = out[:0]
		w.work.Broadcast()
		w.mu.Unlock()
	}
}

// beatLoop writes a heartbeat to the planner stream s every
// Config.Heartbeat until ctx ends or a write fails. It takes neither w.mu
// nor the send loop's queue, only the stream's write lock between two of
// the send loop's writes, so a beat does not wait behind the executors
// and receivers that take w.mu at every record. (Beats used to go out
// through the send loop.) What it cannot avoid is its own scheduling:
// under a whole-process CPU budget the Go runtime's concurrent mark phase
// runs for seconds of wall time (measured on sd at 60 mc: marks of 1.9
// and 3.3 s, GODEBUG=gctrace=1), one of the two Ps is the dedicated mark
// worker's meanwhile, and the beat goroutine's ticks then came 1.2–3.6 s
// apart at the worker, as read at the planner. Hence the generous miss
// limit of process-budget runs (eval/live.ProcessBudgetMiss). The epoch
// is read from w.epochNow, which mirrors w.epoch.
func (w *Worker) beatLoop(ctx context.Context, s *transport.Stream) {
	t := time.NewTicker(w.cfg.Heartbeat)
	defer t.Stop()
	var b []byte
	p := w.planner
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hb := wire.Heartbeat{From: w.idNow.Load(), Epoch: w.epochNow.Load()}
		b = hb.Append(b[:0])
		p.wmu.Lock()
		err := s.Write(b)
		p.wmu.Unlock()
		if err != nil {
			return // the reader sees the stream end too
		}
	}
}

// flushDone sends the completion weight returned since the last flush to
// the planner (w.mu held).
func (w *Worker) flushDone() {
	if len(w.done) == 0 {
		return
	}
	entries := w.doneBuf[:0]
	for in, wt := range w.done {
		entries = append(entries, wire.DoneEntry{Input: in, W: wt})
	}
	clear(w.done)
	d := wire.Done{From: w.id, Entries: entries}
	w.planner.frame(d.Append)
	w.doneBuf = entries[:0]
}

// dialPeer opens the stream to a peer and introduces this worker.
func (w *Worker) dialPeer(ctx context.Context, client *transport.Client, p *peer) func() (*transport.Stream, error) {
	return func() (*transport.Stream, error) {
		s, err := client.Dial(ctx, p.addr)
		if err != nil {
			return nil, err
		}
		w.mu.Lock()
		h := wire.Hello{ID: w.id, Epoch: w.epoch, Token: w.cfg.Token}
		w.mu.Unlock()
		if err := s.Write(h.Append(nil)); err != nil {
			s.Close()
			return nil, err
		}
		go func() { // the peer never writes back; notice when it goes away
			var b [1]byte
			s.R.Read(b[:]) //nolint:errcheck // any outcome ends the stream
			s.Close()
		}()
		return s, nil
	}
}

// ensurePeers starts a sender for every member other than this worker and
// stops the senders of workers that left (w.mu held).
func (w *Worker) ensurePeers(ctx context.Context, client *transport.Client) {
	ids := make([]uint32, 0, len(w.members))
	for id := range w.members {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if id == w.id {
			continue
		}
		if p := w.peers[id]; p != nil && p.addr == w.members[id] && !p.removed {
			continue
		}
		p := newPeer(id, w.members[id])
		w.peers[id] = p
		w.sess.Go(func() { w.sendLoop(ctx, p, w.dialPeer(ctx, client, p), false) })
	}
}

// dropPeers stops the senders of workers in neither membership (w.mu held).
func (w *Worker) dropPeers() {
	for id, p := range w.peers {
		if _, ok := w.members[id]; ok {
			continue
		}
		if !p.removed {
			p.removed = true
			close(p.stop)
		}
		delete(w.peers, id)
	}
}

// handlePeer serves one incoming stream: a hello from a member with the
// token, then batches, state, marks and ends.
func (w *Worker) handlePeer(ctx context.Context, s *transport.Stream) {
	k, p, buf, err := wire.ReadFrame(s.R, nil)
	if err != nil {
		w.refuse("an unknown peer", err)
		return
	}
	if k != wire.KindHello {
		w.refuse("an unknown peer", fmt.Errorf("worker: first frame %v, want hello", k))
		return
	}
	h, err := wire.DecodeHello(p)
	if err != nil {
		w.refuse("an unknown peer", err)
		return
	}
	if h.Token != w.cfg.Token {
		w.refuse(fmt.Sprintf("peer %d", h.ID), errors.New("worker: wrong token"))
		return
	}
	inc := w.inc.Load() // the session this stream belongs to
	// A new member may dial before this worker has its placement: wait a
	// little for the membership to include it.
	deadline := time.Now().Add(w.cfg.JoinWait)
	for !w.isMember(h.ID) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			w.refuse(fmt.Sprintf("peer %d", h.ID), errors.New("worker: not a member of the current placement"))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	from := h.ID
	var recs []wire.Record
	for {
		k, p, buf, err = wire.ReadFrame(s.R, buf)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, io.EOF) {
				w.refuse(fmt.Sprintf("peer %d", from), err)
			}
			return
		}
		w.peerMu.RLock()
		if w.inc.Load() != inc {
			w.peerMu.RUnlock()
			w.refuse(fmt.Sprintf("peer %d", from), errors.New("worker: a stream of this worker's previous membership"))
			return
		}
		if !w.isMember(from) {
			w.peerMu.RUnlock()
			w.refuse(fmt.Sprintf("peer %d", from), errors.New("worker: no longer a member"))
			return
		}
		switch k {
		case wire.KindBatch:
			var b wire.Batch
			b, err = wire.DecodeBatch(p, recs)
			recs = b.Records
			if err == nil && b.From != from {
				err = fmt.Errorf("worker: batch says it is from %d on peer %d's stream", b.From, from)
			}
			if err == nil {
				err = w.onBatch(from, b)
			}
		case wire.KindState:
			var st wire.State
			st, err = wire.DecodeState(p)
			if err == nil {
				err = w.onState(from, st)
			}
		case wire.KindMark, wire.KindEnd:
			var m wire.Mark
			m, err = wire.DecodeMark(p)
			if err == nil {
				err = w.onMark(from, k, m)
			}
		case wire.KindBarrier:
			var b wire.Barrier
			if b, err = wire.DecodeBarrier(p); err == nil {
				err = w.onBarrier(from, b)
			}
		default:
			err = fmt.Errorf("worker: unexpected %v from a peer", k)
		}
		w.peerMu.RUnlock()
		if err != nil {
			w.refuse(fmt.Sprintf("peer %d", from), err)
		}
	}
}

func (w *Worker) isMember(id uint32) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, a := w.members[id]
	_, b := w.prevMem[id]
	return (a || b) && id != w.id
}

// onBatch validates a batch completely, then applies it: records of the
// current or the previous epoch are routed, records of the next epoch are
// kept until this worker reaches it. from is wire.NoID for the planner.
func (w *Worker) onBatch(from uint32, b wire.Batch) error {
	for i := range b.Records {
		if int(b.Records[i].Op) >= w.nOps {
			return fmt.Errorf("worker: batch record %d addressed to operator %d of %d", i, b.Records[i].Op, w.nOps)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.owners == nil:
		return fmt.Errorf("worker: batch (epoch %d) before the first placement", b.Epoch)
	case b.Epoch == w.epoch+1 && from != wire.NoID:
		if w.futureN+len(b.Records) > w.cfg.MaxInFlight {
			return fmt.Errorf("worker: %d early records from epoch %d exceed the in-flight cap", w.futureN+len(b.Records), b.Epoch)
		}
		c := wire.Batch{From: from, Epoch: b.Epoch, Records: make([]wire.Record, len(b.Records))}
		for i, r := range b.Records {
			r.Payload = w.alloc(r.Payload)
			c.Records[i] = r
		}
		w.future = append(w.future, early{batch: &c})
		w.futureN += len(c.Records)
		return nil
	case b.Epoch < w.floor:
		// Sent before the sender or this worker restored a checkpoint:
		// the planner replays its input.
		w.stats.Stale += uint64(len(b.Records))
		return nil
	case b.Epoch != w.epoch && b.Epoch+1 != w.epoch:
		return fmt.Errorf("worker: batch of unknown epoch %d (this worker is at %d)", b.Epoch, w.epoch)
	}
	w.applyRecords(from, b.Records)
	// Parked records do not count: the barriers that release them may be
	// behind this very batch on a stream whose reader would wait.
	for w.inFlight-w.parkedN > w.cfg.MaxInFlight && !w.closing {
		w.space.Wait()
	}
	return nil
}

// applyRecords routes incoming records (w.mu held).
func (w *Worker) applyRecords(from uint32, rs []wire.Record) {
	w.stamp()
	for _, r := range rs {
		r.Payload = w.alloc(r.Payload)
		w.inFlight++
		w.route(rec{Record: r}, from)
	}
}

// Inject routes records as if the planner had sent them (in-process use:
// tests and benchmarks). It fails before the first placement.
func (w *Worker) Inject(rs []wire.Record) error {
	return w.onBatch(wire.NoID, wire.Batch{From: wire.NoID, Epoch: w.Epoch(), Records: rs})
}
