package core

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// migration is a placement broadcast waiting for every member's report.
type migration struct {
	rec      Migration
	start    time.Duration
	deadline time.Duration
	wait     map[uint32]bool
	died     int // members that died before reporting (no longer waited for)
	reports  []wire.Migrated
}

// wantsRejoin reports whether workers that joined after a failure wait to
// be placed while the cluster is below its target size.
func (c *Core) wantsRejoin() bool {
	placed, live := len(c.det.placed()), len(c.det.live())
	return live > placed && placed < c.target && c.now >= c.rejoinAfter
}

// beginScale starts a scale (or the initial placement): the provider is
// asked for more workers when needed, and the placement waits for them to
// join (place).
func (c *Core) beginScale(j job) {
	cur := len(c.det.placed())
	n := j.req.N
	switch {
	case j.kind == jobInitial:
		n = j.req.N
	case j.req.Reason == "rejoin":
		live := len(c.det.live())
		if live <= cur || cur >= c.target {
			return
		}
		n = min(live, c.target)
	default:
		c.target = n
		if n == cur && j.req.Shares == nil {
			c.endJob(j, nil)
			return
		}
	}
	j.n = n
	c.cur = &j
	if j.asked {
		return // preempted by a failover and resumed: the provider was asked
	}
	if n > cur || j.kind == jobInitial {
		j.asked, j.deadline = true, c.now+c.cfg.JoinTimeout
		j.ask = c.askProvider(n)
		return
	}
	j.scaled = true
	c.progress()
}

// askProvider asks the provider for n workers and returns the ask's
// number: the provider answers in order.
func (c *Core) askProvider(n int) uint64 { return c.askStop(n, nil) }

// askStop asks the provider to stop exactly the members stop, leaving n.
func (c *Core) askStop(n int, stop []uint32) uint64 {
	c.asked++
	c.asks = append(c.asks, c.asked)
	var addrs []string
	for _, id := range stop {
		a := ""
		if m := c.det.members[id]; m != nil {
			a = m.addr
		}
		addrs = append(addrs, a)
	}
	c.emit(ScaleWorkers{N: n, Stop: slices.Clone(stop), StopAddrs: addrs})
	return c.asked
}

// scaled is the provider's answer to the oldest ask.
func (c *Core) scaled(e Scaled) {
	if len(c.asks) == 0 {
		return
	}
	ask := c.asks[0]
	c.asks = c.asks[1:]
	j := c.cur
	if j == nil || j.ask != ask {
		// A stop after a scale-in, or the answer to a preempted scale
		// (queued again).
		for i := range c.queue {
			if q := &c.queue[i]; q.ask == ask {
				q.scaled = true
				return
			}
		}
		if e.Err != nil {
			c.notef("stop workers: %v", e.Err)
		}
		return
	}
	if e.Err != nil {
		c.cur = nil
		err := fmt.Errorf("planner: start %d workers: %w", e.N, e.Err)
		if j.kind == jobRestart {
			c.restartFailed(*j, err)
			return
		}
		c.endJob(*j, err)
		return
	}
	j.scaled = true
}

// place places the scale's workers once they joined: the first n live
// members keep or take key groups, the others drain and are stopped after
// the migration.
func (c *Core) place() {
	j := c.cur
	ids := c.det.live()
	if j.kind == jobInitial {
		c.target = len(ids)
		c.owners = assign(nil, c.cfg.Ops, ids, j.req.Shares)
		c.broadcast(nil)
		c.notef("placed on %d workers", len(ids))
		c.cur = nil
		c.loading, c.loadStart = true, c.now
		c.ck.start(c.now)
		if c.cfg.Restore != nil {
			c.cur = c.resume()
		}
		c.emit(StartLoad{})
		return
	}
	from := len(c.det.placed())
	keep, leaving := ids[:min(j.n, len(ids))], ids[min(j.n, len(ids)):]
	for _, id := range leaving {
		c.det.members[id].leaving = true
	}
	j.leaving = leaving
	j.mig = c.reconfigure(assign(c.owners, c.cfg.Ops, keep, j.req.Shares), from, len(keep), j.req.Reason)
}

// reconfigure broadcasts new owners and starts waiting for every member's
// report.
func (c *Core) reconfigure(owners [][ops.KeyGroups]uint32, from, to int, reason string) *migration {
	moves := diff(c.owners, owners)
	c.owners = owners
	c.broadcast(moves)
	c.notef("epoch %d: %s, %d → %d workers, %d key groups move", c.epoch, reason, from, to, len(moves))
	return c.awaitReports(Migration{From: from, To: to, Reason: reason, Moves: len(moves)})
}

