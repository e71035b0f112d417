package planner

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"gonum.org/v1/gonum/stat"

	"streamscale/clasp"
	"streamscale/serve/runtime/ckptstore"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/planner/core"
	"streamscale/serve/runtime/provider"
	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
	"streamscale/traces"
)

// Step is a scale step given in advance: at At after the load starts, run
// Workers workers with even shares.
type Step = core.Step

// Migration is one reconfiguration's measurements.
type Migration = core.Migration

// WorkerPause is one worker's part of a migration.
type WorkerPause = core.WorkerPause

// CheckpointStat is one checkpoint's measurements.
type CheckpointStat = core.CheckpointStat

// Restore is one failover that restored a checkpoint.
type Restore = core.Restore

// Restart is the restart strategy when every worker died (Config.Restart).
type Restart = core.Restart

// Restart strategies (Restart.Strategy).
const (
	RestartNone        = core.RestartNone
	RestartFixedDelay  = core.RestartFixedDelay
	RestartFailureRate = core.RestartFailureRate
)

// ErrJobFailed is the error of a run whose job failed: every worker died
// and the restart strategy allowed no restart. The Result then has
// Status "failed" and the reason.
var ErrJobFailed = errors.New("planner: job failed")

// Checkpoint modes (Config.CheckpointMode).
const (
	ModeBarrier = core.ModeBarrier
	ModePause   = core.ModePause
)

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
	// Store, if set, keeps every complete checkpoint outside the planner
	// (a ckptstore.Store: a directory), written in the background as each
	// completes, so that a planner restarted after its own death resumes
	// the job (Restore; see "Planner restart").
	Store CheckpointStore
	// Restore, if set, resumes the job from this checkpoint, persisted by
	// a planner of the same job (Job(cfg) must equal its Job) that died:
	// the workers start from its state and the source from its cut.
	// RestoreFrom names where it was read (for the log and the result).
	Restore     *ckptstore.Checkpoint
	RestoreFrom string
	// Restart is the restart strategy when every worker died (see
	// core.Restart). Default: with checkpoints fixed-delay, 3 attempts,
	// 1 s apart; without them none (a restart would lose every key
	// group's state), as Flink's defaults.
	Restart Restart
	// Rows, if set, receives one Row per second.
	Rows func(Row)
	// Log receives one line per notable event.
	Log io.Writer
	// Clock is the shell's time (nil: Real). The core gets its readings
	// as values.
	Clock Clock
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
	switch {
	case c.Restart.Strategy != "":
	case c.CheckpointInterval > 0:
		c.Restart = Restart{Strategy: RestartFixedDelay, Attempts: 3, Delay: time.Second}
	default:
		c.Restart = Restart{Strategy: RestartNone}
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Clock == nil {
		c.Clock = Real
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

// CheckpointStore keeps complete checkpoints outside the planner
// (ckptstore.Store). Save returns where it wrote c; it is called from one
// goroutine at a time and must not change c.
type CheckpointStore interface {
	Save(c *ckptstore.Checkpoint) (string, error)
}

// Job describes the job cfg runs, as a persisted checkpoint records it: the
// application, the seed and the load (rate or trace, trace step and
// multiplier, duration), which fix the inputs and their intended times. A
// restore refuses a checkpoint whose Job differs.
func Job(cfg Config) string {
	load := fmt.Sprintf("rate=%g", cfg.Rate)
	if tr := cfg.Trace; tr != nil {
		h := fnv.New64a()
		for i := range tr.Len() {
			binary.Write(h, binary.LittleEndian, math.Float64bits(tr.Rate(i))) //nolint:errcheck // a hash does not fail
		}
		load = fmt.Sprintf("trace=%s points=%d rates=%016x step=%v mult=%g", tr.Name, tr.Len(), h.Sum64(), cfg.TraceStep, cfg.RateMult)
	}
	return fmt.Sprintf("app=%s operators=%d seed=%d %s duration=%v", cfg.App.Name, len(cfg.App.Operators), cfg.Seed, load, cfg.Duration)
}

// Planner is a running planner: the shell around a core.Core. It owns
// the listener's streams, the goroutines (ticks, the load generator, the
// provider, the controllers), the input log and the clock; it feeds the
// core events under mu and performs the actions the core returns.
type Planner struct {
	cfg     Config
	clock   Clock
	sources []int
	origin  time.Time // the core's times are since it
	start   time.Time // the load's start (started)

	mu        sync.Mutex
	core      *core.Core
	changed   chan struct{} // closed and replaced after every step
	conns     map[uint64]*conn
	byID      map[uint32]*conn // bound members
	nextConn  uint64
	route     [][ops.KeyGroups]*conn // the ingress's owner streams (nil: none live)
	epoch     uint64
	provQ     []core.ScaleWorkers // provider requests, in order
	provBusy  bool
	provKick  chan struct{}
	scaleWait map[uint64]chan error
	nextReq   uint64
	started   bool
	startErr  error
	failErr   error         // the job failed after the start (core.Fail)
	failed    chan struct{} // closed on failErr
	deaths    uint32        // members found dead so far
	loadEnded bool          // the load and its drain are over
	stopped   bool          // the run ended: no more events
	refused   uint64
	rows      []Row
	ingress
	gen      *loadGen
	job      string
	resumeAt time.Duration // the load time the run resumes at (Config.Restore)
	skipped  int           // inputs in the restored checkpoint, never sent
	store    persister
}

// persister is the background writer of Config.Store (guarded by
// Planner.mu): the latest complete checkpoint not yet written (an older
// one still pending is dropped for it), and the outcome.
type persister struct {
	pending      *ckptstore.Checkpoint
	closed       bool
	kick, done   chan struct{}
	saved, fails int
	last         string // the last file written
}

// New returns a planner or an error for a bad configuration.
func New(cfg Config) (*Planner, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	p := &Planner{cfg: cfg, clock: cfg.Clock, changed: make(chan struct{}), conns: map[uint64]*conn{}, byID: map[uint32]*conn{},
		provKick: make(chan struct{}, 1), scaleWait: map[uint64]chan error{}, failed: make(chan struct{})}
	p.seqs = map[uint64]uint64{}
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
	resume, err := resumeFrom(cfg)
	if err != nil {
		return nil, err
	}
	c, err := core.New(core.Config{Restore: resume, Ops: len(cfg.App.Operators), Workers: cfg.Workers, Shares: cfg.Shares, Steps: cfg.Steps,
		Heartbeat: cfg.Heartbeat, Tick: tickOf(cfg.Heartbeat), Miss: cfg.Miss, JoinTimeout: cfg.JoinTimeout,
		CheckpointInterval: cfg.CheckpointInterval, CheckpointTimeout: cfg.CheckpointTimeout, CheckpointMode: cfg.CheckpointMode,
		Restart: cfg.Restart})
	if err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	p.core = c
	p.gen, p.job = p.newLoadGen(), Job(cfg)
	if r := cfg.Restore; r != nil {
		if p.resumeAt, err = p.skip(int(r.Cut)); err != nil {
			return nil, fmt.Errorf("planner: restore %s: %w", cfg.RestoreFrom, err)
		}
	}
	return p, nil
}

// resumeFrom checks a checkpoint to restore against the job and returns it
// for the core.
func resumeFrom(cfg Config) (*core.Resume, error) {
	r := cfg.Restore
	if r == nil {
		return nil, nil
	}
	switch job := Job(cfg); {
	case r.Job != job:
		return nil, fmt.Errorf("planner: restore %s: checkpoint %d is of the job %q, not of this one, %q", cfg.RestoreFrom, r.ID, r.Job, job)
	case r.Ops != len(cfg.App.Operators):
		return nil, fmt.Errorf("planner: restore %s: checkpoint %d has %d operators, app %s %d", cfg.RestoreFrom, r.ID, r.Ops, cfg.App.Name, len(cfg.App.Operators))
	case r.Cut > math.MaxInt32:
		return nil, fmt.Errorf("planner: restore %s: cut %d", cfg.RestoreFrom, r.Cut)
	}
	return &core.Resume{ID: r.ID, Cut: int(r.Cut), State: r.State}, nil
}

// tickOf is the core's tick interval for a heartbeat interval: 10 ms, or
// a quarter beat for beats under 40 ms.
func tickOf(heartbeat time.Duration) time.Duration {
	return max(time.Millisecond, min(10*time.Millisecond, heartbeat/4))
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
	bg, stopBg := context.WithCancel(ctx)
	var bgWG sync.WaitGroup
	defer func() { stopBg(); bgWG.Wait() }()
	p.origin = p.clock.Now()
	bgWG.Go(func() { p.provide(bg) })
	bgWG.Go(func() { p.ticks(bg) })
	if p.cfg.Store != nil {
		p.store.kick, p.store.done = make(chan struct{}, 1), make(chan struct{})
		go p.persist()
		defer p.closeStore()
	}
	if r := p.cfg.Restore; r != nil {
		p.logf("restoring checkpoint %d from %s: inputs before %d are in its state; the source resumes at input %d (t = %.3f s)", r.ID, p.cfg.RestoreFrom, r.Cut, r.Cut, p.resumeAt.Seconds())
	}
	p.mu.Lock()
	p.step(core.Begin{})
	p.mu.Unlock()
	p.waitFor(ctx, nil, func() bool { return p.started || p.startErr != nil })
	p.mu.Lock()
	started, err := p.started, p.startErr
	p.mu.Unlock()
	switch {
	case err != nil:
		return Result{}, err
	case !started:
		return Result{}, ctx.Err()
	}
	p.logf("placed %s", p.cfg.App.Name)
	lctx, stopLoad := context.WithCancel(bg)
	defer stopLoad()
	var wg sync.WaitGroup
	loadDone := make(chan struct{})
	wg.Go(func() { p.generate(lctx); close(loadDone) })
	wg.Go(func() { p.seconds(lctx) })
	ctlStop, ctlDone := make(chan struct{}), make(chan struct{})
	wg.Go(func() { p.control(lctx, ctlStop); close(ctlDone) })
	select {
	case <-loadDone:
	case <-ctx.Done():
	case <-p.failed:
	}
	if p.jobFailed() == nil {
		p.drain(ctx)
	}
	if p.jobFailed() != nil {
		return p.endFailed(stopLoad, &wg, ctlStop, ctlDone)
	}
	// The scale steps due by now, the controller's decisions, a rejoin or
	// failover in progress finish their migrations: a run does not end in
	// the middle of one. Then the final checkpoint.
	p.mu.Lock()
	p.step(core.EndLoad{})
	p.loadEnded = true
	p.mu.Unlock()
	close(ctlStop)
	<-ctlDone
	p.waitFor(ctx, nil, p.idle)
	p.mu.Lock()
	final := p.cfg.CheckpointInterval > 0 && ctx.Err() == nil && p.open() == 0
	if final {
		p.step(core.FinalCheckpoint{})
	}
	p.mu.Unlock()
	if final {
		p.waitFor(ctx, nil, p.idle)
	}
	stopLoad()
	wg.Wait()
	p.mu.Lock()
	p.stopped = true
	partial := p.secOffer > 0 || len(p.lat) > 0
	p.mu.Unlock()
	if partial {
		p.closeRow((p.sinceStart() - p.resumeAt).Seconds())
	}
	p.closeStore() // the final checkpoint is written before the result
	res := p.result()
	if err := p.jobFailed(); err != nil { // during the final migrations
		return res, fmt.Errorf("%w: %w", ErrJobFailed, err)
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	p.farewell(ctx)
	return res, nil
}

// jobFailed returns why the job failed (nil: it did not).
func (p *Planner) jobFailed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failErr
}

// endFailed ends a run whose job failed: no drain, no final checkpoint;
// the result says failed and why, and so does the error.
func (p *Planner) endFailed(stopLoad func(), wg *sync.WaitGroup, ctlStop, ctlDone chan struct{}) (Result, error) {
	stopLoad()
	close(ctlStop)
	<-ctlDone
	wg.Wait()
	p.mu.Lock()
	p.stopped = true
	err := p.failErr
	partial := p.secOffer > 0 || len(p.lat) > 0
	p.mu.Unlock()
	if partial {
		p.closeRow(p.sinceStart().Seconds())
	}
	return p.result(), fmt.Errorf("%w: %w", ErrJobFailed, err)
}

// drain waits up to Config.Drain for the inputs in flight.
func (p *Planner) drain(ctx context.Context) {
	t := p.clock.NewTimer(p.cfg.Drain)
	defer t.Stop()
	p.waitFor(ctx, t.C(), func() bool { return p.open() == 0 || p.failErr != nil })
}

// idle reports whether no reconfiguration and no provider call is in
// progress or waiting (p.mu held).
func (p *Planner) idle() bool { return p.core.Idle() && len(p.provQ) == 0 && !p.provBusy }

// waitFor waits until pred (called with p.mu held) holds after a step, or
// ctx ends or stop delivers (nil: never), and reports whether it held.
func (p *Planner) waitFor(ctx context.Context, stop <-chan time.Time, pred func() bool) bool {
	for {
		p.mu.Lock()
		ok, ch := pred(), p.changed
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		case <-ch:
		}
	}
}

// now is the core's time: since the run began.
func (p *Planner) now() time.Duration { return p.clock.Now().Sub(p.origin) }

// sinceStart is the time since the load started.
func (p *Planner) sinceStart() time.Duration { return p.clock.Now().Sub(p.start) }

// step feeds the core one event and performs its actions (p.mu held).
func (p *Planner) step(ev core.Event) {
	if p.stopped {
		return
	}
	for p.frontier < len(p.ins) && p.ins[p.frontier].done && !p.ins[p.frontier].redo {
		p.frontier++
	}
	for _, a := range p.core.Step(p.now(), core.Log{Inputs: len(p.ins), Done: p.frontier}, ev) {
		p.perform(a)
	}
	p.notify()
}

// notify wakes the waitFor calls (p.mu held).
func (p *Planner) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// perform carries out one action of the core (p.mu held).
func (p *Planner) perform(a core.Action) {
	switch a := a.(type) {
	case core.Bind:
		if c := p.conns[a.Conn]; c != nil {
			c.id, c.bound = a.ID, true
			p.byID[a.ID] = c
			h := wire.Hello{ID: a.ID, Epoch: a.Epoch, Token: p.cfg.Token}
			c.out.frame(h.Append)
		}
	case core.Send:
		if c := p.byID[a.To]; c != nil {
			c.out.frame(a.Msg.Append)
		}
	case core.Close:
		if a.Dead {
			p.deaths++ // the inputs sent before it may be lost (send)
		}
		p.closeMember(a.ID, a.Conn)
	case core.Refuse:
		p.refused++
		p.logf("%v", a.Err)
		if c := p.conns[a.Conn]; c != nil && !c.bound {
			c.refusal = a.Err
			c.cancel()
		}
	case core.ScaleWorkers:
		p.provQ = append(p.provQ, a)
		select {
		case p.provKick <- struct{}{}:
		default:
		}
	case core.Routes:
		p.setRoutes(a)
	case core.Flush:
		p.flush()
	case core.PauseIngress:
		p.paused = true
	case core.ResumeIngress:
		p.paused = false
		p.flush()
	case core.Replay:
		p.replay(a)
	case core.CheckpointCompleted:
		for i := a.Prev; i < a.Cut && i < len(p.ins); i++ {
			p.ins[i].payload = nil // never replayed again
		}
		if p.cfg.Store != nil {
			id, cut, st := p.core.Checkpoint()
			p.store.pending = &ckptstore.Checkpoint{Job: p.job, ID: id, Cut: uint64(cut), Ops: len(p.cfg.App.Operators), State: st}
			select {
			case p.store.kick <- struct{}{}:
			default:
			}
		}
	case core.StartLoad:
		p.start, p.started = p.clock.Now().Add(-p.resumeAt), true
	case core.Fail:
		if !p.started {
			p.startErr = a.Err
			break
		}
		p.logf("job failed: %v", a.Err)
		p.failErr = a.Err
		close(p.failed)
	case core.ScaleDone:
		if ch := p.scaleWait[a.ID]; ch != nil {
			ch <- a.Err
			delete(p.scaleWait, a.ID)
		}
	case core.Note:
		p.logf("%s", a.Text)
	}
}

// closeMember ends member id's stream conn and takes it off the routes.
// The worker is told why (dismiss): dead (it rejoins as a new member) or
// scaled in (it exits).
func (p *Planner) closeMember(id uint32, serial uint64) {
	c := p.byID[id]
	if c == nil || c.serial != serial {
		return
	}
	if p.core.IsDead(id) {
		p.dismiss(c, wire.ByeDead, fmt.Sprintf("worker %d declared dead (missed heartbeats or its stream ended); its key groups failed over", id))
	} else {
		p.dismiss(c, wire.ByeLeft, fmt.Sprintf("worker %d scaled in", id))
	}
	delete(p.byID, id)
	for o := range p.route {
		for g := range p.route[o] {
			if p.route[o][g] == c {
				p.route[o][g] = nil
			}
		}
	}
}

// setRoutes installs the ingress's routing table (p.mu held).
func (p *Planner) setRoutes(a core.Routes) {
	p.epoch = a.Epoch
	live := map[uint32]*conn{}
	for _, id := range a.Live {
		if c := p.byID[id]; c != nil {
			live[id] = c
		}
	}
	p.route = make([][ops.KeyGroups]*conn, len(a.Owners))
	for o := range a.Owners {
		for g, id := range a.Owners[o] {
			p.route[o][g] = live[id]
		}
	}
}

// ticks feeds the core a Tick every core tick interval.
func (p *Planner) ticks(ctx context.Context) {
	t := p.clock.NewTicker(tickOf(p.cfg.Heartbeat))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		p.mu.Lock()
		p.step(core.Tick{})
		p.mu.Unlock()
	}
}

