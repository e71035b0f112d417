package env

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// snapshotVersion is bumped whenever the encoded state changes shape.
// Version 3 adds the physics (desired allocation, actuation queue, random
// streams, tracer), the observation's metrics and each task's reward
// pressure of the last interval.
const snapshotVersion = 3

// enc and dec write and read the fixed-layout little-endian encoding used
// by snapshots: float64 bits, int64s and bools, in a fixed field order.
type enc struct{ b bytes.Buffer }

func (w *enc) f(xs ...float64) {
	for _, x := range xs {
		binary.Write(&w.b, binary.LittleEndian, math.Float64bits(x))
	}
}
func (w *enc) i(xs ...int) {
	for _, x := range xs {
		binary.Write(&w.b, binary.LittleEndian, int64(x))
	}
}
func (w *enc) u(x uint64) { binary.Write(&w.b, binary.LittleEndian, x) }
func (w *enc) bl(xs ...bool) {
	for _, x := range xs {
		v := byte(0)
		if x {
			v = 1
		}
		w.b.WriteByte(v)
	}
}

type dec struct {
	r   *bytes.Reader
	err error
}

func (d *dec) f() float64 {
	var v uint64
	if d.err == nil {
		d.err = binary.Read(d.r, binary.LittleEndian, &v)
	}
	return math.Float64frombits(v)
}
func (d *dec) i() int {
	var v int64
	if d.err == nil {
		d.err = binary.Read(d.r, binary.LittleEndian, &v)
	}
	return int(v)
}
func (d *dec) u() uint64 {
	var v uint64
	if d.err == nil {
		d.err = binary.Read(d.r, binary.LittleEndian, &v)
	}
	return v
}
func (d *dec) bl() bool {
	if d.err != nil {
		return false
	}
	b, err := d.r.ReadByte()
	d.err = err
	return b == 1
}

// ErrSnapshot is wrapped by every error UnmarshalBinary returns.
var ErrSnapshot = errors.New("env: bad snapshot")

// MarshalBinary encodes the Env's complete dynamic state (queues, clocks,
// allocations, histories, the replica plan in force when a controller
// re-planned, the state growth and migration windows, and the metrics the
// observation reports: their lag ring and noise stream), so that an Env built
// from the same Config and restored with UnmarshalBinary continues bit for
// bit as the original. Only the Fluid core can be snapshotted.
func (e *Env) MarshalBinary() ([]byte, error) {
	f, ok := e.core.(*fluid)
	if !ok {
		return nil, fmt.Errorf("env: only the fluid core can be snapshotted")
	}
	var w enc
	w.i(snapshotVersion, e.n, e.m)
	w.bl(e.replanned)
	if e.replanned {
		for _, rs := range e.cfg.Replicas {
			w.i(len(rs))
			for _, r := range rs {
				w.i(r.Server)
				w.f(r.Share)
			}
		}
	}
	w.i(len(f.stages), len(e.topo.replicas))
	w.bl(e.started, e.over, e.prevViolated)
	w.i(e.t)
	w.f(e.prevP95)
	w.bl(e.violHist[:]...)
	w.f(e.alloc...)
	w.f(e.prevQueue...)
	w.f(e.processed...)
	for _, p := range e.press {
		w.f(p.deficit, p.queueS, p.delayS)
	}
	w.u(e.info.Seed)
	w.f(f.now, f.cumEmit, f.cumSink)
	for r := range e.topo.replicas {
		x := e.st.replicas[r]
		w.f(x.in, x.done, x.delayW, x.queue, e.remoteFrom[r], e.remoteTo[r], e.arrive[r])
	}
	w.i(e.remoteSteps)
	for i := range f.stages {
		s := &f.stages[i]
		w.f(s.free, s.cumPushed, s.cumDeparted, s.carried, s.queue.total)
		w.i(s.queue.len())
		for j := 0; j < s.queue.len(); j++ {
			p := s.queue.at(j)
			w.f(p.w, p.as, p.ae, p.os, p.oe)
			w.bl(p.bl)
		}
	}
	if err := e.writePhysics(&w, f); err != nil {
		return nil, err
	}
	// The observation's metrics (metrics.go).
	if err := e.writeMetrics(&w); err != nil {
		return nil, err
	}
	return w.b.Bytes(), nil
}

