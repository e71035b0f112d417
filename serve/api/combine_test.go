package api

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Requests queued behind a running pass are answered together, in passes
// of at most maxCombined, each exactly as Policy.Act answers it alone.
func TestCombinedMatchesPolicy(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	e := s.reg.Load().byName["etl"]
	var passes, rows atomic.Uint64
	e.comb.passes, e.comb.rows = &passes, &rows
	p, card := readPolicy(t, dir, "etl")

	const k = maxCombined + 6
	rng := rand.New(rand.NewPCG(3, 3))
	scs := make([]*scratch, k)
	for i := range scs {
		scs[i] = newScratch()
		scs[i].req.n = 1
		o := randomObs(card.Spaces, rng)
		scs[i].req.obs = o.Flatten(nil)
	}

	// Pretend a pass is running so that every request queues.
	e.comb.mu.Lock()
	e.comb.running = true
	e.comb.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, k)
	for i := range k {
		wg.Go(func() { errs[i] = e.actCombined(scs[i]) })
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		e.comb.mu.Lock()
		n := len(e.comb.queue)
		e.comb.mu.Unlock()
		if n == k {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests queued", n, k)
		}
	}
	// The pretend pass ends: hand off as a leader does.
	e.comb.mu.Lock()
	e.comb.queue[0].lead = true
	e.comb.queue[0].done <- struct{}{}
	e.comb.mu.Unlock()
	wg.Wait()

	if passes.Load() != 2 || rows.Load() != k {
		t.Fatalf("%d passes of %d rows, want 2 of %d", passes.Load(), rows.Load(), k)
	}
	if e.comb.running || len(e.comb.queue) != 0 {
		t.Fatalf("combiner left running %v with %d queued", e.comb.running, len(e.comb.queue))
	}
	want := make([]int, len(e.nvec))
	for i, sc := range scs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		v, err := p.Act(sc.req.obs, true, nil, want)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sc.actions, want) || math.Float64bits(sc.values[0]) != math.Float64bits(v) {
			t.Fatalf("request %d: %v %v, Act %v %v", i, sc.actions, sc.values[0], want, v)
		}
	}
}

// Under real concurrency through the handler every answer is still
// Policy.Act's (run with -race).
func TestCombinedConcurrent(t *testing.T) {
	dir := testDir(t)
	s := newTestServer(t, dir, "")
	p, card := readPolicy(t, dir, "pred")
	rng := rand.New(rand.NewPCG(4, 4))
	type want struct {
		body   []byte
		action []int
		value  float64
	}
	var ws []want
	for range 16 {
		o := randomObs(card.Spaces, rng)
		a := make([]int, len(p.Nvec()))
		v, err := p.Act(o.Flatten(nil), true, nil, a)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, want{mustJSON(t, map[string]any{"observation": toWire(o)}), a, v})
	}
	var wg sync.WaitGroup
	fail := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				w := ws[(g*7+i)%len(ws)]
				r := do(s, "POST", "/v1/policies/pred/act", w.body)
				var got wireResult
				err := json.Unmarshal(r.Body.Bytes(), &got)
				if err != nil || r.Code != 200 || !slices.Equal(got.Action, w.action) || got.Value != w.value {
					fail <- r.Body.String()
					return
				}
			}
		})
	}
	wg.Wait()
	close(fail)
	for f := range fail {
		t.Fatalf("wrong answer %s", f)
	}
}