// provide makes the provider calls the core asks for, one at a time and
// in order, and feeds it the answers.
func (p *Planner) provide(ctx context.Context) {
	for {
		p.mu.Lock()
		if len(p.provQ) == 0 {
			p.provBusy = false
			p.notify()
			p.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-p.provKick:
			}
			continue
		}
		a := p.provQ[0]
		p.provQ, p.provBusy = p.provQ[1:], true
		p.mu.Unlock()
		var err error
		if st, ok := p.cfg.Provider.(provider.Stopper); ok && a.Stop != nil {
			err = st.StopWorkers(ctx, a.StopAddrs) // exactly the members the core drained, by address
		} else {
			_, err = p.cfg.Provider.Scale(ctx, a.N)
		}
		p.mu.Lock()
		p.step(core.Scaled{N: a.N, Err: err})
		p.mu.Unlock()
	}
}

// scale asks the core for n workers with shares (nil: even) and waits
// until it has carried the request out.
func (p *Planner) scale(ctx context.Context, n int, shares [][]float64, reason string) error {
	p.mu.Lock()
	p.nextReq++
	id := p.nextReq
	ch := make(chan error, 1)
	p.scaleWait[id] = ch
	p.step(core.ScaleRequest{ID: id, N: n, Shares: shares, Reason: reason})
	p.mu.Unlock()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// persist writes the checkpoints Config.Store is given, one at a time, the
// latest pending first (an older one not yet written is skipped for it),
// until closeStore. The state it encodes is the core's last checkpoint,
// which the core no longer changes.
func (p *Planner) persist() {
	defer close(p.store.done)
	for {
		p.mu.Lock()
		c, closed := p.store.pending, p.store.closed
		p.store.pending = nil
		p.mu.Unlock()
		if c == nil {
			if closed {
				return
			}
			<-p.store.kick
			continue
		}
		path, err := p.cfg.Store.Save(c)
		p.mu.Lock()
		if err != nil {
			p.store.fails++
			p.logf("checkpoint %d not saved: %v", c.ID, err)
		} else {
			p.store.saved++
			p.store.last = path
		}
		p.mu.Unlock()
	}
}

// closeStore waits until the pending checkpoint is written and stops the
// writer (a no-op without a store, or the second time).
func (p *Planner) closeStore() {
	if p.store.done == nil {
		return
	}
	p.mu.Lock()
	p.store.closed = true
	p.mu.Unlock()
	select {
	case p.store.kick <- struct{}{}:
	default:
	}
	<-p.store.done
}

// quantile is the nearest-rank quantile of sorted xs (0 when empty): the
// smallest x_k with k ≥ q·n (1-based), which is gonum's empirical
// quantile (stat.Empirical: the lowest value whose cumulative count
// reaches q·n).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stat.Quantile(q, stat.Empirical, xs, nil)
}
