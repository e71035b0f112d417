package planner

// The control API of a Service: HTTP/1.1 with JSON bodies on a loopback
// port by default; every request carries "Authorization: Bearer TOKEN"
// (the runtime's shared token; 401 without it). Errors are
// {"error": "..."} with 400 (bad request: nothing changed), 401, 404, 405
// or 409 (the state does not allow it: a replay already running, none
// running, allocations outside a vertical replay).
//
//	GET    /v1/info                       the application, its operators and edges, the controller, the state
//	POST   /v1/run                        start a replay (StartRequest) → {"id": N}
//	GET    /v1/run                        the replay's state, interval count and, once ended, its Result
//	GET    /v1/run/intervals?from=K&wait_ms=W
//	                                      the intervals from K (IntervalReport); waits up to W ms (≤ 30000)
//	                                      for one when there is none yet and the replay runs
//	PUT    /v1/run/alloc                  set allocations (AllocRequest; vertical replays only)
//	DELETE /v1/run                        stop the replay (its result covers the run until then)

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"time"
)

// MaxControlBody bounds a control request's body, bytes.
const MaxControlBody = 4 << 20

// Info is GET /v1/info.
type Info struct {
	App        string   `json:"app"`
	Operators  []string `json:"operators"`
	Edges      [][2]int `json:"edges"`
	Controller string   `json:"controller"`
	MaxWorkers int      `json:"max_workers"`
	Workers    int      `json:"workers"`
	// State is idle (no replay yet), running, done, stopped or failed.
	State string `json:"state"`
	RunID uint64 `json:"run_id"`
}

// Status is GET /v1/run.
type Status struct {
	ID        uint64  `json:"id"`
	State     string  `json:"state"`
	Error     string  `json:"error,omitempty"`
	Mode      string  `json:"mode"`
	Intervals int     `json:"intervals"`
	Result    *Result `json:"result,omitempty"`
}

// Intervals is GET /v1/run/intervals.
type Intervals struct {
	ID        uint64           `json:"id"`
	State     string           `json:"state"`
	Intervals []IntervalReport `json:"intervals"`
}

// DecodeStartRequest decodes a StartRequest strictly (one JSON object, no
// unknown fields, at most MaxControlBody bytes); it does not check the
// values against a service (StartRequest.check does).
func DecodeStartRequest(b []byte) (StartRequest, error) {
	var r StartRequest
	if err := decodeStrict(b, &r); err != nil {
		return StartRequest{}, fmt.Errorf("start request: %w", err)
	}
	return r, nil
}

// DecodeAllocRequest decodes an AllocRequest strictly.
func DecodeAllocRequest(b []byte) (AllocRequest, error) {
	var r AllocRequest
	if err := decodeStrict(b, &r); err != nil {
		return AllocRequest{}, fmt.Errorf("alloc request: %w", err)
	}
	if len(r.Workers) == 0 {
		return AllocRequest{}, errors.New("alloc request: no workers")
	}
	if len(r.Workers) > 1<<16 {
		return AllocRequest{}, fmt.Errorf("alloc request: %d workers", len(r.Workers))
	}
	return r, nil
}

func decodeStrict(b []byte, v any) error {
	if len(b) > MaxControlBody {
		return fmt.Errorf("body of %d bytes, want at most %d", len(b), MaxControlBody)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// serveControl serves the API on ln until ctx ends.
func serveControl(ctx context.Context, ln net.Listener, s *Service) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/info", s.handleInfo)
	mux.HandleFunc("POST /v1/run", s.handleStart)
	mux.HandleFunc("GET /v1/run", s.handleStatus)
	mux.HandleFunc("DELETE /v1/run", s.handleStop)
	mux.HandleFunc("GET /v1/run/intervals", s.handleIntervals)
	mux.HandleFunc("PUT /v1/run/alloc", s.handleAlloc)
	srv := &http.Server{Handler: s.auth(mux), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx) //nolint:errcheck // the server is going away either way
		<-errc
		return nil
	case err := <-errc:
		return fmt.Errorf("planner: control API: %w", err)
	}
}

// auth refuses requests without the bearer token.
func (s *Service) auth(h http.Handler) http.Handler {
	want := []byte("Bearer " + s.cfg.Base.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeErr(w, http.StatusUnauthorized, errors.New("missing or wrong bearer token"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"planner: encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n')) //nolint:errcheck // the client may have gone
}

func writeErr(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxControlBody))
	if err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("planner: read body: %w", err))
		return nil, false
	}
	return b, true
}

func (s *Service) handleInfo(w http.ResponseWriter, _ *http.Request) {
	app := s.cfg.Base.App
	in := Info{App: app.Name, Edges: app.Edges, Controller: s.cfg.Base.Controller, MaxWorkers: s.cfg.Base.MaxWorkers, Workers: s.cfg.Base.Workers, State: "idle"}
	if in.Controller == "" {
		in.Controller = "none"
	}
	if in.MaxWorkers == 0 {
		in.MaxWorkers = 8
	}
	for _, o := range app.Operators {
		in.Operators = append(in.Operators, o.Name)
	}
	s.mu.Lock()
	if s.run != nil {
		in.State, in.RunID = s.run.state, s.run.id
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, in)
}

func (s *Service) handleStart(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r)
	if !ok {
		return
	}
	req, err := DecodeStartRequest(b)
	if err == nil {
		base := s.cfg.Base
		if base.Controller == "" {
			base.Controller = "none"
		}
		if base.MaxWorkers == 0 {
			base.MaxWorkers = 8
		}
		err = req.check(base)
	}
	if err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("planner: %w", err))
		return
	}
	tr, err := req.trace(s.cfg.LoadTrace)
	if err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("planner: %w", err))
		return
	}
	id, err := s.start(req, tr)
	switch {
	case errors.Is(err, errBusy):
		writeErr(w, http.StatusConflict, err)
	case err != nil:
		writeErr(w, http.StatusBadRequest, fmt.Errorf("planner: %w", err))
	default:
		writeJSON(w, http.StatusCreated, map[string]uint64{"id": id})
	}
}

