package planner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"streamscale/clasp"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/provider"
	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
	"streamscale/traces"
)

// Step is a scale step given in advance: at At after the load starts, run
// Workers workers with even shares.
type Step struct {
	At      time.Duration
	Workers int
}

// TaskObs is one task's metrics over the last report (the vertical
// controllers' input).
type TaskObs struct {
	Worker     uint32
	Op         int
	InputRate  float64 // requests/s enqueued
	Throughput float64 // executions/s
	Queue      float64 // requests waiting
	LatencyMS  float64 // mean enqueue → execution finished
	CPUCores   float64 // CPU used, cores
	Millicores int     // allocated
}

// Allocator decides per-task allocations from per-task metrics: it returns
// the millicores of every task it changes, keyed by worker then operator
// (a nil map changes nothing). Any vertical controller fits behind it.
type Allocator func(now float64, tasks []TaskObs) map[uint32][]int

// Config configures a planner.
type Config struct {
	// Addr is the listen address (default 127.0.0.1:0); Public allows a
	// non-loopback one. Token is the shared token workers must present.
	Addr   string
	Public bool
	Token  string
	// App is the application.
	App ops.App
	// Seed seeds the input source.
	Seed uint64
	// Rate is a constant input rate, inputs/s; or Trace replays a trace,
	// one trace point per TraceStep (default 1 s), rates × RateMult
	// (default 1).
	Rate      float64
	Trace     *traces.Trace
	TraceStep time.Duration
	RateMult  float64
	// Duration is how long the load runs; Drain how long to wait for
	// completions after it (default 10 s).
	Duration, Drain time.Duration
	// Workers is the initial worker count (≥ 1) and Provider starts them.
	Workers  int
	Provider provider.Provider
	// Steps are scale steps; Controller "clasp" runs CLASP every Control
	// (default 1 s) instead, up to MaxWorkers (default 8). "none": only
	// the steps.
	Steps      []Step
	Controller string
	// NewPlacer, if set, builds the placement controller that runs every
	// Control when Controller is not "none" (any clasp.Planner: FaaSFlow,
	// Zhang24, DS2, HPA, the CLASP variants); nil with Controller "clasp"
	// runs CLASP with its default configuration.
	NewPlacer  func() (clasp.Planner, error)
	Control    time.Duration
	MaxWorkers int
	// Shares, if set, places the initial workers by share: Shares[i][o]
	// is worker i's share of operator o (as CLASP's φ); nil: even.
	Shares [][]float64
	// ExecCPU makes τ̄ of the placement controller's observation (CLASP's
	// Table 2 execution time) each task's CPU time per execution, its
	// quota's charge, instead of the wall time of its executions. Under a
	// quota that binds (a worker budget) the wall time includes the wait
	// for the quota, so a saturated worker's Σ N·τ̄ — the cost probe's W —
	// counts its slots' waiting, while an unsaturated worker's τ̄ is near
	// its CPU time: the model then sees a fraction of the demand. With
	// CPU time both sides of Eq. 1 are CPU, and W is the budget.
	ExecCPU bool
	// Allocate, if set, runs every Control: the vertical loop.
	Allocate Allocator
	// Heartbeat is the workers' beat interval (default 200 ms); a worker
	// missing Miss beats (default 5) is dead.
	Heartbeat time.Duration
	Miss      int
	// JoinTimeout bounds the wait for workers to say hello (default 30 s).
	JoinTimeout time.Duration
	// CheckpointInterval is the time between checkpoints of the workers'
	// keyed state (0: none, and a failover loses the dead workers' state:
	// see the package documentation); CheckpointTimeout bounds one
	// checkpoint, ingress pause included (default 5 s).
	CheckpointInterval time.Duration
	CheckpointTimeout  time.Duration
	// CheckpointMode is how a checkpoint is cut: ModeBarrier (the
	// default: barriers in the data, aligned at every task, the ingress
	// never stops) or ModePause (the ingress stops until every input in
	// flight completed). See the package documentation.
	CheckpointMode string
	// Rows, if set, receives one Row per second.
	Rows func(Row)
	// Log receives one line per notable event.
	Log io.Writer
}

