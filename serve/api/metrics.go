package api

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"streamscale/internal/command"
)

// Latency histogram bucket upper bounds, in seconds.
var latencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}

// unmatched is the route label of requests no route matched (404, 405).
const unmatched = "unmatched"

const namespace = "streamscale_serve"

// metrics are the server's Prometheus metrics, in a registry of their own
// (not the process-wide default), with the Go runtime and process
// collectors. The request path touches only pre-resolved children and
// atomics, so it allocates nothing.
type metrics struct {
	reg *prometheus.Registry

	routeIdx map[string]int        // route pattern → index; 0 is unmatched; read-only after setup
	requests *requestCounter       // requests_total{route,code}
	latency  []prometheus.Observer // request_duration_seconds{route}, by route index
	errs     [numKinds]prometheus.Counter
	reloads  [2]prometheus.Counter  // ok, error
	rejected *prometheus.CounterVec // requests net/http answered itself, by status code
	conns    prometheus.Gauge       // open connections

	passes atomic.Uint64 // combined forward passes (combine.go)
	rows   atomic.Uint64 // observations in them
}

// newMetrics registers the server's metrics for routes; policies returns
// the number of policies loaded (-1: none yet), ready whether the server
// reports ready.
func newMetrics(routes []string, policies func() int, ready func() bool, build command.Build) *metrics {
	routes = append([]string{unmatched}, routes...)
	m := &metrics{reg: prometheus.NewRegistry(), routeIdx: map[string]int{}}
	for i, r := range routes {
		m.routeIdx[r] = i
	}
	m.requests = newRequestCounter(routes)

	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "request_duration_seconds",
		Help:    "Time from routing to the end of the handler.",
		Buckets: latencyBuckets,
	}, []string{"route"})
	for _, r := range routes {
		m.latency = append(m.latency, latency.WithLabelValues(r))
	}
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "errors_total", Help: "Error responses by kind.",
	}, []string{"kind"})
	for k := range m.errs {
		m.errs[k] = errs.WithLabelValues(kindNames[k])
	}
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "reloads_total", Help: "Policy (re)loads, the initial one included, by result.",
	}, []string{"result"})
	m.reloads = [2]prometheus.Counter{reloads.WithLabelValues("ok"), reloads.WithLabelValues("error")}
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "http_rejected_total",
		Help: "Requests net/http answered itself before routing, by status code: malformed request, headers too large, unsupported version.",
	}, []string{"code"})
	m.conns = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "connections", Help: "Open client connections.",
	})
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, latency, errs, reloads, m.rejected, m.conns,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "policies_loaded", Help: "Policies being served.",
		}, func() float64 { return float64(max(policies(), 0)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "ready",
			Help: "Whether every policy is loaded and self-tested and the server is not draining (1) or not (0).",
		}, func() float64 {
			if ready() {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "combined_passes_total",
			Help: "Forward passes that answered single deterministic act requests together.",
		}, func() float64 { return float64(m.passes.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "combined_requests_total",
			Help: "Requests answered by those passes (divided by the passes: mean batch size).",
		}, func() float64 { return float64(m.rows.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: namespace, Name: "build_info", Help: "Always 1; the labels say which build is serving.",
			ConstLabels: prometheus.Labels{"commit": build.Commit, "go_version": build.GoVersion},
		}, func() float64 { return 1 }),
	)
	return m
}

// handler serves the registry in the text (or negotiated) exposition format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// observe records one finished request.
func (m *metrics) observe(route string, code int, d time.Duration) {
	i := m.routeIdx[route] // "" and unknown patterns map to 0
	m.requests.add(i, code)
	m.latency[i].Observe(d.Seconds())
}

// requestCounter is requests_total{route,code}: lock-free counters by
// route index and status code, exported as constant metrics at scrape
// time (a CounterVec would format the code and look the child up on every
// request).
type requestCounter struct {
	desc   *prometheus.Desc
	routes []string
	codes  [][500]atomic.Uint64 // by route index, status code − 100
}

func newRequestCounter(routes []string) *requestCounter {
	return &requestCounter{
		desc: prometheus.NewDesc(namespace+"_requests_total",
			"HTTP requests by route pattern and status code.", []string{"route", "code"}, nil),
		routes: routes,
		codes:  make([][500]atomic.Uint64, len(routes)),
	}
}

func (c *requestCounter) add(route, code int) {
	if code >= 100 && code < 600 {
		c.codes[route][code-100].Add(1)
	}
}

// Describe implements prometheus.Collector.
func (c *requestCounter) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *requestCounter) Collect(ch chan<- prometheus.Metric) {
	for i, route := range c.routes {
		for code := range c.codes[i] {
			if n := c.codes[i][code].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), route, strconv.Itoa(code+100))
			}
		}
	}
}

// Counting the requests net/http refuses before routing. net/http answers
// a malformed request line, oversized headers, an unsupported version or
// Expect value and the like itself (400, 431, 505, 417, …), writing the
// response straight to the connection, and closes it; no handler runs.
// InstrumentServer wraps the listener's connections: a write to a
// connection on which no handler has run since it last went idle (or was
// accepted) is such a response. A request cut short by the client gets no
// answer and is not counted.

type connKey struct{}

// conn is an accepted connection, seen by the ConnContext and ConnState
// hooks and by the handler (through the request's context).
type conn struct {
	net.Conn
	m        *metrics
	routed   atomic.Bool // a handler ran since the connection was accepted or last went idle
	rejected atomic.Bool // net/http answered a request itself
	closed   atomic.Bool
}

func (c *conn) Write(p []byte) (int, error) {
	if !c.routed.Load() && !c.rejected.Swap(true) {
		code := "unknown"
		if len(p) >= 12 && string(p[:7]) == "HTTP/1." && p[8] == ' ' {
			code = string(p[9:12])
		}
		c.m.rejected.WithLabelValues(code).Inc()
	}
	return c.Conn.Write(p)
}

func (c *conn) Close() error {
	if !c.closed.Swap(true) {
		c.m.conns.Dec()
	}
	return c.Conn.Close()
}

type listener struct {
	net.Listener
	m *metrics
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.m.conns.Inc()
	return &conn{Conn: c, m: l.m}, nil
}

// InstrumentServer prepares srv to serve s.Handler() on ln and returns the
// listener to pass to srv.Serve: it counts open connections
// (streamscale_serve_connections) and the requests net/http answers itself
// before routing (streamscale_serve_http_rejected_total{code}). It sets
// srv.ConnContext and srv.ConnState, calling hooks already set first. Any
// other listener wrapper (netutil.LimitListener) goes inside, in ln.
func (s *Server) InstrumentServer(srv *http.Server, ln net.Listener) net.Listener {
	prevCtx, prevState := srv.ConnContext, srv.ConnState
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevCtx != nil {
			ctx = prevCtx(ctx, c)
		}
		if c, ok := c.(*conn); ok {
			ctx = context.WithValue(ctx, connKey{}, c)
		}
		return ctx
	}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		if prevState != nil {
			prevState(c, st)
		}
		if c, ok := c.(*conn); ok && st == http.StateIdle {
			c.routed.Store(false) // the response has been flushed
		}
	}
	return listener{ln, s.metrics}
}

// markRouted records on the request's connection (if instrumented) that a
// handler runs.
func markRouted(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*conn); ok {
		c.routed.Store(true)
	}
}
