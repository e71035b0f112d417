package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"streamscale/internal/command"
	"streamscale/ppo/policy"
)

// Defaults and limits of Config.
const (
	DefaultMaxBodyBytes = 1 << 20 // 1 MiB
	DefaultMaxBatch     = 256
	MinAdminToken       = 16 // bytes
	// DefaultReloadInterval is the least time between the starts of two
	// admin reloads. A reload of the repository's policies allocates about
	// 2 MB and takes milliseconds; an operator never needs more than one a
	// second, and a storm of them is what made the heap balloon.
	DefaultReloadInterval = time.Second
)

// Config configures a Server. The zero value of every field but Dir is
// usable.
type Config struct {
	// Dir holds one subdirectory per policy, <Dir>/<name>/policy.json and
	// policy.safetensors; the policy is served under <name>. Required.
	Dir string
	// AdminToken is the bearer token of POST /admin/reload, at least
	// MinAdminToken bytes. Empty: the admin routes are not registered.
	AdminToken string
	// MaxBodyBytes limits request bodies, in bytes (default 1 MiB).
	MaxBodyBytes int64
	// MaxBatch limits the observations of one batch request (default 256).
	MaxBatch int
	// ReloadInterval is the least time between the starts of two POST
	// /admin/reload (default DefaultReloadInterval, 1 s; negative: no
	// limit). One that comes sooner, or while a reload runs, is answered
	// 429 with Retry-After and changes nothing. Reload itself is not
	// limited.
	ReloadInterval time.Duration
	// Log receives reload results and recovered panics (default: discarded).
	Log io.Writer
	// Build labels the streamscale_serve_build_info metric (default: none).
	Build command.Build
}

