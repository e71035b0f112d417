package core

import (
	"fmt"
	"slices"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

// Resume is the checkpoint a restarted planner resumes its job from
// (Config.Restore; see package planner, "Planner restart"): its ID, its cut
// — the source offset: the shell's input log starts with inputs 0..Cut−1,
// all complete, and the source resumes at input Cut — and its keyed state
// by op<<8 | key group → key → value (the core keeps it; the caller must
// not change it).
//
// The core starts as usual (Begin, the workers join, the initial
// placement at epoch 1), then, before the load starts, restores the
// checkpoint on every worker at epoch 2 as a failover's global rollback
// does (a Restore with the state of the key groups the worker owns, then
// the placement without moves) and waits for every worker's report before
// a checkpoint may start. Nothing is replayed: the shell has sent no input
// yet. The next checkpoint's ID follows the restored one, so IDs keep
// growing across restarts.
type Resume struct {
	ID    uint64
	Cut   int
	State map[uint32]map[uint64][]byte
}

func (r *Resume) validate(nOps int) error {
	if r.ID == 0 || r.Cut < 0 {
		return fmt.Errorf("core: restore of checkpoint %d at cut %d, want an ID ≥ 1 and a cut ≥ 0", r.ID, r.Cut)
	}
	for g, m := range r.State {
		op, kg := int(g>>8), int(g&0xff)
		if op >= nOps || kg >= ops.KeyGroups {
			return fmt.Errorf("core: restore of checkpoint %d has state of operator %d key group %d, the application has %d operators and %d key groups", r.ID, op, kg, nOps, ops.KeyGroups)
		}
		for k := range m {
			if ops.KeyGroup(k) != kg {
				return fmt.Errorf("core: restore of checkpoint %d: key %d is not in key group %d", r.ID, k, kg)
			}
		}
	}
	return nil
}

// installResume makes the restored checkpoint the last complete one.
func (k *coordinator) installResume(r *Resume) {
	last := &ckpt{id: r.ID, cut: r.Cut, state: r.State}
	if last.state == nil {
		last.state = map[uint32]map[uint64][]byte{}
	}
	for _, m := range last.state {
		for _, v := range m {
			last.keys++
			last.bytes += uint64(8 + len(v))
		}
	}
	k.last, k.next = last, r.ID
}

// resume restores the checkpoint of Config.Restore on every worker right
// after the initial placement, and returns the job awaiting their reports.
func (c *Core) resume() *job {
	ck := c.ck.last
	c.epoch++
	members := c.det.alive()
	pl := &wire.Placement{Epoch: c.epoch, Owners: slices.Clone(c.owners), Members: c.memberList(members)}
	for _, id := range members {
		frames, n := ck.frames(c.owners, id)
		c.emit(Send{To: id, Msg: &RestoreMsg{Restore: wire.Restore{Epoch: c.epoch, ID: ck.id, Frames: n}, Frames: frames}}, Send{To: id, Msg: pl})
	}
	c.routes()
	c.notef("epoch %d: resumes checkpoint %d (inputs < %d; %d keys, %d bytes) on %d workers", c.epoch, ck.id, ck.cut, ck.keys, ck.bytes, len(members))
	return &job{kind: jobScale, mig: c.awaitReports(Migration{From: len(members), To: len(members), Reason: "restore"})}
}
