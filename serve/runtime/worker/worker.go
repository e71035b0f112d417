package worker

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"streamscale/serve/runtime/cfs"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// Config configures a worker. Zero durations and sizes take the defaults
// documented on the fields, except where 0 is documented as meaningful.
type Config struct {
	// ID is the worker's ID; wire.NoID asks the planner for one.
	ID uint32
	// Addr is the listen address for peers, host:port (default
	// 127.0.0.1:0). Public allows a non-loopback address.
	Addr   string
	Public bool
	// Planner is the planner's address, host:port.
	Planner string
	// Token is the shared token peers and the planner must present ("" for
	// none; use one off loopback).
	Token string
	// App is the application the worker runs.
	App ops.App
	// Slots is the executor pool size (default 10, CLASP's runtime).
	Slots int
	// Batch is B: a queue holding B requests is dispatched at once
	// (default 64).
	Batch int
	// Check is how often queue ages are checked (default 5 ms); Interval
	// is T, the age at which a queue is dispatched whatever its length
	// (default 20 ms). Interval < 0 means 0: dispatch at once.
	Check, Interval time.Duration
	// MaxInFlight caps the requests a worker holds (default 100,000),
	// except those parked by a checkpoint's alignment (bounded by the
	// checkpoint's timeout).
	MaxInFlight int
	// Flush is the remote-send timer (default 2 ms); FlushBytes the buffer
	// size that sends at once (default 64 KiB).
	Flush      time.Duration
	FlushBytes int
	// Millicores is every task's initial CPU allocation (default 1000);
	// Period the CFS period (default cfs.DefaultPeriod).
	Millicores int
	Period     time.Duration
	// Alloc, if set, is each task's initial allocation, millicores (one
	// per operator, each 1..wire.MaxMillicores), instead of Millicores.
	Alloc []int
	// Budget, if > 0, is a CPU budget in millicores that all the worker's
	// tasks share on top of their own allocations (cfs.Quota.RunIn: a
	// parent CPU cgroup over the tasks' cgroups): the model of a worker in
	// CLASP's cost model (Eq. 1, a worker's budget W shared by the
	// functions it hosts), where a task's own quota alone would leave a
	// worker that hosts few operators unable to use its CPU. 0: none. Not
	// with Hosts (the kernel mode has no parent cgroup here).
	Budget int
	// Report is the metrics interval (default 1 s); Heartbeat the beat
	// interval (default 200 ms).
	Report, Heartbeat time.Duration
	// MigrationTimeout bounds each wait of a migration (default 10 s).
	MigrationTimeout time.Duration
	// JoinWait is how long a stream from a peer not (yet) in the
	// membership waits for a placement that includes it before it is
	// refused (default 2 s).
	JoinWait time.Duration
	// JoinTries is how many joins of the planner in a row may fail —
	// the planner unreachable, the hello refused (a wrong token), no
	// welcome within JoinTimeout — before Serve gives up with an error
	// naming the planner and the last cause (default 10). JoinBackoff is
	// the wait after the first failed join, doubled after each further
	// one up to 5 s (default 100 ms); JoinTimeout bounds one join, dial to
	// welcome (default 5 s). Every failed join is logged.
	JoinTries                int
	JoinBackoff, JoinTimeout time.Duration
	// Log receives one line per notable event (nil: discarded).
	Log io.Writer
	// Notices receives the lines about the worker's membership — a failed
	// join and its cause, the planner's stream lost, a rejoin, the
	// planner's goodbye — which an operator needs even when Log is off
	// (nil: Log).
	Notices io.Writer
	// Hosts, if set, runs each task's operator work in a TaskHost made
	// for it (operator index, initial millicores) instead of under the
	// in-process cfs.Quota: package kcfs's child process under the
	// kernel's CFS quota (serve worker -cpu-enforce kernel). Only apps
	// whose operators keep no keyed state can run so: New refuses the
	// others, naming the operator (keyed state, migrations and
	// checkpoints live in the worker). The caller closes the hosts, also
	// when New fails.
	Hosts func(op, millicores int) (TaskHost, error)
}

