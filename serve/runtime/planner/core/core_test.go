package core

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
)

func TestAssign(t *testing.T) {
	ids := []uint32{0, 1, 2}
	a := assign(nil, 2, ids, [][]float64{{0.5, 0}, {0.25, 0.5}, {0.25, 0.5}})
	n := map[[2]uint32]int{}
	for o := range 2 {
		for g := range ops.KeyGroups {
			n[[2]uint32{uint32(o), a[o][g]}]++
		}
	}
	if n[[2]uint32{0, 0}] != 64 || n[[2]uint32{0, 1}] != 32 || n[[2]uint32{1, 0}] != 0 || n[[2]uint32{1, 2}] != 64 {
		t.Fatalf("counts %v", n)
	}
	// Scaling 3 → 4 evenly moves only what the new worker takes.
	a = assign(a, 2, ids, nil)
	b := assign(a, 2, []uint32{0, 1, 2, 3}, nil)
	if moved := len(diff(a, b)); moved != 2*ops.KeyGroups/4 {
		t.Fatalf("%d key groups moved for one new worker", moved)
	}
	for o := range 2 {
		c := map[uint32]int{}
		for g := range ops.KeyGroups {
			c[b[o][g]]++
		}
		for id := range uint32(4) {
			if c[id] != 32 {
				t.Fatalf("op %d worker %d owns %d groups, want 32", o, id, c[id])
			}
		}
	}
}

