package kcfs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/stat"

	"streamscale/serve/runtime/ops"
)

// CheckConfig configures Check: one operator's real per-event work run in
// a task host under each mode, allocation and load.
type CheckConfig struct {
	// Apps resolves an app name (the task host resolves it the same way).
	Apps func(string) (ops.App, error)
	// App and Op name the operator (Op an operator name of the app).
	App, Op string
	// Millicores are the allocations to check (each 10..cfs.MaxMillicores,
	// so the kernel quota is at least its 1 ms minimum per 100 ms).
	Millicores []int
	// Loads are the offered loads: 0 is saturation (closed loop, Depth
	// batches of Batch records always outstanding); a fraction f in (0, 1]
	// offers f × capacity events per second open-loop at a constant rate,
	// the same for every mode. The capacity is the lowest event rate the
	// modes reached at saturation with the same allocation when Loads
	// holds 0 (saturation points run first), else quota ÷ the operator's
	// CPU per event measured in this process (which ignores the host's
	// I/O and runtime CPU, so the offered share of the quota is higher
	// than f).
	Loads []float64
	// Modes to run (default InProcess and Kernel).
	Modes []Mode
	// Duration is each point's measured time, Warmup the unmeasured time
	// before it (defaults 10 s and 500 ms). A window that does not hold
	// two results and one completed event sent within it after Duration
	// (a starved host) is extended until it does, up to 10 × Duration or
	// 10 s, whichever is longer; Point.Seconds is its length.
	Duration, Warmup time.Duration
	// Period is the CFS period (default DefaultPeriod).
	Period time.Duration
	// Batch is the most records per batch frame (default 64); Depth the
	// batches outstanding at saturation (default 2).
	Batch, Depth int
	// Seed draws the operator's inputs (the app's source; the operator's
	// predecessors run in this process to produce them).
	Seed uint64
	// Cgroups is the CPU cgroup controller for Kernel mode; nil skips
	// Kernel mode (CgroupsErr says why).
	Cgroups    *Controller
	CgroupsErr error
	// Command, Env and Procs start the task host (see HostConfig).
	Command []string
	Env     []string
	Procs   int
}