func (c *Config) fill() error {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.Slots == 0 {
		c.Slots = 10
	}
	if c.Batch == 0 {
		c.Batch = 64
	}
	def(&c.Check, 5*time.Millisecond)
	if c.Interval == 0 {
		c.Interval = 20 * time.Millisecond
	} else if c.Interval < 0 {
		c.Interval = 0
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 100_000
	}
	def(&c.Flush, 2*time.Millisecond)
	if c.FlushBytes == 0 {
		c.FlushBytes = 64 << 10
	}
	if c.Millicores == 0 {
		c.Millicores = 1000
	}
	def(&c.Period, cfs.DefaultPeriod)
	def(&c.Report, time.Second)
	def(&c.Heartbeat, 200*time.Millisecond)
	def(&c.MigrationTimeout, 10*time.Second)
	def(&c.JoinWait, 2*time.Second)
	if c.JoinTries == 0 {
		c.JoinTries = 10
	}
	def(&c.JoinBackoff, 100*time.Millisecond)
	def(&c.JoinTimeout, 5*time.Second)
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Notices == nil {
		c.Notices = c.Log
	}
	switch {
	case c.Slots < 1:
		return fmt.Errorf("worker: %d slots, want ≥ 1", c.Slots)
	case c.Batch < 1:
		return fmt.Errorf("worker: batch %d, want ≥ 1", c.Batch)
	case c.Check < 0 || c.Flush < 0 || c.Report < 0 || c.Heartbeat < 0:
		return fmt.Errorf("worker: negative interval")
	case c.JoinTries < 1 || c.JoinBackoff < 0 || c.JoinTimeout < 0:
		return fmt.Errorf("worker: %d join tries, backoff %v, join timeout %v; want ≥ 1 tries and no negative duration", c.JoinTries, c.JoinBackoff, c.JoinTimeout)
	case c.MaxInFlight < 1:
		return fmt.Errorf("worker: max in flight %d, want ≥ 1", c.MaxInFlight)
	case c.Millicores < 1 || c.Millicores > wire.MaxMillicores:
		return fmt.Errorf("worker: %d millicores, want 1..%d", c.Millicores, wire.MaxMillicores)
	case len(c.App.Operators) == 0 || len(c.App.Operators) > wire.MaxOps:
		return fmt.Errorf("worker: app %q has %d operators, want 1..%d", c.App.Name, len(c.App.Operators), wire.MaxOps)
	case c.Alloc != nil && len(c.Alloc) != len(c.App.Operators):
		return fmt.Errorf("worker: initial allocation for %d tasks, app %q has %d", len(c.Alloc), c.App.Name, len(c.App.Operators))
	case c.Budget < 0 || c.Budget > wire.MaxMillicores:
		return fmt.Errorf("worker: budget %d millicores, want 0 (none) or 1..%d", c.Budget, wire.MaxMillicores)
	case c.Budget > 0 && c.Hosts != nil:
		return fmt.Errorf("worker: a worker budget (%d millicores) needs the in-process CPU enforcement, not task hosts", c.Budget)
	}
	for i, mc := range c.Alloc {
		if mc < 1 || mc > wire.MaxMillicores {
			return fmt.Errorf("worker: initial allocation of task %d is %d millicores, want 1..%d", i, mc, wire.MaxMillicores)
		}
	}
	return nil
}

// rec is a queued request.
type rec struct {
	wire.Record
	at int64 // enqueue time, ns since the worker started (Worker.now)
}

// task is one operator instance on this worker.
type task struct {
	op      int
	impl    ops.Operator
	quota   limiter    // the allocation: inproc, or host's kernel quota
	inproc  *cfs.Quota // nil when the work runs in host
	host    TaskHost
	q       []rec
	head    int
	running bool
	state   [ops.KeyGroups]map[uint64][]byte
	c       taskCounters
	cpuLast time.Duration
	// state size at the last report taken while the task was idle
	stateKeys, stateBytes uint64
	// Checkpoint alignment (barrier.go): snapped once the task has taken
	// its snapshot of the checkpoint being aligned; parked holds the
	// records of later inputs that arrived before that; flushNow
	// dispatches the queue without waiting for the batching timer.
	snapped, flushNow bool
	parked            []rec
}

type taskCounters struct {
	arrived, execs, execNS, latencyNS uint64
}

func (t *task) len() int { return len(t.q) - t.head }

func (t *task) push(r rec) { t.q = append(t.q, r) }

