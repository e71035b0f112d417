package envserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"streamscale/env"
	"streamscale/traces"
)

// Defaults of Config.
const (
	DefaultMaxEnvs        = 64
	DefaultMaxEnvsPerConn = 32
	DefaultIdleTimeout    = 10 * time.Minute
	DefaultMaxJSONBytes   = 64 << 10
	// MaxEnvsLimit is the largest MaxEnvs accepted: a bound on the
	// memory and CPU one server can be asked to hold.
	MaxEnvsLimit = 1024
)

// Config configures a Server. Zero fields take the defaults.
type Config struct {
	// MaxEnvs bounds the simulator environments alive in total (a vector
	// instance of N envs counts N). Default 64, at most MaxEnvsLimit
	// (1024).
	MaxEnvs int
	// MaxEnvsPerConn bounds the environments alive that were created over
	// one client connection. Default 32, at most MaxEnvs.
	MaxEnvsPerConn int
	// IdleTimeout frees an instance no request touched for this long
	// (a backstop: an instance is freed with its connection anyway).
	// Default 10 minutes.
	IdleTimeout time.Duration
	// MaxJSONBytes caps a JSON request body (create, reset), bytes.
	// Default 64 KiB. Step bodies are capped at their exact size.
	MaxJSONBytes int64
	// TracesDir is where named traces are read ("": traces.DefaultDir(),
	// ../shared/data/traces; a seeded synthetic trace when absent).
	TracesDir string
	// Workers is the goroutines stepping one vector instance (≤ 0:
	// GOMAXPROCS).
	Workers int
	// Logf receives one line per notable event (nil: discarded).
	Logf func(format string, args ...any)
	// Now is the clock of the idle timeout (nil: time.Now).
	Now func() time.Time
	// Scenario, if not nil, is the server's scenario (`serve env
	// -scenario`, a preset or a scenario file loaded at start): a request
	// naming no scenario, or this one's Name, gets it. Requests may also
	// name a preset; files are never read on a client's behalf.
	Scenario *env.Scenario
}

// Errors a request can get; responses carry the code in JSON.
var (
	ErrBadAction   = errors.New("envserver: bad action")
	ErrUnknownEnv  = errors.New("envserver: unknown env")
	ErrClosed      = errors.New("envserver: env is closed")
	ErrLimit       = errors.New("envserver: environment limit reached")
	ErrBadRequest  = errors.New("envserver: bad request")
	ErrTooLarge    = errors.New("envserver: request body too large")
	errNoConn      = errors.New("envserver: request carries no connection (install the server with Server.Configure)")
	errEpisodeOver = errors.New("envserver: episode is over")
	errNotReset    = errors.New("envserver: not reset")
)

// Server serves environment instances over HTTP. It is safe for
// concurrent use; requests on one instance are serialized.
type Server struct {
	cfg Config

	mu      sync.Mutex
	conns   map[uint64]*conn    // open client connections by number
	byNet   map[net.Conn]uint64 // their numbers by net.Conn (ConnState)
	connSeq uint64              // last connection number given
	alive   int                 // simulator envs alive
	streams map[uint64]net.Conn // connections upgraded to the frame protocol
	closing bool                // CloseStreams was called: no new streams
	wg      sync.WaitGroup      // stream loops running

	traceMu    sync.Mutex
	traces     map[traceKey]*traces.Trace
	traceOrder []traceKey // s.traces' keys, oldest first (MaxCachedTraces)
}

// MaxCachedTraces bounds the loaded traces the server keeps for reuse:
// every distinct (trace, rate multiplier, trace seed) a client asks for is
// a trace, so without a bound clients could grow the server's memory at
// will. Beyond it the oldest is dropped from the cache (environments using
// it keep it).
const MaxCachedTraces = 64

type traceKey struct {
	name string
	mult float64
	seed uint64
}

