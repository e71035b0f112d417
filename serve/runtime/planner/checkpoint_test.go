package planner

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/provider/local"
	"streamscale/serve/runtime/worker"
)

// ledgerWC is word count whose first operator keeps, per input key, the
// next expected sequence number and the gaps and repeats it saw, in its
// keyed state: a checkpoint of a worker process shows them.
func ledgerWC() ops.App {
	app := runtime.WordCount()
	app.Name = "ledger-wc"
	split := app.Operators[0].New
	app.Operators[0] = ops.Spec{Name: "ledger-split", Stateful: true, New: func() ops.Operator { return ledgerOp{split()} }}
	return app
}

type ledgerOp struct{ split ops.Operator }

func (l ledgerOp) Process(in ops.Record, st ops.State, out ops.Emitter) error {
	var v [24]byte // next, gaps, repeats
	if b, ok := st.Get(in.Key); ok && len(b) == 24 {
		copy(v[:], b)
	}
	next, gaps, reps := binary.LittleEndian.Uint64(v[0:]), binary.LittleEndian.Uint64(v[8:]), binary.LittleEndian.Uint64(v[16:])
	switch {
	case in.Seq < next:
		binary.LittleEndian.PutUint64(v[16:], reps+1)
		st.Put(in.Key, v[:])
		return nil
	case in.Seq > next:
		binary.LittleEndian.PutUint64(v[8:], gaps+1)
	}
	binary.LittleEndian.PutUint64(v[0:], in.Seq+1)
	st.Put(in.Key, v[:])
	return l.split.Process(in, st, out)
}

// inputsPerKey counts the first n inputs of app by key.
func inputsPerKey(app ops.App, seed uint64, n int) map[uint64]uint64 {
	src := app.NewSource(seed)
	out := map[uint64]uint64{}
	var buf []byte
	for range n {
		var k uint64
		k, buf = src.Next(buf)
		out[k]++
	}
	return out
}

