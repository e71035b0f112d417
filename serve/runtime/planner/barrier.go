package planner

import (
	"context"
	"fmt"
	"time"

	"streamscale/serve/runtime/wire"
)

// Checkpoint modes (Config.CheckpointMode).
const (
	ModeBarrier = "barrier"
	ModePause   = "pause"
)

// checkpointBarrier takes one checkpoint by asynchronous barrier
// snapshotting (see the package documentation): the cut is the inputs
// generated so far; a Barrier follows the last of them on every
// participating worker's ingress stream, and the ingress goes on. Each
// worker aligns, snapshots task by task and reports; the checkpoint is
// complete when every participant has, and every input before the cut has
// then completed (the workers return completion weight before their
// snapshot-done). A worker failure, a refusal or Config.CheckpointTimeout
// discards it: the participants are told to stop aligning it (Abort) and
// the previous complete checkpoint stays the one restored.
func (p *Planner) checkpointBarrier(ctx context.Context) {
	p.reconf.Lock()
	defer p.reconf.Unlock()
	t0 := time.Now()
	deadline := time.NewTimer(p.cfg.CheckpointTimeout)
	defer deadline.Stop()
	p.mu.Lock()
	run, st := p.startCheckpoint(t0, ModeBarrier)
	ids := p.placedIDs()
	switch {
	case p.failing > 0:
		run.fail("a failover is pending")
	case len(ids) == 0:
		run.fail("no worker to checkpoint")
	default:
		p.flush() // every input before the cut is in the outboxes, before the barrier
		b := wire.Barrier{ID: run.id, Cut: uint64(run.cut), Epoch: p.epoch, From: wire.NoID, Op: wire.NoOp, Members: ids}
		for _, id := range ids {
			run.wait[id] = true
			p.members[id].out.frame(b.Append)
		}
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.ckRun = nil
		st.DurationMS = float64(time.Since(t0).Microseconds()) / 1e3
		st.AlignMS, st.SnapshotMS = float64(run.alignNS)/1e6, float64(run.snapNS)/1e6
		if !st.Complete {
			run.fail("") // late frames of it are ignored
			st.Reason = run.why
			a := wire.Abort{ID: run.id}
			for _, id := range ids {
				if m := p.members[id]; m != nil && !m.dead {
					m.out.frame(a.Append)
				}
			}
		}
		p.ckStats = append(p.ckStats, st)
		p.mu.Unlock()
		if st.Complete {
			p.logf("checkpoint %d: %d inputs, %d keys, %d bytes; %.1f ms, alignment ≤ %.1f ms, snapshot ≤ %.2f ms", st.ID, st.Cut, st.Keys, st.Bytes, st.DurationMS, st.AlignMS, st.SnapshotMS)
		} else {
			p.logf("checkpoint %d discarded: %s", st.ID, st.Reason)
		}
	}()
	if p.ckHook != nil {
		p.ckHook(run.id)
	}
	if !p.awaitSnapshots(ctx, run, deadline) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if run.aborted {
		return
	}
	for p.ckOpen < run.cut && p.ins[p.ckOpen].done && !p.ins[p.ckOpen].redo {
		p.ckOpen++
	}
	if p.ckOpen < run.cut {
		// Every record of an input before the cut executed before its
		// task's snapshot, and its weight came back first: one did not.
		run.fail(fmt.Sprintf("input %d before the cut %d is not complete", p.ckOpen, run.cut))
		return
	}
	p.install(run, &st)
}
