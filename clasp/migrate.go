package clasp

import (
	"math"
	"sort"
)

// shareEps is the share change below which nothing migrates.
const shareEps = 1e-9

// Transfer moves a share of one operator from one worker to another: the
// share's partition of the operator's state and the share's part of the
// requests queued for the operator at the sender.
type Transfer struct {
	From, To int // worker IDs
	Op       int
	// Share is the share of the operator's demand (and keys) that moves.
	Share float64
	// StateBytes is Share/1 of the operator's state (0 if stateless), bytes.
	StateBytes float64
	// Requests is the queued requests that move with the share.
	Requests float64
	// Bytes is StateBytes + Requests·RequestBytes.
	Bytes float64
	// DoneS is when the transfer completes, seconds after the plan starts.
	DoneS float64
}

// PeerTransfer totals what a worker sends to or receives from one peer.
type PeerTransfer struct {
	Peer       int // worker ID
	StateBytes float64
	Requests   float64
	Bytes      float64
}

// WorkerMigration is one worker's part of a migration. There is no global
// barrier: the worker pauses the affected operators only until it has
// drained its in-flight executions and sent and received what the plan says.
type WorkerMigration struct {
	ID int
	// Join marks a worker new in the plan, Retire one that leaves it.
	Join, Retire bool
	// SendTo and ReceiveFrom are per peer, ascending peer ID.
	SendTo, ReceiveFrom []PeerTransfer
	// PauseS is the worker's estimated pause, seconds: the longest
	// execution time among the operators it sends or receives (drain)
	// plus the time until its own sends and all its receipts complete.
	PauseS float64
}

// Migration is the migration plan: the diff of the old and new placement.
type Migration struct {
	// Transfers are sorted by (Op, From, To).
	Transfers []Transfer
	// Workers are the workers that send, receive, join or retire,
	// ascending ID.
	Workers []WorkerMigration
	// MakespanS is the longest worker pause, seconds (0 when nothing
	// moves).
	MakespanS float64
}

// Migrate derives the migration from the observation's placement to the new
// shares (paper §4.6). For every operator, the workers whose share shrinks
// send the difference to the workers whose share grows, matched by the
// north-west-corner rule in ascending ID order. A moving share x of o leaving
// worker w carries x·S_o bytes of state (stateful operators) and the fraction
// x/φ_{o,w} of the requests queued for o at w, where w's queue Q_w is split
// over operators in proportion to their executions N_{w,o} (to their shares
// if w executed nothing). Operators not yet placed (initial deployment) move
// nothing. What is sent equals what is received, per operator.
//
// Timing, with bandwidth B per worker (full duplex): a sender transmits its
// transfers one after another in (To, Op) order; a receiver has everything
// once every incoming transfer completed and its ingress could carry their
// sum. A worker's pause is its drain time (the longest τ̄_o of the
// operators it sends or receives) plus the later of its last send and its
// last receipt. ids[w] is the ID of plan worker w; shares[w][o] its φ_{o,w}.
// The observation must be valid and d derived from it.
func Migrate(ob *Observation, d Demand, ids []int, shares [][]float64) Migration {
	nOps := len(ob.App.Operators)
	old := map[int]int{} // ID → index in ob.Workers (lookups only)
	for i, w := range ob.Workers {
		old[w.ID] = i
	}
	newIdx := map[int]int{}
	for i, id := range ids {
		newIdx[id] = i
	}
	all := make([]int, 0, len(ids)+len(ob.Workers))
	for _, w := range ob.Workers {
		all = append(all, w.ID)
	}
	for _, id := range ids {
		if _, ok := old[id]; !ok {
			all = append(all, id)
		}
	}
	sort.Ints(all)
	oldShare := func(id, o int) float64 {
		if i, ok := old[id]; ok {
			return at(ob.Workers[i].Share, o)
		}
		return 0
	}
	newShare := func(id, o int) float64 {
		if i, ok := newIdx[id]; ok {
			return shares[i][o]
		}
		return 0
	}
	queued := func(id, o int) float64 { // Q_{w,o}
		i, ok := old[id]
		if !ok {
			return 0
		}
		w := ob.Workers[i]
		var n, s float64
		for k := range nOps {
			n += at(w.Exec, k)
			s += at(w.Share, k)
		}
		switch {
		case n > 0:
			return w.Queue * at(w.Exec, o) / n
		case s > 0:
			return w.Queue * at(w.Share, o) / s
		}
		return 0
	}
	var mig Migration
	for o := range nOps {
		var oldSum float64
		for _, id := range all {
			oldSum += oldShare(id, o)
		}
		if oldSum == 0 {
			continue // not placed before: nothing to move
		}
		type part struct {
			id int
			x  float64
		}
		var send, recv []part
		for _, id := range all {
			a, b := oldShare(id, o), newShare(id, o)
			if a-b > shareEps {
				send = append(send, part{id, a - b})
			} else if b-a > shareEps {
				recv = append(recv, part{id, b - a})
			}
		}
		i, j := 0, 0
		for i < len(send) && j < len(recv) {
			x := min(send[i].x, recv[j].x)
			if x > shareEps {
				from := send[i].id
				t := Transfer{From: from, To: recv[j].id, Op: o, Share: x}
				if ob.App.Operators[o].Stateful {
					t.StateBytes = x * ob.stateBytes(o)
				}
				if a := oldShare(from, o); a > 0 {
					t.Requests = queued(from, o) * x / a
				}
				t.Bytes = t.StateBytes + t.Requests*ob.App.Operators[o].RequestBytes
				mig.Transfers = append(mig.Transfers, t)
			}
			send[i].x -= x
			recv[j].x -= x
			if send[i].x <= shareEps {
				i++
			}
			if j < len(recv) && recv[j].x <= shareEps {
				j++
			}
		}
	}
	timeTransfers(&mig, ob, d, all, old, newIdx)
	return mig
}