// checkExact holds a run's final state against the oracle: the word
// counts of every key group (from counts) equal the oracle's, and, when
// ledger is not nil, every key's ledger shows all of its inputs in order
// exactly once.
func checkExact(t *testing.T, app ops.App, seed uint64, n int, counts map[uint64][]byte, ledger map[uint64][]byte) {
	t.Helper()
	want := oracle(app, seed, n)
	if len(counts) != len(want) {
		t.Errorf("%d words counted, oracle %d", len(counts), len(want))
	}
	bad := 0
	for k, c := range want {
		if v := counts[k]; len(v) != 8 || binary.LittleEndian.Uint64(v) != c {
			if bad++; bad <= 3 {
				t.Errorf("word %d (key group %d): %v, oracle %d", k, ops.KeyGroup(k), v, c)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d words differ from the oracle", bad, len(want))
	}
	if ledger == nil {
		return
	}
	per := inputsPerKey(app, seed, n)
	if len(ledger) != len(per) {
		t.Fatalf("ledger has %d keys, the inputs %d", len(ledger), len(per))
	}
	for k, c := range per {
		v := ledger[k]
		if len(v) != 24 || binary.LittleEndian.Uint64(v) != c || binary.LittleEndian.Uint64(v[8:]) != 0 || binary.LittleEndian.Uint64(v[16:]) != 0 {
			t.Fatalf("key %d: ledger %v, want next %d and no gap or repeat", k, v, c)
		}
	}
}

// modes are the checkpoint modes every failover test runs in.
var modes = []string{ModeBarrier, ModePause}

// failureRun runs checked word count on three in-process workers with
// checkpoints every interval in mode, kills worker 1 at the end of the
// load's second killAt or the first later one after a checkpoint completed,
// and restarts it once the failover is done.
func failureRun(t *testing.T, mode string, seed uint64, interval time.Duration, killAt float64) (Result, *Planner, *inproc, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var violations, dupes atomic.Int64
	app := checkedWC(&violations, &dupes)
	cfg := Config{App: app, Seed: seed, Rate: 1500, Duration: 3 * time.Second, Workers: 3, Miss: 10, CheckpointInterval: interval, CheckpointMode: mode}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	prov := &inproc{t: t, planner: ln.Addr().String(), app: app, cfg: worker.Config{Interval: 5 * time.Millisecond, Check: time.Millisecond, Slots: 4}}
	cfg.Provider = prov
	if testing.Verbose() {
		cfg.Log = os.Stderr
		prov.cfg.Log = os.Stderr
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var once sync.Once
	kill := func() {
		once.Do(func() {
			prov.kill(1)
			go func() {
				awaitFailover(ctx, p, 1)
				prov.Scale(ctx, 3) //nolint:errcheck // restarts worker 1
			}()
		})
	}
	p.cfg.Rows = func(r Row) {
		p.mu.Lock()
		id, _, _ := p.core.Checkpoint()
		p.mu.Unlock()
		checkpointed := id > 0
		if killAt > 0 && r.T >= killAt && checkpointed {
			kill()
		}
	}
	res, err := p.Serve(ctx, ln, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inputs %d completed %d dup %d failures %d workers %d; checkpoints %d (discarded %d, pause ≤ %.1f ms, ≤ %d bytes); restores %+v; seq gaps %d repeats %d",
		res.Inputs, res.Completed, res.Duplicated, res.Failures, res.WorkersEnded, res.Checkpoints, res.CheckpointsDiscarded, res.CheckpointMSMax, res.CheckpointBytesMax, res.Restores, violations.Load(), dupes.Load())
	for _, m := range res.Migrations {
		t.Logf("  %+v", m)
	}
	return res, p, prov, &violations, &dupes
}

// checkRecovered checks a run with one failure and checkpoints: every
// input completed once, one restore of the dead worker's key groups, the
// worker rejoined, no record ever executed out of order or twice (the
// checker's counters survive rollbacks: they see every execution), and
// the final state — on the workers and in the final checkpoint — equals
// the oracle for every key group.
func checkRecovered(t *testing.T, res Result, p *Planner, prov *inproc, violations, dupes *atomic.Int64) {
	t.Helper()
	rejoined := false
	for _, m := range res.Migrations {
		// The restarted worker is placed by a rejoin, or by the failover
		// itself when it joined before the dead worker was noticed.
		rejoined = rejoined || (m.Reason == "rejoin" || m.Reason == "failover") && m.Complete && m.To == 3
	}
	if res.Failures != 1 || res.Inputs != 4500 || res.Completed != res.Inputs || res.Lost != 0 || res.Duplicated != 0 {
		t.Fatalf("failures %d, inputs %d, completed %d, lost %d, duplicated %d", res.Failures, res.Inputs, res.Completed, res.Lost, res.Duplicated)
	}
	if !rejoined || res.WorkersEnded != 3 {
		t.Fatalf("worker 1 did not rejoin (workers at the end %d)", res.WorkersEnded)
	}
	if len(res.Restores) != 1 || res.Restores[0].Groups == 0 || res.RestoredGroups != res.Restores[0].Groups || res.Replayed != res.Restores[0].Replayed {
		t.Fatalf("restores %+v (restored groups %d, replayed %d)", res.Restores, res.RestoredGroups, res.Replayed)
	}
	if r := res.Restores[0]; r.Replayed != int(res.Inputs)-r.Cut && r.Replayed > int(res.Inputs)-r.Cut {
		t.Fatalf("replayed %d inputs after a checkpoint covering %d of %d", r.Replayed, r.Cut, res.Inputs)
	}
	if v, d := violations.Load(), dupes.Load(); v != 0 || d != 0 {
		t.Fatalf("sequence check: %d gaps or reorderings, %d repeats", v, d)
	}
	app := p.cfg.App
	got := map[uint64][]byte{}
	for k, n := range wordCounts(prov.current()) {
		got[k] = binary.LittleEndian.AppendUint64(nil, n)
	}
	checkExact(t, app, p.cfg.Seed, int(res.Inputs), got, nil)
	counts, covered := p.CheckpointState(1)
	if covered != int(res.Inputs) {
		t.Fatalf("the final checkpoint covers %d of %d inputs", covered, res.Inputs)
	}
	checkExact(t, app, p.cfg.Seed, int(res.Inputs), counts, nil)
}

// TestCheckpointRestore: as TestWorkerFailure, with checkpoints every
// 300 ms, in both modes. The dead worker's key groups are restored from the last
// checkpoint and every worker rolls back to it, so the checker demands the
// exact result for every key group.
func TestCheckpointRestore(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			res, p, prov, v, d := failureRun(t, mode, 11, 300*time.Millisecond, 1)
			defer prov.Close()
			checkRecovered(t, res, p, prov, v, d)
			if res.Restores[0].Checkpoint == 0 {
				t.Fatalf("restored the initial empty state: no checkpoint completed before the failure (%+v)", res.CheckpointLog)
			}
			checkModeFigures(t, mode, res)
		})
	}
}

