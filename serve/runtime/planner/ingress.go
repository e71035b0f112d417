package planner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner/core"
	"streamscale/serve/runtime/wire"
)

// ingress is the shell's input log and its statistics (guarded by
// Planner.mu).
type ingress struct {
	ins       []input
	seqs      map[uint64]uint64
	completed uint64
	dup       uint64
	lost      uint64 // inputs dropped at the ingress (no live owner)
	lat       []float64
	allLat    []float64
	secOffer  int
	lastDone  time.Duration // last completion, after the start
	// The control window (kept only with Config.Allocate): latencies and
	// offered inputs since the last TakeWindow.
	winLat   []float64
	winOffer int
	winOpen  int  // inputs before this index are complete
	catchUp  bool // the Allocator's rounds are catch-up rounds (control)
	paused   bool // a pause checkpoint holds the ingress
	sent     int  // inputs [0, sent) sent
	frontier int  // inputs before this index are complete (and no replay of them open)
	redoOpen int  // replayed inputs that had completed, not complete again
	replayed int
}

// input is one input's record in the planner's log.
type input struct {
	key, seq uint64
	intended int64 // ns after the load started
	attempt  uint8
	// gen is Planner.deaths when the current attempt was sent; stranded
	// marks an attempt a source copy of which had no live owner. Either
	// (gen behind deaths) means the attempt may never complete: an input
	// open at the end so is dropped, not unfinished.
	gen      uint32
	stranded bool
	done     bool
	redo     bool // complete, rolled back by a restore and replayed: its completion is awaited, not counted
	w        wire.Weight
	ms       float32 // end-to-end latency, once done
	payload  []byte  // kept for replay: until complete, or with checkpoints until a checkpoint covers it
}

// inputID encodes an input's index and attempt as a record's Input.
func inputID(idx int, attempt uint8) uint64 { return uint64(attempt)<<56 | uint64(idx+1) }

// open counts the inputs not complete, replays included (p.mu held).
func (p *Planner) open() uint64 {
	return uint64(len(p.ins)) - p.completed - p.lost + uint64(p.redoOpen)
}

// flush sends the inputs generated while the ingress was paused (p.mu
// held).
func (p *Planner) flush() {
	if p.paused {
		return
	}
	for ; p.sent < len(p.ins); p.sent++ {
		p.send(p.sent)
	}
}

// replay sends inputs again with a new attempt number (core.Replay; p.mu
// held): without checkpoints every input not complete; with them every
// input from the restored checkpoint's cut, those that completed since
// being awaited again but not counted twice.
func (p *Planner) replay(a core.Replay) {
	n := 0
	if a.OpenOnly {
		for i := range p.ins {
			if in := &p.ins[i]; !in.done {
				in.attempt++
				p.send(i)
				n++
			}
		}
		p.replayed += n
		p.logf("replayed %d inputs", n)
		return
	}
	for i := a.From; i < len(p.ins); i++ {
		in := &p.ins[i]
		in.attempt++
		if in.done && !in.redo {
			in.redo = true
			p.redoOpen++
		}
		p.send(i)
		n++
	}
	p.sent = len(p.ins)
	p.frontier = min(p.frontier, a.From)
	p.replayed += n
}

// outbox holds frames for one worker (guarded by Planner.mu).
type outbox struct {
	buf, spare []byte
	bw         wire.BatchWriter
	open       bool
	queued     int // records in buf
	kick       chan struct{}
}

func (o *outbox) wake() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

func (o *outbox) frame(f func([]byte) []byte) {
	if o.open {
		o.buf = o.bw.Finish(o.buf)
		o.open = false
	}
	o.buf = f(o.buf)
	o.wake()
}