// take moves up to n records from the queue's head into dst.
func (t *task) take(dst []rec, n int) []rec {
	k := min(n, t.len())
	dst = append(dst, t.q[t.head:t.head+k]...)
	clear(t.q[t.head : t.head+k])
	t.head += k
	if t.head == len(t.q) {
		t.q, t.head = t.q[:0], 0
	} else if t.head > 1024 && t.head > len(t.q)/2 {
		n := copy(t.q, t.q[t.head:])
		clear(t.q[n:])
		t.q, t.head = t.q[:n], 0
	}
	return dst
}

// hold is a key group being received: records for it wait until the
// previous owner's End.
type hold struct {
	from            uint32
	fromOld, direct []rec
}

func holdKey(op int, kg int) uint32 { return uint32(op)<<8 | uint32(kg) }

// Stats are the worker's cumulative counters (tests and the command).
type Stats struct {
	Executed       uint64 // records executed
	Refused        uint64 // frames refused (malformed, unknown epoch or sender, bad key group)
	Dropped        uint64 // records dropped: operator errors, bad emits
	WeightOverflow uint64 // fan-outs beyond the weight precision
	Migrations     uint64
	Snapshots      uint64 // checkpoint snapshots taken
	Restores       uint64 // checkpoints restored (failovers)
	Discarded      uint64 // requests discarded by restores and rejoins (the planner replays their inputs)
	Stale          uint64 // records stamped before the last restore, dropped
	LateBarriers   uint64 // barriers of checkpoints finished or discarded here, ignored
	Rejoins        uint64 // sessions started again as a new member (declared dead, or the planner's stream lost)
}

// Worker is one worker. Create it with New, run it with Run.
type Worker struct {
	cfg     Config
	budget  *cfs.Quota // Config.Budget shared by the tasks; nil: none
	nOps    int
	edgeIdx [][]int // [from][to] → edge index, −1 for none
	ups     [][]int // [op] → the operators with an edge to it, ascending
	downs   [][]int // [op] → the operators it has an edge to
	start   time.Time
	// clock is the time of the section now running under mu, ns since
	// start (stamp): set once where records enter (a received batch, a
	// finished execution batch, a released hold) so that enqueue and
	// route, which run per record, do not read the clock per record.
	clock int64

	mu       sync.Mutex
	work     *sync.Cond // slots: work, resume, or a freed buffer
	drained  *sync.Cond // migration: no task running
	space    *sync.Cond // stream readers: in-flight below the cap
	idle     int
	closing  bool
	paused   bool
	tasks    []*task
	rr       int
	id       uint32
	idNow    atomic.Uint32 // id, for readers without mu (logf, beatLoop)
	epoch    uint64
	epochNow atomic.Uint64 // epoch, for readers without mu (beatLoop)
	// ageIdle: checkAges found no record queued or parked and stopped
	// its ticker; the next record queued wakes it through ageKick.
	ageIdle  bool
	ageKick  chan struct{}
	floor    uint64 // the last restore's epoch: frames stamped earlier are dropped
	owners   [][ops.KeyGroups]uint32
	members  map[uint32]string
	prevMem  map[uint32]string
	peers    map[uint32]*peer
	holds    map[uint32]*hold
	future   []early
	futureN  int
	inFlight int
	done     map[uint64]wire.Weight
	doneBuf  []wire.DoneEntry
	marks    map[uint32]uint64
	ends     map[uint32]uint64
	migCh    chan struct{} // kicks the migration goroutine on marks and ends
	edges    []wire.EdgeMetrics
	dests    map[uint32]bool
	stats    Stats
	arena    []byte
	planner  *peer
	placeCh  chan placeReq
	ready    chan struct{} // closed at the first placement
	readyOne sync.Once
	// Checkpoints with barriers (barrier.go): the one being aligned,
	// every checkpoint up to barDone finished or discarded here, and the
	// last cut started.
	bar     *barrierRun
	barDone uint64
	barCut  uint64
	parkedN int // records parked, over all tasks
	// The session (net.go): sess counts its goroutines (the peer senders
	// too); inc numbers the sessions. A peer stream applies each frame
	// under peerMu's read lock, and only while inc is the one it was
	// opened in: rejoin holds the write lock, so no frame of a stream of
	// an earlier membership applies to the new one.
	sess   *sync.WaitGroup
	inc    atomic.Uint64
	peerMu sync.RWMutex
}

