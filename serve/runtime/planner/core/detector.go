package core

import (
	"fmt"
	"slices"
	"time"
)

// member is a connected worker.
type member struct {
	id   uint32
	conn uint64
	addr string
	// lastBeat is when the last beat counted (moved on by the stall
	// compensation); beatAt when the last beat was read (beaten: there was
	// one), the gaps between beats as received.
	lastBeat, beatAt time.Duration
	beaten           bool
	cut              bool // its stream ended
	leaving          bool // drained; stopped after the current epoch
	dead             bool
	// placed: this connection was sent a placement broadcast. A worker
	// restarted under a dead worker's ID before the failover is not: the
	// owner table still names the dead worker, and the ingress must not
	// feed the newcomer the dead worker's key groups with empty state.
	placed bool
	// installed: this connection was sent a placement of any kind (a
	// worker's first placement must list no moves).
	installed bool
}

// detector is the membership and heartbeat failure detector: a worker that
// missed Miss beats, or whose stream ended, is dead. It is fed the time
// and knows nothing of placements.
type detector struct {
	heartbeat, tick time.Duration
	miss            int
	members         map[uint32]*member
	conns           map[uint64]uint32
	lastTick        time.Duration
	ticked          bool
	gaps            []float64 // ms between consecutive beats of a member, as read
}

func newDetector(heartbeat, tick time.Duration, miss int) detector {
	return detector{heartbeat: heartbeat, tick: tick, miss: miss, members: map[uint32]*member{}, conns: map[uint64]uint32{}}
}

// join admits stream conn as a member: under id, or when id is NoID the
// lowest ID no member holds, live or dead. A live member's ID is refused.
// A dead worker that rejoins asking for no ID (package worker does after a
// partition) so becomes a new member under a fresh ID: nothing addressed to
// its old ID — a peer's straggler, a frame of its old epoch — can be taken
// for the new member's. A hello from the address of another live member is
// that worker come back after losing its stream (the planner has not
// noticed yet): the old member's stream counts as cut, so it is dead at the
// next tick and failed over, and the hello is refused until then (the
// worker retries).
func (d *detector) join(conn uint64, id uint32, addr string, now time.Duration, noID uint32) (*member, error) {
	if id == noID {
		id = 0
		for d.members[id] != nil {
			id++
		}
	}
	if old := d.members[id]; old != nil && !old.dead {
		return nil, fmt.Errorf("refused worker %d at %s: that ID is live", id, addr)
	}
	if addr != "" {
		for _, oid := range d.ids(func(m *member) bool { return !m.dead && m.addr == addr }) {
			d.members[oid].cut = true
			return nil, fmt.Errorf("refused a worker at %s: member %d has that address; its stream counts as ended (a rejoin replaces it once it is declared dead; retry)", addr, oid)
		}
	}
	if old := d.members[id]; old != nil {
		delete(d.conns, old.conn)
	}
	m := &member{id: id, conn: conn, addr: addr, lastBeat: now}
	d.members[id] = m
	d.conns[conn] = id
	return m, nil
}

// byConn returns the member whose stream is conn (nil: none, or it was
// replaced).
func (d *detector) byConn(conn uint64) *member {
	id, ok := d.conns[conn]
	if !ok {
		return nil
	}
	if m := d.members[id]; m != nil && m.conn == conn {
		return m
	}
	return nil
}

// beat counts a heartbeat of stream conn's member from (which must be it).
func (d *detector) beat(conn uint64, from uint32, now time.Duration) {
	m := d.byConn(conn)
	if m == nil || m.dead || m.id != from {
		return
	}
	if m.beaten {
		d.gaps = append(d.gaps, float64(now-m.beatAt)/float64(time.Millisecond))
	}
	m.lastBeat, m.beatAt, m.beaten = now, now, true
}

// ended notes that stream conn ended.
func (d *detector) ended(conn uint64) {
	if m := d.byConn(conn); m != nil && !m.dead {
		m.cut = true
	}
}

// check returns the members found dead at now (ascending) and marks them.
// A stall of the planner itself — its process not scheduled on a busy
// host — is not counted against the workers: the beats of that time may
// wait unread in its sockets, and the check would otherwise run first and
// find every worker silent. A tick more than half a beat interval late
// moves every member's last beat on by its lateness.
func (d *detector) check(now time.Duration) []uint32 {
	if d.ticked {
		if stall := now - d.lastTick - d.tick; stall > d.heartbeat/2 {
			for _, m := range d.members {
				if m.lastBeat = m.lastBeat + stall; m.lastBeat > now {
					m.lastBeat = now
				}
			}
		}
	}
	d.lastTick, d.ticked = now, true
	limit := time.Duration(d.miss) * d.heartbeat
	var dead []uint32
	for _, id := range d.ids(func(m *member) bool { return !m.dead && !m.leaving }) {
		if m := d.members[id]; m.cut || now-m.lastBeat > limit {
			m.dead = true
			dead = append(dead, id)
		}
	}
	return dead
}

// ids returns the IDs of the members keep selects, ascending.
func (d *detector) ids(keep func(*member) bool) []uint32 {
	var ids []uint32
	for id, m := range d.members {
		if keep(m) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// live returns the live, non-leaving members' IDs ascending.
func (d *detector) live() []uint32 {
	return d.ids(func(m *member) bool { return !m.dead && !m.leaving })
}

// alive returns every member not dead (leaving ones too), ascending.
func (d *detector) alive() []uint32 { return d.ids(func(m *member) bool { return !m.dead }) }

// placed returns the live, non-leaving members placed by a broadcast.
func (d *detector) placed() []uint32 {
	return d.ids(func(m *member) bool { return !m.dead && !m.leaving && m.placed })
}

// remove forgets member id.
func (d *detector) remove(id uint32) {
	if m := d.members[id]; m != nil {
		delete(d.conns, m.conn)
		delete(d.members, id)
	}
}