// awaitReports waits for the reports of every member of the epoch just
// broadcast.
func (c *Core) awaitReports(rec Migration) *migration {
	rec.Epoch, rec.AtS = c.epoch, c.sinceLoad()
	mg := &migration{rec: rec, start: c.now, deadline: c.now + c.cfg.MigrationTimeout, wait: map[uint32]bool{}}
	for _, id := range c.det.alive() {
		mg.wait[id] = true
	}
	return mg
}

// broadcast sends the owners with the next epoch to every member not dead
// (moves nil: a fresh placement) and routes the ingress by them.
func (c *Core) broadcast(moves []wire.Move) {
	c.epoch++
	ids := c.det.alive()
	pl := &wire.Placement{Epoch: c.epoch, Owners: slices.Clone(c.owners), Moves: moves, Members: c.memberList(ids)}
	for _, id := range ids {
		c.det.members[id].placed, c.det.members[id].installed = true, true
	}
	for _, id := range ids {
		c.emit(Send{To: id, Msg: pl})
	}
	c.routes()
}

// routes tells the ingress the owners and the members it may feed.
func (c *Core) routes() {
	live := c.det.ids(func(m *member) bool { return !m.dead && m.placed })
	c.emit(Routes{Epoch: c.epoch, Owners: slices.Clone(c.owners), Live: live})
}

// migrated records a worker's migration report.
func (c *Core) migrated(e Migrated) {
	m := c.det.byConn(e.Conn)
	if c.cur == nil || c.cur.mig == nil || m == nil || e.Report.From != m.id {
		return
	}
	mg := c.cur.mig
	if e.Report.Epoch != c.epoch || !mg.wait[m.id] {
		return
	}
	delete(mg.wait, m.id)
	mg.reports = append(mg.reports, e.Report)
	if len(mg.wait) == 0 {
		c.finishMigration(true)
	}
}

// finishMigration records the migration in progress (complete: every
// report arrived) and stops the workers a scale-in drained.
func (c *Core) finishMigration(complete bool) {
	j := c.cur
	mg := j.mig
	rec := mg.rec
	complete = complete && mg.died == 0
	rec.Complete = complete
	rec.PlannerMS = ms(c.now - mg.start)
	for _, r := range mg.reports {
		rec.PauseMSMax = max(rec.PauseMSMax, float64(r.PauseNS)/1e6)
		rec.WaitMSMax = max(rec.WaitMSMax, float64(r.WaitNS)/1e6)
		rec.MovedKeys += r.MovedKeys
		rec.MovedBytes += r.MovedBytes
		rec.MovedQueued += r.MovedQueued
		rec.Pauses = append(rec.Pauses, WorkerPause{Worker: r.From, PauseMS: float64(r.PauseNS) / 1e6, WaitMS: float64(r.WaitNS) / 1e6})
	}
	slices.SortFunc(rec.Pauses, func(a, b WorkerPause) int { return int(a.Worker) - int(b.Worker) })
	if !complete {
		c.notef("epoch %d: %d workers did not report the migration", rec.Epoch, len(mg.wait)+mg.died)
	}
	c.migs = append(c.migs, rec)
	c.cur = nil
	if len(j.leaving) > 0 {
		c.askStop(j.n, j.leaving)
		for _, id := range j.leaving {
			if m := c.det.members[id]; m != nil {
				c.emit(Close{ID: id, Conn: m.conn})
				c.det.remove(id)
			}
		}
	}
	c.endJob(*j, nil)
}

// failover reassigns the key groups of the dead workers to the live ones.
// Without checkpoints it replays every input not yet complete (the dead
// workers' state is lost: lostGroups); with them it restores the last
// complete checkpoint everywhere (restore). With no live worker left the
// restart strategy decides (allDead).
func (c *Core) failover() {
	gone, before := c.gone, c.before
	c.gone = map[uint32]bool{}
	ids := c.det.live()
	if c.owners == nil {
		return // nothing placed yet: the initial placement takes the live ones
	}
	if len(ids) == 0 {
		c.allDead(gone, before)
		return
	}
	c.failures++
	if c.ck.interval > 0 {
		c.cur = &job{kind: jobScale, mig: c.restore(gone, before, "failover", false)}
		return
	}
	c.lostGroups += c.ownedBy(gone)
	mg := c.reconfigure(assign(c.owners, c.cfg.Ops, ids, nil), before, len(ids), "failover")
	c.emit(Replay{OpenOnly: true})
	c.cur = &job{kind: jobScale, mig: mg}
}