// New returns a worker or an error for a bad configuration.
func New(cfg Config) (*Worker, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	n := len(cfg.App.Operators)
	w := &Worker{
		cfg:     cfg,
		nOps:    n,
		start:   time.Now(),
		id:      cfg.ID,
		members: map[uint32]string{},
		prevMem: map[uint32]string{},
		peers:   map[uint32]*peer{},
		holds:   map[uint32]*hold{},
		done:    map[uint64]wire.Weight{},
		marks:   map[uint32]uint64{},
		ends:    map[uint32]uint64{},
		dests:   map[uint32]bool{},
		migCh:   make(chan struct{}, 1),
		placeCh: make(chan placeReq),
		ready:   make(chan struct{}),
		edges:   make([]wire.EdgeMetrics, len(cfg.App.Edges)),
		ageKick: make(chan struct{}, 1),
	}
	w.work = sync.NewCond(&w.mu)
	w.drained = sync.NewCond(&w.mu)
	w.space = sync.NewCond(&w.mu)
	w.edgeIdx = make([][]int, n)
	for i := range w.edgeIdx {
		w.edgeIdx[i] = make([]int, n)
		for j := range w.edgeIdx[i] {
			w.edgeIdx[i][j] = -1
		}
	}
	for i, e := range cfg.App.Edges {
		if e[0] < 0 || e[0] >= n || e[1] < 0 || e[1] >= n {
			return nil, fmt.Errorf("worker: app %s: edge %d (%d→%d) names a missing operator", cfg.App.Name, i, e[0], e[1])
		}
		w.edgeIdx[e[0]][e[1]] = i
	}
	w.ups, w.downs = make([][]int, n), make([][]int, n)
	for from := range n {
		for to := range n {
			if w.edgeIdx[from][to] >= 0 {
				w.ups[to] = append(w.ups[to], from)
				w.downs[from] = append(w.downs[from], to)
			}
		}
	}
	for _, s := range cfg.App.Operators {
		if s.New == nil {
			return nil, fmt.Errorf("worker: app %s: operator %s has no constructor", cfg.App.Name, s.Name)
		}
		if cfg.Hosts != nil && s.Stateful {
			return nil, fmt.Errorf("worker: app %s: operator %s keeps keyed state, which a task host cannot run (state, migration and checkpoints live in the worker); use the in-process CPU enforcement", cfg.App.Name, s.Name)
		}
	}
	if cfg.Budget > 0 {
		w.budget = cfs.New(cfg.Period, cfg.Budget)
	}
	for o, s := range cfg.App.Operators {
		mc := cfg.Millicores
		if cfg.Alloc != nil {
			mc = cfg.Alloc[o]
		}
		t := &task{op: o, impl: s.New()}
		if cfg.Hosts == nil {
			t.inproc = cfs.New(cfg.Period, mc)
			t.quota = t.inproc
		} else {
			h, err := cfg.Hosts(o, mc)
			if err != nil {
				return nil, fmt.Errorf("worker: task host for operator %s: %w", s.Name, err)
			}
			t.host = h
			t.quota = hostLimiter{h, w, o}
		}
		for g := range t.state {
			t.state[g] = map[uint64][]byte{}
		}
		w.tasks = append(w.tasks, t)
	}
	w.planner = newPeer(wire.NoID, cfg.Planner)
	w.idNow.Store(cfg.ID)
	w.sess = &sync.WaitGroup{}
	return w, nil
}

