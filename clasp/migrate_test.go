package clasp

import (
	"math"
	"math/rand/v2"
	"testing"
)

// placedObs returns an observation of app with the given shares on workers
// with the given IDs, each executing in proportion to its shares.
func placedObs(app App, ids []int, shares [][]float64, queue float64) Observation {
	d := nominal(app, 1000)
	ob := Observation{App: app, InputRate: 1000, Throughput: 1000, Bandwidth: 1e6}
	for i, id := range ids {
		w := WorkerObs{ID: id, Queue: queue, Share: append([]float64(nil), shares[i]...), Exec: make([]float64, len(app.Operators)), ExecUS: make([]float64, len(app.Operators))}
		for o := range app.Operators {
			w.Exec[o] = shares[i][o] * d.Exec[o]
			w.ExecUS[o] = app.Operators[o].ExecUS
		}
		ob.Workers = append(ob.Workers, w)
	}
	return ob
}

func TestMigrationEmptyWhenUnchanged(t *testing.T) {
	app := AA()
	shares := [][]float64{{1, 1, 0.5, 0.2, 0}, {0, 0, 0.5, 0.8, 1}}
	ob := placedObs(app, []int{2, 9}, shares, 50)
	mig := Migrate(&ob, Derive(&ob), []int{2, 9}, shares)
	if len(mig.Transfers) != 0 || len(mig.Workers) != 0 || mig.MakespanS != 0 {
		t.Errorf("unchanged placement migrates: %+v", mig)
	}
}

func TestMigrationHandExample(t *testing.T) {
	// WC: count (stateful, 64 MiB) moves 25% from worker 0 to a new
	// worker 1. Worker 0 queues 1,000 requests, split by executions
	// (split 1,000/s, count 9,000/s → 900 for count), so a quarter of
	// count's queue there, 225 requests, moves with 16 MiB of state.
	app := wc9()
	ob := placedObs(app, []int{0}, [][]float64{{1, 1}}, 1000)
	d := Derive(&ob)
	mig := Migrate(&ob, d, []int{0, 1}, [][]float64{{1, 0.75}, {0, 0.25}})
	if len(mig.Transfers) != 1 {
		t.Fatalf("transfers %+v, want 1", mig.Transfers)
	}
	tr := mig.Transfers[0]
	wantState := 0.25 * 64 * mib
	wantBytes := wantState + 225*reqBytes
	if tr.From != 0 || tr.To != 1 || tr.Op != 1 || math.Abs(tr.Share-0.25) > 1e-12 ||
		math.Abs(tr.StateBytes-wantState) > 1e-6 || math.Abs(tr.Requests-225) > 1e-9 || math.Abs(tr.Bytes-wantBytes) > 1e-6 {
		t.Errorf("transfer %+v", tr)
	}
	// 1 MB/s: the transfer takes Bytes/1e6 s; both pause that plus the
	// drain (count's 350 µs).
	want := wantBytes/1e6 + 350e-6
	if len(mig.Workers) != 2 || !mig.Workers[1].Join || math.Abs(mig.Workers[0].PauseS-want) > 1e-9 || math.Abs(mig.Workers[1].PauseS-want) > 1e-9 {
		t.Errorf("workers %+v, want both pausing %.6f s and worker 1 joining", mig.Workers, want)
	}
	if math.Abs(mig.MakespanS-want) > 1e-9 {
		t.Errorf("makespan %v, want %v", mig.MakespanS, want)
	}
}

func TestMigrationNoBarrier(t *testing.T) {
	// Worker 0 sends a large state to worker 1; workers 2 and 3 swap a
	// small one. The small swap does not wait for the large transfer.
	app := App{Name: "s", Operators: []Operator{
		{Name: "big", ExecUS: 100, Stateful: true, StateBytes: 100e6},
		{Name: "small", ExecUS: 100, Stateful: true, StateBytes: 1e6},
	}}
	old := [][]float64{{1, 0}, {0, 0}, {0, 1}, {0, 0}}
	next := [][]float64{{0, 0}, {1, 0}, {0, 0}, {0, 1}}
	ob := placedObs(app, []int{0, 1, 2, 3}, old, 0)
	mig := Migrate(&ob, Derive(&ob), []int{0, 1, 2, 3}, next)
	pause := map[int]float64{}
	for _, w := range mig.Workers {
		pause[w.ID] = w.PauseS
	}
	if math.Abs(pause[2]-(1+100e-6)) > 1e-9 || math.Abs(pause[0]-(100+100e-6)) > 1e-9 {
		t.Errorf("pauses %v: want 1.0001 s for the small move, 100.0001 s for the big one", pause)
	}
}