// TestDetector: the failure detector alone. A worker silent for more than
// Miss beat intervals is dead, one whose stream ended is dead at the next
// check; a late check (the planner stalled) moves every last beat on by
// the stall instead of killing everyone; beat gaps are as read.
func TestDetector(t *testing.T) {
	ms := time.Millisecond
	d := newDetector(100*ms, 10*ms, 3)
	for id := range uint32(3) {
		if _, err := d.join(uint64(id+1), id, fmt.Sprintf("a%d", id), 0, wire.NoID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.join(9, 1, "x", 0, wire.NoID); err == nil {
		t.Fatal("a live ID joined twice")
	}
	if m, err := d.join(10, wire.NoID, "y", 0, wire.NoID); err != nil || m.id != 3 {
		t.Fatalf("any ID: %v, %v; want 3", m, err)
	}
	var now time.Duration
	for now = 10 * ms; now <= 250*ms; now += 10 * ms {
		if now%(100*ms) == 0 {
			d.beat(1, 0, now)
			d.beat(2, 1, now)
			d.beat(10, 3, now)
			d.beat(2, 2, now) // a forged beat: stream 2 is worker 1
		}
		if dead := d.check(now); len(dead) != 0 {
			t.Fatalf("at %v: %v dead", now, dead)
		}
	}
	// Worker 2 never beat: dead once 300 ms passed since it joined.
	for ; now <= 310*ms; now += 10 * ms {
		dead := d.check(now)
		if want := now > 300*ms; want != (len(dead) == 1 && dead[0] == 2) {
			t.Fatalf("at %v: dead %v", now, dead)
		}
	}
	d.ended(10)
	if dead := d.check(now); len(dead) != 1 || dead[0] != 3 {
		t.Fatalf("stream ended: dead %v, want [3]", dead)
	}
	// A stall of 2 s: nobody dies; the beats that waited arrive next.
	now += 2 * time.Second
	if dead := d.check(now); len(dead) != 0 {
		t.Fatalf("after a stall: %v dead", dead)
	}
	if len(d.gaps) != 3 || d.gaps[0] != 100 || d.gaps[2] != 100 {
		t.Fatalf("beat gaps %v, want three of 100 ms (workers 0, 1, 3)", d.gaps)
	}
	if got := d.live(); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("live %v, want [0 1]", got)
	}
}

// TestDetectorRejoin: a worker asking for no ID gets one no member ever
// held, live or dead, so a dead worker that rejoins is a new member; a
// hello from a live member's address cuts that member (dead at the next
// check) and is refused, and the retry after the check is admitted.
func TestDetectorRejoin(t *testing.T) {
	ms := time.Millisecond
	d := newDetector(100*ms, 10*ms, 3)
	for id := range uint32(3) {
		if _, err := d.join(uint64(id+1), wire.NoID, fmt.Sprintf("a%d", id), 0, wire.NoID); err != nil {
			t.Fatal(err)
		}
	}
	d.ended(2) // worker 1's stream
	if dead := d.check(10 * ms); !slices.Equal(dead, []uint32{1}) {
		t.Fatalf("dead %v, want [1]", dead)
	}
	m, err := d.join(4, wire.NoID, "a1", 10*ms, wire.NoID)
	if err != nil || m.id != 3 {
		t.Fatalf("worker 1 rejoining: %v, %v; want the fresh ID 3", m, err)
	}
	// Worker 2 lost its stream; the planner has not noticed yet.
	if _, err := d.join(5, wire.NoID, "a2", 20*ms, wire.NoID); err == nil {
		t.Fatal("a hello from live member 2's address was admitted beside it")
	}
	if got := d.live(); !slices.Equal(got, []uint32{0, 2, 3}) {
		t.Fatalf("live %v before the check, want [0 2 3]", got)
	}
	if dead := d.check(30 * ms); !slices.Equal(dead, []uint32{2}) {
		t.Fatalf("dead %v, want [2]: its address rejoined", dead)
	}
	if m, err := d.join(6, wire.NoID, "a2", 40*ms, wire.NoID); err != nil || m.id != 4 {
		t.Fatalf("worker 2 retrying: %v, %v; want the fresh ID 4", m, err)
	}
	// An ID asked for explicitly may still be a dead one's (a provider
	// restarting worker 1 under its own ID).
	if m, err := d.join(7, 1, "b1", 40*ms, wire.NoID); err != nil || m.id != 1 {
		t.Fatalf("worker 1 restarted as 1: %v, %v", m, err)
	}
}

// TestCoordinatorFrames: the checkpoint coordinator alone. Snapshot frames
// the checkpoint in progress did not ask for are refused and change
// nothing; frames of a discarded checkpoint are ignored; a count that
// disagrees or a refusal discards it.
func TestCoordinatorFrames(t *testing.T) {
	owners := assign(nil, 2, []uint32{0, 1}, nil)
	k := newCoordinator(time.Second, time.Second, ModeBarrier)
	start := func() *ckRun {
		r := k.open(0, 10, 0)
		r.wait[0], r.wait[1] = true, true
		return r
	}
	run := start()
	good := wire.Snapshot{ID: 1, From: 0, Op: 1, KG: 0, Keys: []uint64{128}, Values: [][]byte{{1}}}
	for _, c := range []struct {
		name string
		from uint32
		s    wire.Snapshot
	}{
		{"never asked for", 0, wire.Snapshot{ID: 9, From: 0, Op: 1}},
		{"forged sender", 1, good},
		{"group not owned", 1, wire.Snapshot{ID: 1, From: 1, Op: 1, KG: 0}},
		{"missing operator", 0, wire.Snapshot{ID: 1, From: 0, Op: 7}},
		{"key group out of range", 0, wire.Snapshot{ID: 1, From: 0, Op: 1, KG: 300}},
		{"not a member of it", 5, wire.Snapshot{ID: 1, From: 5, Op: 1, KG: 100}},
	} {
		if err := k.snapshot(c.from, c.s, owners); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
		if len(run.state) != 0 || len(run.frames) != 0 {
			t.Fatalf("%s: changed the checkpoint", c.name)
		}
	}
	if err := k.snapshot(0, good, owners); err != nil {
		t.Fatal(err)
	}
	done := func(from uint32, d wire.SnapshotDone) (bool, string, error) { return k.snapshotDone(from, d, 1) }
	if _, _, err := done(0, wire.SnapshotDone{ID: 9, From: 0, Epoch: 1, OK: true}); err == nil {
		t.Error("snapshot-done of a checkpoint never asked for accepted")
	}
	if _, _, err := done(0, wire.SnapshotDone{ID: 1, From: 1, Epoch: 1, OK: true}); err == nil {
		t.Error("forged snapshot-done accepted")
	}
	if fin, why, err := done(0, wire.SnapshotDone{ID: 1, From: 0, Epoch: 1, OK: true, Frames: 1}); fin || why != "" || err != nil {
		t.Fatalf("worker 0's part: %v %q %v", fin, why, err)
	}
	if _, _, err := done(0, wire.SnapshotDone{ID: 1, From: 0, Epoch: 1, OK: true, Frames: 1}); err == nil {
		t.Error("repeated snapshot-done accepted")
	}
	if err := k.snapshot(0, good, owners); err == nil {
		t.Error("snapshot after the worker's snapshot-done accepted")
	}
	// Worker 1 claims a frame it never sent: discarded.
	if _, why, err := done(1, wire.SnapshotDone{ID: 1, From: 1, Epoch: 1, OK: true, Frames: 1}); err == nil || why == "" {
		t.Fatalf("a frame count that disagrees: %v, %q", err, why)
	}
	k.finish(0, false, "test")
	// Late frames of a discarded checkpoint are ignored, not refused.
	if err := k.snapshot(0, good, owners); err != nil || k.last.id != 0 {
		t.Fatalf("late frame: %v, last %d", err, k.last.id)
	}
	// A worker that could not snapshot discards the next checkpoint.
	start()
	if _, why, err := done(1, wire.SnapshotDone{ID: 2, From: 1, Epoch: 1}); err != nil || why == "" {
		t.Fatalf("a refused snapshot: %v, %q", err, why)
	}
	if st := k.finish(0, true, ""); !st.Complete || k.last.id != 2 {
		t.Fatalf("finish: %+v, last %d", st, k.last.id)
	}
}

// TestNoClockInCore: the core's files start no goroutine and use no clock,
// lock, socket or file: it is a function of its events.
func TestNoClockInCore(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	banned := map[string]bool{"sync": true, "net": true, "os": true, "io": true, "math/rand": true, "math/rand/v2": true}
	clock := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		checked++
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range file.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); banned[p] || strings.HasPrefix(p, "net/") {
				t.Errorf("%s imports %s", f, p)
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s starts a goroutine", f)
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" && clock[n.Sel.Name] {
					t.Errorf("%s calls time.%s", f, n.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked %d files", checked)
	}
}