// writePhysics encodes the state of the stochastic physics: the desired
// allocation and the actuation queue, the random streams, the servers'
// capacity factors and the tracer's workload processes.
func (e *Env) writePhysics(w *enc, f *fluid) error {
	if e.cfg.Randomize != nil { // the episode's draw
		p := e.phys
		w.f(p.ServiceCV, p.RateCV, p.CapacityJitter, p.MetricNoise)
		w.i(p.ActuationDelaySteps)
	}
	w.f(e.desired...)
	if e.cpuRing != nil { // what the next choices size against
		w.f(e.cpuRing...)
	}
	w.i(e.pendHead, e.pendN)
	w.f(e.pend...)
	for _, src := range []*rand.PCG{&e.ph.arrSrc, &e.ph.svcSrc, &e.ph.jitSrc, &e.ph.rateSrc} {
		b, err := src.MarshalBinary()
		if err != nil {
			return fmt.Errorf("env: snapshot: %w", err)
		}
		w.i(len(b))
		w.b.Write(b)
	}
	w.f(e.ph.speed...)
	w.bl(f.tr != nil)
	if f.tr != nil {
		w.f(f.tr.v...)
		w.f(f.tr.used...)
	}
	return nil
}

// physicsState is what readPhysics decoded, committed after every check.
type physicsState struct {
	desired, pend, speed []float64
	cpuRing              []float64 // target-utilization action sets only
	head, count          int
	srcs                 [4][]byte
	phys                 Physics // the episode's physics
	v, used              []float64
}

func (e *Env) readPhysics(d *dec, f *fluid) (physicsState, error) {
	var ps physicsState
	read := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = d.f()
		}
		return x
	}
	ps.phys = e.phys
	if r := e.cfg.Randomize; r != nil {
		p := e.cfg.Physics
		p.ServiceCV, p.RateCV, p.CapacityJitter, p.MetricNoise = d.f(), d.f(), d.f(), d.f()
		p.ActuationDelaySteps = d.i()
		in := func(x float64, v [2]float64) bool { return x >= v[0] && x <= v[1] }
		if d.err != nil || !in(p.ServiceCV, r.ServiceCV) || !in(p.RateCV, r.RateCV) || !in(p.CapacityJitter, r.CapacityJitter) ||
			!in(p.MetricNoise, r.MetricNoise) || p.ActuationDelaySteps < r.ActuationDelaySteps[0] || p.ActuationDelaySteps > r.ActuationDelaySteps[1] {
			return ps, fmt.Errorf("%w: episode physics outside the ranges", ErrSnapshot)
		}
		ps.phys = p
	}
	ps.desired = read(e.n)
	if e.cpuRing != nil {
		ps.cpuRing = read(len(e.cpuRing))
		for _, x := range ps.cpuRing {
			if !(x >= 0 && x <= e.cfg.MaxCPU) {
				return ps, fmt.Errorf("%w: observed allocation %v outside [0, %v]", ErrSnapshot, x, e.cfg.MaxCPU)
			}
		}
	}
	ps.head, ps.count = d.i(), d.i()
	ps.pend = read(len(e.pend))
	for i := range ps.srcs {
		n := d.i()
		if d.err != nil || n < 0 || n > 64 {
			return ps, fmt.Errorf("%w: random stream %d of %d bytes", ErrSnapshot, i, n)
		}
		ps.srcs[i] = make([]byte, n)
		if _, err := io.ReadFull(d.r, ps.srcs[i]); err != nil {
			return ps, fmt.Errorf("%w: random stream %d: %w", ErrSnapshot, i, err)
		}
		var probe rand.PCG
		if err := probe.UnmarshalBinary(ps.srcs[i]); err != nil {
			return ps, fmt.Errorf("%w: random stream %d: %w", ErrSnapshot, i, err)
		}
	}
	ps.speed = read(e.m)
	if hasTracer := d.bl(); hasTracer != (f.tr != nil) {
		return ps, fmt.Errorf("%w: tracer state %v, this scenario's physics %v", ErrSnapshot, hasTracer, f.tr != nil)
	}
	if f.tr != nil {
		ps.v, ps.used = read(len(f.tr.v)), read(len(f.tr.used))
	}
	if d.err != nil {
		return ps, fmt.Errorf("%w: %w", ErrSnapshot, d.err)
	}
	dl := ps.phys.ActuationDelaySteps
	if ps.head < 0 || ps.count < 0 || (dl > 0 && (ps.head >= dl || ps.count > dl)) || (dl == 0 && (ps.head != 0 || ps.count != 0)) {
		return ps, fmt.Errorf("%w: actuation queue %d+%d of %d", ErrSnapshot, ps.head, ps.count, dl)
	}
	for _, xs := range [][]float64{ps.desired, ps.pend, ps.speed, ps.v, ps.used} {
		for _, x := range xs {
			if !(x >= 0) || math.IsInf(x, 0) {
				return ps, fmt.Errorf("%w: physics state value %v", ErrSnapshot, x)
			}
		}
	}
	return ps, nil
}

