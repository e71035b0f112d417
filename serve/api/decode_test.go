package api

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// smallLayout is app 2, server 2, task 3 values, each in [-10, 10].
func smallLayout() *layout {
	lay := &layout{size: 7, off: [numKeys]int{0, 2, 4}, n: [numKeys]int{2, 2, 3}}
	for range lay.size {
		lay.low = append(lay.low, -10)
		lay.high = append(lay.high, 10)
	}
	return lay
}

const okObs = `{"app":[1,2],"server":[3,4],"task":[5,6,7]}`

func TestDecodeAct(t *testing.T) {
	cases := []struct {
		body  string
		batch bool
		kind  errKind // numKinds: accepted
		field string
	}{
		{body: `{"observation":` + okObs + `}`, kind: numKinds},
		{body: " \t\r\n{ \"observation\" : " + okObs + " , \"deterministic\" : true , \"probabilities\":false } \n", kind: numKinds},
		{body: `{"obs\u0065rvation":` + okObs + `}`, kind: numKinds},
		{body: `{"observation":{"task":[5,6,7],"app":[1,2.5e0],"server":[-0,4E-1]},"sample":true,"seed":18446744073709551615}`, kind: numKinds},
		{body: `{"observation":` + okObs + `,"deterministic":false,"seed":0}`, kind: numKinds},
		{body: `{"observations":[` + okObs + `,` + okObs + `]}`, batch: true, kind: numKinds},

		{body: ``, kind: kindBadJSON},
		{body: `   `, kind: kindBadJSON},
		{body: `{`, kind: kindBadJSON},
		{body: `{"observation":` + okObs, kind: kindBadJSON},
		{body: `{"observation":` + okObs + `}x`, kind: kindBadJSON},
		{body: `{"observation":` + okObs + `}{}`, kind: kindBadJSON},
		{body: `{"observation":` + okObs + `,}`, kind: kindBadJSON},
		{body: `{'observation':` + okObs + `}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,6,NaN]}}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,6,Infinity]}}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,6,-Infinity]}}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[01,2],"server":[3,4],"task":[5,6,7]}}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[1.,2],"server":[3,4],"task":[5,6,7]}}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[.5,2],"server":[3,4],"task":[5,6,7]}}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[+1,2],"server":[3,4],"task":[5,6,7]}}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[1e,2],"server":[3,4],"task":[5,6,7]}}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[-,2],"server":[3,4],"task":[5,6,7]}}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[1,2,],"server":[3,4],"task":[5,6,7]}}`, kind: kindBadJSON},
		{body: `{"observation":{"app":[1 2],"server":[3,4],"task":[5,6,7]}}`, kind: kindBadJSON},
		{body: `{"observation":` + okObs + `,"deterministic":tru}`, kind: kindBadJSON},
		{body: `{"obs\x":` + okObs + `}`, kind: kindBadJSON},
		{body: "{\"obs\nervation\":" + okObs + `}`, kind: kindBadJSON},
		{body: `{"obs\u00":` + okObs + `}`, kind: kindBadJSON},

		{body: `[]`, kind: kindBadRequest, field: "body"},
		{body: `"x"`, kind: kindBadRequest, field: "body"},
		{body: `{}`, kind: kindBadRequest, field: "observation"},
		{body: `{"observation":` + okObs + `,"extra":1}`, kind: kindBadRequest, field: "extra"},
		{body: `{"Observation":` + okObs + `}`, kind: kindBadRequest, field: "Observation"},
		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,6,7],"gpu":[]}}`, kind: kindBadRequest, field: "observation.gpu"},
		{body: `{"observation":{"app":[1,2],"server":[3,4]}}`, kind: kindBadRequest, field: "observation.task"},
		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,"NaN",7]}}`, kind: kindBadRequest, field: "observation.task[1]"},
		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,6,"Infinity"]}}`, kind: kindBadRequest, field: "observation.task[2]"},
		{body: `{"observation":{"app":[[1],2],"server":[3,4],"task":[5,6,7]}}`, kind: kindBadRequest, field: "observation.app[0]"},
		{body: `{"observation":{"app":[1,2],"server":null,"task":[5,6,7]}}`, kind: kindBadRequest, field: "observation.server"},
		{body: `{"observation":{"app":[1,2],"server":[3,true],"task":[5,6,7]}}`, kind: kindBadRequest, field: "observation.server[1]"},
		{body: `{"observation":[1,2,3]}`, kind: kindBadRequest, field: "observation"},
		{body: `{"observation":` + okObs + `,"observation":` + okObs + `}`, kind: kindBadRequest, field: "observation"},
		{body: `{"observation":{"app":[1,2],"app":[1,2],"server":[3,4],"task":[5,6,7]}}`, kind: kindBadRequest, field: "observation.app"},
		{body: `{"observation":` + okObs + `,"deterministic":"yes"}`, kind: kindBadRequest, field: "deterministic"},
		{body: `{"observation":` + okObs + `,"deterministic":null}`, kind: kindBadRequest, field: "deterministic"},
		{body: `{"observation":` + okObs + `,"sample":true}`, kind: kindBadRequest, field: "seed"},
		{body: `{"observation":` + okObs + `,"seed":3}`, kind: kindBadRequest, field: "seed"},
		{body: `{"observation":` + okObs + `,"sample":true,"deterministic":true,"seed":1}`, kind: kindBadRequest, field: "sample"},
		{body: `{"observation":` + okObs + `,"sample":false,"deterministic":false,"seed":1}`, kind: kindBadRequest, field: "sample"},
		{body: `{"observation":` + okObs + `,"sample":true,"seed":-1}`, kind: kindBadRequest, field: "seed"},
		{body: `{"observation":` + okObs + `,"sample":true,"seed":1.5}`, kind: kindBadRequest, field: "seed"},
		{body: `{"observation":` + okObs + `,"sample":true,"seed":1e3}`, kind: kindBadRequest, field: "seed"},
		{body: `{"observation":` + okObs + `,"sample":true,"seed":18446744073709551616}`, kind: kindBadRequest, field: "seed"},
		{body: `{"observation":` + okObs + `,"sample":true,"seed":"7"}`, kind: kindBadRequest, field: "seed"},
		{body: `{"observations":[` + okObs + `]}`, kind: kindBadRequest, field: "observations"},
		{body: `{"observation":` + okObs + `}`, batch: true, kind: kindBadRequest, field: "observation"},
		{body: `{"observations":{}}`, batch: true, kind: kindBadRequest, field: "observations"},
		{body: `{"observations":[` + okObs + `,{"app":[1,2],"server":[3,4]}]}`, batch: true, kind: kindBadRequest, field: "observations[1].task"},

		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,6]}}`, kind: kindInvalid, field: "observation.task"},
		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,6,7,8]}}`, kind: kindInvalid, field: "observation.task"},
		{body: `{"observation":{"app":[],"server":[3,4],"task":[5,6,7]}}`, kind: kindInvalid, field: "observation.app"},
		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,6,1e999]}}`, kind: kindInvalid, field: "observation.task[2]"},
		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,6,-1e400]}}`, kind: kindInvalid, field: "observation.task[2]"},
		{body: `{"observation":{"app":[1,2],"server":[3,4],"task":[5,6,10.5]}}`, kind: kindInvalid, field: "observation.task[2]"},
		{body: `{"observation":{"app":[-11,2],"server":[3,4],"task":[5,6,7]}}`, kind: kindInvalid, field: "observation.app[0]"},
		{body: `{"observations":[]}`, batch: true, kind: kindInvalid, field: "observations"},
		{body: `{"observations":[` + okObs + `,{"app":[1,2],"server":[3,40],"task":[5,6,7]}]}`, batch: true, kind: kindInvalid, field: "observations[1].server[1]"},

		{body: `{"observations":[` + strings.Repeat(okObs+",", 4) + okObs + `]}`, batch: true, kind: kindBatchTooLarge, field: "observations"},
	}
	lay := smallLayout()
	var req actRequest
	for _, c := range cases {
		err := decodeAct([]byte(c.body), lay, c.batch, 4, &req)
		switch {
		case c.kind == numKinds && err != nil:
			t.Errorf("%s: %v", c.body, err)
		case c.kind == numKinds:
		case err == nil:
			t.Errorf("%s: accepted, want %s", c.body, kindNames[c.kind])
		case err.Kind != c.kind || err.Field != c.field:
			t.Errorf("%s: %s field %q (%v), want %s field %q", c.body, kindNames[err.Kind], err.Field, err, kindNames[c.kind], c.field)
		case !strings.HasPrefix(err.Msg, "api: "):
			t.Errorf("%s: message %q lacks the package prefix", c.body, err.Msg)
		}
	}
}

func TestDecodeActValues(t *testing.T) {
	lay := smallLayout()
	var req actRequest
	body := `{"observations":[{"task":[5,6,7],"server":[3,4],"app":[1,2]},{"app":[-1e-3,0.1],"server":[-0,10],"task":[-10,1e1,2.5E-1]}],"sample":true,"seed":42,"probabilities":true}`
	if err := decodeAct([]byte(body), lay, true, 4, &req); err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 2, 3, 4, 5, 6, 7, -1e-3, 0.1, 0, 10, -10, 10, 0.25}
	if req.n != 2 || !req.sample || req.seed != 42 || !req.probabilities || len(req.obs) != len(want) {
		t.Fatalf("n %d sample %v seed %d probabilities %v obs %v", req.n, req.sample, req.seed, req.probabilities, req.obs)
	}
	for i := range want {
		if req.obs[i] != want[i] {
			t.Fatalf("obs %v, want %v", req.obs, want)
		}
	}
	// The buffers are reused and every option is reset.
	if err := decodeAct([]byte(`{"observation":`+okObs+`}`), lay, false, 4, &req); err != nil {
		t.Fatal(err)
	}
	if req.n != 1 || req.sample || req.seed != 0 || req.probabilities || req.obs[6] != 7 {
		t.Fatalf("second decode: %+v", req)
	}
}

// reference is the request decoded by encoding/json.
type reference struct {
	Observation   *refObs         `json:"observation"`
	Observations  []refObs        `json:"observations"`
	Deterministic *bool           `json:"deterministic"`
	Sample        *bool           `json:"sample"`
	Seed          *uint64         `json:"seed"`
	Probabilities *bool           `json:"probabilities"`
	RuleTargets   json.RawMessage `json:"rule_targets"`
}

type refObs struct {
	App    []float64 `json:"app"`
	Server []float64 `json:"server"`
	Task   []float64 `json:"task"`
}

// residualLayout is smallLayout for a residual policy of 2 tasks.
func residualLayout() *layout {
	lay := smallLayout()
	lay.rule = 2
	return lay
}

// TestDecodeRuleTargets: a residual policy's request needs rule_targets
// (one array, or in a batch one per observation), finite and in
// [0, maxRuleTarget]; a plain policy's refuses them.
func TestDecodeRuleTargets(t *testing.T) {
	cases := []struct {
		body  string
		batch bool
		plain bool    // decode against smallLayout, not residualLayout
		kind  errKind // numKinds: accepted
		field string
	}{
		{body: `{"rule_targets":[0,1e9],"observation":` + okObs + `}`, kind: numKinds},
		{body: `{"observations":[` + okObs + `,` + okObs + `],"rule_targets":[[1,2],[3,4.5]]}`, batch: true, kind: numKinds},
		{body: `{"observation":` + okObs + `}`, kind: kindBadRequest, field: "rule_targets"},
		{body: `{"observation":` + okObs + `,"rule_targets":[1,2]}`, plain: true, kind: kindBadRequest, field: "rule_targets"},
		{body: `{"observation":` + okObs + `,"rule_targets":[1,2],"rule_targets":[1,2]}`, kind: kindBadRequest, field: "rule_targets"},
		{body: `{"observation":` + okObs + `,"rule_targets":null}`, kind: kindBadRequest, field: "rule_targets"},
		{body: `{"observation":` + okObs + `,"rule_targets":[1,"NaN"]}`, kind: kindBadRequest, field: "rule_targets[1]"},
		{body: `{"observation":` + okObs + `,"rule_targets":[1,NaN]}`, kind: kindBadJSON},
		{body: `{"observation":` + okObs + `,"rule_targets":[[1,2]]}`, kind: kindBadRequest, field: "rule_targets[0]"},
		{body: `{"observations":[` + okObs + `],"rule_targets":[1,2]}`, batch: true, kind: kindBadRequest, field: "rule_targets[0]"},
		{body: `{"observation":` + okObs + `,"rule_targets":[1]}`, kind: kindInvalid, field: "rule_targets"},
		{body: `{"observation":` + okObs + `,"rule_targets":[1,2,3]}`, kind: kindInvalid, field: "rule_targets"},
		{body: `{"observation":` + okObs + `,"rule_targets":[1,1e999]}`, kind: kindInvalid, field: "rule_targets[1]"},
		{body: `{"observation":` + okObs + `,"rule_targets":[-0.5,1]}`, kind: kindInvalid, field: "rule_targets[0]"},
		{body: `{"observation":` + okObs + `,"rule_targets":[1,1.5e9]}`, kind: kindInvalid, field: "rule_targets[1]"},
		{body: `{"observations":[` + okObs + `,` + okObs + `],"rule_targets":[[1,2]]}`, batch: true, kind: kindInvalid, field: "rule_targets"},
		{body: `{"observations":[` + okObs + `],"rule_targets":[]}`, batch: true, kind: kindInvalid, field: "rule_targets"},
		{body: `{"observations":[` + okObs + `],"rule_targets":[[1,2],[3,4]]}`, batch: true, kind: kindInvalid, field: "rule_targets"},
		{body: `{"observations":[` + okObs + `,` + okObs + `],"rule_targets":[[1,2],[3,-4]]}`, batch: true, kind: kindInvalid, field: "rule_targets[1][1]"},
		{body: `{"observations":[` + okObs + `],"rule_targets":[[1,2],[1,2],[1,2],[1,2],[1,2]]}`, batch: true, kind: kindBatchTooLarge, field: "rule_targets"},
	}
	var req actRequest
	for _, c := range cases {
		lay := residualLayout()
		if c.plain {
			lay = smallLayout()
		}
		err := decodeAct([]byte(c.body), lay, c.batch, 4, &req)
		switch {
		case c.kind == numKinds && err != nil:
			t.Errorf("%s: %v", c.body, err)
		case c.kind == numKinds:
		case err == nil:
			t.Errorf("%s: accepted, want %s", c.body, kindNames[c.kind])
		case err.Kind != c.kind || err.Field != c.field:
			t.Errorf("%s: %s field %q (%v), want %s field %q", c.body, kindNames[err.Kind], err.Field, err, kindNames[c.kind], c.field)
		}
	}
	if err := decodeAct([]byte(`{"observations":[`+okObs+`,`+okObs+`],"rule_targets":[[1,2],[3,4.5]]}`), residualLayout(), true, 4, &req); err != nil || !slices.Equal(req.rule[:4], []float64{1, 2, 3, 4.5}) {
		t.Errorf("rule targets %v (%v)", req.rule, err)
	}
}

// FuzzDecodeAct holds the decoder against encoding/json: it never panics,
// every refusal is a 400, 413 or 422 with the package prefix, and whatever
// it accepts encoding/json (with DisallowUnknownFields) accepts too, with
// the same numbers, bit for bit, and the same options. Every body is
// decoded for a plain policy (which refuses rule_targets) and for a
// residual one (which needs them).
func FuzzDecodeAct(f *testing.F) {
	f.Add([]byte(`{"observation":`+okObs+`}`), false)
	f.Add([]byte(`{"observation":`+okObs+`,"sample":true,"seed":7,"probabilities":true}`), false)
	f.Add([]byte(`{"observations":[`+okObs+`,`+okObs+`],"deterministic":false,"seed":1}`), true)
	f.Add([]byte(`{"observation":{"app":[1e308,-2.5e-3],"server":[3,4],"task":[5,6,"NaN"]}}`), false)
	f.Add([]byte(`{"obs\u0065rvation":{"\u0061pp":[1,2],"server":[3,4],"task":[5,6,7]}}`), false)
	f.Add([]byte(`{"observation":`+okObs+`,"rule_targets":[500,1e3]}`), false)
	f.Add([]byte(`{"rule_targets":[[1,2],[3,4]],"observations":[`+okObs+`,`+okObs+`]}`), true)
	plain, res := smallLayout(), residualLayout()
	for _, lay := range []*layout{plain, res} {
		for i := range lay.low {
			lay.low[i], lay.high[i] = math.Inf(-1), math.Inf(1)
		}
	}
	var req actRequest
	f.Fuzz(func(t *testing.T, body []byte, batch bool) {
		for _, lay := range []*layout{plain, res} {
			fuzzDecodeAct(t, body, batch, lay, &req)
		}
	})
}

func fuzzDecodeAct(t *testing.T, body []byte, batch bool, lay *layout, req *actRequest) {
	err := decodeAct(body, lay, batch, 4, req)
	if err != nil {
		if s := err.Status(); s != 400 && s != 413 && s != 422 {
			t.Fatalf("status %d: %v", s, err)
		}
		if !strings.HasPrefix(err.Msg, "api: ") {
			t.Fatalf("message %q", err.Msg)
		}
		return
	}
	var ref reference
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ref); err != nil {
		t.Fatalf("accepted, encoding/json: %v", err)
	}
	if dec.More() {
		t.Fatalf("accepted, encoding/json sees more data")
	}
	obs := ref.Observations
	if !batch {
		if ref.Observation == nil || ref.Observations != nil {
			t.Fatalf("accepted without a single observation")
		}
		obs = []refObs{*ref.Observation}
	}
	if len(obs) != req.n {
		t.Fatalf("%d observations, encoding/json %d", req.n, len(obs))
	}
	for r, o := range obs {
		var flat []float64
		flat = append(append(append(flat, o.App...), o.Server...), o.Task...)
		for i, v := range flat {
			if math.Float64bits(v) != math.Float64bits(req.obs[r*lay.size+i]) {
				t.Fatalf("observation %d value %d: %v, encoding/json %v", r, i, req.obs[r*lay.size+i], v)
			}
		}
	}
	sample := (ref.Sample != nil && *ref.Sample) || (ref.Deterministic != nil && !*ref.Deterministic)
	if sample != req.sample || (ref.Seed != nil) != sample || (sample && *ref.Seed != req.seed) {
		t.Fatalf("options %+v, decoded sample %v seed %d", ref, req.sample, req.seed)
	}
	if (ref.Probabilities != nil && *ref.Probabilities) != req.probabilities {
		t.Fatalf("probabilities %v", req.probabilities)
	}
	if lay.rule == 0 {
		if ref.RuleTargets != nil {
			t.Fatalf("a plain policy accepted rule_targets %s", ref.RuleTargets)
		}
		return
	}
	var rows [][]float64
	if batch {
		if err := json.Unmarshal(ref.RuleTargets, &rows); err != nil {
			t.Fatalf("accepted rule_targets %s: %v", ref.RuleTargets, err)
		}
	} else {
		var row []float64
		if err := json.Unmarshal(ref.RuleTargets, &row); err != nil {
			t.Fatalf("accepted rule_targets %s: %v", ref.RuleTargets, err)
		}
		rows = [][]float64{row}
	}
	if len(rows) != req.n {
		t.Fatalf("%d rows of rule targets for %d observations", len(rows), req.n)
	}
	for r, row := range rows {
		if len(row) != lay.rule {
			t.Fatalf("row %d of rule targets has %d values", r, len(row))
		}
		for i, v := range row {
			if math.Float64bits(v) != math.Float64bits(req.rule[r*lay.rule+i]) || !(v >= 0 && v <= maxRuleTarget) {
				t.Fatalf("rule target %d of row %d: %v, encoding/json %v", i, r, req.rule[r*lay.rule+i], v)
			}
		}
	}
}

// TestFloatMatchesStrconv holds the decoder's number conversion to
// strconv.ParseFloat bit for bit: shortest round-trip decimals of random
// float64s across the exponent range (the observation case), the same
// truncated to fewer digits, halfway and near-halfway decimals, and
// hand-picked edge tokens.
func TestFloatMatchesStrconv(t *testing.T) {
	check := func(tok string) {
		t.Helper()
		want, err := strconv.ParseFloat(tok, 64)
		wantOK := err == nil && !math.IsInf(want, 0)
		got, ok := float([]byte(tok))
		if ok != wantOK || ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("float(%q) = %v, %v; strconv gives %v, %v", tok, got, ok, want, wantOK)
		}
	}
	for _, tok := range []string{"0", "-0", "0.0", "-0.0e5", "1", "-1", "0.1", "1e22", "1e23", "9007199254740993",
		"9007199254740992", "18446744073709551615", "18446744073709551616", "1234567890123456789", "12345678901234567890",
		"0.30000000000000004", "2.2250738585072014e-308", "4.9e-324", "1.7976931348623157e308", "1.8e308", "1e-400",
		"1e400", "1e-64", "1e64", "1e-65", "1e65", "0.000000000000000000000000001", "1E+2", "1e-0", "100000000000000000000000",
		"5e-324", "-1.2335811384723961e-15", "0.020833333333333332", "7.601402334583733", "1e1001"} {
		check(tok)
	}
	r := rand.New(rand.NewPCG(11, 12))
	for range 60000 {
		v := math.Float64frombits(r.Uint64())
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if r.IntN(2) == 0 { // keep to observation-like magnitudes half the time
			v = r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		check(s)
		check(strconv.FormatFloat(v, 'e', r.IntN(19), 64))
		// halfway between v and its successor, as a long exact decimal
		h := new(big.Float).SetPrec(2000).SetFloat64(v)
		h.Add(h, new(big.Float).SetPrec(2000).SetFloat64(math.Nextafter(v, math.Inf(1))))
		h.Quo(h, big.NewFloat(2))
		for _, prec := range []int{17, 18, 19, 20, 30} {
			check(h.Text('e', prec))
		}
	}
}

// FuzzFloat holds float to strconv.ParseFloat on any token of JSON's
// number grammar.
func FuzzFloat(f *testing.F) {
	for _, s := range []string{"0", "-0.5", "1e22", "0.30000000000000004", "2.2250738585072014e-308", "9007199254740993", "1234567890123456789e-30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		if !jsonNumber.MatchString(tok) {
			return
		}
		want, err := strconv.ParseFloat(tok, 64)
		wantOK := err == nil && !math.IsInf(want, 0)
		got, ok := float([]byte(tok))
		if ok != wantOK || ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("float(%q) = %v, %v; strconv gives %v, %v", tok, got, ok, want, wantOK)
		}
	})
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
