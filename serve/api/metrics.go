package api

import (
	"strconv"
	"sync/atomic"
	"time"
)

// Latency histogram bucket upper bounds, in seconds.
var latencyBuckets = [...]float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}

// latencyBucketNanos are latencyBuckets in nanoseconds.
var latencyBucketNanos = func() (ns [len(latencyBuckets)]int64) {
	for i, s := range latencyBuckets {
		ns[i] = int64(s * 1e9)
	}
	return ns
}()

// unmatched is the route label of requests no route matched (404, 405).
const unmatched = "unmatched"

// metrics are the server's counters, updated lock-free on the request path
// and written in Prometheus's text exposition format (version 0.0.4).
type metrics struct {
	routes   []string       // route labels; index 0 is unmatched
	routeIdx map[string]int // route pattern → index; read-only after setup
	perRoute []routeMetrics
	errs     [numKinds]atomic.Uint64
	reloads  [2]atomic.Uint64 // ok, error
	passes   atomic.Uint64    // combined forward passes
	rows     atomic.Uint64    // observations in them
}

type routeMetrics struct {
	codes   [500]atomic.Uint64 // requests by status code − 100
	buckets [len(latencyBuckets) + 1]atomic.Uint64
	sumNS   atomic.Int64
}

func newMetrics(routes []string) *metrics {
	m := &metrics{routes: append([]string{unmatched}, routes...), routeIdx: map[string]int{}}
	for i, r := range m.routes {
		m.routeIdx[r] = i
	}
	m.perRoute = make([]routeMetrics, len(m.routes))
	return m
}

// observe records one finished request.
func (m *metrics) observe(route string, code int, d time.Duration) {
	rm := &m.perRoute[m.routeIdx[route]] // "" and unknown patterns map to 0
	if code >= 100 && code < 600 {
		rm.codes[code-100].Add(1)
	}
	ns := d.Nanoseconds()
	b := len(latencyBucketNanos)
	for i, ub := range latencyBucketNanos {
		if ns <= ub {
			b = i
			break
		}
	}
	rm.buckets[b].Add(1)
	rm.sumNS.Add(ns)
}

// appendText appends the exposition; policies and ready are the gauges.
func (m *metrics) appendText(b []byte, policies int, ready bool) []byte {
	const p = "streamscale_serve_"
	b = append(b, "# HELP "+p+"requests_total HTTP requests by route pattern and status code.\n# TYPE "+p+"requests_total counter\n"...)
	for i, route := range m.routes {
		rm := &m.perRoute[i]
		for c := range rm.codes {
			if n := rm.codes[c].Load(); n > 0 {
				b = append(b, p+`requests_total{route="`...)
				b = append(b, route...)
				b = append(b, `",code="`...)
				b = strconv.AppendInt(b, int64(c+100), 10)
				b = append(b, `"} `...)
				b = strconv.AppendUint(b, n, 10)
				b = append(b, '\n')
			}
		}
	}
	b = append(b, "# HELP "+p+"request_duration_seconds Time from routing to the end of the handler.\n# TYPE "+p+"request_duration_seconds histogram\n"...)
	for i, route := range m.routes {
		rm := &m.perRoute[i]
		var cum uint64
		for j := range rm.buckets {
			cum += rm.buckets[j].Load()
			b = append(b, p+`request_duration_seconds_bucket{route="`...)
			b = append(b, route...)
			b = append(b, `",le="`...)
			if j < len(latencyBuckets) {
				b = strconv.AppendFloat(b, latencyBuckets[j], 'g', -1, 64)
			} else {
				b = append(b, "+Inf"...)
			}
			b = append(b, `"} `...)
			b = strconv.AppendUint(b, cum, 10)
			b = append(b, '\n')
		}
		b = append(b, p+`request_duration_seconds_sum{route="`...)
		b = append(b, route...)
		b = append(b, `"} `...)
		b = strconv.AppendFloat(b, float64(rm.sumNS.Load())/1e9, 'g', -1, 64)
		b = append(b, '\n')
		b = append(b, p+`request_duration_seconds_count{route="`...)
		b = append(b, route...)
		b = append(b, `"} `...)
		b = strconv.AppendUint(b, cum, 10)
		b = append(b, '\n')
	}
	b = append(b, "# HELP "+p+"errors_total Error responses by kind.\n# TYPE "+p+"errors_total counter\n"...)
	for k := range m.errs {
		b = append(b, p+`errors_total{kind="`...)
		b = append(b, kindNames[k]...)
		b = append(b, `"} `...)
		b = strconv.AppendUint(b, m.errs[k].Load(), 10)
		b = append(b, '\n')
	}
	b = append(b, "# HELP "+p+"policies_loaded Policies being served.\n# TYPE "+p+"policies_loaded gauge\n"+p+"policies_loaded "...)
	b = strconv.AppendInt(b, int64(policies), 10)
	b = append(b, "\n# HELP "+p+"ready Whether every policy is loaded and self-tested (1) or not (0).\n# TYPE "+p+"ready gauge\n"+p+"ready "...)
	if ready {
		b = append(b, '1')
	} else {
		b = append(b, '0')
	}
	b = append(b, "\n# HELP "+p+"combined_passes_total Forward passes that answered single deterministic act requests together.\n# TYPE "+p+"combined_passes_total counter\n"+p+"combined_passes_total "...)
	b = strconv.AppendUint(b, m.passes.Load(), 10)
	b = append(b, "\n# HELP "+p+"combined_requests_total Requests answered by those passes (divided by the passes: mean batch size).\n# TYPE "+p+"combined_requests_total counter\n"+p+"combined_requests_total "...)
	b = strconv.AppendUint(b, m.rows.Load(), 10)
	b = append(b, "\n# HELP "+p+"reloads_total Policy (re)loads, the initial one included, by result.\n# TYPE "+p+"reloads_total counter\n"...)
	for i, r := range [2]string{"ok", "error"} {
		b = append(b, p+`reloads_total{result="`...)
		b = append(b, r...)
		b = append(b, `"} `...)
		b = strconv.AppendUint(b, m.reloads[i].Load(), 10)
		b = append(b, '\n')
	}
	return b
}