// complete adds returned completion weight (a Done frame)
// (p.mu held).
func (p *Planner) complete(es []wire.DoneEntry) {
	now := p.sinceStart()
	for _, e := range es {
		idx := int(e.Input&(1<<56-1)) - 1
		att := uint8(e.Input >> 56)
		if idx < 0 || idx >= len(p.ins) {
			p.refused++
			continue
		}
		in := &p.ins[idx]
		if att != in.attempt {
			continue // an older attempt's records
		}
		if in.done && !in.redo {
			p.dup++
			continue
		}
		sum, over := in.w.Add(e.W)
		if over || sum.Cmp(wire.Total) > 0 {
			p.dup++
			sum = wire.Total
		}
		in.w = sum
		if sum == wire.Total && in.redo {
			in.redo = false
			p.redoOpen--
			p.lastDone = now
			continue
		}
		if sum == wire.Total {
			in.done = true
			if p.cfg.CheckpointInterval == 0 {
				in.payload = nil
			}
			p.completed++
			p.lastDone = now
			ms := float64(now.Nanoseconds()-in.intended) / 1e6
			in.ms = float32(ms)
			p.lat = append(p.lat, ms)
			p.allLat = append(p.allLat, ms)
			if p.cfg.Allocate != nil {
				p.winLat = append(p.winLat, ms)
			}
		}
	}
}

// send routes one input attempt to the owners of its source operators
// (p.mu held).
func (p *Planner) send(idx int) {
	in := &p.ins[idx]
	ce, back, _ := wire.Split(0, len(p.sources))
	in.w = back
	in.gen, in.stranded = p.deaths, false
	kg := ops.KeyGroup(in.key)
	for _, o := range p.sources {
		if p.route == nil || p.route[o][kg] == nil {
			// No live owner: the weight of this copy never comes back;
			// the input stays open and is replayed after the failover.
			in.stranded = true
			continue
		}
		ob := p.route[o][kg].out
		if !ob.open {
			ob.buf = ob.bw.Begin(ob.buf, wire.NoID, p.epoch)
			ob.open = true
		}
		r := wire.Record{Op: uint16(o), Exp: ce, Key: in.key, Input: inputID(idx, in.attempt), Seq: in.seq, Payload: in.payload}
		ob.buf = ob.bw.Add(ob.buf, &r)
		ob.queued++
		if len(ob.buf) > 64<<10 {
			ob.wake()
		}
	}
}

// loadGen is the open-loop load generator's position: the source, and
// input k of segment seg next. Input k of a segment of constant rate r
// starting at s has the intended time s + k/r (computed, not accumulated,
// so no rounding drift); a segment is one trace point, or the whole run
// for a constant rate. Segment i spans [i·step, (i+1)·step), computed from
// its index: recovering the index from a boundary by division could land
// one below it for a step that is not a binary fraction (3 × 0.01 / 0.01
// < 3) and then loop on that boundary forever. The inputs are a function
// of the seed and the rate or trace alone, so the source is replayable:
// skip regenerates its first inputs to resume it at an offset.
type loadGen struct {
	p                         *Planner
	src                       ops.Source
	end                       float64 // the load's end, s
	seg, k                    int
	segStart, segEnd, segRate float64
	buf                       []byte
}

func (p *Planner) newLoadGen() *loadGen {
	g := &loadGen{p: p, src: p.cfg.App.NewSource(p.cfg.Seed), end: p.cfg.Duration.Seconds()}
	g.segStart, g.segEnd, g.segRate = p.segment(0)
	return g
}

// due returns the intended time of the next input, s, and whether it is
// due by now (and falls before the load's end).
func (g *loadGen) due(now float64) (float64, bool) {
	for g.segStart < g.end {
		t := g.segEnd
		if g.segRate > 0 {
			t = g.segStart + float64(g.k)/g.segRate
		}
		if t >= g.segEnd { // next trace point
			g.seg, g.k = g.seg+1, 0
			g.segStart, g.segEnd, g.segRate = g.p.segment(g.seg)
			continue
		}
		return t, t <= now && t < g.end
	}
	return g.end, false
}

// take draws the next input (due said it is due): its key and payload (in
// the generator's buffer, valid until the next take).
func (g *loadGen) take() (uint64, []byte) {
	var key uint64
	key, g.buf = g.src.Next(g.buf)
	g.k++
	return key, g.buf
}

// over reports whether the load has no input left.
func (g *loadGen) over() bool {
	return g.segStart >= g.end || (g.segRate == 0 && math.IsInf(g.segEnd, 1)) || g.segStart+float64(g.k)/g.segRate >= g.end
}