// New returns a server; it validates cfg.
func New(cfg Config) (*Server, error) {
	if cfg.MaxEnvs == 0 {
		cfg.MaxEnvs = DefaultMaxEnvs
	}
	if cfg.MaxEnvsPerConn == 0 {
		cfg.MaxEnvsPerConn = min(DefaultMaxEnvsPerConn, cfg.MaxEnvs)
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxJSONBytes == 0 {
		cfg.MaxJSONBytes = DefaultMaxJSONBytes
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch {
	case cfg.MaxEnvs < 1 || cfg.MaxEnvs > MaxEnvsLimit:
		return nil, fmt.Errorf("envserver: max envs %d, want 1..%d", cfg.MaxEnvs, MaxEnvsLimit)
	case cfg.MaxEnvsPerConn < 1 || cfg.MaxEnvsPerConn > cfg.MaxEnvs:
		return nil, fmt.Errorf("envserver: max envs per connection %d, want 1..%d", cfg.MaxEnvsPerConn, cfg.MaxEnvs)
	case cfg.IdleTimeout < 0:
		return nil, fmt.Errorf("envserver: idle timeout %v, want > 0", cfg.IdleTimeout)
	case cfg.MaxJSONBytes < 1024:
		return nil, fmt.Errorf("envserver: max JSON body %d bytes, want ≥ 1024", cfg.MaxJSONBytes)
	}
	return &Server{cfg: cfg, conns: map[uint64]*conn{}, byNet: map[net.Conn]uint64{}, streams: map[uint64]net.Conn{},
		traces: map[traceKey]*traces.Trace{}}, nil
}

// conn is one client connection and the instances created over it: their
// ids are its own (1, 2, … in creation order) and no other connection
// can name them.
type conn struct {
	nextID uint64               // last instance id given on this connection
	envs   map[uint64]*instance // alive instances by id
	alive  int                  // simulator envs alive
	stream bool                 // upgraded to the frame protocol (stream.go)
}

type connKey struct{}

// Configure installs s in hs: its Handler and the ConnContext and
// ConnState hooks that tie every instance to the connection that created
// it. All three are needed (a request without a connection is refused).
func (s *Server) Configure(hs *http.Server) {
	hs.Handler = s.Handler()
	hs.ConnContext = s.ConnContext
	hs.ConnState = s.ConnState
}

// ConnContext is the http.Server.ConnContext hook: it registers the
// client connection nc under a new number, which its requests carry.
// ConnState must be installed too, or the registry outlives connections.
func (s *Server) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connSeq++
	s.conns[s.connSeq] = &conn{envs: map[uint64]*instance{}}
	s.byNet[nc] = s.connSeq
	return context.WithValue(ctx, connKey{}, s.connSeq)
}

// ConnState is the http.Server.ConnState hook: when a connection closes
// (or is hijacked) it frees every instance created over it, waiting for
// a request in progress on one to finish. A connection hijacked by the
// upgrade to the frame protocol keeps its instances until its stream
// ends.
func (s *Server) ConnState(nc net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	s.mu.Lock()
	num, ok := s.byNet[nc]
	if !ok {
		s.mu.Unlock()
		return
	}
	delete(s.byNet, nc)
	if c := s.conns[num]; c != nil && c.stream && st == http.StateHijacked {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.dropConn(num)
}

// dropConn forgets connection num and frees its instances.
func (s *Server) dropConn(num uint64) {
	s.mu.Lock()
	c := s.conns[num]
	delete(s.conns, num)
	if c == nil {
		s.mu.Unlock()
		return
	}
	ins := make([]*instance, 0, len(c.envs))
	for _, in := range c.envs {
		ins = append(ins, in)
	}
	for _, in := range ins {
		s.removeLocked(in)
	}
	s.mu.Unlock()
	// Outside s.mu: closeEnv holds an instance's lock while taking s.mu.
	for _, in := range ins {
		in.mu.Lock()
		in.release()
		in.mu.Unlock()
	}
	if len(ins) > 0 {
		s.cfg.Logf("envserver: freed %d instances with their closed connection", len(ins))
	}
}

func connOf(r *http.Request) uint64 {
	c, _ := r.Context().Value(connKey{}).(uint64)
	return c
}

// Run frees idle instances until ctx ends, checking every tenth of the
// idle timeout (at most every second).
func (s *Server) Run(ctx context.Context) {
	t := time.NewTicker(max(s.cfg.IdleTimeout/10, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n := s.Sweep(s.cfg.Now()); n > 0 {
				s.cfg.Logf("envserver: freed %d idle instances (idle > %v)", n, s.cfg.IdleTimeout)
			}
		}
	}
}

// Sweep frees every instance idle for longer than the idle timeout at
// time now (skipping one busy with a request) and returns how many it freed.
func (s *Server) Sweep(now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	freed := 0
	for _, c := range s.conns {
		for _, in := range c.envs {
			if now.UnixNano()-in.last.Load() <= int64(s.cfg.IdleTimeout) || !in.mu.TryLock() {
				continue
			}
			s.removeLocked(in)
			in.release()
			in.mu.Unlock()
			freed++
		}
	}
	return freed
}

// Stats is the server's occupancy.
type Stats struct {
	Conns          int   `json:"conns"` // open client connections
	Instances      int   `json:"instances"`
	Envs           int   `json:"envs"`
	MaxEnvs        int   `json:"max_envs"`
	MaxEnvsPerConn int   `json:"max_envs_per_conn"`
	IdleTimeoutS   int64 `json:"idle_timeout_s"`
}

// Stats returns the current occupancy.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	instances := 0
	for _, c := range s.conns {
		instances += len(c.envs)
	}
	return Stats{Conns: len(s.conns), Instances: instances, Envs: s.alive, MaxEnvs: s.cfg.MaxEnvs, MaxEnvsPerConn: s.cfg.MaxEnvsPerConn,
		IdleTimeoutS: int64(s.cfg.IdleTimeout / time.Second)}
}

// removeLocked takes in out of the registry (once; s.mu held).
func (s *Server) removeLocked(in *instance) {
	if in.removed {
		return
	}
	in.removed = true
	delete(in.owner.envs, in.id)
	in.owner.alive -= in.n
	s.alive -= in.n
}

// Handler returns the HTTP routes (see the package doc).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("POST /v1/envs", s.create)
	mux.HandleFunc("POST /v1/envs/{id}/reset", s.withEnv(s.reset))
	mux.HandleFunc("POST /v1/envs/{id}/step", s.withEnv(s.step))
	mux.HandleFunc("DELETE /v1/envs/{id}", s.closeEnv)
	mux.HandleFunc("GET /v1/stream", s.upgrade)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fmt.Errorf("%w: no route %s %s", ErrBadRequest, r.Method, r.URL.Path), http.StatusNotFound, "route_not_found")
	})
	return mux
}

