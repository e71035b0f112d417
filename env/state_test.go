package env

import (
	"math"
	"slices"
	"testing"
)

func TestStateAt(t *testing.T) {
	fixed := Task{StateMB: 10}
	keyed := Task{StateMB: 10, Keys: 1000}
	for _, tc := range []struct {
		task Task
		n    float64
		want float64
	}{
		{fixed, 0, 10}, {fixed, 1e6, 10},
		{keyed, 0, 0}, {keyed, 1000, 10 * (1 - math.Exp(-1))}, {keyed, 1e9, 10}, {keyed, -5, 0},
		{Task{Keys: 1000}, 500, 0},
	} {
		if got := tc.task.StateAt(tc.n); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v after %v events: %v MB, want %v", tc.task, tc.n, got, tc.want)
		}
	}
}

// moveAfter runs cluster(1000/s) with a's state keyed by keys for warm
// steps, then moves half of a to server 2, and returns the Info of the
// move step, the events a had processed before it, and the env.
func moveAfter(t *testing.T, keys float64, remote bool, warm int) (Info, float64, *Env) {
	t.Helper()
	cfg := cluster(1000, 40)
	cfg.App.Tasks[0].Keys = keys
	cfg.Migration.RemoteAccess = remote
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Reset(0)
	var info Info
	processed := 0.0
	for range warm {
		var sr StepResult
		if sr, err = e.Step(Action{Hold: true}); err != nil {
			t.Fatal(err)
		}
		info = sr.Info
		processed += e.st.tasks[0].done
	}
	if got, want := info.StateMB[0], cfg.App.Tasks[0].StateAt(processed); math.Abs(got-want) > 1e-9 {
		t.Fatalf("state after %v events: %v MB, want %v", processed, got, want)
	}
	plan := [][]Replica{{{Server: 0, Share: 0.5}, {Server: 2, Share: 0.5}}, {{Server: 1, Share: 1}}}
	var sr StepResult
	if sr, err = e.Step(Action{Replicas: plan}); err != nil {
		t.Fatal(err)
	}
	info = sr.Info
	checkInvariants(t, e)
	return info, processed, e
}

// TestStateGrowsWithKeys: a keyed state grows with the events processed,
// and a move transfers half of the state held at the time.
func TestStateGrowsWithKeys(t *testing.T) {
	const keys = 20000
	short, n1, _ := moveAfter(t, keys, false, 3)
	long, n2, _ := moveAfter(t, keys, false, 20)
	s1, s2 := 64*-math.Expm1(-n1/keys), 64*-math.Expm1(-n2/keys)
	if !(s1 < s2 && s2 < 64) {
		t.Fatalf("state %v MB after %v events, %v MB after %v", s1, n1, s2, n2)
	}
	// moved: half the state plus half the queue (events of 100 B)
	for _, c := range []struct {
		m     Migration
		state float64
	}{{short.Migration, s1}, {long.Migration, s2}} {
		if c.m.MovedMB < c.state/2 || c.m.MovedMB > c.state/2+1 {
			t.Errorf("moved %v MB, want half of %v MB plus the queue", c.m.MovedMB, c.state)
		}
	}
}

