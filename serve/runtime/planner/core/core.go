package core

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// Checkpoint modes (Config.CheckpointMode).
const (
	ModeBarrier = "barrier"
	ModePause   = "pause"
)

// Config configures a core. Durations are of the shell's clock, as Step's
// now.
type Config struct {
	// Ops is the application's operator count (≥ 1).
	Ops int
	// Workers is the initial worker count (≥ 1); Shares, if set, places
	// them by share (Shares[i][o] is worker i's share of operator o).
	Workers int
	Shares  [][]float64
	// Steps are scale steps, due At after the load started.
	Steps []Step
	// Heartbeat is the workers' beat interval and Miss the beats a live
	// worker may miss; Tick is the shell's tick interval (the stall
	// compensation counts a tick later than Tick + Heartbeat/2 as a stall
	// of the planner).
	Heartbeat, Tick time.Duration
	Miss            int
	// JoinTimeout bounds the wait for workers to join; MigrationTimeout
	// the wait for a migration's reports (default 30 s).
	JoinTimeout, MigrationTimeout time.Duration
	// CheckpointInterval (0: no checkpoints), CheckpointTimeout and
	// CheckpointMode (ModeBarrier or ModePause) as the planner's.
	CheckpointInterval, CheckpointTimeout time.Duration
	CheckpointMode                        string
	// Restore, if set, resumes a job from a checkpoint a planner persisted
	// before it died: see Resume.
	Restore *Resume
	// Restart is the restart strategy: what the core does when no live
	// worker is left (the zero value: RestartNone, the job fails).
	Restart Restart
}

// Restart strategies (Restart.Strategy), after Flink's.
const (
	RestartNone        = "none"
	RestartFixedDelay  = "fixed-delay"
	RestartFailureRate = "failure-rate"
)

// Restart is the restart strategy of a job whose workers all died, after
// Flink's (restart-strategy.type): with RestartNone the job fails at once
// (Fail); with RestartFixedDelay it restarts at most Attempts times; with
// RestartFailureRate it restarts unless Attempts restarts already fell
// within the last Interval. A restart waits Delay, asks the provider for
// the target worker count, and once they joined (or at JoinTimeout, with
// at least one) restores the last complete checkpoint on them and replays
// every input after its cut; without checkpoints it starts them with
// empty state and replays every open input (the state is lost:
// Core.LostGroups). A restart whose workers do not join counts as an
// attempt.
type Restart struct {
	Strategy string
	// Attempts is the restarts allowed in all (fixed-delay) or within
	// Interval (failure-rate), ≥ 1.
	Attempts int
	// Delay is the wait from the failure to the restart (≥ 0); Interval
	// the failure-rate window (> 0).
	Delay, Interval time.Duration
}

func (r Restart) validate() error {
	switch {
	case r.Strategy == "" || r.Strategy == RestartNone:
		return nil
	case r.Strategy != RestartFixedDelay && r.Strategy != RestartFailureRate:
		return fmt.Errorf("core: restart strategy %q, want %s, %s or %s", r.Strategy, RestartNone, RestartFixedDelay, RestartFailureRate)
	case r.Attempts < 1 || r.Delay < 0:
		return fmt.Errorf("core: restart attempts %d and delay %v, want ≥ 1 and ≥ 0", r.Attempts, r.Delay)
	case r.Strategy == RestartFailureRate && r.Interval <= 0:
		return fmt.Errorf("core: failure-rate interval %v, want > 0", r.Interval)
	}
	return nil
}

func (c *Config) validate() error {
	if c.MigrationTimeout == 0 {
		c.MigrationTimeout = 30 * time.Second
	}
	switch {
	case c.Ops < 1:
		return fmt.Errorf("core: %d operators, want ≥ 1", c.Ops)
	case c.Workers < 1 || c.Workers > wire.MaxMembers:
		return fmt.Errorf("core: %d workers, want 1..%d", c.Workers, wire.MaxMembers)
	case c.Heartbeat <= 0 || c.Tick <= 0 || c.Miss < 1:
		return fmt.Errorf("core: heartbeat %v, tick %v, miss %d, want > 0", c.Heartbeat, c.Tick, c.Miss)
	case c.JoinTimeout <= 0 || c.MigrationTimeout < 0:
		return fmt.Errorf("core: join timeout %v, migration timeout %v", c.JoinTimeout, c.MigrationTimeout)
	case c.CheckpointInterval < 0 || c.CheckpointTimeout < 0:
		return fmt.Errorf("core: checkpoint interval %v and timeout %v, want ≥ 0", c.CheckpointInterval, c.CheckpointTimeout)
	case c.CheckpointInterval > 0 && c.CheckpointMode != ModeBarrier && c.CheckpointMode != ModePause:
		return fmt.Errorf("core: checkpoint mode %q, want %s or %s", c.CheckpointMode, ModeBarrier, ModePause)
	}
	if c.Restore != nil {
		if err := c.Restore.validate(c.Ops); err != nil {
			return err
		}
	}
	return c.Restart.validate()
}