// CreateRequest describes the environment(s) to create.
type CreateRequest struct {
	Profile  string `json:"profile"`  // "etl" or "pred" (required)
	Trace    string `json:"trace"`    // a named trace (traces.Names); default "taxi-train"
	Scenario string `json:"scenario"` // physics preset (env.Scenarios) or the server's -scenario; default the server's, else "realistic"
	// PlacementSeed draws the random placement (env.EdgeConfig); default 42.
	PlacementSeed *uint64 `json:"placement_seed"`
	// PlacementSeeds, for a vector, gives env i placement seed
	// PlacementSeeds[i mod len] instead.
	PlacementSeeds []uint64 `json:"placement_seeds"`
	RateMult       float64  `json:"rate_mult"`  // trace rate multiplier; default 1
	TraceSeed      uint64   `json:"trace_seed"` // seed of the synthetic fallback trace; default 0
	Steps          int      `json:"steps"`      // episode length, steps (seconds); 0: the trace's length
	// NumEnvs is 0 for a single environment, N ≥ 1 for a vector of N
	// stepped in one call.
	NumEnvs int `json:"num_envs"`
	// Autoreset of a vector: "next_step" (default; Gymnasium's
	// NEXT_STEP) or "same_step" (the ended env restarts inside the step;
	// Gymnasium 0.29's and Stable-Baselines3's convention).
	Autoreset string `json:"autoreset"`
}

// CreateResponse describes a created instance.
type CreateResponse struct {
	ID             uint64     `json:"id"`
	NumEnvs        int        `json:"num_envs"` // 0 for a single env
	Autoreset      string     `json:"autoreset,omitempty"`
	Spaces         env.Spaces `json:"spaces"`
	FlatSize       int        `json:"flat_size"` // float32 values of one observation
	Steps          int        `json:"steps"`     // episode length
	SLOMS          float64    `json:"slo_ms"`
	Tasks          []string   `json:"tasks"`
	Profile        string     `json:"profile"`
	Trace          string     `json:"trace"`
	TraceSource    string     `json:"trace_source"` // "synthetic" or the file's base name
	Scenario       string     `json:"scenario"`
	PlacementSeeds []uint64   `json:"placement_seeds"`
	RateMult       float64    `json:"rate_mult"`
	// InfoLayout names the rows of a vector's binary infos (vectors only).
	InfoLayout *InfoLayout `json:"info_layout,omitempty"`
}