// TestStopAndCopyVersusRemoteAccess: stop-and-copy pauses the receiver for
// state plus queue and the sender while it transmits; remote access starts
// the receiver once the queue has arrived and charges remote state reads
// while the state is in flight.
func TestStopAndCopyVersusRemoteAccess(t *testing.T) {
	stop, _, _ := moveAfter(t, 0, false, 10)
	rem, _, eRem := moveAfter(t, 0, true, 10)
	bw := 1e9 // cluster links: 1 Gbps, 1 ms
	state := 32 * float64(1<<20) * 8 / bw
	if s := stop.Migration; s.MaxPauseS < state || s.MaxSenderPauseS < state || s.MaxRemoteS != 0 {
		t.Errorf("stop-and-copy: %+v, want receiver and sender pauses ≥ %v s", s, state)
	}
	if r := rem.Migration; r.MaxPauseS >= stop.Migration.MaxPauseS || r.MaxSenderPauseS != 0 || r.MaxRemoteS < state || r.MaxRemoteS > state+0.01 {
		t.Errorf("remote access: %+v, want a shorter receiver pause, no sender pause, remote reads for %v s plus propagation", r, state)
	}
	if !(rem.Migration.MovedMB > 32 && math.Abs(rem.Migration.MovedMB-stop.Migration.MovedMB) < 1e-9) {
		t.Errorf("moved %v MB (remote) vs %v MB (stop-and-copy)", rem.Migration.MovedMB, stop.Migration.MovedMB)
	}
	// While the state is in flight the receiver's events cost the extra
	// 1,000 µs of a remote read, on average over the part of the step the
	// window covers: its service time at step 0 exceeds the plain one.
	r := eRem.topo.ofTask[0][1]
	eRem.t-- // the step of the move
	// the window [t, t+W) lies inside the step: Δ·W/2 per event on average
	if got, want := eRem.remoteWork(r), 1000e-6*rem.Migration.MaxRemoteS/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("remote work %v s per event, want %v", got, want)
	}
	eRem.t++
	// and stops once the window has passed
	for range 3 {
		eRem.Step(Action{Hold: true})
	}
	if got := eRem.remoteWork(r); got != 0 {
		t.Errorf("remote work %v s after the transfer", got)
	}
}

// TestSnapshotReplanned snapshots a shared-CPU env after a re-plan, in the
// middle of a remote-access migration window with keyed state, restores it
// into a fresh env of the same Config and checks that both continue bit for
// bit; a stop-and-copy run too.
func TestSnapshotReplanned(t *testing.T) {
	for _, remote := range []bool{false, true} {
		cfg := cluster(1000, 40)
		cfg.App.Tasks[0].Keys = 20000
		cfg.Migration.RemoteAccess = remote
		// a slow link makes the 32 MB transfer span several steps
		for i := range cfg.Network.Links {
			cfg.Network.Links[i].BandwidthBps = 1e8
		}
		a, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a.Reset(3)
		for range 8 {
			a.Step(Action{Hold: true})
		}
		// half of a joins b on server 1: the two share its CPU by demand
		plan := [][]Replica{{{Server: 0, Share: 0.5}, {Server: 1, Share: 0.5}}, {{Server: 1, Share: 1}}}
		if _, err := a.Step(Action{Replicas: plan}); err != nil {
			t.Fatal(err)
		}
		a.Step(Action{Hold: true})
		snap, err := a.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(cfg)
		b.Reset(99)
		if err := b.UnmarshalBinary(snap); err != nil {
			t.Fatal(err)
		}
		for s := 0; s < 20; s++ {
			act := Action{Hold: true}
			if s == 5 {
				act = Action{Replicas: [][]Replica{{{Server: 2, Share: 1}}, {{Server: 1, Share: 1}}}}
			}
			sr, errA := a.Step(act)
			oa := sr.Obs
			ra := sr.Reward
			ia := sr.Info
			sr, errB := b.Step(act)
			ob := sr.Obs
			rb := sr.Reward
			ib := sr.Info
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			if ra != rb || !slices.Equal(oa.Task, ob.Task) || ia.P95MS != ib.P95MS || ia.Migration != ib.Migration || !slices.Equal(ia.StateMB, ib.StateMB) || !slices.Equal(ia.Applied, ib.Applied) || ia.Throughput != ib.Throughput {
				t.Fatalf("remote=%v step %d: restored env diverged (reward %v vs %v, p95 %v vs %v)", remote, s, ra, rb, ia.P95MS, ib.P95MS)
			}
		}
		// A snapshot of the re-planned env restores into an env that was
		// never re-planned, and the configured plan comes back on Reset.
		c, _ := New(cfg)
		snap2, _ := a.MarshalBinary()
		if err := c.UnmarshalBinary(snap2); err != nil || !c.replanned {
			t.Fatalf("restore of a re-planned state: %v (replanned %v)", err, c.replanned)
		}
		c.Reset(3)
		if c.replanned {
			t.Fatal("Reset kept the re-planned topology")
		}
	}
}