func (c *Config) fill() error {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.TraceStep == 0 {
		c.TraceStep = time.Second
	}
	if c.RateMult == 0 {
		c.RateMult = 1
	}
	if c.Drain == 0 {
		c.Drain = 10 * time.Second
	}
	if c.Control == 0 {
		c.Control = time.Second
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = 8
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = 200 * time.Millisecond
	}
	if c.Miss == 0 {
		c.Miss = 5
	}
	if c.JoinTimeout == 0 {
		c.JoinTimeout = 30 * time.Second
	}
	if c.Controller == "" {
		c.Controller = "none"
	}
	if c.CheckpointTimeout == 0 {
		c.CheckpointTimeout = 5 * time.Second
	}
	if c.CheckpointMode == "" {
		c.CheckpointMode = ModeBarrier
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	switch {
	case len(c.App.Operators) == 0 || c.App.NewSource == nil:
		return fmt.Errorf("planner: app %q has no operators or no source", c.App.Name)
	case c.Trace == nil && !(c.Rate >= 0 && c.Rate < 1e8):
		return fmt.Errorf("planner: rate %v, want 0..1e8 inputs/s", c.Rate)
	case !(c.RateMult > 0) || math.IsInf(c.RateMult, 0):
		return fmt.Errorf("planner: rate multiplier %v, want > 0", c.RateMult)
	case c.Duration < 0 || c.Drain < 0 || c.TraceStep < 0:
		return fmt.Errorf("planner: negative duration")
	case c.Workers < 1 || c.Workers > wire.MaxMembers:
		return fmt.Errorf("planner: %d workers, want 1..%d", c.Workers, wire.MaxMembers)
	case c.Provider == nil:
		return errors.New("planner: no worker provider")
	case c.Controller != "none" && c.Controller != "clasp" && c.NewPlacer == nil:
		return fmt.Errorf("planner: controller %q, want none, clasp, or a NewPlacer", c.Controller)
	case c.MaxWorkers < 1:
		return fmt.Errorf("planner: max workers %d, want ≥ 1", c.MaxWorkers)
	case c.CheckpointInterval < 0 || c.CheckpointTimeout < 0:
		return fmt.Errorf("planner: checkpoint interval %v and timeout %v, want ≥ 0", c.CheckpointInterval, c.CheckpointTimeout)
	case c.CheckpointMode != ModeBarrier && c.CheckpointMode != ModePause:
		return fmt.Errorf("planner: checkpoint mode %q, want %s or %s", c.CheckpointMode, ModeBarrier, ModePause)
	}
	for i, s := range c.Steps {
		if s.Workers < 1 || s.Workers > wire.MaxMembers || s.At < 0 {
			return fmt.Errorf("planner: scale step %d (%v:%d), want a time ≥ 0 and 1..%d workers", i, s.At, s.Workers, wire.MaxMembers)
		}
	}
	return nil
}

// member is a connected worker.
type member struct {
	id       uint32
	addr     string
	out      *outbox
	lastBeat time.Time
	// beatAt is when the last beat was read (zero before the first);
	// unlike lastBeat, the heartbeat watch's stall compensation does not
	// move it, so the gaps between beats are as received.
	beatAt  time.Time
	metrics wire.Metrics
	fresh   bool // metrics not yet read by the controller
	leaving bool // drained; stopped after the current epoch
	dead    bool
	cancel  context.CancelFunc
	// placed: this connection was sent a placement broadcast. A worker
	// restarted under a dead worker's ID before the failover is not: the
	// owner table still names the dead worker, and the ingress must not
	// feed the newcomer the dead worker's key groups with empty state.
	placed bool
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

// input is one input's record in the planner's log.
type input struct {
	key, seq uint64
	intended int64 // ns after the load started
	attempt  uint8
	done     bool
	redo     bool // complete, rolled back by a restore and replayed: its completion is awaited, not counted
	w        wire.Weight
	ms       float32 // end-to-end latency, once done
	payload  []byte  // kept for replay: until complete, or with checkpoints until a checkpoint covers it
}

// inputID encodes an input's index and attempt as a record's Input.
func inputID(idx int, attempt uint8) uint64 { return uint64(attempt)<<56 | uint64(idx+1) }

// Planner is a running planner.
type Planner struct {
	cfg     Config
	sources []int
	start   time.Time // load start

	reconf sync.Mutex // one reconfiguration at a time

	mu        sync.Mutex
	members   map[uint32]*member
	epoch     uint64
	owners    [][ops.KeyGroups]uint32
	ins       []input
	seqs      map[uint64]uint64
	completed uint64
	dup       uint64
	lost      uint64 // inputs dropped at the ingress (no live owner)
	lat       []float64
	allLat    []float64
	secOffer  int
	migWait   map[uint32]bool
	migStart  time.Time
	migRep    []wire.Migrated
	migDone   chan struct{}
	migs      []Migration
	joined    chan struct{}
	refused   uint64
	rows      []Row
	failures  int
	beatGaps  []float64       // ms between consecutive beats of a member, as read
	placed    map[uint32]bool // members of the last placement
	target    int             // the worker count asked for last
	lastDone  time.Duration   // last completion, after the start
	// The control window (kept only with Config.Allocate): latencies and
	// offered inputs since the last TakeWindow.
	winLat   []float64
	winOffer int
	winOpen  int  // inputs before this index are complete
	catchUp  bool // the Allocator's rounds are catch-up rounds (control)
	// Checkpoints (checkpoint.go): the last complete one (the empty state
	// covering no input until the first completes), the one in progress,
	// the ingress pause, inputs [0, sent) sent.
	ck       *ckpt
	ckRun    *ckRun
	ckNext   uint64
	ckPaused bool
	failing  int // failovers between marking the dead and restoring
	ckOpen   int // inputs before this index are complete (checkpoint drain)
	sent     int
	redoOpen int // replayed inputs that had completed, not complete again
	ckStats  []CheckpointStat
	restores []Restore
	replayed int
	ckHook   func(id uint64) // tests: called before the snapshot requests go out
}

// Migration is one reconfiguration's measurements.
type Migration struct {
	Epoch       uint64  `json:"epoch"`
	AtS         float64 `json:"at_s"`
	From        int     `json:"from_workers"`
	To          int     `json:"to_workers"`
	Reason      string  `json:"reason"`
	Moves       int     `json:"moves"`
	PlannerMS   float64 `json:"planner_ms"`
	PauseMSMax  float64 `json:"worker_pause_ms_max"`
	WaitMSMax   float64 `json:"worker_wait_ms_max"`
	MovedKeys   uint64  `json:"moved_keys"`
	MovedBytes  uint64  `json:"moved_bytes"`
	MovedQueued uint64  `json:"moved_queued"`
	Complete    bool    `json:"complete"`
	// Pauses are every reporting worker's pause, ms, by worker ID.
	Pauses []WorkerPause `json:"worker_pauses"`
}

// WorkerPause is one worker's part of a migration.
type WorkerPause struct {
	Worker  uint32  `json:"worker"`
	PauseMS float64 `json:"pause_ms"`
	WaitMS  float64 `json:"wait_ms"`
}

// New returns a planner or an error for a bad configuration.
func New(cfg Config) (*Planner, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	p := &Planner{cfg: cfg, members: map[uint32]*member{}, seqs: map[uint64]uint64{}, joined: make(chan struct{}, 1), ck: &ckpt{state: map[uint32]map[uint64][]byte{}}}
	hasIn := make([]bool, len(cfg.App.Operators))
	for _, e := range cfg.App.Edges {
		if e[1] < 0 || e[1] >= len(hasIn) || e[0] < 0 || e[0] >= len(hasIn) {
			return nil, fmt.Errorf("planner: app %s: edge %v names a missing operator", cfg.App.Name, e)
		}
		hasIn[e[1]] = true
	}
	for o, h := range hasIn {
		if !h {
			p.sources = append(p.sources, o)
		}
	}
	if len(p.sources) == 0 {
		return nil, fmt.Errorf("planner: app %s has no source operator", cfg.App.Name)
	}
	return p, nil
}

func (p *Planner) logf(format string, args ...any) {
	fmt.Fprintf(p.cfg.Log, "planner: "+format+"\n", args...)
}

// Run listens on Config.Addr and runs the load (see Serve).
func (p *Planner) Run(ctx context.Context, ready func(addr string)) (Result, error) {
	ln, err := transport.Listen(p.cfg.Addr, p.cfg.Public)
	if err != nil {
		return Result{}, fmt.Errorf("planner: %w", err)
	}
	return p.Serve(ctx, ln, ready)
}

// Serve starts the workers through the provider, waits for them to join,
// places the application, runs the load for Duration with the scale steps
// and the controllers, waits up to Drain for the inputs to complete and
// returns the result. ready, if not nil, is called with the listen address
// before the workers are started.
func (p *Planner) Serve(ctx context.Context, ln net.Listener, ready func(addr string)) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return transport.Serve(gctx, ln, p.handleWorker, p.cfg.Log) })
	res, err := p.run(gctx, ln.Addr().String(), ready)
	cancel()
	if werr := g.Wait(); err == nil && werr != nil && !errors.Is(werr, context.Canceled) {
		err = werr
	}
	return res, err
}