// ResetRequest is the body of a reset.
type ResetRequest struct {
	// Seed of env.Env.Reset; for a vector, the base seed (env i's episode
	// k gets env.VecSeed(seed, i, k)).
	Seed uint64 `json:"seed"`
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	body, err := s.readJSON(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	resp, err := s.createOp(connOf(r), body)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// createOp creates the instance the JSON body describes, owned by
// connection owner (both transports).
func (s *Server) createOp(owner uint64, body []byte) (CreateResponse, error) {
	var req CreateRequest
	if err := decodeStrict(orEmpty(body), &req); err != nil {
		return CreateResponse{}, err
	}
	n := max(req.NumEnvs, 1)
	if err := s.room(owner, n); err != nil {
		return CreateResponse{}, err
	}
	in, resp, err := s.build(req)
	if err != nil {
		return CreateResponse{}, err
	}
	in.last.Store(s.cfg.Now().UnixNano())
	s.mu.Lock()
	c, err := s.roomLocked(owner, n)
	if err != nil {
		s.mu.Unlock()
		return CreateResponse{}, err
	}
	c.nextID++
	in.id, in.owner = c.nextID, c
	c.envs[in.id] = in
	c.alive += n
	s.alive += n
	s.mu.Unlock()
	resp.ID = in.id
	return resp, nil
}

func (s *Server) room(owner uint64, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.roomLocked(owner, n)
	return err
}

// roomLocked returns connection owner if n more envs fit (s.mu held).
func (s *Server) roomLocked(owner uint64, n int) (*conn, error) {
	c := s.conns[owner]
	switch {
	case owner == 0:
		return nil, errNoConn
	case c == nil:
		return nil, fmt.Errorf("%w: connection %d is closed", ErrClosed, owner)
	case s.alive+n > s.cfg.MaxEnvs:
		return nil, fmt.Errorf("%w: %d envs alive, %d more would exceed the server's %d", ErrLimit, s.alive, n, s.cfg.MaxEnvs)
	case c.alive+n > s.cfg.MaxEnvsPerConn:
		return nil, fmt.Errorf("%w: this connection has %d envs alive, %d more would exceed %d per connection", ErrLimit, c.alive, n, s.cfg.MaxEnvsPerConn)
	}
	return c, nil
}

// build validates req and builds the instance it describes.
// scenarioHint names the server's own scenario in an error, if it has one.
func (s *Server) scenarioHint() string {
	if s.cfg.Scenario == nil {
		return ""
	}
	return fmt.Sprintf(" or the server's %q", s.cfg.Scenario.Name)
}

func (s *Server) build(req CreateRequest) (*instance, CreateResponse, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
	}
	if req.Trace == "" {
		req.Trace = "taxi-train"
	}
	scen := s.cfg.Scenario
	switch {
	case req.Scenario == "" && scen != nil:
		req.Scenario = scen.Name
	case req.Scenario == "":
		req.Scenario = env.ScenarioRealistic
	}
	if scen == nil || req.Scenario != scen.Name {
		scen = nil
		if env.IsScenario(req.Scenario) {
			p, err := env.ResolveScenario(req.Scenario, nil)
			if err != nil {
				return nil, CreateResponse{}, bad("%v", err)
			}
			scen = &p
		}
	}
	if req.RateMult == 0 {
		req.RateMult = 1
	}
	if req.NumEnvs > 0 && req.Autoreset == "" {
		req.Autoreset = "next_step"
	}
	seeds := req.PlacementSeeds
	switch {
	case !slices.Contains(env.Profiles(), req.Profile):
		return nil, CreateResponse{}, bad("profile %q, want %s", req.Profile, strings.Join(env.Profiles(), " or "))
	case !slices.Contains(traces.Names(), req.Trace):
		return nil, CreateResponse{}, bad("trace %q, want one of %s (files are not read on a client's behalf)", req.Trace, strings.Join(traces.Names(), ", "))
	case scen == nil:
		return nil, CreateResponse{}, bad("scenario %q, want %s%s", req.Scenario, strings.Join(env.Scenarios(), " or "), s.scenarioHint())
	case scen.Demand != nil && !strings.EqualFold(scen.Demand.Profile, req.Profile):
		return nil, CreateResponse{}, bad("scenario %s has demands for profile %s, not %s", req.Scenario, scen.Demand.Profile, req.Profile)
	case !(req.RateMult > 0) || req.RateMult > 1000:
		return nil, CreateResponse{}, bad("rate_mult %v, want in (0, 1000]", req.RateMult)
	case req.Steps < 0:
		return nil, CreateResponse{}, bad("steps %d, want ≥ 0", req.Steps)
	case req.NumEnvs < 0:
		return nil, CreateResponse{}, bad("num_envs %d, want ≥ 0", req.NumEnvs)
	case req.NumEnvs == 0 && req.Autoreset != "":
		return nil, CreateResponse{}, bad("autoreset %q given for a single env (num_envs 0)", req.Autoreset)
	case req.NumEnvs > 0 && req.Autoreset != "next_step" && req.Autoreset != "same_step":
		return nil, CreateResponse{}, bad("autoreset %q, want next_step or same_step", req.Autoreset)
	case req.PlacementSeed != nil && seeds != nil:
		return nil, CreateResponse{}, bad("both placement_seed and placement_seeds given")
	case seeds != nil && (len(seeds) == 0 || len(seeds) > max(req.NumEnvs, 1)):
		return nil, CreateResponse{}, bad("placement_seeds has %d entries, want 1..%d", len(seeds), max(req.NumEnvs, 1))
	}
	if seeds == nil {
		seeds = []uint64{42}
		if req.PlacementSeed != nil {
			seeds = []uint64{*req.PlacementSeed}
		}
	}
	tr, err := s.trace(req.Trace, req.RateMult, req.TraceSeed)
	if err != nil {
		return nil, CreateResponse{}, bad("trace %q: %v", req.Trace, err)
	}
	if req.Steps > tr.Len() {
		return nil, CreateResponse{}, bad("steps %d, longer than trace %s (%d steps)", req.Steps, req.Trace, tr.Len())
	}
	n := max(req.NumEnvs, 1)
	cfgs := make([]env.Config, n)
	used := make([]uint64, n)
	for i := range cfgs {
		used[i] = seeds[i%len(seeds)]
		c, err := env.EdgeConfig(req.Profile, used[i], tr)
		if err != nil {
			return nil, CreateResponse{}, bad("%v", err)
		}
		if err := scen.Apply(&c); err != nil {
			return nil, CreateResponse{}, bad("%v", err)
		}
		c.Steps = req.Steps
		cfgs[i] = c
	}
	in := &instance{n: n, vector: req.NumEnvs > 0}
	var e *env.Env
	if in.vector {
		mode := env.NextStep
		if req.Autoreset == "same_step" {
			mode = env.SameStep
		}
		if in.v, err = env.NewVec(cfgs, mode, s.cfg.Workers); err != nil {
			return nil, CreateResponse{}, bad("%v", err)
		}
		e = in.v.Env(0)
		in.acts = make([]env.Action, n)
	} else {
		if in.e, err = env.New(cfgs[0]); err != nil {
			return nil, CreateResponse{}, bad("%v", err)
		}
		e = in.e
	}
	in.spaces = e.Spaces()
	in.flat = in.spaces.FlatSize()
	resp := CreateResponse{
		NumEnvs: req.NumEnvs, Autoreset: req.Autoreset, Spaces: in.spaces, FlatSize: in.flat,
		Steps: e.Config().Steps, SLOMS: e.SLOMS(), Profile: req.Profile, Trace: req.Trace,
		TraceSource: traceSource(tr), Scenario: req.Scenario, PlacementSeeds: used, RateMult: req.RateMult,
	}
	for _, t := range e.Config().App.Tasks {
		resp.Tasks = append(resp.Tasks, t.Name)
	}
	if in.vector {
		resp.InfoLayout = &infoLayout
	}
	return in, resp, nil
}

// trace loads a named trace once per (name, multiplier, seed); traces are
// read-only once loaded, so environments share them.
func (s *Server) trace(name string, mult float64, seed uint64) (*traces.Trace, error) {
	s.traceMu.Lock()
	defer s.traceMu.Unlock()
	k := traceKey{name, mult, seed}
	if t, ok := s.traces[k]; ok {
		return t, nil
	}
	t, err := traces.Load(name, traces.Options{Dir: s.cfg.TracesDir, RateMult: mult, Seed: seed, Logf: s.cfg.Logf})
	if err != nil {
		return nil, err
	}
	if len(s.traceOrder) >= MaxCachedTraces {
		delete(s.traces, s.traceOrder[0])
		s.traceOrder = s.traceOrder[1:]
	}
	s.traces[k] = t
	s.traceOrder = append(s.traceOrder, k)
	return t, nil
}

func traceSource(t *traces.Trace) string {
	if t.Source == "synthetic" || t.Source == "" {
		return t.Source
	}
	i := strings.LastIndexAny(t.Source, `/\`)
	return t.Source[i+1:]
}

// lookup returns the instance id of the request, locked, or an error.
func (s *Server) lookup(r *http.Request) (*instance, error) {
	raw := r.PathValue("id")
	id, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: env id %q is not a number", ErrUnknownEnv, raw)
	}
	return s.acquire(connOf(r), id)
}

// acquire returns instance id of connection owner, locked, or an error.
func (s *Server) acquire(owner, id uint64) (*instance, error) {
	s.mu.Lock()
	var in *instance
	var next uint64
	if c := s.conns[owner]; c != nil {
		in, next = c.envs[id], c.nextID
	}
	s.mu.Unlock()
	if in == nil {
		if id >= 1 && id <= next {
			return nil, fmt.Errorf("%w: env %d was closed or freed after %v idle", ErrClosed, id, s.cfg.IdleTimeout)
		}
		return nil, fmt.Errorf("%w: no env %d on this connection (an env belongs to the connection that created it)", ErrUnknownEnv, id)
	}
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil, fmt.Errorf("%w: env %d was closed", ErrClosed, id)
	}
	return in, nil
}

func (s *Server) withEnv(h func(http.ResponseWriter, *http.Request, *instance) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		in, err := s.lookup(r)
		if err != nil {
			writeErr(w, err)
			return
		}
		in.last.Store(s.cfg.Now().UnixNano())
		err = h(w, r, in)
		in.last.Store(s.cfg.Now().UnixNano())
		in.mu.Unlock()
		if err != nil {
			writeErr(w, err)
		}
	}
}

func (s *Server) closeEnv(w http.ResponseWriter, r *http.Request) {
	in, err := s.lookup(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, s.closeOp(in))
}

// closeOp frees the locked instance in and unlocks it; it returns the
// response {"closed": id}.
func (s *Server) closeOp(in *instance) map[string]uint64 {
	s.mu.Lock()
	s.removeLocked(in)
	s.mu.Unlock()
	in.release()
	in.mu.Unlock()
	return map[string]uint64{"closed": in.id}
}

// readJSON reads a JSON request body (at most MaxJSONBytes).
func (s *Server) readJSON(r *http.Request) ([]byte, error) {
	if r.ContentLength > s.cfg.MaxJSONBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, r.ContentLength, s.cfg.MaxJSONBytes)
	}
	// A LimitReader, not http.MaxBytesReader: that one makes net/http
	// close the connection, which would free the connection's envs for
	// a refused request. (net/http still closes it when more than 256 KiB
	// of an unread body remain.)
	body, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxJSONBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading body: %v", ErrBadRequest, err)
	}
	if int64(len(body)) > s.cfg.MaxJSONBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, s.cfg.MaxJSONBytes)
	}
	return body, nil
}

// orEmpty is body, or {} for an empty one.
func orEmpty(body []byte) []byte {
	if len(body) == 0 {
		return []byte("{}")
	}
	return body
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request, in *instance) error {
	body, err := s.readJSON(r)
	if err != nil {
		return err
	}
	out, err := s.resetOp(in, body)
	if err != nil {
		return err
	}
	return writeBinary(w, out)
}

// resetOp resets the locked instance in as the JSON body asks and returns
// the binary response (valid until in's next request).
func (s *Server) resetOp(in *instance, body []byte) ([]byte, error) {
	var req ResetRequest
	if err := decodeStrict(orEmpty(body), &req); err != nil {
		return nil, err
	}
	b := in.out[:0]
	if in.vector {
		obs, err := in.v.Reset(req.Seed)
		if err != nil {
			return nil, err
		}
		b = appendHeader(b, KindFloat32, in.n*in.flat)
		for _, o := range obs {
			b = appendObs(b, o)
		}
		// env.VecEnv.Reset returns only the observations; env i's reset
		// info is that of the same deterministic Reset, redone here (it
		// leaves the env in the state the first one did, obs included).
		in.infos = in.infos[:0]
		for i := range in.n {
			_, info, err := in.v.Env(i).Reset(env.VecSeed(req.Seed, i, 0))
			if err != nil {
				return nil, err
			}
			in.infos = append(in.infos, info)
		}
		in.out = appendVecInfo(b, in.infos, nil, nil, nil, len(in.spaces.Nvec))
		in.reset = true
		return in.out, nil
	}
	obs, info, err := in.e.Reset(req.Seed)
	if err != nil {
		return nil, err
	}
	b = appendObs(appendHeader(b, KindFloat32, in.flat), obs)
	in.js = appendInfo(in.js[:0], &info)
	in.out = AppendJSON(b, in.js)
	in.reset = true
	return in.out, nil
}

// stepSize is the exact size of a step body of instance in, bytes.
func (in *instance) stepSize() int64 { return int64(headerLen + 8*in.n*len(in.spaces.Nvec)) }

func (s *Server) step(w http.ResponseWriter, r *http.Request, in *instance) error {
	want := in.stepSize()
	if r.ContentLength > want {
		return fmt.Errorf("%w: step body of %d bytes, want %d", ErrTooLarge, r.ContentLength, want)
	}
	body, err := readUpTo(r.Body, in.in[:0], want)
	in.in = body
	if err != nil {
		return err
	}
	out, err := s.stepOp(in, body)
	if err != nil {
		return err
	}
	return writeBinary(w, out)
}

// stepOp steps the locked instance in with the binary action body and
// returns the binary response (valid until in's next request).
func (s *Server) stepOp(in *instance, body []byte) ([]byte, error) {
	var err error
	in.choices, err = DecodeActions(body, in.n, in.spaces.Nvec, in.choices)
	if err != nil {
		return nil, err
	}
	if !in.reset {
		return nil, fmt.Errorf("%w: env %d: step before reset", errNotReset, in.id)
	}
	nt := len(in.spaces.Nvec)
	b := in.out[:0]
	if !in.vector {
		sr, err := in.e.Step(env.Action{Choices: in.choices})
		switch {
		case errors.Is(err, env.ErrEpisodeOver):
			return nil, fmt.Errorf("%w: env %d truncated at step %d; reset it", errEpisodeOver, in.id, in.e.StepIndex())
		case err != nil:
			return nil, fmt.Errorf("%w: %v", ErrBadAction, err)
		}
		b = appendObs(appendHeader(b, KindFloat32, in.flat), sr.Obs)
		b = AppendFloat64s(b, []float64{sr.Reward})
		b = AppendBools(b, []bool{sr.Terminated, sr.Truncated})
		in.js = appendInfo(in.js[:0], &sr.Info)
		in.out = AppendJSON(b, in.js)
		return in.out, nil
	}
	for i := range in.acts {
		in.acts[i] = env.Action{Choices: in.choices[i*nt : (i+1)*nt]}
	}
	res, err := in.v.Step(in.acts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadAction, err)
	}
	in.out = appendVecStep(b, res, in.ended(res), in.flat, nt)
	return in.out, nil
}

// appendVecStep appends a vector step's response: observations, rewards,
// flags, final observations and infos (see the package doc).
func appendVecStep(b []byte, res *env.VecResult, ended []bool, flat, tasks int) []byte {
	n := len(res.Obs)
	b = appendHeader(b, KindFloat32, n*flat)
	for _, o := range res.Obs {
		b = appendObs(b, o)
	}
	b = AppendFloat64s(b, res.Rewards)
	b = appendHeader(b, KindBool, 3*n)
	k := 0
	for _, part := range [3][]bool{res.Terminated, res.Truncated, ended} {
		for _, x := range part {
			b = append(b, boolByte(x))
		}
	}
	for _, e := range ended {
		if e {
			k++
		}
	}
	b = appendHeader(b, KindFloat32, k*flat)
	for i, e := range ended {
		if e {
			b = appendObs(b, res.FinalObs[i])
		}
	}
	return appendVecInfo(b, res.Infos, ended, res.EpisodeReturn, res.EpisodeLength, tasks)
}

func boolByte(x bool) byte {
	if x {
		return 1
	}
	return 0
}

// readUpTo reads all of r into dst, failing if it holds more than limit bytes.
func readUpTo(r io.Reader, dst []byte, limit int64) ([]byte, error) {
	if int64(cap(dst)) < limit+1 {
		dst = make([]byte, 0, limit+1)
	}
	buf := dst[:limit+1]
	n, err := io.ReadFull(r, buf)
	switch {
	case err == nil:
		return dst[:0], fmt.Errorf("%w: step body over %d bytes", ErrTooLarge, limit)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return buf[:n], nil
	}
	return dst[:0], fmt.Errorf("%w: reading body: %v", ErrBadRequest, err)
}

// instance is one environment or vector of environments.
type instance struct {
	mu      sync.Mutex
	id      uint64 // among its connection's
	owner   *conn  // connection that created it
	n       int    // simulator envs
	vector  bool
	e       *env.Env
	v       *env.VecEnv
	spaces  env.Spaces
	flat    int
	closed  bool
	reset   bool
	last    atomic.Int64 // Unix ns of the last request
	removed bool         // taken out of the registry (guarded by Server.mu)

	acts    []env.Action
	choices []int
	in, out []byte
	js      []byte
	endBuf  []bool
	infos   []env.Info
}

func (in *instance) ended(res *env.VecResult) []bool {
	in.endBuf = in.endBuf[:0]
	for i := range res.Terminated {
		in.endBuf = append(in.endBuf, res.Terminated[i] || res.Truncated[i])
	}
	return in.endBuf
}

// release drops the environments; the caller holds in.mu.
func (in *instance) release() {
	in.closed, in.e, in.v, in.acts, in.choices, in.in, in.out, in.js, in.infos = true, nil, nil, nil, nil, nil, nil, nil, nil
}

func writeBinary(w http.ResponseWriter, b []byte) error {
	h := w.Header()
	h["Content-Type"] = []string{"application/octet-stream"}
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	w.Write(b) //nolint:errcheck // the client went away
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"envserver: encoding the response failed","code":"internal"}`)
	}
	b = append(b, '\n')
	h := w.Header()
	h["Content-Type"] = []string{"application/json"}
	// A length rather than chunked encoding, whatever the size: one
	// framing for clients to parse.
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(status)
	w.Write(b) //nolint:errcheck // the client went away
}