// rejoin makes the worker a newcomer for its next session (no session
// goroutine runs): every request it holds, its keyed state, its completion
// weights, its placement, peers and membership are dropped, its tasks'
// allocations are the initial ones again, and it asks the planner for a
// fresh ID. Nothing of the old membership reaches the new one: the
// planner has failed its key groups over (or will, once it declares the
// old member dead), and the frames of the old epochs still on their way
// are refused (their streams belong to an earlier session) or dropped
// (stamped before the new member's first epoch).
func (w *Worker) rejoin() {
	w.peerMu.Lock()
	defer w.peerMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	var dropped uint64
	for o, t := range w.tasks {
		dropped += uint64(t.len())
		clear(t.q)
		t.q, t.head = t.q[:0], 0
		for g := range t.state {
			t.state[g] = map[uint64][]byte{}
		}
		t.running = false
		t.c = taskCounters{}
		t.stateKeys, t.stateBytes = 0, 0
		t.impl = w.cfg.App.Operators[o].New()
		mc := w.cfg.Millicores
		if w.cfg.Alloc != nil {
			mc = w.cfg.Alloc[o]
		}
		t.quota.Set(mc)
	}
	for _, h := range w.holds {
		dropped += uint64(len(h.fromOld) + len(h.direct))
	}
	dropped += uint64(w.resetBarrier())
	dropped += uint64(w.futureN)
	w.barDone, w.barCut = 0, 0
	clear(w.holds)
	clear(w.done)
	w.future, w.futureN = nil, 0
	w.inFlight = 0
	clear(w.marks)
	clear(w.ends)
	clear(w.dests)
	clear(w.edges)
	for _, p := range w.peers {
		if !p.removed {
			p.removed = true
			close(p.stop)
		}
	}
	clear(w.peers)
	w.members, w.prevMem = map[uint32]string{}, map[uint32]string{}
	w.owners = nil
	w.epoch, w.floor = 0, 0
	w.epochNow.Store(0)
	w.id = wire.NoID
	w.idNow.Store(wire.NoID)
	w.planner = newPeer(wire.NoID, w.cfg.Planner)
	w.closing, w.paused = false, false
	w.sess = &sync.WaitGroup{}
	w.inc.Add(1)
	w.stats.Discarded += dropped
	w.stats.Rejoins++
}

// ID returns the worker's ID (wire.NoID before the planner assigned one).
func (w *Worker) ID() uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.id
}

// Epoch returns the current placement epoch.
func (w *Worker) Epoch() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.epoch
}

// Stats returns the cumulative counters.
func (w *Worker) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Millicores returns every task's allocation in force, millicores, by
// operator (as its next metrics report will carry it).
func (w *Worker) Millicores() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int, w.nOps)
	for i := range out {
		out[i] = w.tasks[i].quota.Millicores()
	}
	return out
}

// StateOf returns a copy of operator op's keyed state on this worker (tests
// and checks; not for the hot path). Call it when the worker is idle or
// stopped: a running task's state belongs to its executor.
func (w *Worker) StateOf(op int) map[uint64][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[uint64][]byte{}
	if op < 0 || op >= w.nOps {
		return out
	}
	for _, m := range w.tasks[op].state {
		for k, v := range m {
			out[k] = append([]byte(nil), v...)
		}
	}
	return out
}

func (w *Worker) logf(format string, args ...any) { w.linef(w.cfg.Log, format, args...) }

// notef writes a line about the membership to Config.Notices.
func (w *Worker) notef(format string, args ...any) { w.linef(w.cfg.Notices, format, args...) }

func (w *Worker) linef(to io.Writer, format string, args ...any) {
	id := w.idNow.Load()
	if id == wire.NoID {
		fmt.Fprintf(to, "worker: "+format+"\n", args...)
		return
	}
	fmt.Fprintf(to, "worker %d: "+format+"\n", append([]any{id}, args...)...)
}

// now is the time since the worker started, ns (the monotonic clock: a
// vDSO read, tens of ns).
func (w *Worker) now() int64 { return int64(time.Since(w.start)) }

// stamp sets w.clock to now and returns it (w.mu held).
func (w *Worker) stamp() int64 {
	w.clock = w.now()
	return w.clock
}

// checkAges wakes an idle executor every Config.Check when a task has
// become ready by the age of its oldest request (Config.Interval), which no
// enqueue signals. When no record is queued or parked it stops until the
// next one is (wakeAges): an idle worker used to wake every Check (5 ms)
// for nothing, and before that also every 500 µs for a coarse clock, CPU
// a worker under a budget pays out of its budget (eval calibrate's
// reference worker, which owns nothing, used 60–95 mc with both).
func (w *Worker) checkAges(ctx context.Context) {
	if w.cfg.Check <= 0 {
		return
	}
	t := time.NewTicker(w.cfg.Check)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.ageKick:
			t.Reset(w.cfg.Check)
			continue
		case <-t.C:
		}
		w.mu.Lock()
		if w.idle > 0 && w.readyTask() >= 0 {
			w.work.Broadcast()
		}
		if !w.anyQueued() {
			w.ageIdle = true
			t.Stop()
		}
		w.mu.Unlock()
	}
}