// jobKind is what a reconfiguration does.
type jobKind int

const (
	jobInitial jobKind = iota
	jobScale
	jobCheckpoint
	jobRestart // every worker died: wait, ask for workers, restore
)

// job is one reconfiguration, queued or in progress. At most one runs at
// a time (the reconfiguration lock of the package documentation); a
// failover goes first, and preempts a scale still waiting for its
// workers to join.
type job struct {
	kind jobKind
	req  ScaleRequest
	// a scale waiting for workers: asked (ScaleWorkers sent), scaled (the
	// provider answered), until deadline.
	asked, scaled bool
	ask           uint64 // the provider ask this job waits for
	deadline      time.Duration
	n             int
	leaving       []uint32
	mig           *migration
	// a restart: the members dead when it began, the live count before.
	dead   map[uint32]bool
	before int
}

// Core is the planner's deterministic core: membership and failure
// detection (detector), placement and scaling (the scheduler: assign,
// migrations, failover) and checkpoint coordination (coordinator), fed
// events with the time and returning actions. It holds no goroutine,
// clock, lock or connection; it is not safe for concurrent use.
type Core struct {
	cfg Config
	now time.Duration
	log Log
	out []Action

	det    detector
	ck     coordinator
	epoch  uint64
	owners [][ops.KeyGroups]uint32
	target int // the worker count asked for last

	loadStart      time.Duration
	loading, ended bool
	steps          []Step // sorted; steps[:nextStep] are queued
	nextStep       int

	asked uint64   // provider asks made
	asks  []uint64 // provider asks not yet answered, oldest first

	queue       []job
	cur         *job
	rejoinAfter time.Duration   // no rejoin before (after a failed one)
	gone        map[uint32]bool // dead, failover pending
	before      int             // live workers before the pending deaths
	failures    int
	migs        []Migration
	restores    []Restore
	restarts    []time.Duration // when each job restart began
	lostGroups  int             // key groups whose state failovers lost
	failed      error           // the job failed (Fail sent): nothing runs any more
}

// New returns a core for cfg or an error for a bad one.
func New(cfg Config) (*Core, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Core{cfg: cfg, det: newDetector(cfg.Heartbeat, cfg.Tick, cfg.Miss), gone: map[uint32]bool{},
		ck: newCoordinator(cfg.CheckpointInterval, cfg.CheckpointTimeout, cfg.CheckpointMode)}
	if cfg.Restore != nil {
		c.ck.installResume(cfg.Restore)
	}
	c.steps = slices.Clone(cfg.Steps)
	sort.SliceStable(c.steps, func(i, j int) bool { return c.steps[i].At < c.steps[j].At })
	return c, nil
}

// Step feeds one event at time now (never before an earlier step's; an
// earlier now counts as the latest) with the shell's input log state,
// and returns the actions to perform, in order. The slice is the
// caller's.
func (c *Core) Step(now time.Duration, log Log, ev Event) []Action {
	c.out = nil
	c.now = max(c.now, now)
	c.log = log
	if c.failed != nil {
		return nil
	}
	switch e := ev.(type) {
	case Begin:
		if !c.loading && c.cur == nil && len(c.queue) == 0 {
			c.queue = append(c.queue, job{kind: jobInitial, req: ScaleRequest{N: c.cfg.Workers, Shares: c.cfg.Shares, Reason: "initial"}})
		}
	case Tick:
		c.tick()
	case Hello:
		c.hello(e)
	case Beat:
		c.det.beat(e.Conn, e.From, c.now)
	case StreamEnded:
		c.det.ended(e.Conn)
	case Scaled:
		c.scaled(e)
	case ScaleRequest:
		if e.N < 1 || e.N > wire.MaxMembers {
			c.endJob(job{kind: jobScale, req: e}, fmt.Errorf("planner: scale to %d workers, want 1..%d", e.N, wire.MaxMembers))
			break
		}
		c.queue = append(c.queue, job{kind: jobScale, req: e})
	case Migrated:
		c.migrated(e)
	case Snapshot:
		c.snapshot(e)
	case SnapshotDone:
		c.snapshotDone(e)
	case Completed:
	case EndLoad:
		c.ended = true
		c.steps = c.steps[:c.nextStep]
	case FinalCheckpoint:
		if c.ck.interval > 0 {
			c.queue = append(c.queue, job{kind: jobCheckpoint})
		}
	}
	c.advance()
	out := c.out
	c.out = nil
	return out
}

func (c *Core) emit(a ...Action) { c.out = append(c.out, a...) }

