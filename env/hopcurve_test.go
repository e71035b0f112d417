package env

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
)

func mustHops(t *testing.T, m map[string]float64) TaskHops {
	t.Helper()
	h, err := NewTaskHops(m)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// joinCurve is a curve for joinApp: the hops after Split and Work grow from
// 2 ms at 10 msg/s to 10 ms at 30 msg/s, and Work's receiving queue holds
// its records 4 ms at 10 and 12 ms at 30 msg/s.
func joinCurve(t *testing.T) HopCurve {
	t.Helper()
	c, err := NewHopCurve([]HopPoint{
		{Rate: 10, Hops: mustHops(t, map[string]float64{"Split": 2, "Work": 2}), Waits: mustHops(t, map[string]float64{"Work": 4})},
		{Rate: 30, Hops: mustHops(t, map[string]float64{"Split": 10, "Work": 10}), Waits: mustHops(t, map[string]float64{"Work": 12})},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHopCurveValue: a HopCurve is a value (the same points give ==
// curves), survives a JSON round trip byte for byte, and refuses bad
// curves with an error naming the point and the field.
func TestHopCurveValue(t *testing.T) {
	a, b := joinCurve(t), joinCurve(t)
	if a != b {
		t.Error("equal points give unequal curves")
	}
	js, err := json.Marshal(Physics{HopCurve: a})
	if err != nil {
		t.Fatal(err)
	}
	var back Physics
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.HopCurve != a {
		t.Errorf("round trip: %s, want %s", back.HopCurve, a)
	}
	if a.Len() != 2 || a.Points()[1].Waits.String() != `{"Work":12}` {
		t.Errorf("points %+v", a.Points())
	}
	h := mustHops(t, map[string]float64{"Split": 1})
	for _, c := range []struct {
		name string
		pts  []HopPoint
		want string
	}{
		{"zero rate", []HopPoint{{Rate: 0, Hops: h}}, "point 0: rate 0"},
		{"NaN rate", []HopPoint{{Rate: math.NaN(), Hops: h}}, "point 0: rate NaN"},
		{"decreasing", []HopPoint{{Rate: 20, Hops: h}, {Rate: 10, Hops: h}}, "strictly increasing"},
		{"no hops", []HopPoint{{Rate: 20}}, "hop_ms_by_task is empty"},
		{"other tasks", []HopPoint{{Rate: 10, Hops: h}, {Rate: 20, Hops: mustHops(t, map[string]float64{"Work": 1})}}, "point 1 (rate 20): hop_ms_by_task names [Work]"},
		{"other waits", []HopPoint{{Rate: 10, Hops: h, Waits: h}, {Rate: 20, Hops: h}}, "wait_ms_by_task names []"},
		{"spread", []HopPoint{{Rate: 10, Hops: h, Spread: 2.5}}, "point 0 (rate 10): hop_spread 2.5"},
	} {
		if _, err := NewHopCurve(c.pts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct{ js, want string }{
		{`[]`, "empty array"},
		{`[{"hop_ms_by_task": {"Split": 1}}]`, "point 0: no rate"},
		{`[{"rate": 5, "hop_ms_by_task": {"Split": 1}, "speed": 2}]`, "unknown field"},
		{`[{"rate": 5, "hop_ms_by_task": {"Split": 1}, "wait_ms_by_task": {"Work": -3}}]`, `wait_ms_by_task task "Work": -3 ms`},
		{`[{"rate": 5, "hop_ms_by_task": {"Split": 1}}, {"rate": 5, "hop_ms_by_task": {"Split": 2}}]`, "strictly increasing"},
		{`{"rate": 5}`, "hop_curve"},
	} {
		var p Physics
		err := json.Unmarshal([]byte(`{"hop_curve": `+c.js+`}`), &p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.js, err, c.want)
		}
		if p.HopCurve != (HopCurve{}) {
			t.Errorf("%s: a refused curve was kept", c.js)
		}
	}
}

// TestHopCurveAppCheck: a curve's hops must name forwarding tasks of the
// application and its waits tasks of it; New refuses others, naming them.
func TestHopCurveAppCheck(t *testing.T) {
	for _, c := range []struct {
		hops, waits map[string]float64
		want        string
	}{
		{map[string]float64{"Nope": 1}, nil, `hop_ms_by_task: task "Nope" is not a task of fj`},
		{map[string]float64{"Join": 1}, nil, `task "Join" of fj forwards to no task`},
		{map[string]float64{"Split": 1}, map[string]float64{"Nope": 1}, `wait_ms_by_task: task "Nope" is not a task of fj`},
	} {
		curve, err := NewHopCurve([]HopPoint{{Rate: 10, Hops: mustHops(t, c.hops), Waits: mustHops(t, c.waits)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := (Physics{HopCurve: curve}).checkTasks(joinApp(10, false)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v / %v: error %v, want one containing %q", c.hops, c.waits, err, c.want)
		}
	}
}

// TestHopCurveInterpolates: between two points every value is linear in
// the rate; outside them it is held at the end point; a task the curve
// does not list keeps its fixed hop.
func TestHopCurveInterpolates(t *testing.T) {
	curve, err := NewHopCurve([]HopPoint{
		{Rate: 10, Hops: mustHops(t, map[string]float64{"Split": 2}), Waits: mustHops(t, map[string]float64{"Work": 4}), Spread: 1},
		{Rate: 20, Hops: mustHops(t, map[string]float64{"Split": 6}), Waits: mustHops(t, map[string]float64{"Work": 2}), Spread: 0},
		{Rate: 40, Hops: mustHops(t, map[string]float64{"Split": 10}), Waits: mustHops(t, map[string]float64{"Work": 0}), Spread: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	cr := curve.resolve(joinApp(10, false))
	base := []float64{0.5, 0.007, 0}
	hop, wait := make([]float64, 3), make([]float64, 3)
	for _, c := range []struct {
		rate            float64
		split, workWait float64 // ms
		spread          float64
	}{{0, 2, 4, 1}, {10, 2, 4, 1}, {15, 4, 3, 0.5}, {20, 6, 2, 0}, {30, 8, 1, 1}, {40, 10, 0, 2}, {1e6, 10, 0, 2}} {
		sp := cr.at(c.rate, base, hop, wait, nil)
		if math.Abs(hop[0]-c.split/1000) > 1e-12 || math.Abs(wait[1]-c.workWait/1000) > 1e-12 || math.Abs(sp-c.spread) > 1e-12 {
			t.Errorf("rate %v: hop after Split %v s, wait at Work %v s, spread %v; want %v and %v ms, %v", c.rate, hop[0], wait[1], sp, c.split, c.workWait, c.spread)
		}
		if hop[1] != 0.007 || wait[0] != 0 || wait[2] != 0 {
			t.Errorf("rate %v: unlisted values %v / %v, want Work's fixed hop and no waits", c.rate, hop, wait)
		}
	}
}

// TestHopCurveLatencyAndQueues: with the curve, the fork-join toy's mean
// latency rises by the two interpolated hops of the step's rate in both
// cores (at 20 msg/s, 6 + 6 ms), and the observation's queue and delay at
// Work rise by in × wait (Little's law) and the wait, while the fluid's
// own CPU, throughput and Info queue are those without the curve.
func TestHopCurveLatencyAndQueues(t *testing.T) {
	ph := Physics{ServiceCV: 1}
	with := ph
	with.HopCurve = joinCurve(t)
	for _, mode := range []Mode{Fluid, PerEvent} {
		plain, _ := joinLatency(t, joinApp(10, false), mode, ph, 20)
		got, _ := joinLatency(t, joinApp(10, false), mode, with, 20)
		t.Logf("mode %v: mean latency %.3f → %.3f ms", mode, plain, got)
		if d := got - plain; math.Abs(d-12) > 0.5 {
			t.Errorf("mode %v: +%.3f ms with the curve at 20 msg/s, want +12 ± 0.5", mode, d)
		}
	}
	obs := func(p Physics) (q, lat float64, info []float64, in float64) {
		net, servers := DefaultRegion()
		e, err := New(Config{App: joinApp(10, false), Network: net, Servers: servers, Placement: []int{0, 0, 0}, Workload: constantRates(20, 40), Physics: p})
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(1)
		var sr StepResult
		for range 5 {
			if sr, err = e.Step(Action{Targets: []float64{10000, 10000, 10000}}); err != nil {
				t.Fatal(err)
			}
		}
		x := e.raw[1*perTask : 2*perTask]
		return x[mQueue], x[mLat], sr.Info.Queue, x[mIn]
	}
	q0, l0, i0, in := obs(ph)
	q1, l1, i1, _ := obs(with)
	wait := 0.008 // Work's wait at 20 msg/s: halfway from 4 to 12 ms
	t.Logf("Work: %.0f events/s in; queue %.4f → %.4f, delay %.4f → %.4f s", in, q0, q1, l0, l1)
	if math.Abs(q1-q0-in*wait) > 1e-9 || math.Abs(l1-l0-wait) > 1e-9 {
		t.Errorf("Work's queue +%v and delay +%v s, want +%v (in × wait) and +%v", q1-q0, l1-l0, in*wait, wait)
	}
	for k := range i0 {
		if i0[k] != i1[k] {
			t.Errorf("Info.Queue %v with the curve, %v without: the held records are not the fluid's", i1, i0)
		}
	}
}

// TestHopCurveSpread: a curve whose points carry spreads draws the hops
// around their mean with the step's interpolated spread, in both cores:
// at 20 msg/s between spread 0 (10 msg/s) and 2 (30 msg/s) the spread is
// 1, which leaves the mean latency within 5% and raises the reference
// core's p95 over the same curve without spreads; with every point's
// spread 0, Physics.HopSpread applies.
func TestHopCurveSpread(t *testing.T) {
	pts := joinCurve(t).Points()
	plain := Physics{ServiceCV: 1}
	plain.HopCurve = joinCurve(t)
	spread := plain
	pts[0].Spread, pts[1].Spread = 0, 2
	var err error
	if spread.HopCurve, err = NewHopCurve(pts); err != nil {
		t.Fatal(err)
	}
	global := plain
	global.HopSpread = 1
	p95 := func(ph Physics) (float64, float64) {
		means, lats, _ := joinRun(t, joinApp(10, false), nil, PerEvent, ph, 20)
		sort.Float64s(lats)
		m := 0.0
		for _, x := range means {
			m += x / float64(len(means))
		}
		return m, lats[len(lats)*95/100]
	}
	m0, q0 := p95(plain)
	m1, q1 := p95(spread)
	m2, q2 := p95(global)
	t.Logf("mean / p95 ms: fixed %.2f / %.2f, curve spreads %.2f / %.2f, hop_spread 1 %.2f / %.2f", m0, q0, m1, q1, m2, q2)
	if math.Abs(m1-m0) > 0.05*m0 || !(q1 > q0+1) {
		t.Errorf("curve spreads: mean %.2f (fixed %.2f), p95 %.2f (fixed %.2f): want the mean kept and the p95 raised", m1, m0, q1, q0)
	}
	if math.Abs(q2-q1) > 0.02*q1 {
		t.Errorf("curve spread 1 at 20 msg/s: p95 %.2f ms, hop_spread 1: %.2f; want the same", q1, q2)
	}
	fm, _ := joinLatency(t, joinApp(10, false), Fluid, spread, 20)
	if math.Abs(fm-m1) > 0.05*m1 {
		t.Errorf("fast core mean %.2f ms with curve spreads, reference %.2f", fm, m1)
	}
}

// emptyCurve is joinCurve with Work's receiving queue empty in 40% of the
// reports at 10 msg/s and 60% at 30 msg/s.
func emptyCurve(t *testing.T) HopCurve {
	t.Helper()
	pts := joinCurve(t).Points()
	pts[0].Empty = mustHops(t, map[string]float64{"Work": 0.4})
	pts[1].Empty = mustHops(t, map[string]float64{"Work": 0.6})
	c, err := NewHopCurve(pts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHopCurveEmptyValue: the empty shares survive a JSON round trip, and
// a share outside [0, 1], a negative one, tables naming different tasks
// at different points and a task the application lacks are refused with
// the field named.
func TestHopCurveEmptyValue(t *testing.T) {
	c := emptyCurve(t)
	b, err := json.Marshal(c)
	if err != nil || !strings.Contains(string(b), `"queue_empty_by_task":{"Work":0.4}`) {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var back HopCurve
	if err := json.Unmarshal(b, &back); err != nil || back != c {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	for _, c := range []struct{ js, want string }{
		{`[{"rate":1,"hop_ms_by_task":{"Split":1},"queue_empty_by_task":{"Work":1.5}}]`, `queue_empty_by_task task "Work": 1.5, want a share in [0, 1]`},
		{`[{"rate":1,"hop_ms_by_task":{"Split":1},"queue_empty_by_task":{"Work":-0.1}}]`, `queue_empty_by_task`},
		{`[{"rate":1,"hop_ms_by_task":{"Split":1},"queue_empty_by_task":{"Work":0.1}},{"rate":2,"hop_ms_by_task":{"Split":1}}]`, `point 1 (rate 2): queue_empty_by_task names []`},
	} {
		var h HopCurve
		if err := json.Unmarshal([]byte(c.js), &h); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.js, err, c.want)
		}
	}
	pts := emptyCurve(t).Points()
	for i := range pts {
		pts[i].Empty = mustHops(t, map[string]float64{"Nope": 0.5})
	}
	bad, err := NewHopCurve(pts)
	if err != nil {
		t.Fatal(err)
	}
	net, servers := DefaultRegion()
	if _, err := New(Config{App: joinApp(10, false), Network: net, Servers: servers, Placement: []int{0, 0, 0}, Workload: constantRates(20, 5), Physics: Physics{HopCurve: bad}}); err == nil || !strings.Contains(err.Error(), `queue_empty_by_task: task "Nope"`) {
		t.Errorf("a task the app lacks: %v", err)
	}
}

// TestHopCurveSnapshots: with empty shares the observation reports Work's
// batch records as snapshots (at 20 msg/s: empty in 50% of the steps, the
// share halfway between the points; mean in × wait) and its processed
// count as the input less the snapshot's change, so the processed count
// over the run is conserved; same seed, same snapshots. Over 4,000 steps
// the empty share is within 0.03 of 0.5 and the mean within 5% of
// in × wait.
func TestHopCurveSnapshots(t *testing.T) {
	const steps = 4000
	run := func(seed uint64) (empty, mean float64, qs []float64, done, fluidDone float64, in float64) {
		net, servers := DefaultRegion()
		e, err := New(Config{App: joinApp(10, false), Network: net, Servers: servers, Placement: []int{0, 0, 0},
			Workload: constantRates(20, steps), Physics: Physics{ServiceCV: 1, HopCurve: emptyCurve(t)}})
		if err != nil {
			t.Fatal(err)
		}
		e.Reset(seed)
		prev := 0.0
		for s := 0; s < steps; s++ {
			if _, err := e.Step(Action{Targets: []float64{10000, 10000, 10000}}); err != nil {
				t.Fatal(err)
			}
			x := e.raw[1*perTask : 2*perTask]
			q := x[mQueue] - e.st.tasks[1].queue
			if d := e.st.tasks[1].done - (q - prev); math.Abs(x[mDone]-d) > 1e-9 {
				t.Fatalf("step %d: processed %v, want the fluid's %v less the snapshot's change %v", s, x[mDone], e.st.tasks[1].done, q-prev)
			}
			prev = q
			qs = append(qs, q)
			if q == 0 {
				empty++
			}
			mean += q
			done += x[mDone]
			fluidDone += e.st.tasks[1].done
			in = x[mIn]
		}
		return empty / steps, mean / steps, qs, done, fluidDone, in
	}
	empty, mean, qs, done, fluidDone, in := run(1)
	want := in * 0.008 // Work's wait at 20 msg/s
	t.Logf("Work: empty %.3f, mean snapshot %.3f (in × wait %.3f), processed %.1f against the fluid's %.1f", empty, mean, want, done, fluidDone)
	if math.Abs(empty-0.5) > 0.03 || math.Abs(mean-want) > 0.05*want {
		t.Errorf("empty share %.3f, mean %.3f; want 0.5 ± 0.03 and %.3f ± 5%%", empty, mean, want)
	}
	// Σ processed = Σ fluid processed − (last snapshot − 0): the counters' identity.
	if math.Abs(done-(fluidDone-qs[len(qs)-1])) > 1e-6*fluidDone {
		t.Errorf("Σ processed %.6f, want the fluid's %.6f less the last snapshot %.6f", done, fluidDone, qs[len(qs)-1])
	}
	_, _, again, _, _, _ := run(1)
	_, _, other, _, _, _ := run(2)
	if !slices.Equal(qs, again) || slices.Equal(qs, other) {
		t.Errorf("snapshots: the same seed gave other draws, or another seed the same")
	}
}

// TestSnapshotBatchQueues: an Env whose curve lists empty shares resumes
// from a snapshot bit for bit (the snapshot stream and the last
// snapshots are in it).
func TestSnapshotBatchQueues(t *testing.T) {
	net, servers := DefaultRegion()
	cfg := Config{App: joinApp(10, false), Network: net, Servers: servers, Placement: []int{0, 0, 0},
		Workload: constantRates(20, 60), Physics: Physics{ServiceCV: 1, HopCurve: emptyCurve(t)}}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.Reset(3)
	act := Action{Targets: []float64{10000, 10000, 10000}}
	for range 20 {
		a.Step(act)
	}
	snap, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.UnmarshalBinary(snap); err != nil {
		t.Fatal(err)
	}
	for s := 20; s < 60; s++ {
		ra, _ := a.Step(act)
		rb, _ := b.Step(act)
		if !slices.Equal(ra.Obs.Task, rb.Obs.Task) {
			t.Fatalf("step %d: restored env's observation diverged", s)
		}
	}
}