func (c *Config) validate() error {
	if c.Dir == "" {
		return errors.New("api: Config.Dir is empty")
	}
	if c.AdminToken != "" && len(c.AdminToken) < MinAdminToken {
		return fmt.Errorf("api: admin token has %d bytes, want at least %d", len(c.AdminToken), MinAdminToken)
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxBodyBytes < 1024 {
		return fmt.Errorf("api: MaxBodyBytes %d is below 1024", c.MaxBodyBytes)
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxBatch < 1 {
		return fmt.Errorf("api: MaxBatch %d is not positive", c.MaxBatch)
	}
	if c.ReloadInterval == 0 {
		c.ReloadInterval = DefaultReloadInterval
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// Server serves the policies of a directory over HTTP. Its handler is safe
// for concurrent use; the policy set is an immutable registry behind an
// atomic pointer, replaced whole by Reload.
type Server struct {
	cfg       Config
	engine    *gin.Engine
	handler   http.Handler // engine behind markRouted
	metrics   *metrics
	draining  atomic.Bool
	reg       atomic.Pointer[registry]
	reloadMu  sync.Mutex
	adminMu   sync.Mutex // guards lastAdmin
	lastAdmin time.Time  // start of the last admin reload; zero: none yet
	now       func() time.Time
	scratch   sync.Pool // *scratch
	tokenHash [sha256.Size]byte
	logMu     sync.Mutex
}

// New validates cfg and builds the server's routes. It loads nothing:
// until the first successful Reload, /readyz reports 503 and the policy
// routes answer 503.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, now: time.Now}
	s.scratch.New = func() any { return newScratch() }
	if cfg.AdminToken != "" {
		s.tokenHash = sha256.Sum256([]byte(cfg.AdminToken))
	}

	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	if err := e.SetTrustedProxies(nil); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	type route struct {
		method, path string
		h            []gin.HandlerFunc
	}
	routes := []route{
		{http.MethodGet, "/healthz", []gin.HandlerFunc{s.healthz}},
		{http.MethodGet, "/readyz", []gin.HandlerFunc{s.readyz}},
		{http.MethodGet, "/metrics", []gin.HandlerFunc{s.metricsText}},
		{http.MethodGet, "/openapi.json", []gin.HandlerFunc{s.openapi}},
		{http.MethodGet, "/v1/policies", []gin.HandlerFunc{s.policies}},
		{http.MethodPost, "/v1/policies/:name/act", []gin.HandlerFunc{s.act}},
		{http.MethodPost, "/v1/policies/:name/act/batch", []gin.HandlerFunc{s.actBatch}},
		// Open Inference Protocol (v2.go)
		{http.MethodGet, "/v2", []gin.HandlerFunc{s.v2Server}},
		{http.MethodGet, "/v2/health/live", []gin.HandlerFunc{s.v2Live}},
		{http.MethodGet, "/v2/health/ready", []gin.HandlerFunc{s.v2Ready}},
		{http.MethodGet, "/v2/models/:name", []gin.HandlerFunc{s.v2ModelMeta}},
		{http.MethodGet, "/v2/models/:name/ready", []gin.HandlerFunc{s.v2ModelReady}},
		{http.MethodPost, "/v2/models/:name/infer", []gin.HandlerFunc{s.v2Infer}},
		{http.MethodGet, "/v2/models/:name/versions/:version", []gin.HandlerFunc{s.v2ModelMeta}},
		{http.MethodGet, "/v2/models/:name/versions/:version/ready", []gin.HandlerFunc{s.v2ModelReady}},
		{http.MethodPost, "/v2/models/:name/versions/:version/infer", []gin.HandlerFunc{s.v2Infer}},
	}
	if cfg.AdminToken != "" {
		routes = append(routes, route{http.MethodPost, "/admin/reload", []gin.HandlerFunc{s.authorize, s.reload}})
	}
	var paths []string
	for _, r := range routes {
		paths = append(paths, r.path)
	}
	s.metrics = newMetrics(paths, func() int {
		if reg := s.reg.Load(); reg != nil {
			return len(reg.names)
		}
		return -1
	}, s.Ready, cfg.Build)
	e.Use(s.observe, gin.CustomRecoveryWithWriter(&lockedWriter{s}, s.recovered))
	for _, r := range routes {
		e.Handle(r.method, r.path, r.h...)
		if r.method == http.MethodGet {
			// gin does not answer HEAD for GET routes by itself; net/http
			// drops the body of a HEAD response.
			e.Handle(http.MethodHead, r.path, r.h...)
		}
	}
	e.NoRoute(s.noRoute)
	e.NoMethod(s.noMethod)
	s.engine = e
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		markRouted(r)
		if s.draining.Load() {
			w.Header()["Connection"] = connectionClose
		}
		e.ServeHTTP(w, r)
	})
	return s, nil
}

// Handler returns the HTTP handler: the gin engine, behind a wrapper that
// tells InstrumentServer's hooks a request was routed.
func (s *Server) Handler() http.Handler { return s.handler }

// Ready reports whether a policy set has been loaded and the server is not
// draining.
func (s *Server) Ready() bool { return s.reg.Load() != nil && !s.draining.Load() }

var connectionClose = []string{"close"}

// Drain makes /readyz answer 503 from now on, so that load balancers stop
// sending requests, while every route keeps serving; each response then
// carries Connection: close, so that clients open new connections (through
// the load balancer) rather than reuse this server's. It is the first step
// of a graceful shutdown; it cannot be undone.
func (s *Server) Drain() { s.draining.Store(true) }

// Reload reads Config.Dir, validates and self-tests every policy, and
// only then swaps the new set in, atomically: requests in flight finish
// on the set they started with. On error the current set is kept.
// Reloads are serialised.
func (s *Server) Reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	reg, skipped, err := loadRegistry(s.cfg.Dir, s.metrics)
	if err != nil {
		s.metrics.reloads[1].Inc()
		keep := 0
		if old := s.reg.Load(); old != nil {
			keep = len(old.names)
		}
		s.logf("reload failed, keeping %d policies: %v", keep, err)
		return err
	}
	s.reg.Store(reg)
	s.metrics.reloads[0].Inc()
	for _, n := range reg.names {
		s.logf("loaded policy %s version %.12s (profile %s)", n, reg.byName[n].version, reg.byName[n].card.Profile)
	}
	for _, n := range skipped {
		s.logf("skipped %s: no %s.json", n, policy.FileName)
	}
	return nil
}

// Policies returns the names and versions of the policies being served.
func (s *Server) Policies() map[string]string {
	out := map[string]string{}
	if reg := s.reg.Load(); reg != nil {
		for _, n := range reg.names {
			out[n] = reg.byName[n].version
		}
	}
	return out
}

func (s *Server) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.cfg.Log, "api: "+format+"\n", args...)
}

// lockedWriter serialises gin's recovery output with logf.
type lockedWriter struct{ s *Server }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.s.logMu.Lock()
	defer w.s.logMu.Unlock()
	return w.s.cfg.Log.Write(p)
}

var jsonType = []string{"application/json; charset=utf-8"}