func (p *Planner) run(ctx context.Context, addr string, ready func(string)) (Result, error) {
	if ready != nil {
		ready(addr)
	}
	if _, err := p.cfg.Provider.Scale(ctx, p.cfg.Workers); err != nil {
		return Result{}, fmt.Errorf("planner: start %d workers: %w", p.cfg.Workers, err)
	}
	if err := p.awaitMembers(ctx, p.cfg.Workers); err != nil {
		return Result{}, err
	}
	p.mu.Lock()
	ids := p.liveIDs()
	p.target = len(ids)
	p.owners = assign(nil, len(p.cfg.App.Operators), ids, p.cfg.Shares)
	p.broadcastPlacement(nil)
	p.mu.Unlock()
	p.logf("placed %s on %d workers", p.cfg.App.Name, len(ids))

	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	p.start = time.Now()
	var wg sync.WaitGroup
	loadDone := make(chan struct{})
	wg.Go(func() { p.generate(lctx); close(loadDone) })
	wg.Go(func() { p.seconds(lctx) })
	wg.Go(func() { p.watchHeartbeats(lctx) })
	ctlStop, ctlDone := make(chan struct{}), make(chan struct{})
	wg.Go(func() { p.control(lctx, ctlStop); close(ctlDone) })
	stepStop, stepDone := make(chan struct{}), make(chan struct{})
	wg.Go(func() { p.steps(lctx, stepStop); close(stepDone) })
	wg.Go(func() { p.rejoin(lctx) })
	ckStop, ckDone := make(chan struct{}), make(chan struct{})
	wg.Go(func() { p.checkpoints(lctx, ckStop); close(ckDone) })
	select {
	case <-loadDone:
	case <-ctx.Done():
	}
	// Drain: wait for the inputs in flight.
	deadline := time.Now().Add(p.cfg.Drain)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		p.mu.Lock()
		open := uint64(len(p.ins)) - p.completed - p.lost + uint64(p.redoOpen)
		p.mu.Unlock()
		if open == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Scale steps due by now and the controller's decisions finish their
	// migrations; a rejoin or failover in progress too (reconf): a run
	// does not end in the middle of a migration.
	close(stepStop)
	<-stepDone
	close(ctlStop)
	<-ctlDone
	p.awaitReconfiguration()
	close(ckStop)
	<-ckDone
	p.finalCheckpoint(lctx)
	stopLoad()
	wg.Wait()
	p.mu.Lock()
	partial := p.secOffer > 0 || len(p.lat) > 0
	p.mu.Unlock()
	if partial {
		p.closeRow(time.Since(p.start).Seconds())
	}
	res := p.result()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

// Window is what the load did over one control window: since the previous
// TakeWindow (or the load's start).
type Window struct {
	// Offered counts the inputs whose intended send time fell in the
	// window.
	Offered int
	// LatencyMS holds the end-to-end latency of every input completed in
	// the window, ms, ascending: completion minus the intended send time,
	// so an input the generator sent late still counts from when it was
	// due (corrected for coordinated omission).
	LatencyMS []float64
	// OpenAgeMS holds, for every input due by the window's end and not
	// complete, its age then, ms (ascending): a lower bound of its
	// latency, so a window in which a backlog completes nothing still
	// shows it.
	OpenAgeMS []float64
	// CatchUp marks a window taken in a catch-up round: one the Allocator
	// gets after the run's drain for a Control boundary of the load that
	// had no round (see control). Such rounds run back to back, so the
	// first takes what the load's last rounds left and the others nothing
	// (no input offered, no latency, nothing open): an empty catch-up
	// window describes no interval of the load, and a consumer must not
	// count it as one that met its latency objective.
	CatchUp bool `json:",omitempty"`
}

// TakeWindow returns the window since the previous call and starts a new
// one. Windows are kept only when Config.Allocate is set (the vertical
// loop reads them from its Allocator); otherwise the window is empty.
func (p *Planner) TakeWindow() Window {
	p.mu.Lock()
	w := Window{Offered: p.winOffer, LatencyMS: p.winLat, CatchUp: p.catchUp}
	p.winOffer, p.winLat = 0, nil
	if p.cfg.Allocate != nil && !p.start.IsZero() {
		now := time.Since(p.start).Nanoseconds()
		for p.winOpen < len(p.ins) && p.ins[p.winOpen].done {
			p.winOpen++
		}
		for i := p.winOpen; i < len(p.ins); i++ {
			if in := &p.ins[i]; !in.done && in.intended <= now {
				w.OpenAgeMS = append(w.OpenAgeMS, float64(now-in.intended)/1e6)
			}
		}
	}
	p.mu.Unlock()
	slices.Sort(w.LatencyMS)
	slices.Sort(w.OpenAgeMS)
	return w
}

// liveIDs returns the live, non-leaving members' IDs ascending (p.mu held).
func (p *Planner) liveIDs() []uint32 {
	var ids []uint32
	for id, m := range p.members {
		if !m.dead && !m.leaving {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// awaitMembers waits until n live workers have joined.
func (p *Planner) awaitMembers(ctx context.Context, n int) error {
	deadline := time.NewTimer(p.cfg.JoinTimeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		have := len(p.liveIDs())
		p.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("planner: %d of %d workers joined within %v", have, n, p.cfg.JoinTimeout)
		case <-p.joined:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// broadcastPlacement sends the current owners with p.epoch+1 to every live
// member (p.mu held). moves nil means a fresh placement.
func (p *Planner) broadcastPlacement(moves []wire.Move) wire.Placement {
	p.epoch++
	pl := wire.Placement{Epoch: p.epoch, Owners: slices.Clone(p.owners), Moves: moves}
	ids := make([]uint32, 0, len(p.members))
	for id, m := range p.members {
		if !m.dead {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	p.placed = map[uint32]bool{}
	for _, id := range ids {
		pl.Members = append(pl.Members, wire.Member{ID: id, Addr: p.members[id].addr})
		p.placed[id] = true
		p.members[id].placed = true
	}
	for _, id := range ids {
		p.members[id].out.frame(pl.Append)
	}
	return pl
}

// placedIDs returns the live, non-leaving members of the last placement
// (p.mu held).
func (p *Planner) placedIDs() []uint32 {
	var ids []uint32
	for _, id := range p.liveIDs() {
		if p.placed[id] && p.members[id].placed {
			ids = append(ids, id)
		}
	}
	return ids
}

// rejoin places workers that joined after a failure while the cluster is
// below its target size.
func (p *Planner) rejoin(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		placed, live, target := len(p.placedIDs()), len(p.liveIDs()), p.target
		p.mu.Unlock()
		if live > placed && placed < target {
			if err := p.scale(ctx, min(live, target), nil, "rejoin"); err != nil {
				p.logf("rejoin: %v", err)
			}
		}
	}
}

// handleWorker serves one worker's stream.
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
		return
	}
	p.mu.Lock()
	id := h.ID
	if id == wire.NoID {
		id = 0
		for p.members[id] != nil && !p.members[id].dead {
			id++
		}
	}
	if old := p.members[id]; old != nil && !old.dead {
		p.mu.Unlock()
		p.refuse(fmt.Errorf("planner: refused worker %d at %s: that ID is live", id, h.Addr))
		return
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := &member{id: id, addr: h.Addr, out: &outbox{kick: make(chan struct{}, 1)}, lastBeat: time.Now(), cancel: cancel}
	p.members[id] = m
	welcome := wire.Hello{ID: id, Epoch: p.epoch, Token: p.cfg.Token}
	m.out.frame(welcome.Append)
	if p.owners != nil {
		pl := wire.Placement{Epoch: p.epoch, Owners: slices.Clone(p.owners)}
		for _, mid := range p.sortedMembers() {
			pl.Members = append(pl.Members, wire.Member{ID: mid, Addr: p.members[mid].addr})
		}
		m.out.frame(pl.Append)
	}
	p.mu.Unlock()
	p.logf("worker %d joined from %s", id, h.Addr)
	select {
	case p.joined <- struct{}{}:
	default:
	}
	// The stream belongs to this handler: once it returns, net/http forbids
	// writes, so the send loop must have ended by then.
	sendDone := make(chan struct{})
	go func() { defer close(sendDone); p.sendLoop(mctx, m, s) }()
	defer func() { cancel(); <-sendDone }()
	var entries []wire.DoneEntry
	for {
		k, b, buf, err = wire.ReadFrame(s.R, buf)
		if err != nil {
			if mctx.Err() == nil && !errors.Is(err, io.EOF) {
				p.logf("worker %d: stream: %v", id, err)
			}
			p.mu.Lock()
			if p.members[id] == m && !m.dead {
				m.lastBeat = time.Time{} // the heartbeat watch declares it dead
			}
			p.mu.Unlock()
			return
		}
		switch k {
		case wire.KindHeartbeat:
			var hb wire.Heartbeat
			if hb, err = wire.DecodeHeartbeat(b); err == nil && hb.From == id {
				p.mu.Lock()
				now := time.Now()
				if !m.beatAt.IsZero() {
					p.noteBeatGap(now.Sub(m.beatAt))
				}
				m.lastBeat, m.beatAt = now, now
				p.mu.Unlock()
			}
		case wire.KindMetrics:
			var mt wire.Metrics
			if mt, err = wire.DecodeMetrics(b); err == nil {
				if len(mt.Tasks) != len(p.cfg.App.Operators) || len(mt.Edges) != len(p.cfg.App.Edges) || mt.From != id {
					err = fmt.Errorf("metrics from %d for %d tasks and %d edges", mt.From, len(mt.Tasks), len(mt.Edges))
				} else {
					p.mu.Lock()
					m.metrics, m.fresh = mt, true
					p.mu.Unlock()
				}
			}
		case wire.KindDone:
			var d wire.Done
			if d, err = wire.DecodeDone(b, entries); err == nil {
				entries = d.Entries
				p.complete(d.Entries)
			}
		case wire.KindMigrated:
			var r wire.Migrated
			if r, err = wire.DecodeMigrated(b); err == nil && r.From == id {
				p.migrated(r)
			}
		case wire.KindSnapshot:
			var sn wire.Snapshot
			if sn, err = wire.DecodeSnapshot(b); err == nil {
				err = p.onSnapshot(id, sn)
			}
		case wire.KindSnapshotDone:
			var sd wire.SnapshotDone
			if sd, err = wire.DecodeSnapshotDone(b); err == nil {
				err = p.onSnapshotDone(id, sd)
			}
		default:
			err = fmt.Errorf("unexpected %v", k)
		}
		if err != nil {
			p.refuse(fmt.Errorf("planner: worker %d: %w", id, err))
		}
	}
}

func (p *Planner) sortedMembers() []uint32 {
	ids := make([]uint32, 0, len(p.members))
	for id, m := range p.members {
		if !m.dead {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (p *Planner) refuse(err error) {
	p.mu.Lock()
	p.refused++
	p.mu.Unlock()
	p.logf("%v", err)
}

// sendLoop writes a member's outbox to its stream.
func (p *Planner) sendLoop(ctx context.Context, m *member, s *transport.Stream) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.out.kick:
		case <-tick.C:
		}
		p.mu.Lock()
		o := m.out
		if o.open {
			o.buf = o.bw.Finish(o.buf)
			o.open = false
		}
		out := o.buf
		o.buf, o.spare = o.spare[:0], nil
		o.queued = 0
		p.mu.Unlock()
		if len(out) == 0 {
			p.mu.Lock()
			o.spare = out
			p.mu.Unlock()
			continue
		}
		if err := s.Write(out); err != nil {
			p.logf("worker %d: write: %v", m.id, err)
			return
		}
		p.mu.Lock()
		o.spare = out[:0]
		p.mu.Unlock()
	}
}

// complete adds returned completion weight (a Done frame).
func (p *Planner) complete(es []wire.DoneEntry) {
	now := time.Since(p.start)
	p.mu.Lock()
	defer p.mu.Unlock()
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

// migrated records a worker's migration report.
func (p *Planner) migrated(r wire.Migrated) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.migWait == nil || r.Epoch != p.epoch || !p.migWait[r.From] {
		return
	}
	delete(p.migWait, r.From)
	p.migRep = append(p.migRep, r)
	if len(p.migWait) == 0 {
		close(p.migDone)
	}
}

// send routes one input attempt to the owners of its source operators
// (p.mu held).
func (p *Planner) send(idx int) {
	in := &p.ins[idx]
	ce, back, _ := wire.Split(0, len(p.sources))
	in.w = back
	kg := ops.KeyGroup(in.key)
	for _, o := range p.sources {
		owner := p.owners[o][kg]
		m := p.members[owner]
		if m == nil || m.dead || !m.placed {
			// No live owner: the weight of this copy never comes back;
			// the input stays open and is replayed after the failover.
			continue
		}
		ob := m.out
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

// generate is the open-loop load generator. Input k of a segment of
// constant rate r starting at s has the intended time s + k/r (computed,
// not accumulated, so no rounding drift); a segment is one trace point, or
// the whole run for a constant rate. Segment i spans [i·step, (i+1)·step),
// computed from its index: recovering the index from a boundary by
// division could land one below it for a step that is not a binary
// fraction (3 × 0.01 / 0.01 < 3) and then loop on that boundary forever.
func (p *Planner) generate(ctx context.Context) {
	src := p.cfg.App.NewSource(p.cfg.Seed)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	end := p.cfg.Duration.Seconds()
	seg, k := 0, 0
	segStart, segEnd, segRate := p.segment(seg)
	// Size the input log once: growing a log of millions of inputs by
	// doubling copies it again and again inside the generator's lock.
	p.mu.Lock()
	p.ins = slices.Grow(p.ins, min(p.inputBound(), 50_000_000))
	p.mu.Unlock()
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := time.Since(p.start).Seconds()
		p.mu.Lock()
		for segStart < end {
			t := segEnd
			if segRate > 0 {
				t = segStart + float64(k)/segRate
			}
			if t >= segEnd { // next trace point
				seg, k = seg+1, 0
				segStart, segEnd, segRate = p.segment(seg)
				continue
			}
			if t > now || t >= end {
				break
			}
			var key uint64
			key, buf = src.Next(buf)
			seq := p.seqs[key]
			p.seqs[key] = seq + 1
			p.ins = append(p.ins, input{key: key, seq: seq, intended: int64(t * 1e9), payload: slices.Clone(buf)})
			p.secOffer++
			if p.cfg.Allocate != nil {
				p.winOffer++
			}
			p.flush() // nothing while a checkpoint pauses the ingress
			k++
		}
		p.mu.Unlock()
		if segStart >= end || (segRate == 0 && math.IsInf(segEnd, 1)) || segStart+float64(k)/segRate >= end {
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

// noteBeatGap records the time between two beats of one member (p.mu
// held).
func (p *Planner) noteBeatGap(d time.Duration) {
	p.beatGaps = append(p.beatGaps, float64(d)/float64(time.Millisecond))
}

// watchHeartbeats declares dead the workers that missed Miss beats and
// fails over. A stall of the planner itself — its process not scheduled
// on a busy host, or p.mu held — is not counted against the workers: the
// beats of that time may wait unread in its sockets, and the watch would
// otherwise run first and find every worker silent. A watch that runs
// more than half a beat interval late moves every member's last beat on
// by its lateness (a cut stream's zero time stays: that worker is gone).
func (p *Planner) watchHeartbeats(ctx context.Context) {
	t := time.NewTicker(p.cfg.Heartbeat)
	defer t.Stop()
	limit := time.Duration(p.cfg.Miss) * p.cfg.Heartbeat
	last := time.Now() // the end of the previous watch
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		now := time.Now()
		if stall := now.Sub(last) - p.cfg.Heartbeat; stall > p.cfg.Heartbeat/2 {
			for _, m := range p.members {
				if !m.lastBeat.IsZero() {
					if m.lastBeat = m.lastBeat.Add(stall); m.lastBeat.After(now) {
						m.lastBeat = now
					}
				}
			}
		}
		var dead []uint32
		for id, m := range p.members {
			if !m.dead && !m.leaving && now.Sub(m.lastBeat) > limit {
				dead = append(dead, id)
			}
		}
		p.mu.Unlock()
		if len(dead) > 0 {
			p.failover(ctx, dead)
		}
		last = time.Now()
	}
}

// awaitReconfiguration returns once no reconfiguration (scale, failover,
// checkpoint) is in progress.
func (p *Planner) awaitReconfiguration() {
	p.reconf.Lock()
	defer p.reconf.Unlock()
}

// steps applies the scale steps at their times until stop is closed (at
// the end of the drain); then it still applies the steps already due, in
// order, each to the end of its migration. (A starved process may run a
// step's timer late, after the load even; the step was due during the run
// and is applied, not dropped or cut off.)
func (p *Planner) steps(ctx context.Context, stop <-chan struct{}) {
	steps := slices.Clone(p.cfg.Steps)
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At < steps[j].At })
	for _, s := range steps {
		due := time.NewTimer(time.Until(p.start.Add(s.At)))
		select {
		case <-ctx.Done():
			due.Stop()
			return
		case <-stop:
			due.Stop()
			if time.Now().Before(p.start.Add(s.At)) {
				return
			}
		case <-due.C:
		}
		if err := p.scale(ctx, s.Workers, nil, fmt.Sprintf("scale step at %v", s.At)); err != nil {
			p.logf("scale step at %v to %d workers: %v", s.At, s.Workers, err)
		}
	}
}

// Result is a run's outcome.
type Result struct {
	App        string  `json:"app"`
	Inputs     uint64  `json:"inputs"`
	Completed  uint64  `json:"completed"`
	Lost       uint64  `json:"lost"`
	Duplicated uint64  `json:"duplicated"`
	P50MS      float64 `json:"p50_ms"`
	P95MS      float64 `json:"p95_ms"`
	P99MS      float64 `json:"p99_ms"`
	// P50InCheckpointMS, P95InCheckpointMS and P99InCheckpointMS are over
	// the inputs due while a checkpoint was being taken (its start to its
	// end, CheckpointStat.DurationMS), the *OutsideCheckpointMS over the
	// others (0 without such inputs): a comparison within one run.
	P50InCheckpointMS      float64 `json:"p50_in_checkpoint_ms"`
	P50OutsideCheckpointMS float64 `json:"p50_outside_checkpoint_ms"`
	P95InCheckpointMS      float64 `json:"p95_in_checkpoint_ms"`
	P99InCheckpointMS      float64 `json:"p99_in_checkpoint_ms"`
	P95OutsideCheckpointMS float64 `json:"p95_outside_checkpoint_ms"`
	P99OutsideCheckpointMS float64 `json:"p99_outside_checkpoint_ms"`
	Workers                int     `json:"workers"`
	Failures               int     `json:"failures"`
	// BeatGapMSP99 and BeatGapMSMax are the 99th percentile and the
	// largest time between two consecutive heartbeats of one worker, as
	// the planner read them (0 without two beats): how close a worker
	// came to being declared dead (Config.Miss × Config.Heartbeat).
	BeatGapMSP99 float64     `json:"beat_gap_ms_p99"`
	BeatGapMSMax float64     `json:"beat_gap_ms_max"`
	Refused      uint64      `json:"refused_frames"`
	Migrations   []Migration `json:"migrations"`
	// MigrationPlannerMS is the longest planner duration;
	// MigrationWorkerPauseMSMax the longest worker pause, over all
	// migrations (0 without migrations).
	MigrationPlannerMS        float64 `json:"migration_planner_ms"`
	MigrationWorkerPauseMSMax float64 `json:"migration_worker_pause_ms_max"`
	// ElapsedS is the time from the load's start to the last completion;
	// ThroughputPerS is Completed / ElapsedS.
	ElapsedS       float64 `json:"elapsed_s"`
	ThroughputPerS float64 `json:"throughput_per_s"`
	// Checkpoints counts the complete checkpoints and CheckpointsDiscarded
	// the others; CheckpointMSMax and CheckpointMSMean are their ingress
	// pauses, CheckpointDrainMSMax the longest wait for the inputs in
	// flight within one, CheckpointBytesMax and CheckpointKeysMax the
	// largest. RestoredGroups counts the dead workers' key groups restored
	// by failovers and Replayed the inputs sent again by them (with or
	// without checkpoints).
	// CheckpointMode is Config.CheckpointMode ("" without checkpoints);
	// CheckpointDurationMSMean is the mean start → completion of the
	// complete checkpoints, CheckpointAlignMSMax the longest alignment of
	// one task and CheckpointSnapshotMSMax the longest state copy of one
	// worker in one checkpoint (see CheckpointStat).
	CheckpointMode           string           `json:"checkpoint_mode,omitempty"`
	CheckpointDurationMSMean float64          `json:"checkpoint_duration_ms_mean"`
	CheckpointAlignMSMax     float64          `json:"checkpoint_align_ms_max"`
	CheckpointSnapshotMSMax  float64          `json:"checkpoint_snapshot_ms_max"`
	Checkpoints              int              `json:"checkpoints"`
	CheckpointsDiscarded     int              `json:"checkpoints_discarded"`
	CheckpointMSMax          float64          `json:"checkpoint_ms_max"`
	CheckpointMSMean         float64          `json:"checkpoint_ms_mean"`
	CheckpointDrainMSMax     float64          `json:"checkpoint_drain_ms_max"`
	CheckpointBytesMax       uint64           `json:"checkpoint_bytes_max"`
	CheckpointKeysMax        uint64           `json:"checkpoint_keys_max"`
	RestoredGroups           int              `json:"restored_groups"`
	Replayed                 int              `json:"replayed"`
	CheckpointLog            []CheckpointStat `json:"checkpoint_log"`
	Restores                 []Restore        `json:"restores"`
	Rows                     []Row            `json:"-"`
}

func (p *Planner) result() Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Result{App: p.cfg.App.Name, Inputs: uint64(len(p.ins)), Completed: p.completed, Duplicated: p.dup, Workers: len(p.liveIDs()), Failures: p.failures, Refused: p.refused, Migrations: slices.Clone(p.migs), Rows: slices.Clone(p.rows)}
	r.Lost = r.Inputs - r.Completed
	r.ElapsedS = p.lastDone.Seconds()
	if r.ElapsedS > 0 {
		r.ThroughputPerS = float64(r.Completed) / r.ElapsedS
	}
	if p.cfg.CheckpointInterval > 0 {
		r.CheckpointMode = p.cfg.CheckpointMode
	}
	lat := slices.Clone(p.allLat)
	slices.Sort(lat)
	r.P50MS, r.P95MS, r.P99MS = quantile(lat, 0.5), quantile(lat, 0.95), quantile(lat, 0.99)
	gaps := slices.Clone(p.beatGaps)
	slices.Sort(gaps)
	r.BeatGapMSP99 = quantile(gaps, 0.99)
	if len(gaps) > 0 {
		r.BeatGapMSMax = gaps[len(gaps)-1]
	}
	for _, m := range r.Migrations {
		r.MigrationPlannerMS = max(r.MigrationPlannerMS, m.PlannerMS)
		r.MigrationWorkerPauseMSMax = max(r.MigrationWorkerPauseMSMax, m.PauseMSMax)
	}
	r.CheckpointLog, r.Restores, r.Replayed = append([]CheckpointStat{}, p.ckStats...), append([]Restore{}, p.restores...), p.replayed
	for _, c := range r.CheckpointLog {
		if !c.Complete {
			r.CheckpointsDiscarded++
			continue
		}
		r.Checkpoints++
		r.CheckpointMSMax = max(r.CheckpointMSMax, c.PauseMS)
		r.CheckpointMSMean += c.PauseMS
		r.CheckpointDurationMSMean += c.DurationMS
		r.CheckpointAlignMSMax = max(r.CheckpointAlignMSMax, c.AlignMS)
		r.CheckpointSnapshotMSMax = max(r.CheckpointSnapshotMSMax, c.SnapshotMS)
		r.CheckpointDrainMSMax = max(r.CheckpointDrainMSMax, c.DrainMS)
		r.CheckpointBytesMax = max(r.CheckpointBytesMax, c.Bytes)
		r.CheckpointKeysMax = max(r.CheckpointKeysMax, c.Keys)
	}
	if r.Checkpoints > 0 {
		r.CheckpointMSMean /= float64(r.Checkpoints)
		r.CheckpointDurationMSMean /= float64(r.Checkpoints)
	}
	for _, rs := range r.Restores {
		r.RestoredGroups += rs.Groups
	}
	if len(r.CheckpointLog) > 0 {
		var in, out []float64
		c := 0 // checkpoints are in start order
		for i := range p.ins {
			x := &p.ins[i]
			if !x.done {
				continue
			}
			for c < len(r.CheckpointLog) && int64((r.CheckpointLog[c].AtS+r.CheckpointLog[c].DurationMS/1e3)*1e9) < x.intended {
				c++
			}
			if c < len(r.CheckpointLog) && int64(r.CheckpointLog[c].AtS*1e9) <= x.intended {
				in = append(in, float64(x.ms))
			} else {
				out = append(out, float64(x.ms))
			}
		}
		slices.Sort(in)
		slices.Sort(out)
		r.P50InCheckpointMS, r.P50OutsideCheckpointMS = quantile(in, 0.5), quantile(out, 0.5)
		r.P95InCheckpointMS, r.P99InCheckpointMS = quantile(in, 0.95), quantile(in, 0.99)
		r.P95OutsideCheckpointMS, r.P99OutsideCheckpointMS = quantile(out, 0.95), quantile(out, 0.99)
	}
	return r
}

// quantile is the nearest-rank quantile of sorted xs (0 when empty).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}