// ownedBy counts the key groups (of every operator) the members dead own.
func (c *Core) ownedBy(dead map[uint32]bool) int {
	n := 0
	for o := range c.owners {
		for g := range ops.KeyGroups {
			if dead[c.owners[o][g]] {
				n++
			}
		}
	}
	return n
}

// allDead is the failure of every worker: a job restart (jobRestart) if
// the restart strategy allows one, else the job fails.
func (c *Core) allDead(dead map[uint32]bool, before int) {
	c.failures++
	r := c.cfg.Restart
	var why string
	switch {
	case r.Strategy == "" || r.Strategy == RestartNone:
		why = "restart strategy none"
	case r.Strategy == RestartFixedDelay && len(c.restarts) >= r.Attempts:
		why = fmt.Sprintf("fixed-delay restart strategy: %d restarts used", len(c.restarts))
	case r.Strategy == RestartFailureRate:
		recent := 0
		for _, t := range c.restarts {
			if c.now-t < r.Interval {
				recent++
			}
		}
		if recent >= r.Attempts {
			why = fmt.Sprintf("failure-rate restart strategy: %d restarts within %v", recent, r.Interval)
		}
	}
	if why != "" {
		c.fail(fmt.Errorf("planner: %w at %.1f s; %s", errNoWorkers, c.sinceLoad(), why))
		return
	}
	c.restarts = append(c.restarts, c.now)
	c.cur = &job{kind: jobRestart, deadline: c.now + r.Delay, dead: dead, before: before}
	c.notef("%v at %.1f s: restart %d (%s) in %v", errNoWorkers, c.sinceLoad(), len(c.restarts), r.Strategy, r.Delay)
}

// progressRestart moves a job restart on: after the delay it asks the
// provider for the target worker count; once they joined it restores (at
// the join timeout with at least one, else the attempt failed).
func (c *Core) progressRestart() {
	j := c.cur
	live := len(c.det.live())
	switch {
	case !j.asked && c.now >= j.deadline:
		j.asked, j.deadline = true, c.now+c.cfg.JoinTimeout
		j.ask = c.askProvider(c.target)
	case !j.asked:
	case j.scaled && live >= c.target, c.now >= j.deadline && live > 0:
		c.cur = nil
		c.gone = map[uint32]bool{} // newcomers that died before being placed
		if c.ck.interval == 0 {
			c.lostGroups += c.ownedBy(j.dead)
		}
		c.cur = &job{kind: jobScale, mig: c.restore(j.dead, j.before, "restart", c.ck.interval == 0)}
	case c.now >= j.deadline:
		c.cur = nil
		c.restartFailed(*j, fmt.Errorf("planner: no worker joined within %v", c.cfg.JoinTimeout))
	}
}

// restartFailed ends a restart attempt that got no worker: the strategy
// decides again.
func (c *Core) restartFailed(j job, err error) {
	c.notef("restart %d: %v", len(c.restarts), err)
	c.failures-- // the same failure, not a new one
	c.allDead(j.dead, j.before)
}

