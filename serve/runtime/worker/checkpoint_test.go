package worker

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/transport"
	"streamscale/serve/runtime/wire"
)

// frame is one frame a scripted planner received.
type frame struct {
	k wire.Kind
	p []byte
}

// greet reads a worker's hello on s and welcomes it as ID 0 at epoch 1
// with a placement of every key group of nOps operators on it, members 0
// and then others; it reports whether both went through.
func greet(s *transport.Stream, nOps int, others ...wire.Member) bool {
	k, p, _, err := wire.ReadFrame(s.R, nil)
	if err != nil || k != wire.KindHello {
		return false
	}
	h, _ := wire.DecodeHello(p)
	welcome := wire.Hello{ID: 0, Epoch: 1, Token: h.Token}
	pl := wire.Placement{Epoch: 1, Members: append([]wire.Member{{ID: 0, Addr: h.Addr}}, others...), Owners: make([][ops.KeyGroups]uint32, nOps)}
	return s.Write(pl.Append(welcome.Append(nil))) == nil
}

// scriptedPlanner welcomes one worker as ID 0 with every key group on it
// (and a member 1 that owns nothing), then writes what the test sends on
// out and delivers what the worker sends on in.
func scriptedPlanner(t *testing.T, ctx context.Context, nOps int) (addr string, out chan<- []byte, in <-chan frame) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o, i := make(chan []byte, 16), make(chan frame, 1024)
	go transport.Serve(ctx, ln, func(ctx context.Context, s *transport.Stream) { //nolint:errcheck
		if !greet(s, nOps, wire.Member{ID: 1, Addr: "127.0.0.1:1"}) {
			return
		}
		go func() {
			var buf []byte
			for {
				k, p, b, err := wire.ReadFrame(s.R, buf)
				buf = b
				if err != nil {
					return
				}
				if k == wire.KindHeartbeat || k == wire.KindMetrics || k == wire.KindDone {
					continue
				}
				select {
				case i <- frame{k, append([]byte(nil), p...)}:
				case <-ctx.Done():
					return
				}
			}
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case b := <-o:
				if s.Write(b) != nil {
					return
				}
			}
		}
	}, nil)
	return ln.Addr().String(), o, i
}