// fail ends the job visibly: Fail, then nothing more.
func (c *Core) fail(err error) {
	c.failed = err
	c.emit(Fail{Err: err})
}

func (c *Core) notef(format string, args ...any) {
	c.emit(Note{Text: fmt.Sprintf(format, args...)})
}

// sinceLoad is now in seconds after the load started.
func (c *Core) sinceLoad() float64 { return (c.now - c.loadStart).Seconds() }

// tick runs failure detection, the steps and checkpoints due, and the
// timeouts.
func (c *Core) tick() {
	before := len(c.det.live())
	for _, id := range c.det.check(c.now) {
		c.died(id, before)
	}
	if !c.loading {
		return
	}
	for ; c.nextStep < len(c.steps) && c.loadStart+c.steps[c.nextStep].At <= c.now; c.nextStep++ {
		s := c.steps[c.nextStep]
		c.queue = append(c.queue, job{kind: jobScale, req: ScaleRequest{N: s.Workers, Reason: fmt.Sprintf("scale step at %v", s.At)}})
	}
	if !c.ended && c.ck.due(c.now) && !c.queued(jobCheckpoint) {
		c.queue = append(c.queue, job{kind: jobCheckpoint})
	}
}

func (c *Core) queued(k jobKind) bool {
	return slices.ContainsFunc(c.queue, func(j job) bool { return j.kind == k }) || (c.cur != nil && c.cur.kind == k)
}

// died handles member id found dead: its stream is closed, a checkpoint in
// progress is discarded at once, a migration in progress no longer waits
// for its report, and the failover is pending.
func (c *Core) died(id uint32, before int) {
	m := c.det.members[id]
	c.emit(Close{ID: id, Conn: m.conn, Dead: true})
	if m.cut {
		c.notef("worker %d: its stream ended: dead", id)
	} else {
		c.notef("worker %d missed %d heartbeats: dead", id, c.cfg.Miss)
	}
	if len(c.gone) == 0 {
		c.before = before
	}
	c.gone[id] = true
	if c.cur != nil && c.cur.kind == jobCheckpoint {
		c.discardCheckpoint(fmt.Sprintf("worker %d died", id))
	}
	if j := c.cur; j != nil && j.mig != nil && j.mig.wait[id] {
		// Its report will never come: the migration ends (incomplete)
		// once the live members reported, and the failover follows,
		// instead of waiting for the migration timeout.
		delete(j.mig.wait, id)
		j.mig.died++
		if len(j.mig.wait) == 0 {
			c.finishMigration(false)
		}
	}
}

// hello admits a worker's stream.
func (c *Core) hello(h Hello) {
	m, err := c.det.join(h.Conn, h.ID, h.Addr, c.now, wire.NoID)
	if err != nil {
		c.emit(Refuse{Conn: h.Conn, Err: fmt.Errorf("planner: %w", err)})
		return
	}
	c.emit(Bind{Conn: h.Conn, ID: m.id, Epoch: c.epoch})
	if c.owners != nil && c.ownersAlive() {
		pl := &wire.Placement{Epoch: c.epoch, Owners: slices.Clone(c.owners), Members: c.memberList(c.det.alive())}
		m.installed = true
		c.emit(Send{To: m.id, Msg: pl})
	}
	c.notef("worker %d joined from %s", m.id, h.Addr)
}

// ownersAlive reports whether every owner of the current placement is a
// member not dead: a placement naming a dead owner is malformed to a
// worker (its owners must be members), so a worker joining while every
// worker is dead gets its first placement with the restart (restore).
func (c *Core) ownersAlive() bool {
	for o := range c.owners {
		for _, id := range c.owners[o] {
			if !c.IsAlive(id) {
				return false
			}
		}
	}
	return true
}

func (c *Core) memberList(ids []uint32) []wire.Member {
	out := make([]wire.Member, 0, len(ids))
	for _, id := range ids {
		out = append(out, wire.Member{ID: id, Addr: c.det.members[id].addr})
	}
	return out
}

// advance runs the reconfigurations: timeouts of the one in progress,
// then, while none is, the pending failover first, then the queue, then
// a rejoin when workers wait to be placed.
func (c *Core) advance() {
	rejoinTried := false
	for c.failed == nil {
		c.progress()
		if c.cur != nil {
			if len(c.gone) == 0 || c.cur.kind != jobScale || c.cur.mig != nil {
				return
			}
			// A scale still waiting for its workers changed nothing yet:
			// the failover goes first, the scale after it.
			c.queue = slices.Insert(c.queue, 0, *c.cur)
			c.cur = nil
		}
		next := 0 // before the initial placement only it can run
		for !c.loading && next < len(c.queue) && c.queue[next].kind != jobInitial {
			next++
		}
		switch {
		case len(c.gone) > 0:
			c.failover()
		case next < len(c.queue):
			j := c.queue[next]
			c.queue = slices.Delete(c.queue, next, next+1)
			c.begin(j)
		case c.loading && !rejoinTried && c.wantsRejoin():
			rejoinTried = true
			c.queue = append(c.queue, job{kind: jobScale, req: ScaleRequest{Reason: "rejoin"}})
		default:
			return
		}
	}
}