// timeTransfers fills DoneS, the per-worker totals and pauses, and the
// makespan.
func timeTransfers(mig *Migration, ob *Observation, d Demand, all []int, old, newIdx map[int]int) {
	b := ob.Bandwidth
	// Senders transmit in (To, Op) order.
	order := make([]int, len(mig.Transfers))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool {
		tx, ty := mig.Transfers[order[x]], mig.Transfers[order[y]]
		if tx.From != ty.From {
			return tx.From < ty.From
		}
		if tx.To != ty.To {
			return tx.To < ty.To
		}
		return tx.Op < ty.Op
	})
	sent := map[int]float64{}
	for _, k := range order {
		t := &mig.Transfers[k]
		sent[t.From] += t.Bytes
		t.DoneS = sent[t.From] / b
	}
	for _, id := range all {
		_, wasOld := old[id]
		_, isNew := newIdx[id]
		wm := WorkerMigration{ID: id, Join: isNew && !wasOld, Retire: wasOld && !isNew}
		var outB, inB, lastIn, drain float64
		for _, t := range mig.Transfers { // sorted by (Op, From, To): fixed order
			switch id {
			case t.From:
				outB += t.Bytes
				wm.SendTo = addPeer(wm.SendTo, t.To, t)
				drain = math.Max(drain, d.ExecUS[t.Op]/1e6)
			case t.To:
				inB += t.Bytes
				lastIn = math.Max(lastIn, t.DoneS)
				wm.ReceiveFrom = addPeer(wm.ReceiveFrom, t.From, t)
				drain = math.Max(drain, d.ExecUS[t.Op]/1e6)
			}
		}
		if len(wm.SendTo) == 0 && len(wm.ReceiveFrom) == 0 && !wm.Join && !wm.Retire {
			continue
		}
		sortPeers(wm.SendTo)
		sortPeers(wm.ReceiveFrom)
		if len(wm.SendTo)+len(wm.ReceiveFrom) > 0 {
			wm.PauseS = drain + math.Max(outB/b, math.Max(lastIn, inB/b))
		}
		mig.MakespanS = math.Max(mig.MakespanS, wm.PauseS)
		mig.Workers = append(mig.Workers, wm)
	}
}

func addPeer(ps []PeerTransfer, peer int, t Transfer) []PeerTransfer {
	for i := range ps {
		if ps[i].Peer == peer {
			ps[i].StateBytes += t.StateBytes
			ps[i].Requests += t.Requests
			ps[i].Bytes += t.Bytes
			return ps
		}
	}
	return append(ps, PeerTransfer{Peer: peer, StateBytes: t.StateBytes, Requests: t.Requests, Bytes: t.Bytes})
}

func sortPeers(ps []PeerTransfer) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Peer < ps[j].Peer })
}