// skip logs the first n inputs as complete without sending them (a
// restored checkpoint covers them: see "Planner restart") and returns the
// intended time of input n, where the load resumes (the load's end when
// none is left). It fails when the load has fewer than n inputs.
func (p *Planner) skip(n int) (time.Duration, error) {
	g := p.gen
	p.ins = slices.Grow(p.ins, n)
	for i := range n {
		t, ok := g.due(math.Inf(1))
		if !ok {
			return 0, fmt.Errorf("planner: the checkpoint covers %d inputs, this job's load has %d", n, i)
		}
		key, _ := g.take()
		seq := p.seqs[key]
		p.seqs[key] = seq + 1
		p.ins = append(p.ins, input{key: key, seq: seq, intended: int64(t * 1e9), done: true, w: wire.Total})
	}
	p.completed, p.sent, p.frontier, p.skipped = uint64(n), n, n, n
	t, _ := g.due(math.Inf(1))
	return time.Duration(t * 1e9), nil
}

// generate runs the load generator until the load's end (see loadGen).
func (p *Planner) generate(ctx context.Context) {
	g := p.gen
	tick := p.clock.NewTicker(time.Millisecond)
	defer tick.Stop()
	// Size the input log once: growing a log of millions of inputs by
	// doubling copies it again and again inside the generator's lock.
	p.mu.Lock()
	p.ins = slices.Grow(p.ins, min(p.inputBound(), 50_000_000))
	p.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		now := p.sinceStart().Seconds()
		p.mu.Lock()
		for {
			t, ok := g.due(now)
			if !ok {
				break
			}
			key, payload := g.take()
			seq := p.seqs[key]
			p.seqs[key] = seq + 1
			p.ins = append(p.ins, input{key: key, seq: seq, intended: int64(t * 1e9), payload: slices.Clone(payload)})
			p.secOffer++
			if p.cfg.Allocate != nil {
				p.winOffer++
			}
			p.flush() // nothing while a checkpoint pauses the ingress
		}
		p.mu.Unlock()
		if g.over() {
			return
		}
	}
}

// segment returns the start, end and rate of segment i of the load: trace
// point i, or for a constant rate the whole run (segment 0, endless; the
// later ones start at +Inf, after any run).
func (p *Planner) segment(i int) (start, end, rate float64) {
	if p.cfg.Trace == nil {
		if i > 0 {
			return math.Inf(1), math.Inf(1), 0
		}
		return 0, math.Inf(1), p.cfg.Rate
	}
	step := p.cfg.TraceStep.Seconds()
	return float64(i) * step, float64(i+1) * step, p.cfg.Trace.Rate(i) * p.cfg.RateMult
}

// inputBound is an upper bound of the number of inputs generate sends:
// each segment of length L at rate r sends the inputs at k/r < L after
// its start, ⌈r·L⌉ of them, so the bound rounds every segment up (and adds
// one against the rounding of the comparison). Rounding only the total,
// as the log's sizing once did, fell short by up to one input per segment:
// over a ten-minute replay (608 segments) the log then overflowed near the
// load's end and was copied inside the generator's lock, a 70–300 ms stall
// of the whole planner that delayed the completions of the run's last
// interval and inflated its p95.
func (p *Planner) inputBound() int {
	end := p.cfg.Duration.Seconds()
	n := 0.0
	for i := 0; ; i++ {
		start, segEnd, rate := p.segment(i)
		if start >= end {
			break
		}
		n += math.Ceil(rate*(min(segEnd, end)-start)) + 1
		if n > math.MaxInt32 {
			return math.MaxInt32
		}
	}
	return int(n)
}

// CheckpointState returns a copy of operator op's keyed state in the last
// complete checkpoint and the number of inputs that checkpoint covers
// (inputs 0..covered−1). After a run with checkpoints whose inputs all
// completed it is the final state (the run ends with a checkpoint).
func (p *Planner) CheckpointState(op int) (state map[uint64][]byte, covered int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[uint64][]byte{}
	_, cut, st := p.core.Checkpoint()
	for k, m := range st {
		if int(k>>8) != op {
			continue
		}
		for key, v := range m {
			out[key] = append([]byte(nil), v...)
		}
	}
	return out, cut
}