// TestSnapshotAndRestore: the worker answers a checkpoint with its state
// and a snapshot-done, refuses a checkpoint of another epoch (OK false),
// refuses malformed restores without changing its state or epoch, and
// installs a good restore: the checkpoint's state replaces its own and
// records stamped before it are dropped as stale.
func TestSnapshotAndRestore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	app := runtime.WordCount()
	addr, out, in := scriptedPlanner(t, ctx, len(app.Operators))
	w := placedWorker(t, ctx, Config{ID: wire.NoID, App: app, Planner: addr, Interval: -1})
	next := func() frame {
		t.Helper()
		select {
		case f := <-in:
			return f
		case <-time.After(10 * time.Second):
			t.Fatal("the worker sent nothing")
		}
		return frame{}
	}
	if f := next(); f.k != wire.KindMigrated {
		t.Fatalf("%v, want the first placement's report", f.k)
	}
	// Counts 42 ×2 and 170 ×1 (both key group 42), 7 ×1.
	b := wire.Batch{From: wire.NoID, Epoch: 1, Records: []wire.Record{{Op: 1, Key: 42, Input: 1}, {Op: 1, Key: 42, Input: 2}, {Op: 1, Key: 170, Input: 3}, {Op: 1, Key: 7, Input: 4}}}
	out <- b.Append(nil)
	waitExecuted(t, w, 4)

	out <- (&wire.Checkpoint{ID: 1, Epoch: 1}).Append(nil)
	got := map[uint64]uint64{}
	frames := 0
	for {
		f := next()
		if f.k == wire.KindSnapshotDone {
			d, err := wire.DecodeSnapshotDone(f.p)
			if err != nil || !d.OK || d.ID != 1 || d.From != 0 || d.Epoch != 1 || int(d.Frames) != frames || d.Keys != 3 || d.Bytes != 3*16 {
				t.Fatalf("snapshot-done %+v (%v) after %d frames", d, err, frames)
			}
			break
		}
		s, err := wire.DecodeSnapshot(f.p)
		if f.k != wire.KindSnapshot || err != nil || s.ID != 1 || s.From != 0 || s.Op != 1 {
			t.Fatalf("%v %+v %v, want a snapshot of operator 1", f.k, s, err)
		}
		frames++
		for i, k := range s.Keys {
			got[k] = binary.LittleEndian.Uint64(s.Values[i])
		}
	}
	if frames != 2 || len(got) != 3 || got[42] != 2 || got[170] != 1 || got[7] != 1 {
		t.Fatalf("snapshot: %d frames, %v", frames, got)
	}
	out <- (&wire.Checkpoint{ID: 2, Epoch: 5}).Append(nil)
	if f := next(); f.k != wire.KindSnapshotDone {
		t.Fatalf("%v, want snapshot-done", f.k)
	} else if d, err := wire.DecodeSnapshotDone(f.p); err != nil || d.OK {
		t.Fatalf("a checkpoint of epoch 5 at epoch 1: %+v %v, want OK false", d, err)
	}

	owners := make([][ops.KeyGroups]uint32, len(app.Operators))
	members := []wire.Member{{ID: 0, Addr: "x"}, {ID: 1, Addr: "127.0.0.1:1"}}
	snap := func(kg uint16, key, n uint64) []byte {
		return (&wire.Snapshot{ID: 1, From: wire.NoID, Op: 1, KG: kg, Keys: []uint64{key}, Values: [][]byte{binary.LittleEndian.AppendUint64(nil, n)}}).Append(nil)
	}
	place := func(o [][ops.KeyGroups]uint32, moves []wire.Move) []byte {
		return (&wire.Placement{Epoch: 2, Members: members, Owners: o, Moves: moves}).Append(nil)
	}
	other := make([][ops.KeyGroups]uint32, len(app.Operators))
	other[1][42] = 1
	refused := w.Stats().Refused
	for name, fs := range map[string][][]byte{
		"snapshot outside a restore": {snap(42, 42, 9)},
		"restore with moves":         {(&wire.Restore{Epoch: 2, ID: 1, Frames: 1}).Append(nil), snap(42, 42, 9), place(other, []wire.Move{{Op: 1, KG: 42, From: 0, To: 1}})},
		"frames missing":             {(&wire.Restore{Epoch: 2, ID: 1, Frames: 2}).Append(nil), snap(42, 42, 9), place(owners, nil)},
		"frames beyond the count":    {(&wire.Restore{Epoch: 2, ID: 1, Frames: 1}).Append(nil), snap(42, 42, 9), snap(7, 7, 9), place(owners, nil)},
		"group owned by another":     {(&wire.Restore{Epoch: 2, ID: 1, Frames: 1}).Append(nil), snap(42, 42, 9), place(other, nil)},
		"other checkpoint's frame":   {(&wire.Restore{Epoch: 2, ID: 3, Frames: 1}).Append(nil), snap(42, 42, 9), place(owners, nil)},
		"restore for epoch 3":        {(&wire.Restore{Epoch: 3, ID: 1, Frames: 1}).Append(nil), snap(42, 42, 9), (&wire.Placement{Epoch: 3, Members: members, Owners: owners}).Append(nil)},
		"truncated restore":          {(&wire.Restore{Epoch: 2, ID: 1, Frames: 1}).Append(nil)[:20]},
	} {
		var all []byte
		for _, f := range fs {
			all = append(all, f...)
		}
		if name == "truncated restore" {
			all[0] = 16 // a whole frame whose restore payload is cut short
		}
		out <- all
		deadline := time.Now().Add(5 * time.Second)
		for w.Stats().Refused == refused {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not refused", name)
			}
			time.Sleep(2 * time.Millisecond)
		}
		refused = w.Stats().Refused
		if e := w.Epoch(); e != 1 {
			t.Fatalf("%s: epoch %d after a refused restore", name, e)
		}
		if v := w.StateOf(1)[42]; binary.LittleEndian.Uint64(v) != 2 {
			t.Fatalf("%s: key 42 counts %d after a refused restore", name, binary.LittleEndian.Uint64(v))
		}
	}
	// A good restore: key 42 restored to 5, keys 170 and 7 not in the
	// checkpoint (empty).
	out <- append(append((&wire.Restore{Epoch: 2, ID: 1, Frames: 1}).Append(nil), snap(42, 42, 5)...), place(owners, nil)...)
	if f := next(); f.k != wire.KindMigrated {
		t.Fatalf("%v, want the restore's migrated report", f.k)
	} else if r, err := wire.DecodeMigrated(f.p); err != nil || r.Epoch != 2 || r.MovedGroups != 1 || r.MovedKeys != 1 {
		t.Fatalf("report %+v %v", r, err)
	}
	st := w.StateOf(1)
	if len(st) != 1 || binary.LittleEndian.Uint64(st[42]) != 5 || w.Stats().Restores != 1 {
		t.Fatalf("after the restore: state %v, restores %d", st, w.Stats().Restores)
	}
	// A batch stamped before the restore is stale; one of its epoch runs.
	executed := w.Stats().Executed
	b.Epoch = 1
	out <- b.Append(nil)
	b.Epoch, b.Records = 2, b.Records[:1]
	out <- b.Append(nil)
	waitExecuted(t, w, executed+1)
	if s := w.Stats(); s.Stale != 4 || s.Executed != executed+1 || binary.LittleEndian.Uint64(w.StateOf(1)[42]) != 6 {
		t.Fatalf("stale %d, executed %d (want %d), key 42 = %d", s.Stale, s.Executed, executed+1, binary.LittleEndian.Uint64(w.StateOf(1)[42]))
	}
}
