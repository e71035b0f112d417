package api

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The exposition is well-formed text format: every sample follows a TYPE
// line of its family, histogram buckets are cumulative and end at +Inf
// with the count.
func TestMetricsExposition(t *testing.T) {
	s := newTestServer(t, "", "")
	for range 3 {
		do(s, "GET", "/healthz", nil)
	}
	do(s, "GET", "/nope", nil)
	w := do(s, "GET", "/metrics", nil)
	okStatus(t, w)
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type %q", ct)
	}
	sample := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? ([0-9.e+-]+|\+Inf|NaN)$`)
	typed := map[string]string{}
	var last float64
	text := w.Body.String()
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(f, " ")
			typed[name] = typ
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		m := sample.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("malformed line %q", line)
		}
		family := m[1]
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(family, suf); ok && (typed[b] == "histogram" || typed[b] == "summary") {
				family = b
			}
		}
		if typed[family] == "" {
			t.Fatalf("sample %q before its TYPE", line)
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(m[1], "_bucket") {
			if strings.Contains(m[2], `le="0.0001"`) {
				last = 0
			}
			if v < last {
				t.Fatalf("bucket %q not cumulative", line)
			}
			last = v
		}
	}
	for _, line := range []string{
		`streamscale_serve_requests_total{code="200",route="/healthz"} 3`,
		`streamscale_serve_requests_total{code="404",route="unmatched"} 1`,
		`streamscale_serve_request_duration_seconds_bucket{route="/healthz",le="+Inf"} 3`,
		`streamscale_serve_request_duration_seconds_count{route="/healthz"} 3`,
		`streamscale_serve_policies_loaded 2`,
		`streamscale_serve_reloads_total{result="ok"} 1`,
		`streamscale_serve_ready 1`,
		`streamscale_serve_errors_total{kind="internal"} 0`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("metrics lack %s", line)
		}
	}
	// The runtime and process collectors are registered.
	for _, family := range []string{"go_goroutines", "go_info", "process_cpu_seconds_total", "streamscale_serve_build_info"} {
		if typed[family] == "" {
			t.Errorf("metrics lack the family %s", family)
		}
	}
}