// wakeAges restarts checkAges's ticker if it stopped (w.mu held).
func (w *Worker) wakeAges() {
	if !w.ageIdle {
		return
	}
	w.ageIdle = false
	select {
	case w.ageKick <- struct{}{}:
	default:
	}
}

// anyQueued reports whether a task has a record queued or parked (w.mu
// held).
func (w *Worker) anyQueued() bool {
	if w.parkedN > 0 {
		return true
	}
	for _, t := range w.tasks {
		if t.len() > 0 {
			return true
		}
	}
	return false
}

// alloc returns n bytes from the payload arena (w.mu held).
func (w *Worker) alloc(p []byte) []byte {
	n := len(p)
	if n == 0 {
		return nil
	}
	if cap(w.arena)-len(w.arena) < n {
		w.arena = make([]byte, 0, max(64<<10, n))
	}
	at := len(w.arena)
	w.arena = append(w.arena, p...)
	return w.arena[at : at+n : at+n]
}

// ready reports whether task t may be dispatched (w.mu held).
func (w *Worker) taskReady(t *task, now int64) bool {
	n := t.len()
	if n == 0 || t.running {
		return false
	}
	if n >= w.cfg.Batch || w.cfg.Interval == 0 || t.flushNow {
		return true
	}
	return now-t.q[t.head].at >= int64(w.cfg.Interval)
}

// readyTask returns the next ready task index round-robin, or −1.
func (w *Worker) readyTask() int {
	if w.paused || w.closing || w.peerBlocked() {
		return -1
	}
	now := w.now()
	for i := range w.tasks {
		j := (w.rr + i) % len(w.tasks)
		if w.taskReady(w.tasks[j], now) {
			return j
		}
	}
	return -1
}

// maxPeerBuf is the remote-send backlog per peer at which executors stop.
const maxPeerBuf = 8 << 20

func (w *Worker) peerBlocked() bool {
	for _, p := range w.peers {
		if len(p.buf) > maxPeerBuf {
			return true
		}
	}
	return false
}

// enqueue appends r to its task's queue (w.mu held).
func (w *Worker) enqueue(r rec) {
	t := w.tasks[r.Op]
	r.at = w.clock
	t.c.arrived++
	if w.bar != nil && w.park(t, r) {
		return
	}
	t.push(r)
	w.wakeAges()
	if w.idle > 0 && !t.running && (t.len() >= w.cfg.Batch || w.cfg.Interval == 0) && !w.paused {
		w.work.Signal()
	}
}

// route delivers a record addressed to operator r.Op under the current
// placement: local tasks enqueue, held key groups hold, others are sent to
// the owner. src is the stream the record arrived on (w.id for local).
// It reports whether the record stayed local. w.mu held; r.Payload must
// already be owned by the worker.
func (w *Worker) route(r rec, src uint32) (local bool, dest uint32) {
	kg := ops.KeyGroup(r.Key)
	owner := w.owners[r.Op][kg]
	if owner != w.id {
		p := w.peers[owner]
		if p == nil {
			w.stats.Dropped++
			w.inFlight--
			return false, owner
		}
		p.addRecord(w, &r.Record)
		w.inFlight--
		return false, owner
	}
	if len(w.holds) > 0 {
		if h := w.holds[holdKey(int(r.Op), kg)]; h != nil {
			r.at = w.clock
			if src == h.from {
				h.fromOld = append(h.fromOld, r)
			} else {
				h.direct = append(h.direct, r)
			}
			return true, owner
		}
	}
	w.enqueue(r)
	return true, owner
}

// addDone adds returned weight for an input (w.mu held).
func (w *Worker) addDone(input uint64, wt wire.Weight) {
	cur := w.done[input]
	lo, c := bits.Add64(cur.Lo, wt.Lo, 0)
	hi, _ := bits.Add64(cur.Hi, wt.Hi, c)
	w.done[input] = wire.Weight{Hi: hi, Lo: lo}
	if w.planner != nil && w.planner.idle {
		w.planner.idle = false
		w.planner.wake()
	}
}
