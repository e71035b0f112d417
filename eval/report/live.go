package report

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// liveSummary is what the live table reads of an `eval live` summary.json
// (eval/liveexp.Summary; decoded here by its JSON names, so that the
// report links no runtime).
type liveSummary struct {
	Profile    string  `json:"profile"`
	Trace      string  `json:"trace"`
	Intervals  int     `json:"intervals"`
	TimeScaleS float64 `json:"time_scale_s"`
	Runs       []struct {
		Controller      string  `json:"controller"`
		PlacementSeed   uint64  `json:"placement_seed"`
		ViolationRate   float64 `json:"violation_rate"`
		MeanP95MS       float64 `json:"mean_p95_ms"`
		MeanCPU         float64 `json:"mean_cpu_millicores"`
		MeanThroughput  float64 `json:"mean_throughput"`
		MeanOffered     float64 `json:"mean_offered"`
		Dropped         uint64  `json:"dropped"`
		Unfinished      uint64  `json:"unfinished"`
		ControlFailures int     `json:"control_failures"`
	} `json:"runs"`
}

// liveTable renders the runs of an `eval live` summary, one row per
// controller and placement, in the summary's order.
func liveTable(b []byte, _ func(string) ([]byte, error)) ([]byte, error) {
	var s liveSummary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decoding a live summary: %w", err)
	}
	if len(s.Runs) == 0 {
		return nil, fmt.Errorf("a live summary without runs")
	}
	var out bytes.Buffer
	out.WriteString("| profile / trace | controller | placement | intervals | violations | mean p95 (ms) | mean CPU (mc) | throughput / offered (/s) | dropped | unfinished | control failures |\n")
	out.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range s.Runs {
		fmt.Fprintf(&out, "| %s / %s | `%s` | %d | %d × %g s | %.2f%% | %.1f | %.0f | %.1f / %.1f | %d | %d | %d |\n",
			s.Profile, s.Trace, r.Controller, r.PlacementSeed, s.Intervals, s.TimeScaleS, 100*r.ViolationRate, r.MeanP95MS,
			r.MeanCPU, r.MeanThroughput, r.MeanOffered, r.Dropped, r.Unfinished, r.ControlFailures)
	}
	return out.Bytes(), nil
}
