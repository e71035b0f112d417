package planner

import (
	"context"
	"errors"
	"fmt"

	"math"
	"net"
	"strings"
	"sync"
	"time"

	"streamscale/serve/runtime/ops"
	"streamscale/serve/runtime/wire"
	"streamscale/traces"
)

// A Service is a long-running planner: it keeps its control API open and
// runs one trace replay at a time when a client asks for one through it
// (StartRequest), each replay a fresh Planner on Base's listen address
// with workers from Base's provider (stopped again between replays).
// During a replay the client reads every control interval's report
// (IntervalReport: the workers' per-task metrics and the window's
// latencies), sets per-task allocations (vertical mode) or lets the
// planner's own placement loop run (horizontal mode), and may stop it.
// The control API is specified in control_api.go.
type Service struct {
	cfg ServiceConfig

	mu     sync.Mutex
	run    *svcRun // the current or last replay (nil before the first)
	nextID uint64
}

// ServiceConfig configures a Service.
type ServiceConfig struct {
	// Base is every replay's planner configuration: App, Addr, Public,
	// Token (also the control API's bearer token), Workers (the default
	// count), Provider, Controller/NewPlacer/MaxWorkers (horizontal
	// mode), Heartbeat, Miss, JoinTimeout, Log. Its load fields (Rate,
	// Trace, Seed, Duration, …), Allocate and Rows are set per replay.
	Base Config
	// ControlAddr is the control API's listen address (default
	// 127.0.0.1:7401); ControlPublic allows a non-loopback one.
	ControlAddr   string
	ControlPublic bool
	// LoadTrace resolves a replay's named trace (nil: traces.Load with
	// the built-in traces).
	LoadTrace func(name string, seed uint64) (*traces.Trace, error)
	// Spawn, if set, is called before each replay's workers are started,
	// with the planner's address, the replay's report interval and initial
	// per-operator allocation (nil: the workers' default), so that a
	// provider that execs workers can pass them as flags.
	Spawn func(plannerAddr string, report time.Duration, alloc []int)
}

// svcRun is one replay.
type svcRun struct {
	id        uint64
	req       StartRequest
	pl        *Planner
	cancel    context.CancelFunc
	done      chan struct{}
	state     string // running, done, stopped, failed
	err       string
	intervals []IntervalReport
	result    *Result
	notify    chan struct{} // closed and replaced on every change
}

// IntervalReport is one control interval of a replay: what the vertical
// loop's Allocator sees (the workers' latest per-task reports) and the
// window of the load since the previous interval (Planner.TakeWindow).
type IntervalReport struct {
	Index int     `json:"index"`
	AtS   float64 `json:"at_s"` // seconds after the load started
	// Workers is the number of workers in use (the last placement's live
	// members).
	Workers int       `json:"workers"`
	Tasks   []TaskObs `json:"tasks"`
	Window  Window    `json:"window"`
}

// NewService checks the configuration and returns a service.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.ControlAddr == "" {
		cfg.ControlAddr = "127.0.0.1:7401"
	}
	if cfg.Base.Token == "" {
		return nil, errors.New("planner: the control API needs a token (the runtime's shared token)")
	}
	if cfg.LoadTrace == nil {
		cfg.LoadTrace = func(name string, seed uint64) (*traces.Trace, error) {
			return traces.Load(name, traces.Options{Seed: seed})
		}
	}
	probe := cfg.Base
	probe.Rate = 0
	if err := probe.fill(); err != nil {
		return nil, err
	}
	return &Service{cfg: cfg}, nil
}

// App is the application the service runs.
func (s *Service) App() ops.App { return s.cfg.Base.App }

// Serve serves the control API on ControlAddr until ctx ends, then stops
// the replay in progress and returns. ready, if set, gets the control
// address once it listens.
func (s *Service) Serve(ctx context.Context, ready func(addr string)) error {
	ln, err := listenControl(s.cfg.ControlAddr, s.cfg.ControlPublic)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	err = serveControl(ctx, ln, s)
	s.mu.Lock()
	r := s.run
	s.mu.Unlock()
	if r != nil {
		r.cancel()
		<-r.done
	}
	return err
}

