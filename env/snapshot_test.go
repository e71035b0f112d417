package env

import (
	"errors"
	"slices"
	"testing"
)

// TestSnapshotRoundTrip stops an episode midway, restores its state into a
// fresh Env and checks both continue bit for bit alike.
func TestSnapshotRoundTrip(t *testing.T) {
	w := diurnal(400)
	for _, p := range []string{"pred", "etl"} {
		a := newTestEnv(t, p, 3, w)
		a.Reset(9)
		act := make([]int, a.NumTasks())
		for s := 0; s < 150; s++ {
			for k := range act {
				act[k] = (s*7 + k) % 5
			}
			a.Step(Action{Choices: act})
		}
		snap, err := a.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		b := newTestEnv(t, p, 3, w)
		if err := b.UnmarshalBinary(snap); err != nil {
			t.Fatal(err)
		}
		for s := 150; s < 400; s++ {
			for k := range act {
				act[k] = (s*7 + k) % 5
			}
			sr, _ := a.Step(Action{Choices: act})
			oa := sr.Obs
			ra := sr.Reward
			ta := sr.Truncated
			sb, _ := b.Step(Action{Choices: act})
			ob := sb.Obs
			rb := sb.Reward
			tb := sb.Truncated
			if ra != rb || ta != tb || !slices.Equal(oa.Task, ob.Task) || !slices.Equal(oa.App, ob.App) {
				t.Fatalf("%s step %d: restored env diverged", p, s)
			}
		}
		// Corrupt snapshots are refused and change nothing.
		c := newTestEnv(t, p, 3, w)
		c.Reset(1)
		before, _ := c.MarshalBinary()
		for _, bad := range [][]byte{nil, snap[:len(snap)/2], append(slices.Clone(snap), 1), func() []byte { x := slices.Clone(snap); x[0] = 9; return x }()} {
			if err := c.UnmarshalBinary(bad); !errors.Is(err, ErrSnapshot) {
				t.Fatalf("corrupt snapshot: %v", err)
			}
		}
		after, _ := c.MarshalBinary()
		if !slices.Equal(before, after) {
			t.Fatal("refused snapshot changed the env")
		}
		other := newTestEnv(t, map[string]string{"pred": "etl", "etl": "pred"}[p], 3, w)
		if err := other.UnmarshalBinary(snap); err == nil {
			t.Fatal("snapshot of another scenario accepted")
		}
	}
}

func TestVecSnapshot(t *testing.T) {
	w := diurnal(30)
	a, _ := NewVec(vecConfigs(t, 3, w), SameStep, 2)
	a.Reset(4)
	for s := 0; s < 45; s++ {
		a.Step(choices(a, s))
	}
	snap, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewVec(vecConfigs(t, 3, w), SameStep, 1)
	if err := b.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	for s := 45; s < 100; s++ {
		ra, _ := a.Step(choices(a, s))
		rewA, truncA := slices.Clone(ra.Rewards), slices.Clone(ra.Truncated)
		epA := slices.Clone(ra.EpisodeReturn)
		rb, _ := b.Step(choices(b, s))
		if !slices.Equal(rewA, rb.Rewards) || !slices.Equal(truncA, rb.Truncated) {
			t.Fatalf("step %d: restored vector env diverged: %v vs %v", s, rewA, rb.Rewards)
		}
		for i, tr := range truncA {
			if tr && epA[i] != rb.EpisodeReturn[i] {
				t.Fatalf("step %d env %d: episode return %v vs %v", s, i, epA[i], rb.EpisodeReturn[i])
			}
		}
	}
}

// FuzzUnmarshal feeds arbitrary bytes to the snapshot decoder: it must
// return an error or restore a consistent state, never panic, and leave the
// env unchanged on error.
func FuzzUnmarshal(f *testing.F) {
	w := diurnal(50)
	e0, _ := New(func() Config { c, _ := EdgeConfig("pred", 1, w); return c }())
	e0.Reset(1)
	e0.Step(Action{Choices: []int{4, 4, 4, 4, 4, 4}})
	good, _ := e0.MarshalBinary()
	f.Add(good)
	f.Add(good[:40])
	// a re-planned state: task 0 split over its server and the next
	cfg := e0.Config()
	plan := make([][]Replica, len(cfg.Placement))
	for k, srv := range cfg.Placement {
		plan[k] = []Replica{{Server: srv, Share: 1}}
	}
	plan[0] = []Replica{{Server: cfg.Placement[0], Share: 0.5}, {Server: (cfg.Placement[0] + 1) % len(cfg.Servers), Share: 0.5}}
	if _, err := e0.Step(Action{Replicas: plan}); err == nil {
		replanned, _ := e0.MarshalBinary()
		f.Add(replanned)
	}
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _ := EdgeConfig("pred", 1, w)
		e, _ := New(c)
		e.Reset(2)
		before, _ := e.MarshalBinary()
		if err := e.UnmarshalBinary(data); err != nil {
			after, _ := e.MarshalBinary()
			if !slices.Equal(before, after) {
				t.Fatal("failed restore changed the env")
			}
			return
		}
		if !e.over {
			e.Step(Action{Choices: []int{2, 2, 2, 2, 2, 2}})
		}
	})
}