// commitPhysics installs a decoded physics state.
func (e *Env) commitPhysics(ps physicsState, f *fluid) {
	if e.cfg.Randomize != nil {
		e.setPhysics(ps.phys)
	}
	copy(e.desired, ps.desired)
	copy(e.cpuRing, ps.cpuRing)
	copy(e.pend, ps.pend)
	e.pendHead, e.pendN = ps.head, ps.count
	for i, src := range []*rand.PCG{&e.ph.arrSrc, &e.ph.svcSrc, &e.ph.jitSrc, &e.ph.rateSrc} {
		_ = src.UnmarshalBinary(ps.srcs[i]) // checked by readPhysics
	}
	copy(e.ph.speed, ps.speed)
	if f.tr != nil {
		copy(f.tr.v, ps.v)
		copy(f.tr.used, ps.used)
	}
}

// UnmarshalBinary restores a state written by MarshalBinary for an Env of
// the same Config, including one re-planned during its episode. On error
// the Env is unchanged.
func (e *Env) UnmarshalBinary(data []byte) error {
	if _, ok := e.core.(*fluid); !ok {
		return fmt.Errorf("env: only the fluid core can be snapshotted")
	}
	d := &dec{r: bytes.NewReader(data)}
	if v, n, m := d.i(), d.i(), d.i(); d.err != nil || v != snapshotVersion || n != e.n || m != e.m {
		return fmt.Errorf("%w: header (version %d, %d tasks, %d servers) does not match this scenario", ErrSnapshot, v, n, m)
	}
	// The plan in force: the configured one, or the one a controller set.
	replanned := d.bl()
	cfg := e.cfg
	cfg.Replicas = clonePlan(e.basePlan)
	if e.basePlan == nil {
		cfg.Replicas = nil
	}
	if replanned {
		plan := make([][]Replica, e.n)
		for k := range plan {
			cnt := d.i()
			if d.err != nil || cnt < 1 || cnt > e.m {
				return fmt.Errorf("%w: task %d has %d replicas", ErrSnapshot, k, cnt)
			}
			for range cnt {
				plan[k] = append(plan[k], Replica{Server: d.i(), Share: d.f()})
			}
		}
		if d.err != nil {
			return fmt.Errorf("%w: %w", ErrSnapshot, d.err)
		}
		if err := cfg.validateReplicas(plan); err != nil {
			return fmt.Errorf("%w: %w", ErrSnapshot, err)
		}
		cfg.Replicas = plan
	}
	topo := buildTopology(&cfg)
	f := newFluid(&cfg, topo)
	f.attach(e.ph)
	nr := len(topo.replicas)
	if ns, nrep := d.i(), d.i(); d.err != nil || ns != len(f.stages) || nrep != nr {
		return fmt.Errorf("%w: %d stages and %d replicas, this plan has %d and %d", ErrSnapshot, ns, nrep, len(f.stages), nr)
	}
	// Decode into scratch, then commit.
	started, over, prevViol := d.bl(), d.bl(), d.bl()
	t := d.i()
	prevP95 := d.f()
	var hist [10]bool
	for k := range hist {
		hist[k] = d.bl()
	}
	read := func(n int) []float64 {
		x := make([]float64, n)
		for k := range x {
			x[k] = d.f()
		}
		return x
	}
	alloc, q, processed := read(e.n), read(e.n), read(e.n)
	press := make([]taskPressure, e.n)
	for k := range press {
		press[k] = taskPressure{deficit: d.f(), queueS: d.f(), delayS: d.f()}
	}
	seed := d.u()
	now, cumEmit, cumSink := d.f(), d.f(), d.f()
	reps := make([]taskStats, nr)
	rFrom, rTo, arrive := make([]float64, nr), make([]float64, nr), make([]float64, nr)
	for r := range reps {
		reps[r] = taskStats{in: d.f(), done: d.f(), delayW: d.f(), queue: d.f()}
		rFrom[r], rTo[r], arrive[r] = d.f(), d.f(), d.f()
	}
	remoteSteps := d.i()
	type st struct {
		free, pushed, departed, carried, total float64
		pieces                                 []piece
	}
	stages := make([]st, len(f.stages))
	for i := range stages {
		s := &stages[i]
		s.free, s.pushed, s.departed, s.carried, s.total = d.f(), d.f(), d.f(), d.f(), d.f()
		n := d.i()
		if d.err != nil || n < 0 || n > f.stages[i].queue.limit {
			return fmt.Errorf("%w: stage %d holds %d pieces", ErrSnapshot, i, n)
		}
		for j := 0; j < n; j++ {
			p := piece{w: d.f(), as: d.f(), ae: d.f(), os: d.f(), oe: d.f(), bl: d.bl()}
			if !finite(p.w, p.as, p.ae, p.os, p.oe) || p.w < 0 || p.as > p.ae || p.os > p.oe {
				return fmt.Errorf("%w: stage %d piece %d malformed", ErrSnapshot, i, j)
			}
			s.pieces = append(s.pieces, p)
		}
	}
	if d.err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshot, d.err)
	}
	phys, err := e.readPhysics(d, f)
	if err != nil {
		return err
	}
	// The observation's metrics (metrics.go).
	met, err := e.readMetrics(d)
	if err != nil {
		return err
	}
	if d.r.Len() != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrSnapshot, d.r.Len())
	}
	if t < 0 || remoteSteps < 0 || !finite(prevP95, now, cumEmit, cumSink) || !finite(q...) || !finite(rFrom...) || !finite(rTo...) {
		return fmt.Errorf("%w: clock or history malformed", ErrSnapshot)
	}
	for k, x := range processed {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("%w: task %d processed %v events", ErrSnapshot, k, x)
		}
	}
	for k, p := range press {
		if !finite(p.deficit, p.queueS, p.delayS) || p.deficit > 1 || p.queueS < 0 || p.delayS < 0 {
			return fmt.Errorf("%w: task %d reward pressure malformed", ErrSnapshot, k)
		}
	}
	for r, x := range reps {
		if !finite(x.in, x.done, x.delayW, x.queue, arrive[r]) || x.in < 0 || x.done < 0 || x.queue < 0 || (arrive[r] < 0 && arrive[r] != -1) {
			return fmt.Errorf("%w: replica statistics malformed", ErrSnapshot)
		}
	}
	for _, s := range stages {
		if !finite(s.free, s.pushed, s.departed, s.carried, s.total) {
			return fmt.Errorf("%w: stage counters malformed", ErrSnapshot)
		}
	}
	for _, c := range alloc {
		if !(c >= 0) || math.IsInf(c, 0) || (!e.cfg.SharedCPU && !(c >= e.cfg.MinCPU && c <= e.cfg.MaxCPU)) {
			return fmt.Errorf("%w: allocation %v outside bounds", ErrSnapshot, c)
		}
	}
	// Commit: the plan's topology first (rebind sizes the per-replica
	// state), then the dynamic state.
	e.cfg.Replicas = cfg.Replicas
	e.topo, e.core, e.replanned = topo, f, replanned
	e.rebind()
	e.started, e.over, e.prevViolated, e.t, e.prevP95, e.violHist = started, over, prevViol, t, prevP95, hist
	copy(e.alloc, alloc)
	copy(e.prevQueue, q)
	copy(e.processed, processed)
	copy(e.press, press)
	copy(e.st.replicas, reps)
	copy(e.remoteFrom, rFrom)
	copy(e.remoteTo, rTo)
	copy(e.arrive, arrive)
	e.remoteSteps = remoteSteps
	e.met = met
	e.info.Seed = seed
	f.now, f.cumEmit, f.cumSink = now, cumEmit, cumSink
	for i := range f.stages {
		s, src := &f.stages[i], &stages[i]
		s.free, s.cumPushed, s.cumDeparted, s.carried = src.free, src.pushed, src.departed, src.carried
		s.queue.clear()
		for _, p := range src.pieces {
			s.queue.push(p)
		}
		s.queue.total = src.total
		s.inbox = s.inbox[:0]
	}
	e.commitPhysics(phys, f)
	// Service times from the restored allocations (a shared-CPU env splits
	// its CPU anew at the start of the next step, as the original does).
	e.applyService()
	return nil
}