func writeBody(c *gin.Context, status int, ctype []string, body []byte) {
	c.Writer.Header()["Content-Type"] = ctype
	c.Writer.WriteHeader(status)
	c.Writer.Write(body) //nolint:errcheck // the client went away; nothing to do
}

// fail writes err as {"error": …, "field": …} and stops the handler chain.
func (s *Server) fail(c *gin.Context, err *reqError) {
	s.metrics.errs[err.Kind].Inc()
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
		Field string `json:"field,omitempty"`
	}{err.Msg, err.Field})
	c.Abort()
	writeBody(c, err.Status(), jsonType, b)
}

// observe records every request's route, status and latency.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	s.metrics.observe(c.FullPath(), c.Writer.Status(), time.Since(start))
}

func (s *Server) recovered(c *gin.Context, _ any) {
	s.fail(c, newError(kindInternal, "", "internal error"))
}

func (s *Server) noRoute(c *gin.Context) {
	s.fail(c, newError(kindRouteNotFound, "", "no route %s %.128s", c.Request.Method, c.Request.URL.Path))
}

func (s *Server) noMethod(c *gin.Context) {
	s.fail(c, newError(kindMethodNotAllowed, "", "method %.16s not allowed on %.128s (allowed: %s)",
		c.Request.Method, c.Request.URL.Path, c.Writer.Header().Get("Allow")))
}

func (s *Server) healthz(c *gin.Context) {
	writeBody(c, http.StatusOK, jsonType, []byte(`{"status":"ok"}`))
}

func (s *Server) readyz(c *gin.Context) {
	reg := s.reg.Load()
	if s.draining.Load() {
		writeBody(c, http.StatusServiceUnavailable, jsonType, []byte(`{"status":"draining"}`))
		return
	}
	if reg == nil {
		writeBody(c, http.StatusServiceUnavailable, jsonType, []byte(`{"status":"loading"}`))
		return
	}
	writeBody(c, http.StatusOK, jsonType, fmt.Appendf(nil, `{"status":"ready","policies":%d}`, len(reg.names)))
}

func (s *Server) metricsText(c *gin.Context) { s.metrics.handler().ServeHTTP(c.Writer, c.Request) }

func (s *Server) openapi(c *gin.Context) { writeBody(c, http.StatusOK, jsonType, openapiDoc) }

var errNotReady = newError(kindNotReady, "", "policies are not loaded yet")

func (s *Server) policies(c *gin.Context) {
	reg := s.reg.Load()
	if reg == nil {
		s.fail(c, errNotReady)
		return
	}
	writeBody(c, http.StatusOK, jsonType, reg.list)
}

func (s *Server) act(c *gin.Context)      { s.serveAct(c, false) }
func (s *Server) actBatch(c *gin.Context) { s.serveAct(c, true) }

// serveAct is the inference path: look the policy up, read and decode the
// body into pooled buffers, run a pooled clone of the policy, encode.
// Nothing on it allocates once the pools are warm.
func (s *Server) serveAct(c *gin.Context, batch bool) {
	reg := s.reg.Load()
	if reg == nil {
		s.fail(c, errNotReady)
		return
	}
	name := c.Param("name")
	e := reg.byName[name]
	if e == nil {
		s.fail(c, newError(kindPolicyNotFound, "name", "no policy %.64q (serving %s)", name, strings.Join(reg.names, ", ")))
		return
	}
	if err := checkContentType(c.Request); err != nil {
		s.fail(c, err)
		return
	}
	sc := s.scratch.Get().(*scratch)
	defer s.scratch.Put(sc)
	body, err := readBody(c.Request, sc.body, s.cfg.MaxBodyBytes)
	if err != nil {
		s.fail(c, err)
		return
	}
	sc.body = body
	if err := decodeAct(body, &e.lay, batch, s.cfg.MaxBatch, &sc.req); err != nil {
		s.fail(c, err)
		return
	}
	if err := e.run(sc); err != nil {
		s.logf("%v", err)
		s.fail(c, newError(kindInternal, "", "policy %s failed on this input", e.name))
		return
	}
	if batch {
		sc.out = e.appendBatch(sc.out[:0], sc)
	} else {
		sc.out = e.appendAct(sc.out[:0], sc)
	}
	writeBody(c, http.StatusOK, jsonType, sc.out)
}