// start begins a replay (the request already checked).
func (s *Service) start(req StartRequest, tr *traces.Trace) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run != nil && s.run.state == "running" {
		return 0, fmt.Errorf("%w: replay %d is running (stop it first)", errBusy, s.run.id)
	}
	s.nextID++
	r := &svcRun{id: s.nextID, req: req, state: "running", done: make(chan struct{}), notify: make(chan struct{})}
	cfg := s.cfg.Base
	cfg.Seed, cfg.Trace, cfg.TraceStep, cfg.RateMult = req.Seed, tr, req.step(), req.RateMult
	cfg.Rate = 0
	cfg.Duration = time.Duration(req.Intervals) * req.step()
	cfg.Drain = req.drain()
	cfg.Control = req.step()
	cfg.Rows = nil
	if req.Workers > 0 {
		cfg.Workers = req.Workers
	}
	if req.Mode == ModeVertical {
		cfg.Controller, cfg.NewPlacer = "none", nil
	}
	cfg.Allocate = func(now float64, tasks []TaskObs) map[uint32][]int {
		w := r.pl.TakeWindow()
		n := r.pl.PlacedWorkers()
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(r.intervals) < req.Intervals {
			r.intervals = append(r.intervals, IntervalReport{Index: len(r.intervals), AtS: now, Workers: n, Tasks: tasks, Window: w})
			r.changed()
		}
		return nil
	}
	pl, err := New(cfg)
	if err != nil {
		return 0, err
	}
	r.pl = pl
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	s.run = r
	go func() {
		defer close(r.done)
		res, err := pl.Run(ctx, func(addr string) {
			if s.cfg.Spawn != nil {
				s.cfg.Spawn(addr, req.report(), req.Alloc)
			}
		})
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, serr := cfg.Provider.Scale(sctx, 0); serr != nil {
			fmt.Fprintf(cfg.Log, "planner: replay %d: stop workers: %v\n", r.id, serr)
		}
		scancel()
		s.mu.Lock()
		defer s.mu.Unlock()
		r.result = &res
		switch {
		case errors.Is(err, context.Canceled):
			r.state = "stopped"
		case err != nil:
			r.state, r.err = "failed", err.Error()
		default:
			r.state = "done"
		}
		r.changed()
	}()
	return r.id, nil
}

// changed wakes the clients waiting for news of r (s.mu held).
func (r *svcRun) changed() {
	close(r.notify)
	r.notify = make(chan struct{})
}

// Modes of a replay.
const (
	ModeVertical   = "vertical"
	ModeHorizontal = "horizontal"
)

// StartRequest asks the service for a replay (POST /v1/run). The load is
// either Rates (inputs/s per trace point) or the named Trace from point
// Start, in both cases times RateMult, one point per TimeScaleMS.
type StartRequest struct {
	// App must name the service's application (a client built for another
	// profile is refused).
	App string `json:"app"`
	// Mode: vertical (no placement loop; the client sets allocations) or
	// horizontal (the service's placement controller runs).
	Mode      string    `json:"mode"`
	Trace     string    `json:"trace,omitempty"`
	Start     int       `json:"start,omitempty"`
	Rates     []float64 `json:"rates,omitempty"`
	RateMult  float64   `json:"rate_mult"`
	Seed      uint64    `json:"seed"`
	Intervals int       `json:"intervals"`
	// TimeScaleMS is the wall time of one trace point and one control
	// interval; ReportMS the workers' report interval (0: TimeScaleMS);
	// DrainMS the wait for inputs in flight after the load (0: two
	// intervals).
	TimeScaleMS int `json:"time_scale_ms"`
	ReportMS    int `json:"report_ms,omitempty"`
	DrainMS     int `json:"drain_ms,omitempty"`
	// Workers is the worker count (0: the service's default).
	Workers int `json:"workers,omitempty"`
	// Alloc is every worker's initial allocation per operator, millicores
	// (empty: the workers' default).
	Alloc []int `json:"alloc,omitempty"`
}

// Limits of a StartRequest.
const (
	MaxIntervals = 100_000
	MaxRates     = 100_000
)

func (r StartRequest) step() time.Duration { return time.Duration(r.TimeScaleMS) * time.Millisecond }

func (r StartRequest) report() time.Duration {
	if r.ReportMS == 0 {
		return r.step()
	}
	return time.Duration(r.ReportMS) * time.Millisecond
}

func (r StartRequest) drain() time.Duration {
	if r.DrainMS == 0 {
		return 2 * r.step()
	}
	return time.Duration(r.DrainMS) * time.Millisecond
}

