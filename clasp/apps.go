package clasp

import (
	"fmt"
	"strings"
)

// The CLASP evaluation applications (paper §6.1) as data. Execution times are
// calibrated around the paper's measured ≈ 400 µs per execution; their
// relative weights, the state sizes, the key counts (words 50,000, sensors
// 1,000, ads 10,000, campaigns and categories 100, hosts 5,000) and the
// request sizes are this package's assumptions (the paper gives the structure, the stateful operators and the
// share of executions touching state, which App.StateTouchFraction checks).
// ETL's weights follow RIoTBench's micro-benchmarks, as in package env
// (2,000 µs per million instructions of env's calibration).

const (
	mib      = 1 << 20
	reqBytes = 256 // default request size, bytes
)

func op(name string, us float64) Operator {
	return Operator{Name: name, ExecUS: us, RequestBytes: reqBytes}
}

// stateful is an operator with keyed state of the given total size over
// keys distinct keys (the state grows as keys are first seen).
func stateful(name string, us, state, keys float64) Operator {
	return Operator{Name: name, ExecUS: us, Stateful: true, StateBytes: state, Keys: keys, RequestBytes: reqBytes}
}

// WC is word count: split → count (by word). A sentence splits into 12
// words (the paper: more than 10 chained requests per input), so 12 of
// every 13 executions (92%) touch state.
func WC() App {
	return App{
		Name:      "wc",
		Operators: []Operator{op("split", 450), stateful("count", 350, 64*mib, 50000)},
		Edges:     []Edge{{0, 1, 12}},
	}
}

// SD is spike detection: moving average (by sensor) → spike detect.
func SD() App {
	return App{
		Name:      "sd",
		Operators: []Operator{stateful("moving-average", 400, 16*mib, 1000), op("spike-detect", 300)},
		Edges:     []Edge{{0, 1, 1}},
	}
}

// AA is the Yahoo advertising analytics benchmark: deserialize → filter
// (keeps one event type in three) → projection → join (by ad) → campaign
// count.
func AA() App {
	return App{
		Name: "aa",
		Operators: []Operator{
			op("deserialize", 500), op("filter", 150), op("projection", 200),
			stateful("join", 450, 32*mib, 10000), stateful("campaign-count", 350, 4*mib, 100),
		},
		Edges: []Edge{{0, 1, 1}, {1, 2, 1.0 / 3}, {2, 3, 1}, {3, 4, 1}},
	}
}

// PL is the pipeline: trans → filter (½) → join → filter (⅓) → aggregate (by
// category) → sink. 20% of executions touch state.
func PL() App {
	return App{
		Name: "pl",
		Operators: []Operator{
			op("trans", 400), op("filter1", 150), stateful("join", 500, 32*mib, 10000),
			op("filter2", 150), stateful("aggregate", 400, 4*mib, 100), op("sink", 300),
		},
		Edges: []Edge{{0, 1, 1}, {1, 2, 0.5}, {2, 3, 1}, {3, 4, 1.0 / 3}, {4, 5, 1}},
	}
}

// NWM is network monitoring, 10 operators: parse → split, then a success
// branch (filter, keeps 80% → map → count by host) and a failure branch
// (filter, keeps 20% → map → count by host) joining by host → report.
func NWM() App {
	return App{
		Name: "nwm",
		Operators: []Operator{
			op("parse", 500), op("split", 200),
			op("success-filter", 150), op("success-map", 200), stateful("success-count", 300, 8*mib, 5000),
			op("failure-filter", 150), op("failure-map", 200), stateful("failure-count", 300, 8*mib, 5000),
			stateful("join-by-host", 450, 16*mib, 5000), op("report", 300),
		},
		Edges: []Edge{
			{0, 1, 1}, {1, 2, 1}, {1, 5, 1},
			{2, 3, 0.8}, {3, 4, 1}, {4, 8, 1},
			{5, 6, 0.2}, {6, 7, 1}, {7, 8, 1},
			{8, 9, 1},
		},
	}
}

// ETL is RIoTBench's extract-transform-load chain: SenMLParse (one request per
// field, ×10) → RangeFilter → BloomFilter → Interpolation → Join (collects
// the ten fields, ×0.1) → Annotate → {CsvToSenML → MQTTPublish, TableInsert}
// → Sink, which joins both branches: 10 operators, as in the paper.
func ETL() App {
	field := func(o Operator) Operator { o.RequestBytes = 90; return o }
	return App{
		Name: "etl",
		Operators: []Operator{
			{Name: "SenMLParse", ExecUS: 600, RequestBytes: 870},
			field(op("RangeFilter", 36)), field(op("BloomFilter", 48)),
			field(stateful("Interpolation", 60, 8*mib, 1000)), field(stateful("Join", 24, 16*mib, 1000)),
			{Name: "Annotate", ExecUS: 300, RequestBytes: 700},
			{Name: "CsvToSenML", ExecUS: 480, RequestBytes: 750},
			{Name: "MQTTPublish", ExecUS: 420, RequestBytes: 870},
			{Name: "TableInsert", ExecUS: 720, RequestBytes: 750},
			{Name: "Sink", ExecUS: 300, RequestBytes: 750},
		},
		Edges: []Edge{{0, 1, 10}, {1, 2, 1}, {2, 3, 1}, {3, 4, 1}, {4, 5, 0.1}, {5, 6, 1}, {6, 7, 1}, {5, 8, 1}, {7, 9, 1}, {8, 9, 1}},
	}
}

// SYN is the synthetic chain of 10 no-op operators, which isolates the cost
// of chained requests. A no-op still costs a function invocation: each takes
// the paper's measured mean execution time, DefaultExecUS (400 µs). With the
// paper's α, β, γ and W this gives 195.6 events/s on one worker, and a
// contiguous split into two operators per worker carries 717 events/s per
// worker — 3.67× on 5 workers, the sub-linear speed-up the paper measured
// (3.7×).
func SYN() App {
	ops := make([]Operator, 10)
	var edges []Edge
	for i := range ops {
		ops[i] = op(fmt.Sprintf("noop%d", i), DefaultExecUS)
		if i > 0 {
			edges = append(edges, Edge{i - 1, i, 1})
		}
	}
	return App{Name: "syn", Operators: ops, Edges: edges}
}

// AppNames lists the names accepted by AppByName, in the paper's order.
func AppNames() []string { return []string{"wc", "sd", "aa", "pl", "nwm", "etl", "syn"} }

// AppByName returns the named application (case-insensitive).
func AppByName(name string) (App, error) {
	switch strings.ToLower(name) {
	case "wc":
		return WC(), nil
	case "sd":
		return SD(), nil
	case "aa":
		return AA(), nil
	case "pl":
		return PL(), nil
	case "nwm":
		return NWM(), nil
	case "etl":
		return ETL(), nil
	case "syn":
		return SYN(), nil
	}
	return App{}, invalidf("unknown app %q (want one of %s)", name, strings.Join(AppNames(), ", "))
}