// checkContentType accepts a missing Content-Type or application/json
// (with any parameters, but a charset only utf-8), and a missing
// Content-Encoding or identity: the server decodes no compressed body, and
// JSON is UTF-8. Anything else is a 415.
func checkContentType(r *http.Request) *reqError {
	for _, enc := range r.Header["Content-Encoding"] {
		for enc != "" {
			var one string
			one, enc, _ = strings.Cut(enc, ",")
			if one = strings.TrimSpace(one); one != "" && !strings.EqualFold(one, "identity") {
				return newError(kindUnsupportedMedia, "", "Content-Encoding %.32q is not supported (identity only)", one)
			}
		}
	}
	v := r.Header["Content-Type"]
	if len(v) == 0 {
		return nil
	}
	mt, params, _ := strings.Cut(v[0], ";")
	if !strings.EqualFold(strings.TrimSpace(mt), "application/json") {
		return newError(kindUnsupportedMedia, "", "Content-Type %.64q is not application/json", v[0])
	}
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, val, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(k), "charset") {
			continue
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = val[1 : len(val)-1]
		}
		if !strings.EqualFold(val, "utf-8") && !strings.EqualFold(val, "utf8") {
			return newError(kindUnsupportedMedia, "", "Content-Type charset %.32q is not supported (utf-8 only)", val)
		}
	}
	return nil
}

// readBody reads the request body into buf (grown as needed) and fails
// with 413 past limit bytes, before reading them when Content-Length says so.
func readBody(r *http.Request, buf []byte, limit int64) ([]byte, *reqError) {
	tooLarge := func() *reqError {
		return newError(kindTooLarge, "", "request body is larger than %d bytes", limit)
	}
	if r.ContentLength > limit {
		return nil, tooLarge()
	}
	want := 4096
	if r.ContentLength > 0 {
		want = int(r.ContentLength) + 1 // room to see EOF
	}
	if cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, tooLarge()
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, tooLarge()
			}
			return nil, newError(kindBadRequest, "", "reading the request body: %v", err)
		}
	}
}

// authorize checks the admin bearer token in constant time (over SHA-256
// digests, so the comparison does not depend on the token's length either).
func (s *Server) authorize(c *gin.Context) {
	h := c.GetHeader("Authorization")
	const scheme = "Bearer "
	ok := len(h) > len(scheme) && strings.EqualFold(h[:len(scheme)], scheme)
	if ok {
		got := sha256.Sum256([]byte(h[len(scheme):]))
		ok = subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) == 1
	}
	if !ok {
		c.Header("WWW-Authenticate", `Bearer realm="streamscale"`)
		s.fail(c, newError(kindUnauthorized, "", "admin routes need a valid bearer token"))
	}
}

// admitReload decides whether an admin reload may start now: not within
// Config.ReloadInterval of the last one's start, and not while one runs.
// It returns the wait to report in Retry-After when not.
func (s *Server) admitReload() (time.Duration, bool) {
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	now, iv := s.now(), s.cfg.ReloadInterval
	if iv < 0 {
		return 0, true
	}
	if !s.lastAdmin.IsZero() {
		if wait := s.lastAdmin.Add(iv).Sub(now); wait > 0 {
			return wait, false
		}
	}
	if !s.reloadMu.TryLock() {
		return iv, false
	}
	s.reloadMu.Unlock() // Reload takes it again; a racing Reload call just runs first
	s.lastAdmin = now
	return 0, true
}

func (s *Server) reload(c *gin.Context) {
	if wait, ok := s.admitReload(); !ok {
		secs := int64((wait + time.Second - 1) / time.Second)
		c.Header("Retry-After", strconv.FormatInt(max(secs, 1), 10))
		s.fail(c, newError(kindTooManyReloads, "", "a reload ran less than %v ago or is running; retry in %d s", s.cfg.ReloadInterval, max(secs, 1)))
		return
	}
	if err := s.Reload(); err != nil {
		msg := err.Error()
		s.fail(c, &reqError{Kind: kindReloadFailed, Msg: "api: reload failed, current policies kept: " + strings.TrimPrefix(msg, "api: ")})
		return
	}
	type item struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	out := struct {
		Policies []item `json:"policies"`
	}{}
	reg := s.reg.Load()
	for _, n := range reg.names {
		out.Policies = append(out.Policies, item{n, reg.byName[n].version})
	}
	b, _ := json.Marshal(out)
	writeBody(c, http.StatusOK, jsonType, b)
}