// check validates r against the service (app, controller, worker bound).
func (r StartRequest) check(cfg Config) error {
	app := cfg.App
	switch {
	case !strings.EqualFold(r.App, app.Name):
		return fmt.Errorf("app %q, this planner runs %q", r.App, app.Name)
	case r.Mode != ModeVertical && r.Mode != ModeHorizontal:
		return fmt.Errorf("mode %q, want vertical or horizontal", r.Mode)
	case r.Mode == ModeHorizontal && cfg.Controller == "none":
		return errors.New("mode horizontal, but this planner runs no placement controller (start it with -controller)")
	case (r.Trace == "") == (len(r.Rates) == 0):
		return errors.New("give exactly one of trace and rates")
	case r.Start < 0 || r.Start > 1e9:
		return fmt.Errorf("start %d, want 0..1e9", r.Start)
	case len(r.Rates) > MaxRates:
		return fmt.Errorf("%d rates, want at most %d", len(r.Rates), MaxRates)
	case !(r.RateMult > 0 && r.RateMult <= 1000):
		return fmt.Errorf("rate_mult %v, want > 0 and ≤ 1000", r.RateMult)
	case r.Intervals < 1 || r.Intervals > MaxIntervals:
		return fmt.Errorf("intervals %d, want 1..%d", r.Intervals, MaxIntervals)
	case r.TimeScaleMS < 10 || r.TimeScaleMS > 60_000:
		return fmt.Errorf("time_scale_ms %d, want 10..60000", r.TimeScaleMS)
	case r.ReportMS != 0 && (r.ReportMS < 10 || r.ReportMS > 60_000):
		return fmt.Errorf("report_ms %d, want 0 or 10..60000", r.ReportMS)
	case r.DrainMS < 0 || r.DrainMS > 600_000:
		return fmt.Errorf("drain_ms %d, want 0..600000", r.DrainMS)
	case r.Workers < 0 || r.Workers > min(cfg.MaxWorkers, wire.MaxMembers):
		return fmt.Errorf("workers %d, want 0..%d", r.Workers, min(cfg.MaxWorkers, wire.MaxMembers))
	case len(r.Alloc) != 0 && len(r.Alloc) != len(app.Operators):
		return fmt.Errorf("alloc has %d entries, app %s has %d operators", len(r.Alloc), app.Name, len(app.Operators))
	}
	for i, x := range r.Rates {
		if !(x >= 0 && x <= 1e7) || math.IsInf(x, 0) {
			return fmt.Errorf("rates[%d] %v, want 0..1e7 inputs/s", i, x)
		}
	}
	for i, mc := range r.Alloc {
		if mc < 1 || mc > wire.MaxMillicores {
			return fmt.Errorf("alloc[%d] %d, want 1..%d millicores", i, mc, wire.MaxMillicores)
		}
	}
	return nil
}

// trace resolves the request's load into a trace starting at its first
// point.
func (r StartRequest) trace(load func(string, uint64) (*traces.Trace, error)) (*traces.Trace, error) {
	if len(r.Rates) > 0 {
		return &traces.Trace{Name: "rates", Source: "request", Counts: append([]float64(nil), r.Rates...), Scale: 1}, nil
	}
	tr, err := load(r.Trace, r.Seed)
	if err != nil {
		return nil, fmt.Errorf("trace %q: %w", r.Trace, err)
	}
	if tr.Len() == 0 {
		return nil, fmt.Errorf("trace %q is empty", r.Trace)
	}
	c := make([]float64, tr.Len())
	for i := range c {
		c[i] = tr.Counts[(r.Start+i)%tr.Len()]
	}
	out := *tr
	out.Counts = c
	return &out, nil
}

// AllocRequest sets allocations during a vertical replay (PUT
// /v1/run/alloc): every listed worker gets Millicores, one entry per
// operator.
type AllocRequest struct {
	Workers []WorkerAlloc `json:"workers"`
}

// WorkerAlloc is one worker's allocation.
type WorkerAlloc struct {
	Worker     uint32 `json:"worker"`
	Millicores []int  `json:"millicores"`
}

// applyAlloc checks every allocation against the live members and the
// operator count, then sends them all; on any error it sends none.
func (p *Planner) applyAlloc(req AllocRequest) error {
	p.mu.Lock()
	seen := map[uint32]bool{}
	for i, wa := range req.Workers {
		switch {
		case seen[wa.Worker]:
			p.mu.Unlock()
			return fmt.Errorf("workers[%d]: worker %d listed twice", i, wa.Worker)
		case !p.core.IsAlive(wa.Worker) || p.byID[wa.Worker] == nil:
			p.mu.Unlock()
			return fmt.Errorf("workers[%d]: worker %d is not a live member", i, wa.Worker)
		case len(wa.Millicores) != len(p.cfg.App.Operators):
			p.mu.Unlock()
			return fmt.Errorf("workers[%d]: %d allocations, app %s has %d operators", i, len(wa.Millicores), p.cfg.App.Name, len(p.cfg.App.Operators))
		}
		for j, mc := range wa.Millicores {
			if mc < 1 || mc > wire.MaxMillicores {
				p.mu.Unlock()
				return fmt.Errorf("workers[%d].millicores[%d] %d, want 1..%d", i, j, mc, wire.MaxMillicores)
			}
		}
		seen[wa.Worker] = true
	}
	p.mu.Unlock()
	for _, wa := range req.Workers {
		p.setAlloc(wa.Worker, wa.Millicores)
	}
	return nil
}

var errBusy = errors.New("planner: busy")

// listenControl listens on addr, loopback unless public.
func listenControl(addr string, public bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("planner: control API: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && !public {
		ln.Close()
		return nil, fmt.Errorf("planner: control API: %s is not a loopback address (allow it explicitly)", addr)
	}
	return ln, nil
}