func writeError(w http.ResponseWriter, err error, status int, code string) {
	writeJSON(w, status, map[string]string{"error": err.Error(), "code": code})
}

// writeErr writes err with its status and code.
func writeErr(w http.ResponseWriter, err error) {
	status, code := errStatus(err)
	writeError(w, err, status, code)
}

// errStatus maps err to its HTTP status and code.
func errStatus(err error) (int, string) {
	for _, m := range []struct {
		target error
		status int
		code   string
	}{
		{ErrMalformed, http.StatusBadRequest, "malformed_body"},
		{ErrBadAction, http.StatusBadRequest, "bad_action"},
		{ErrBadRequest, http.StatusBadRequest, "bad_request"},
		{ErrUnknownEnv, http.StatusNotFound, "unknown_env"},
		{ErrClosed, http.StatusGone, "closed"},
		{ErrLimit, http.StatusTooManyRequests, "too_many_envs"},
		{ErrTooLarge, http.StatusRequestEntityTooLarge, "body_too_large"},
		{errEpisodeOver, http.StatusConflict, "episode_over"},
		{errNotReset, http.StatusConflict, "not_reset"},
	} {
		if errors.Is(err, m.target) {
			return m.status, m.code
		}
	}
	return http.StatusInternalServerError, "internal"
}