// TestMigrationConserves checks on random placements that every operator's
// moved share equals its total share decrease, that state and requests
// sent equal those received (per worker pair, and in total), and that the
// moved state equals the state of the moved share.
func TestMigrationConserves(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	randShares := func(nw, nOps int) [][]float64 {
		s := make([][]float64, nw)
		for w := range s {
			s[w] = make([]float64, nOps)
		}
		for o := range nOps {
			var sum float64
			for w := range nw {
				if r.IntN(3) > 0 {
					s[w][o] = r.Float64()
					sum += s[w][o]
				}
			}
			if sum == 0 {
				s[r.IntN(nw)][o], sum = 1, 1
			}
			for w := range nw {
				s[w][o] /= sum
			}
		}
		return s
	}
	for k := range 200 {
		app := randomApp(r)
		nOld, nNew := 1+r.IntN(6), 1+r.IntN(6)
		oldIDs := make([]int, nOld)
		for i := range oldIDs {
			oldIDs[i] = 2 * i
		}
		ob := placedObs(app, oldIDs, randShares(nOld, len(app.Operators)), 100*r.Float64())
		newIDs, _ := workerIDs(&ob, nNew)
		next := randShares(nNew, len(app.Operators))
		mig := Migrate(&ob, Derive(&ob), newIDs, next)
		old := func(id, o int) float64 {
			for _, w := range ob.Workers {
				if w.ID == id {
					return w.Share[o]
				}
			}
			return 0
		}
		neu := func(id, o int) float64 {
			for i, nid := range newIDs {
				if nid == id {
					return next[i][o]
				}
			}
			return 0
		}
		for o := range app.Operators {
			var dec, moved float64
			seen := map[int]bool{}
			for _, id := range append(append([]int{}, oldIDs...), newIDs...) {
				if !seen[id] {
					seen[id] = true
					dec += math.Max(0, old(id, o)-neu(id, o))
				}
			}
			var state float64
			for _, tr := range mig.Transfers {
				if tr.Op == o {
					moved += tr.Share
					state += tr.StateBytes
				}
			}
			if math.Abs(dec-moved) > 1e-6 {
				t.Fatalf("case %d op %d: moved %v, decrease %v", k, o, moved, dec)
			}
			if want := moved * app.Operators[o].StateBytes; math.Abs(state-want) > 1e-6*(1+want) {
				t.Fatalf("case %d op %d: moved state %v, want %v", k, o, state, want)
			}
		}
		byID := map[int]WorkerMigration{}
		for _, w := range mig.Workers {
			byID[w.ID] = w
		}
		for _, w := range mig.Workers {
			for _, p := range w.SendTo {
				var got *PeerTransfer
				for i, q := range byID[p.Peer].ReceiveFrom {
					if q.Peer == w.ID {
						got = &byID[p.Peer].ReceiveFrom[i]
					}
				}
				if got == nil || got.Bytes != p.Bytes || got.Requests != p.Requests || got.StateBytes != p.StateBytes {
					t.Fatalf("case %d: %d sends %+v to %d, which receives %+v", k, w.ID, p, p.Peer, got)
				}
			}
		}
		var sent, recv, sentReq, recvReq float64
		for _, w := range mig.Workers {
			for _, p := range w.SendTo {
				sent += p.StateBytes
				sentReq += p.Requests
			}
			for _, p := range w.ReceiveFrom {
				recv += p.StateBytes
				recvReq += p.Requests
			}
			if w.PauseS < 0 || math.IsNaN(w.PauseS) {
				t.Fatalf("case %d: pause %v", k, w.PauseS)
			}
		}
		if math.Abs(sent-recv) > 1e-6*(1+sent) || math.Abs(sentReq-recvReq) > 1e-9*(1+sentReq) {
			t.Fatalf("case %d: sent %v B / %v req, received %v B / %v req", k, sent, sentReq, recv, recvReq)
		}
	}
}