// MarshalBinary encodes the state of every environment and of the
// autoreset bookkeeping.
func (v *VecEnv) MarshalBinary() ([]byte, error) {
	var w enc
	w.i(len(v.envs), int(v.mode))
	w.u(v.base)
	w.bl(v.started)
	for i, e := range v.envs {
		w.u(v.episodes[i])
		w.bl(v.pending[i])
		w.f(v.epReturn[i])
		w.i(v.epLen[i])
		b, err := e.MarshalBinary()
		if err != nil {
			return nil, err
		}
		w.i(len(b))
		w.b.Write(b)
	}
	return w.b.Bytes(), nil
}

// UnmarshalBinary restores a VecEnv state written by MarshalBinary for the
// same configs. The observations of the restored state are recomputed only
// at the next Step; callers that need the current observation should keep
// it with the snapshot.
func (v *VecEnv) UnmarshalBinary(data []byte) error {
	d := &dec{r: bytes.NewReader(data)}
	if n, mode := d.i(), d.i(); d.err != nil || n != len(v.envs) || mode != int(v.mode) {
		return fmt.Errorf("%w: vector env of %d envs (mode %d), want %d (mode %d)", ErrSnapshot, n, mode, len(v.envs), v.mode)
	}
	base, started := d.u(), d.bl()
	type one struct {
		ep      uint64
		pending bool
		ret     float64
		n       int
		state   []byte
	}
	all := make([]one, len(v.envs))
	for i := range all {
		o := &all[i]
		o.ep, o.pending, o.ret, o.n = d.u(), d.bl(), d.f(), d.i()
		size := d.i()
		if d.err != nil || size < 0 || size > d.r.Len() {
			return fmt.Errorf("%w: env %d state of %d bytes", ErrSnapshot, i, size)
		}
		o.state = make([]byte, size)
		d.r.Read(o.state)
	}
	if d.err != nil || d.r.Len() != 0 {
		return fmt.Errorf("%w: vector env state malformed", ErrSnapshot)
	}
	// Validate every env state on scratch copies before committing any.
	for i, e := range v.envs {
		scratch, err := New(e.cfg)
		if err != nil {
			return err
		}
		if err := scratch.UnmarshalBinary(all[i].state); err != nil {
			return fmt.Errorf("env %d: %w", i, err)
		}
	}
	for i, e := range v.envs {
		_ = e.UnmarshalBinary(all[i].state)
		v.episodes[i], v.pending[i], v.epReturn[i], v.epLen[i] = all[i].ep, all[i].pending, all[i].ret, all[i].n
	}
	v.base, v.started = base, started
	return nil
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