// restore is the failover with checkpoints, and every job restart: the
// global rollback. Every live worker gets the new owners in a restore
// placement, preceded by the last complete checkpoint's state of the key
// groups it owns in it (empty with empty, a restart without checkpoints);
// it discards everything it holds and replaces its state. Then every
// input the checkpoint does not cover is sent again (Replay; with empty
// every input not complete).
func (c *Core) restore(dead map[uint32]bool, before int, reason string, empty bool) *migration {
	ck := c.ck.last
	if empty {
		ck = &ckpt{state: map[uint32]map[uint64][]byte{}}
	}
	ids := c.det.live()
	owners := assign(c.owners, c.cfg.Ops, ids, nil)
	groups := c.ownedBy(dead)
	moves := len(diff(c.owners, owners))
	c.owners = owners
	members := c.det.alive()
	// A worker without a placement yet (one that joined while every
	// worker was dead) first gets the new owners at the current epoch,
	// then the restore at the next.
	first := &wire.Placement{Epoch: c.epoch, Owners: slices.Clone(owners), Members: c.memberList(members)}
	c.epoch++
	pl := &wire.Placement{Epoch: c.epoch, Owners: slices.Clone(owners), Members: c.memberList(members)}
	for _, id := range members {
		m := c.det.members[id]
		if !m.installed {
			c.emit(Send{To: id, Msg: first})
		}
		m.placed, m.installed = true, true
		frames, n := ck.frames(owners, id)
		c.emit(Send{To: id, Msg: &RestoreMsg{Restore: wire.Restore{Epoch: c.epoch, ID: ck.id, Frames: n}, Frames: frames}}, Send{To: id, Msg: pl})
	}
	c.routes()
	if empty {
		c.emit(Replay{OpenOnly: true})
		c.notef("epoch %d: %s on %d workers with empty state (no checkpoints: the state of %d key groups is lost); open inputs replayed", c.epoch, reason, len(ids), groups)
		return c.awaitReports(Migration{From: before, To: len(ids), Reason: reason, Moves: moves})
	}
	replayed := max(0, c.log.Inputs-ck.cut)
	c.emit(Replay{From: ck.cut})
	c.restores = append(c.restores, Restore{AtS: c.sinceLoad(), Epoch: c.epoch, Checkpoint: ck.id, Cut: ck.cut, Groups: groups, Replayed: replayed})
	c.notef("epoch %d: %s restores checkpoint %d (inputs < %d) on %d workers; %d key groups of dead workers restored, %d move; replayed %d inputs", c.epoch, reason, ck.id, ck.cut, len(ids), groups, moves, replayed)
	return c.awaitReports(Migration{From: before, To: len(ids), Reason: reason, Moves: moves})
}

// assign returns owners for every operator over the workers ids (ascending)
// with key-group counts proportional to shares[i][o] (nil: even), keeping
// each group with its old owner while that owner has room.
func assign(old [][ops.KeyGroups]uint32, nOps int, ids []uint32, shares [][]float64) [][ops.KeyGroups]uint32 {
	out := make([][ops.KeyGroups]uint32, nOps)
	pos := make(map[uint32]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	for o := range nOps {
		quota := counts(len(ids), shares, o)
		have := make([]int, len(ids))
		var placed [ops.KeyGroups]bool
		if old != nil {
			for g := range ops.KeyGroups {
				if i, ok := pos[old[o][g]]; ok && have[i] < quota[i] {
					out[o][g] = ids[i]
					have[i]++
					placed[g] = true
				}
			}
		}
		j := 0
		for g := range ops.KeyGroups {
			if placed[g] {
				continue
			}
			for have[j] >= quota[j] {
				j++
			}
			out[o][g] = ids[j]
			have[j]++
		}
	}
	return out
}

// Assign is assign for the shell and its tests: owners of nOps operators
// over ids with shares (nil: even), keeping old owners where they have
// room.
func Assign(old [][ops.KeyGroups]uint32, nOps int, ids []uint32, shares [][]float64) [][ops.KeyGroups]uint32 {
	return assign(old, nOps, ids, shares)
}

// counts splits the key groups of operator o over n workers by largest
// remainder of KeyGroups·share (ties to the lower index); shares nil or
// summing to 0 split evenly.
func counts(n int, shares [][]float64, o int) []int {
	w := make([]float64, n)
	sum := 0.0
	for i := range n {
		if shares != nil && i < len(shares) && o < len(shares[i]) && shares[i][o] > 0 {
			w[i] = shares[i][o]
			sum += w[i]
		}
	}
	if !(sum > 0) {
		for i := range w {
			w[i] = 1
		}
		sum = float64(n)
	}
	q := make([]int, n)
	type frac struct {
		i int
		f float64
	}
	fr := make([]frac, n)
	left := ops.KeyGroups
	for i := range n {
		x := ops.KeyGroups * w[i] / sum
		q[i] = int(math.Floor(x))
		left -= q[i]
		fr[i] = frac{i, x - math.Floor(x)}
	}
	sort.SliceStable(fr, func(a, b int) bool { return fr[a].f > fr[b].f })
	for k := 0; left > 0; k++ {
		q[fr[k%n].i]++
		left--
	}
	return q
}

// diff lists the key groups whose owner changes, by operator then group.
func diff(old, new [][ops.KeyGroups]uint32) []wire.Move {
	var mv []wire.Move
	for o := range new {
		for g := range ops.KeyGroups {
			if old[o][g] != new[o][g] {
				mv = append(mv, wire.Move{Op: uint16(o), KG: uint16(g), From: old[o][g], To: new[o][g]})
			}
		}
	}
	return mv
}