func (s *Service) handleStatus(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		writeErr(w, http.StatusNotFound, errors.New("planner: no replay yet"))
		return
	}
	r := s.run
	writeJSON(w, http.StatusOK, Status{ID: r.id, State: r.state, Error: r.err, Mode: r.req.Mode, Intervals: len(r.intervals), Result: r.result})
}

func (s *Service) handleStop(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	r := s.run
	running := r != nil && r.state == "running"
	s.mu.Unlock()
	if !running {
		writeErr(w, http.StatusConflict, errors.New("planner: no replay is running"))
		return
	}
	r.cancel()
	<-r.done
	writeJSON(w, http.StatusOK, map[string]uint64{"id": r.id})
}

func (s *Service) handleIntervals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, err := queryInt(q.Get("from"), 0, MaxIntervals)
	if err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("planner: from: %w", err))
		return
	}
	wait, err := queryInt(q.Get("wait_ms"), 0, 30_000)
	if err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("planner: wait_ms: %w", err))
		return
	}
	clock := s.cfg.Base.Clock
	if clock == nil {
		clock = Real
	}
	deadline := clock.NewTimer(time.Duration(wait) * time.Millisecond)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		run := s.run
		if run == nil {
			s.mu.Unlock()
			writeErr(w, http.StatusNotFound, errors.New("planner: no replay yet"))
			return
		}
		if len(run.intervals) > from || run.state != "running" || wait == 0 {
			out := Intervals{ID: run.id, State: run.state, Intervals: []IntervalReport{}}
			if from < len(run.intervals) {
				// Reports are never changed once appended: encode them
				// outside the lock.
				out.Intervals = run.intervals[from:len(run.intervals):len(run.intervals)]
			}
			s.mu.Unlock()
			b, err := json.Marshal(out)
			if err != nil {
				writeErr(w, http.StatusInternalServerError, err)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(append(b, '\n')) //nolint:errcheck // the client may have gone
			return
		}
		ch := run.notify
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C():
			wait = 0
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Service) handleAlloc(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r)
	if !ok {
		return
	}
	req, err := DecodeAllocRequest(b)
	if err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("planner: %w", err))
		return
	}
	s.mu.Lock()
	run := s.run
	running := run != nil && run.state == "running"
	s.mu.Unlock()
	switch {
	case !running:
		writeErr(w, http.StatusConflict, errors.New("planner: no replay is running"))
		return
	case run.req.Mode != ModeVertical:
		writeErr(w, http.StatusConflict, errors.New("planner: allocations are set only in a vertical replay (this one is horizontal)"))
		return
	}
	if err := run.pl.applyAlloc(req); err != nil {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("planner: %w", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"workers": len(req.Workers)})
}

// queryInt parses an optional integer query parameter in [lo, hi].
func queryInt(v string, lo, hi int) (int, error) {
	if v == "" {
		return lo, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q, want an integer in %d..%d", v, lo, hi)
	}
	return n, nil
}

// ControlClient calls a Service's control API.
type ControlClient struct {
	base  string
	token string
	hc    *http.Client
}

// NewControlClient returns a client of the control API at addr
// (host:port) with the shared token.
func NewControlClient(addr, token string) (*ControlClient, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("planner: control address %q: %w", addr, err)
	}
	return &ControlClient{base: "http://" + addr, token: token, hc: &http.Client{Timeout: 60 * time.Second}}, nil
}

// do sends one request and decodes a 2xx answer into out.
func (c *ControlClient) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("planner: control API: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("planner: control API %s: %w", c.base, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("planner: control API %s %s: %w", method, path, err)
	}
	if res.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("planner: control API %s %s: %s (%d)", method, path, e.Error, res.StatusCode)
		}
		return fmt.Errorf("planner: control API %s %s: %s", method, path, res.Status)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("planner: control API %s %s: %w", method, path, err)
		}
	}
	return nil
}

// Info reads GET /v1/info.
func (c *ControlClient) Info(ctx context.Context) (Info, error) {
	var in Info
	return in, c.do(ctx, http.MethodGet, "/v1/info", nil, &in)
}

// Start starts a replay and returns its ID.
func (c *ControlClient) Start(ctx context.Context, r StartRequest) (uint64, error) {
	var out struct {
		ID uint64 `json:"id"`
	}
	return out.ID, c.do(ctx, http.MethodPost, "/v1/run", r, &out)
}

// Status reads GET /v1/run.
func (c *ControlClient) Status(ctx context.Context) (Status, error) {
	var st Status
	return st, c.do(ctx, http.MethodGet, "/v1/run", nil, &st)
}

// Intervals reads the intervals from index from, waiting up to wait for
// one.
func (c *ControlClient) Intervals(ctx context.Context, from int, wait time.Duration) (Intervals, error) {
	var out Intervals
	path := "/v1/run/intervals?from=" + strconv.Itoa(from) + "&wait_ms=" + strconv.Itoa(int(min(wait, 30*time.Second)/time.Millisecond))
	return out, c.do(ctx, http.MethodGet, path, nil, &out)
}

// SetAlloc sets allocations in a vertical replay.
func (c *ControlClient) SetAlloc(ctx context.Context, r AllocRequest) error {
	return c.do(ctx, http.MethodPut, "/v1/run/alloc", r, nil)
}

// Stop stops the running replay.
func (c *ControlClient) Stop(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/v1/run", nil, nil)
}