// checkModeFigures checks that the complete checkpoints were taken in mode:
// with barriers the ingress never paused and every one aligned.
func checkModeFigures(t *testing.T, mode string, res Result) {
	t.Helper()
	if res.CheckpointMode != mode {
		t.Fatalf("checkpoint mode %q, want %q", res.CheckpointMode, mode)
	}
	for _, c := range res.CheckpointLog {
		if !c.Complete {
			continue
		}
		if c.Mode != mode || (mode == ModeBarrier) != (c.PauseMS == 0 && c.AlignMS > 0) || !(c.DurationMS > 0) {
			t.Fatalf("checkpoint %+v in mode %s", c, mode)
		}
	}
}

// TestSIGKILLCheckpoint: TestSIGKILL with checkpoints every 300 ms (in
// both modes) and
// word count with a ledger (ledgerWC). The run ends with a checkpoint of
// every worker process's state: every key group's word counts equal the
// oracle's and every key's ledger shows all of its inputs, in order, once.
func TestSIGKILLCheckpoint(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { sigkillCheckpoint(t, mode) })
	}
}

func sigkillCheckpoint(t *testing.T, mode string) {
	app := ledgerWC()
	cfg := Config{App: app, Seed: 3, Rate: 1000, Duration: 4 * time.Second, Workers: 3, Miss: 10, CheckpointInterval: 300 * time.Millisecond, CheckpointMode: mode}
	// Kill worker 1 when the load's first second ends (the workers start
	// as processes: a fixed delay may fall before they joined).
	start := make(chan struct{})
	var once sync.Once
	cfg.Rows = func(r Row) { once.Do(func() { close(start) }) }
	res, p := runProcessesPlanner(t, "ledger-wc", func(lp *local.Provider, p *Planner) {
		<-start
		if err := lp.Kill(1); err != nil {
			t.Error(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		awaitFailover(ctx, p, 1)
		if _, err := lp.Scale(context.Background(), 3); err != nil { // restart it
			t.Error(err)
		}
	}, cfg)
	t.Logf("inputs %d completed %d dup %d failures %d workers %d; checkpoints %d (discarded %d, pause ≤ %.1f ms mean %.1f ms, ≤ %d bytes); restores %+v",
		res.Inputs, res.Completed, res.Duplicated, res.Failures, res.WorkersEnded, res.Checkpoints, res.CheckpointsDiscarded, res.CheckpointMSMax, res.CheckpointMSMean, res.CheckpointBytesMax, res.Restores)
	rejoined := false
	for _, m := range res.Migrations {
		t.Logf("  %+v", m)
		rejoined = rejoined || (m.Reason == "rejoin" || m.Reason == "failover") && m.Complete && m.To == 3
	}
	if res.Failures != 1 || res.Inputs != 4000 || res.Completed != res.Inputs || res.Duplicated != 0 || !rejoined || res.WorkersEnded != 3 || len(res.Restores) != 1 {
		t.Fatalf("failures %d, inputs %d, completed %d, duplicated %d, rejoined %v, workers %d, restores %d", res.Failures, res.Inputs, res.Completed, res.Duplicated, rejoined, res.WorkersEnded, len(res.Restores))
	}
	counts, covered := p.CheckpointState(1)
	ledger, _ := p.CheckpointState(0)
	if covered != int(res.Inputs) {
		t.Fatalf("the final checkpoint covers %d of %d inputs", covered, res.Inputs)
	}
	checkExact(t, app, cfg.Seed, int(res.Inputs), counts, ledger)
	checkModeFigures(t, mode, res)
}

// TestBarrierFanIn: ETL (a fan-out at Annotate, a fan-in at its Sink) on
// three in-process workers with barrier checkpoints every 150 ms and a
// scale-in to two workers in the middle (a migration, which takes turns
// with the checkpoints). Every checkpoint completes — a task that
// snapshotted before a fan-in's other channel delivered its barrier would
// leave an input before the cut incomplete, or see a record of one after
// its snapshot, and the checkpoint would be discarded — and the final
// checkpoint holds exactly the workers' final keyed state. No checkpoint
// overlaps the migration.
func TestBarrierFanIn(t *testing.T) {
	app := ops.ETL()
	cfg := Config{App: app, Seed: 5, Rate: 400, Duration: 2500 * time.Millisecond, Workers: 3, Miss: 10,
		CheckpointInterval: 150 * time.Millisecond, CheckpointMode: ModeBarrier, Steps: []Step{{At: 1200 * time.Millisecond, Workers: 2}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	prov := &inproc{t: t, planner: ln.Addr().String(), app: app, cfg: worker.Config{Interval: 5 * time.Millisecond, Check: time.Millisecond, Slots: 4}}
	defer prov.Close()
	cfg.Provider = prov
	if testing.Verbose() {
		cfg.Log = os.Stderr
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := p.Serve(ctx, ln, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inputs %d completed %d; checkpoints %d (discarded %d), duration mean %.1f ms, alignment ≤ %.1f ms; migrations %d", res.Inputs, res.Completed, res.Checkpoints, res.CheckpointsDiscarded, res.CheckpointDurationMSMean, res.CheckpointAlignMSMax, len(res.Migrations))
	if res.Completed != res.Inputs || res.Inputs != 1000 || res.Duplicated != 0 || res.Refused != 0 {
		t.Fatalf("inputs %d, completed %d, duplicated %d, refused %d", res.Inputs, res.Completed, res.Duplicated, res.Refused)
	}
	if res.CheckpointsDiscarded != 0 || res.Checkpoints < 5 {
		t.Fatalf("%d checkpoints, %d discarded: %+v", res.Checkpoints, res.CheckpointsDiscarded, res.CheckpointLog)
	}
	if len(res.Migrations) != 1 || !res.Migrations[0].Complete || res.WorkersEnded != 2 {
		t.Fatalf("migrations %+v, workers %d", res.Migrations, res.WorkersEnded)
	}
	// Checkpoints and migrations take turns: their intervals (both
	// measured inside the reconfiguration lock, from the same clock) do
	// not overlap.
	for _, m := range res.Migrations {
		for _, c := range res.CheckpointLog {
			mEnd, cEnd := m.AtS+m.PlannerMS/1e3, c.AtS+c.DurationMS/1e3
			if c.AtS < mEnd-1e-6 && m.AtS < cEnd-1e-6 {
				t.Fatalf("checkpoint %d (%.4f–%.4f s) overlaps the migration of epoch %d (%.4f–%.4f s)", c.ID, c.AtS, cEnd, m.Epoch, m.AtS, mEnd)
			}
		}
	}
	ws := prov.current()
	for _, w := range ws {
		if s := w.Stats(); s.Refused != 0 || s.Snapshots == 0 {
			t.Fatalf("worker %d: %+v", w.ID(), s)
		}
	}
	checked := 0
	for o, s := range app.Operators {
		if !s.Stateful {
			continue
		}
		live := map[uint64][]byte{}
		for _, w := range ws {
			for k, v := range w.StateOf(o) {
				live[k] = v
			}
		}
		ck, covered := p.CheckpointState(o)
		if covered != int(res.Inputs) || len(ck) != len(live) {
			t.Fatalf("operator %s: the final checkpoint covers %d of %d inputs and holds %d keys, the workers %d", s.Name, covered, res.Inputs, len(ck), len(live))
		}
		for k, v := range live {
			if !bytes.Equal(ck[k], v) {
				t.Fatalf("operator %s key %d: checkpoint %x, worker %x", s.Name, k, ck[k], v)
			}
		}
		checked += len(ck)
	}
	if checked == 0 {
		t.Fatal("no keyed state to compare")
	}
}