// Point is one measured (mode, allocation, load).
type Point struct {
	Mode       string  `json:"mode"`
	Millicores int     `json:"millicores"`
	Load       string  `json:"load"` // "saturation" or the offered fraction of the quota
	OfferedEPS float64 `json:"offered_events_per_s,omitempty"`
	RateBasis  string  `json:"rate_basis,omitempty"` // "saturation" or "cpu_per_event" (see CheckConfig.Loads)
	Seconds    float64 `json:"seconds"`
	Events     int64   `json:"events"`
	EPS        float64 `json:"events_per_s"`
	// Cores is the task host's process CPU (operator, I/O, runtime) per
	// second of the window; UsedOverQuota is Cores ÷ (millicores/1000).
	Cores         float64 `json:"cores"`
	UsedOverQuota float64 `json:"used_over_quota"`
	// ChargedOverQuota is the CPU the enforcement counted ÷ quota: the
	// in-process quota charges only the batches' executing thread; the
	// kernel charges the whole process (then equal to UsedOverQuota).
	ChargedOverQuota float64 `json:"charged_over_quota"`
	// Periods and Throttled are the window's periods in which the task ran
	// and those that ended throttled (cpu.stat in kernel mode, the
	// cfs.Quota's counters in-process); ThrottledShare is their ratio.
	Periods        int64   `json:"periods"`
	Throttled      int64   `json:"throttled"`
	ThrottledShare float64 `json:"throttled_share"`
	// Event latency, ms: from the event's intended send time (open loop)
	// or its send (saturation) to its result's arrival.
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// CheckReport is Check's output.
type CheckReport struct {
	App         string  `json:"app"`
	Op          string  `json:"op"`
	CPUPerEvent float64 `json:"cpu_per_event_us"` // measured in this process, thread CPU
	Inputs      int     `json:"inputs"`           // distinct input records, cycled
	Period      string  `json:"period"`
	HostProcs   int     `json:"host_gomaxprocs"`
	Cgroup      string  `json:"cgroup"` // the kernel mode's hierarchy, or why it was skipped
	Load1       float64 `json:"loadavg_1m_start"`
	Load1End    float64 `json:"loadavg_1m_end"`
	CPUs        int     `json:"cpus"`
	Points      []Point `json:"points"`
}

func (c *CheckConfig) fill() error {
	if c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	if c.Warmup == 0 {
		c.Warmup = 500 * time.Millisecond
	}
	if c.Period == 0 {
		c.Period = DefaultPeriod
	}
	if c.Batch == 0 {
		c.Batch = 64
	}
	if c.Depth == 0 {
		c.Depth = 2
	}
	if len(c.Modes) == 0 {
		c.Modes = []Mode{InProcess, Kernel}
	}
	switch {
	case c.Apps == nil:
		return errors.New("kcfs: check: no app resolver")
	case len(c.Millicores) == 0:
		return errors.New("kcfs: check: no allocations")
	case len(c.Loads) == 0:
		return errors.New("kcfs: check: no loads")
	case c.Duration < 0 || c.Warmup < 0:
		return errors.New("kcfs: check: negative duration")
	case c.Period < time.Millisecond || c.Period > time.Second:
		return fmt.Errorf("kcfs: check: period %v, want 1ms..1s", c.Period)
	case c.Batch < 1 || c.Batch > MaxRecords || c.Depth < 1:
		return fmt.Errorf("kcfs: check: batch %d (want 1..%d), depth %d (want ≥ 1)", c.Batch, MaxRecords, c.Depth)
	}
	for _, m := range c.Millicores {
		if m < 10 || m > 1_000_000 {
			return fmt.Errorf("kcfs: check: %d millicores, want 10..1000000", m)
		}
	}
	for _, l := range c.Loads {
		if !(l >= 0 && l <= 1) {
			return fmt.Errorf("kcfs: check: load %v, want 0 (saturation) or a fraction in (0, 1]", l)
		}
	}
	return nil
}

// Check measures the in-process and the kernel enforcement on the same
// operator work (see CheckConfig). Kernel points are skipped, with the
// reason in the report's Cgroup, when Cgroups is nil.
func Check(ctx context.Context, cfg CheckConfig) (*CheckReport, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	app, err := cfg.Apps(cfg.App)
	if err != nil {
		return nil, err
	}
	op := slices.IndexFunc(app.Operators, func(s ops.Spec) bool { return strings.EqualFold(s.Name, cfg.Op) })
	if op < 0 {
		names := make([]string, len(app.Operators))
		for i, s := range app.Operators {
			names[i] = s.Name
		}
		return nil, fmt.Errorf("kcfs: check: app %s has no operator %q (have %s)", app.Name, cfg.Op, strings.Join(names, ", "))
	}
	inputs, err := OperatorInputs(app, op, cfg.Seed, 4096)
	if err != nil {
		return nil, err
	}
	cost := measureCost(app.Operators[op].New(), inputs)
	rep := &CheckReport{App: app.Name, Op: app.Operators[op].Name, CPUPerEvent: float64(cost) / 1e3, Inputs: len(inputs),
		Period: cfg.Period.String(), HostProcs: max(cfg.Procs, 1), CPUs: runtime.NumCPU(), Load1: load1()}
	switch {
	case cfg.Cgroups != nil:
		rep.Cgroup = fmt.Sprintf("%s at %s", cfg.Cgroups.Version, cfg.Cgroups.Parent)
	case cfg.CgroupsErr != nil:
		rep.Cgroup = "kernel mode skipped: " + cfg.CgroupsErr.Error()
	default:
		rep.Cgroup = "kernel mode skipped: no cgroup controller given"
	}
	loads := slices.Clone(cfg.Loads)
	slices.Sort(loads) // saturation (0) first: it gives the capacity
	for _, mc := range cfg.Millicores {
		capacity, basis := float64(mc)/1000/cost.Seconds(), "cpu_per_event"
		satEPS := math.Inf(1)
		for _, load := range loads {
			if load > 0 && !math.IsInf(satEPS, 1) {
				capacity, basis = satEPS, "saturation"
			}
			for _, mode := range cfg.Modes {
				if mode == Kernel && cfg.Cgroups == nil {
					continue
				}
				p, err := checkPoint(ctx, cfg, app.Name, op, inputs, load, load*capacity, mode, mc)
				if err != nil {
					return rep, err
				}
				if load == 0 {
					satEPS = min(satEPS, p.EPS)
				} else {
					p.RateBasis = basis
				}
				rep.Points = append(rep.Points, p)
			}
		}
	}
	rep.Load1End = load1()
	return rep, nil
}

// OperatorInputs returns up to n records addressed to operator op of app:
// the app's source (seed) feeds operator 0 and every operator runs, one
// instance each with its own keyed state, FIFO, until n records reached op
// (or 200,000 inputs gave fewer). Payloads are copies.
func OperatorInputs(app ops.App, op int, seed uint64, n int) ([]ops.Record, error) {
	if app.NewSource == nil {
		return nil, fmt.Errorf("kcfs: app %s has no source", app.Name)
	}
	inst := make([]ops.Operator, len(app.Operators))
	st := make([]memState, len(app.Operators))
	for i, s := range app.Operators {
		inst[i], st[i] = s.New(), memState{}
	}
	src := app.NewSource(seed)
	var out []ops.Record
	var buf []byte
	type item struct {
		op  int
		rec ops.Record
	}
	for i := 0; i < 200_000 && len(out) < n; i++ {
		key, p := src.Next(buf)
		buf = p
		queue := []item{{0, ops.Record{Key: key, Input: uint64(i + 1), Payload: slices.Clone(p)}}}
		for len(queue) > 0 && len(out) < n {
			it := queue[0]
			queue = queue[1:]
			if it.op == op {
				out = append(out, it.rec)
				continue
			}
			var c collect
			if inst[it.op].Process(it.rec, st[it.op], &c) != nil {
				continue
			}
			for _, e := range c.out {
				if e.To >= 0 && e.To < len(inst) {
					queue = append(queue, item{e.To, ops.Record{Key: e.Key, Input: it.rec.Input, Payload: e.Payload}})
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("kcfs: app %s: no record reached operator %s", app.Name, app.Operators[op].Name)
	}
	return out, nil
}

// collect keeps copies of what an operator emits (cur: the parent).
type collect struct {
	out []Emit
	cur int
}

func (c *collect) Emit(to int, key uint64, p []byte) {
	c.out = append(c.out, Emit{Parent: c.cur, To: to, Key: key, Payload: slices.Clone(p)})
}

// measureCost is the operator's mean thread CPU per record over three
// passes of the inputs (the fastest pass, on a fresh instance and state).
func measureCost(o ops.Operator, in []ops.Record) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := memState{}
	var c collect
	best := time.Duration(math.MaxInt64)
	for range 3 {
		n := 0
		t0 := threadCPU()
		for n < 200 || threadCPU()-t0 < 50*time.Millisecond {
			c.out = c.out[:0]
			o.Process(in[n%len(in)], st, &c) //nolint:errcheck // failures cost CPU too
			n++
		}
		best = min(best, (threadCPU()-t0)/time.Duration(n))
	}
	return max(best, 1)
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// load1 is the 1-minute load average (−1 if unreadable).
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// sent is one batch in flight: events k0..k1 (indices into the run's
// event sequence) and their send time.
type sent struct {
	id     uint64
	k0, k1 int64
	at     time.Duration // send time since the point's start (saturation)
}

// sample is the host's counters at a result's arrival.
type sample struct {
	at                 time.Duration
	proc, charged      time.Duration
	periods, throttled int64
}

// maxWindow bounds a point's extended window (see checkPoint): 10 times
// its Duration or 10 s, whichever is longer.
func maxWindow(d time.Duration) time.Duration { return max(10*d, 10*time.Second) }

// checkPoint runs one point: rate events per second open-loop (load is
// its label), or saturation when rate is 0.
func checkPoint(ctx context.Context, cfg CheckConfig, app string, op int, in []ops.Record, load, rate float64, mode Mode, mc int) (Point, error) {
	h, err := StartHost(ctx, HostConfig{Command: cfg.Command, Env: cfg.Env, Procs: cfg.Procs, App: app, Op: op, Mode: mode,
		Millicores: mc, Period: cfg.Period, Cgroups: cfg.Cgroups, Stderr: os.Stderr})
	if err != nil {
		return Point{}, err
	}
	defer h.Close() //nolint:errcheck // measurement errors are the ones to report
	p := Point{Mode: mode.String(), Millicores: mc, Load: "saturation"}
	if rate > 0 {
		p.Load, p.OfferedEPS = strconv.FormatFloat(load, 'f', 2, 64), rate
	}
	start := time.Now()
	// The window runs from the first result after the warm-up to when the
	// sender stops: at end, or, if the window does not hold two results
	// and a completed event sent within it by then (a host that starved
	// this process or the task host), as soon as it does, up to
	// maxWindow.
	warm, end := cfg.Warmup, cfg.Warmup+cfg.Duration
	hardEnd := warm + maxWindow(cfg.Duration)
	var enough atomic.Bool
	var stopAt atomic.Int64 // when the sender stopped, since start; 0 while it sends
	flight := make(chan sent, 1<<16)
	credit := make(chan struct{}, cfg.Depth) // saturation: batches allowed out
	for range cfg.Depth {
		credit <- struct{}{}
	}
	var sendErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // sender
		defer wg.Done()
		defer close(flight)
		recs := make([]ops.Record, 0, cfg.Batch)
		var k int64
		defer func() { stopAt.Store(max(int64(time.Since(start)), 1)) }()
		for ctx.Err() == nil {
			now := time.Since(start)
			if now >= end && (enough.Load() || now >= hardEnd) {
				return
			}
			var k1 int64
			if rate == 0 {
				select {
				case <-credit:
				case <-ctx.Done():
					return
				}
				k1 = k + int64(cfg.Batch)
			} else {
				due := int64(now.Seconds()*rate) + 1 // events with intended time ≤ now
				if due <= k {
					next := time.Duration(float64(k) / rate * 1e9)
					time.Sleep(min(next-now, time.Millisecond))
					continue
				}
				k1 = min(due, k+int64(cfg.Batch))
			}
			recs = recs[:0]
			for j := k; j < k1; j++ {
				recs = append(recs, in[j%int64(len(in))])
			}
			at := time.Since(start)
			id, err := h.Send(recs)
			if err != nil {
				sendErr = err
				return
			}
			flight <- sent{id: id, k0: k, k1: k1, at: at}
			k = k1
		}
	}()
	var lat []float64
	var first, last sample
	var stat0, stat1 Stat
	var statErr error
	haveFirst := false
	var res Result
	var recvErr error
	for s := range flight {
		if err := h.Recv(&res); err != nil {
			recvErr = err
			break
		}
		now := time.Since(start)
		if rate == 0 {
			credit <- struct{}{}
		}
		if res.ID != s.id {
			recvErr = fmt.Errorf("kcfs: check: result %d for batch %d", res.ID, s.id)
			break
		}
		cur := sample{at: now, proc: res.ProcCPU, charged: res.Charged, periods: res.Periods, throttled: res.Throttled}
		if now < warm {
			continue
		}
		if !haveFirst {
			first, haveFirst = cur, true
			if g := h.Cgroup(); g != nil {
				stat0, statErr = g.Stat()
			}
			continue // the window starts at this result
		}
		if st := stopAt.Load(); st == 0 || now <= time.Duration(st) {
			last = cur
			if g := h.Cgroup(); g != nil {
				if st, err := g.Stat(); err == nil {
					stat1 = st
				} else {
					statErr = err
				}
			}
		}
		for k := s.k0; k < s.k1; k++ {
			from := s.at
			if rate > 0 {
				from = time.Duration(float64(k) / rate * 1e9)
			}
			if from >= first.at { // every event was sent before the stop
				lat = append(lat, float64(now-from)/1e6)
			}
		}
		if !enough.Load() && last.at > first.at && len(lat) > 0 {
			enough.Store(true)
		}
	}
	if recvErr != nil {
		// Unblock the sender, which may wait for credit or on a full pipe.
		h.kill()
		for range flight {
		}
	}
	wg.Wait()
	switch {
	case recvErr != nil:
		return p, recvErr
	case sendErr != nil:
		return p, sendErr
	case statErr != nil:
		return p, statErr
	case ctx.Err() != nil:
		return p, ctx.Err()
	case !haveFirst || last.at <= first.at:
		return p, fmt.Errorf("kcfs: check: %s %d millicores: fewer than two results in the window (duration %v, extended up to %v)", mode, mc, cfg.Duration, maxWindow(cfg.Duration))
	}
	stop := time.Duration(stopAt.Load())
	wall := (last.at - first.at).Seconds()
	quota := float64(mc) / 1000
	p.Seconds = wall
	p.Events = int64(len(lat))
	p.EPS = float64(len(lat)) / (stop - first.at).Seconds()
	p.Cores = (last.proc - first.proc).Seconds() / wall
	p.UsedOverQuota = p.Cores / quota
	if mode == Kernel {
		p.ChargedOverQuota = p.UsedOverQuota
		p.Periods, p.Throttled = stat1.Periods-stat0.Periods, stat1.Throttled-stat0.Throttled
	} else {
		p.ChargedOverQuota = (last.charged - first.charged).Seconds() / wall / quota
		p.Periods, p.Throttled = last.periods-first.periods, last.throttled-first.throttled
	}
	if p.Periods > 0 {
		p.ThrottledShare = float64(p.Throttled) / float64(p.Periods)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		p.P50, p.P95, p.P99, p.Max = quantile(lat, 0.50), quantile(lat, 0.95), quantile(lat, 0.99), lat[len(lat)-1]
	}
	return p, nil
}

// quantile is the nearest-rank q-quantile of sorted, non-empty xs, q in
// [0, 1]: xs[⌈q·n⌉ − 1] (xs[0] for q = 0), which is gonum's
// stat.Quantile with the Empirical cumulant (the smallest x whose rank is
// at least q·n).
func quantile(xs []float64, q float64) float64 {
	return stat.Quantile(q, stat.Empirical, xs, nil)
}