// progress moves the reconfiguration in progress on: its timeouts, a
// scale whose workers joined, a pause checkpoint whose inputs drained.
func (c *Core) progress() {
	j := c.cur
	switch {
	case j == nil:
	case j.kind == jobCheckpoint:
		c.progressCheckpoint()
	case j.kind == jobRestart:
		c.progressRestart()
	case j.mig != nil:
		if c.now >= j.mig.deadline {
			c.finishMigration(false)
		}
	case j.scaled && len(c.det.live()) >= j.n:
		c.place()
	case c.now >= j.deadline:
		err := fmt.Errorf("planner: %d of %d workers joined within %v", len(c.det.live()), j.n, c.cfg.JoinTimeout)
		c.cur = nil
		c.endJob(*j, err)
	}
}

// endJob answers a finished scale (or fails the run for the initial one).
func (c *Core) endJob(j job, err error) {
	switch {
	case j.kind == jobInitial && err != nil:
		c.fail(err)
	case err != nil:
		c.notef("%s: %v", j.req.Reason, err)
		if j.req.Reason == "rejoin" {
			c.rejoinAfter = c.now + c.cfg.Heartbeat // not a provider call every tick
		}
	}
	if j.req.ID != 0 {
		c.emit(ScaleDone{ID: j.req.ID, Err: err})
	}
}

// begin starts job j.
func (c *Core) begin(j job) {
	switch j.kind {
	case jobCheckpoint:
		c.cur = &j
		c.startCheckpoint()
	default:
		c.beginScale(j)
	}
}

// Idle reports whether no reconfiguration runs or waits (or the job
// failed).
func (c *Core) Idle() bool {
	return c.failed != nil || c.cur == nil && len(c.queue) == 0 && len(c.gone) == 0
}

// Failed returns why the job failed (nil: it did not).
func (c *Core) Failed() error { return c.failed }

// Restarts counts the job restarts (every worker dead) begun.
func (c *Core) Restarts() int { return len(c.restarts) }

// LostGroups counts the key groups (of every operator) whose state a
// failure lost: owned by a dead worker and not restored from a
// checkpoint (failovers without checkpoints).
func (c *Core) LostGroups() int { return c.lostGroups }

// Epoch is the current placement epoch.
func (c *Core) Epoch() uint64 { return c.epoch }

// Owners is the current owner of every key group of every operator (nil
// before the initial placement); the caller must not change it.
func (c *Core) Owners() [][ops.KeyGroups]uint32 { return c.owners }

// Live returns the live, non-leaving members ascending.
func (c *Core) Live() []uint32 { return c.det.live() }

// Alive returns every member not dead, leaving ones too, ascending.
func (c *Core) Alive() []uint32 { return c.det.alive() }

// Placed returns the live, non-leaving members of the last placement.
func (c *Core) Placed() []uint32 { return c.det.placed() }

// IsAlive reports whether id is a member not dead.
func (c *Core) IsAlive(id uint32) bool {
	m := c.det.members[id]
	return m != nil && !m.dead
}

// IsDead reports whether id is a member declared dead (not replaced
// since): the shell tells a worker it dismisses why.
func (c *Core) IsDead(id uint32) bool {
	m := c.det.members[id]
	return m != nil && m.dead
}

// LoadStart is when the load started (StartLoad), on the shell's clock.
func (c *Core) LoadStart() time.Duration { return c.loadStart }

// Failures counts the failovers.
func (c *Core) Failures() int { return c.failures }

// BeatGaps returns the gaps between consecutive beats of one member, ms,
// in the order read.
func (c *Core) BeatGaps() []float64 { return slices.Clone(c.det.gaps) }

// Migrations returns the reconfigurations recorded, in order.
func (c *Core) Migrations() []Migration { return slices.Clone(c.migs) }

// Restores returns the failovers that restored a checkpoint.
func (c *Core) Restores() []Restore { return slices.Clone(c.restores) }

// CheckpointLog returns every checkpoint's measurements, in start order.
func (c *Core) CheckpointLog() []CheckpointStat { return slices.Clone(c.ck.stats) }

// Checkpoint returns the last complete checkpoint: its ID (0: the empty
// initial state), cut, and state by op<<8 | key group (the caller must
// not change it).
func (c *Core) Checkpoint() (id uint64, cut int, state map[uint32]map[uint64][]byte) {
	return c.ck.last.id, c.ck.last.cut, c.ck.last.state
}

var errNoWorkers = errors.New("no live worker left")
