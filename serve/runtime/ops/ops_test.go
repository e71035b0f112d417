package ops

import (
	"bufio"
	"bytes"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"streamscale/clasp"
	"streamscale/env"
)

func appByName(t *testing.T, name string) App {
	t.Helper()
	a, err := AppByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func names(a App) []string {
	var n []string
	for _, s := range a.Operators {
		n = append(n, s.Name)
	}
	return n
}

// predStateDeviation lists the PRED operators that keep keyed state while
// env's PRED profile gives every task StateMB 0 (see PRED's doc).
var predStateDeviation = map[string]bool{"LinearRegression": true, "BlockWindowAverage": true}

// TestTopology holds every app's operator names, edges and stateful flags
// equal to the simulator's profile (pred, etl) and the CLASP planner's app
// (wc, sd, aa, pl, nwm, etl, syn).
func TestTopology(t *testing.T) {
	if got, want := AppNames(), []string{"pred", "etl", "wc", "sd", "aa", "pl", "nwm", "syn"}; !slices.Equal(got, want) {
		t.Fatalf("AppNames %v", got)
	}
	for _, name := range clasp.AppNames() {
		a, c := appByName(t, name), must(clasp.AppByName(name))
		if !slices.Equal(names(a), opNames(c)) {
			t.Errorf("%s: operators %v, clasp has %v", name, names(a), opNames(c))
			continue
		}
		var ce [][2]int
		for _, e := range c.Edges {
			ce = append(ce, [2]int{e.From, e.To})
		}
		if !slices.Equal(a.Edges, ce) {
			t.Errorf("%s: edges %v, clasp has %v", name, a.Edges, ce)
		}
		for i, s := range a.Operators {
			if s.Stateful != c.Operators[i].Stateful {
				t.Errorf("%s/%s: stateful %v, clasp says %v", name, s.Name, s.Stateful, c.Operators[i].Stateful)
			}
		}
	}
	for _, name := range env.Profiles() {
		a, p := appByName(t, name), must(env.Profile(name))
		var pn []string
		for _, k := range p.Tasks {
			pn = append(pn, k.Name)
		}
		var pe [][2]int
		for _, e := range p.Edges {
			pe = append(pe, [2]int{e.From, e.To})
		}
		an, ae := names(a), a.Edges
		if name == "etl" { // the runtime's Sink joins both branches; env's sinks are tasks 7 and 8
			an = an[:len(an)-1]
			ae = slices.DeleteFunc(slices.Clone(ae), func(e [2]int) bool { return e[1] == len(an) })
		}
		if !slices.Equal(an, pn) || !slices.Equal(ae, pe) {
			t.Errorf("%s: operators %v edges %v, env has %v %v", name, an, ae, pn, pe)
		}
		for i, k := range p.Tasks {
			s := a.Operators[i]
			if name == "pred" && predStateDeviation[s.Name] {
				if k.StateMB != 0 || !s.Stateful {
					t.Errorf("pred/%s: the documented deviation no longer holds (env StateMB %v, stateful %v)", s.Name, k.StateMB, s.Stateful)
				}
				continue
			}
			if name == "pred" && s.Stateful != (k.StateMB > 0) {
				t.Errorf("%s/%s: stateful %v, env StateMB %v", name, s.Name, s.Stateful, k.StateMB)
			}
		}
	}
	if _, err := AppByName("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown app: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func opNames(a clasp.App) []string {
	var n []string
	for _, o := range a.Operators {
		n = append(n, o.Name)
	}
	return n
}

func sourceDigest(a App, seed uint64, n int) uint64 {
	h := fnv.New64a()
	src := a.NewSource(seed)
	var buf []byte
	for range n {
		k, p := src.Next(buf)
		buf = p
		var kb [8]byte
		h.Write(putU64(kb[:0], k))
		h.Write(p)
	}
	return h.Sum64()
}

// TestSourceDeterminism: same seed, same payloads; another seed, others.
func TestSourceDeterminism(t *testing.T) {
	for _, name := range AppNames() {
		a := appByName(t, name)
		d1, d2, d3 := sourceDigest(a, 7, 300), sourceDigest(a, 7, 300), sourceDigest(a, 8, 300)
		if d1 != d2 {
			t.Errorf("%s: same seed, different payloads", name)
		}
		if d1 == d3 {
			t.Errorf("%s: seeds 7 and 8 give the same payloads", name)
		}
	}
}

// inputs per app for the pipeline tests (SYN's work is real CPU).
func testInputs(name string) int {
	if name == "syn" {
		return 20
	}
	return 3000
}

func appFor(t *testing.T, name string) App {
	if name == "syn" {
		return SYN(0) // no work: the test checks the plumbing
	}
	return appByName(t, name)
}

// TestPipelines runs every app through the reference executor twice with
// one seed: generated inputs raise no error, every emit follows an edge,
// outputs and final states are identical; another seed changes them.
func TestPipelines(t *testing.T) {
	for _, name := range AppNames() {
		a := appFor(t, name)
		r1, r2, r3 := newRun(a), newRun(a), newRun(a)
		n := testInputs(name)
		if raceEnabled {
			n = min(n, 500)
		}
		r1.feed(t, 1, n)
		r2.feed(t, 1, n)
		r3.feed(t, 2, n)
		if len(r1.errs) > 0 {
			t.Errorf("%s: %d errors on generated input, first %v", name, len(r1.errs), r1.errs[0])
		}
		if r1.digest != r2.digest {
			t.Errorf("%s: same seed, different outputs", name)
		}
		if r1.digest == r3.digest {
			t.Errorf("%s: seeds 1 and 2 give the same outputs", name)
		}
		for i := range r1.states {
			if !r1.states[i].equal(r2.states[i]) {
				t.Errorf("%s/%s: same seed, different state", name, a.Operators[i].Name)
			}
			if !a.Operators[i].Stateful && len(r1.states[i]) > 0 {
				t.Errorf("%s/%s: stateless operator wrote state", name, a.Operators[i].Name)
			}
			if a.Operators[i].Stateful && len(r1.states[i]) == 0 && a.Operators[i].Name != "Join" {
				t.Errorf("%s/%s: stateful operator kept no state", name, a.Operators[i].Name)
			}
		}
	}
}

// TestFanOut compares each edge's records per record of its source
// operator with clasp's ratio (and PRED's with env's selectivities).
func TestFanOut(t *testing.T) {
	ratio := map[string]map[[2]int]float64{}
	for _, name := range clasp.AppNames() {
		ratio[name] = map[[2]int]float64{}
		for _, e := range must(clasp.AppByName(name)).Edges {
			ratio[name][[2]int{e.From, e.To}] = e.Ratio
		}
	}
	ratio["pred"] = map[[2]int]float64{}
	p := env.PRED()
	for _, e := range p.Edges {
		ratio["pred"][[2]int{e.From, e.To}] = p.Tasks[e.From].Selectivity
	}
	for _, name := range AppNames() {
		a := appFor(t, name)
		r := newRun(a)
		r.feed(t, 3, testInputs(name))
		for _, e := range a.Edges {
			want := ratio[name][e]
			got := float64(r.edges[e]) / float64(r.processed[e[0]])
			if math.Abs(got-want) > 0.1*want+0.02 {
				t.Errorf("%s %s→%s: %.3f records per record, want ≈ %.3f", name,
					a.Operators[e[0]].Name, a.Operators[e[1]].Name, got, want)
			}
		}
	}
}

// TestWordCountExact: the final counts equal an oracle's count of the
// generated words; sentences hold 12 words on average, at least 10.
func TestWordCountExact(t *testing.T) {
	a := WC()
	r := newRun(a)
	const n = 3000
	r.feed(t, 11, n)
	oracle := map[string]uint64{}
	src := a.NewSource(11)
	words := 0
	for range n {
		_, p := src.Next(nil)
		ws := strings.Fields(string(p))
		if len(ws) < 10 {
			t.Fatalf("sentence of %d words", len(ws))
		}
		words += len(ws)
		for _, w := range ws {
			oracle[w]++
		}
	}
	if m := float64(words) / n; m < 11.8 || m > 12.2 {
		t.Errorf("mean words per sentence %.2f, want 12", m)
	}
	if len(r.states[1]) != len(oracle) {
		t.Fatalf("%d counted words, oracle %d", len(r.states[1]), len(oracle))
	}
	for w, c := range oracle {
		got, err := Count(r.states[1][WordKey([]byte(w))])
		if err != nil || got != c {
			t.Fatalf("count of %q: %d (%v), want %d", w, got, err, c)
		}
	}
}

// TestETLSemantics: Join emits one tuple per message with its ten fields;
// both branches reach Sink once per message; TableInsert holds every
// message; RangeFilter flags the zero dropoff coordinates.
func TestETLSemantics(t *testing.T) {
	a := ETL()
	r := newRun(a)
	r.trace = true
	const n = 1000
	r.feed(t, 5, n)
	if len(r.errs) > 0 {
		t.Fatal(r.errs[0])
	}
	if r.processed[5] != n || r.processed[9] != 2*n {
		t.Fatalf("Annotate saw %d, Sink %d, want %d and %d", r.processed[5], r.processed[9], n, 2*n)
	}
	if len(r.states[4]) != 0 {
		t.Errorf("Join left %d keys", len(r.states[4]))
	}
	flagged := 0
	for _, e := range r.outputs[1] {
		var f fieldRec
		if err := f.decode(e.p); err != nil {
			t.Fatal(err)
		}
		if f.flags&flagRange != 0 {
			flagged++
		}
	}
	// 2% of messages have two zero dropoff coordinates, of 10 fields.
	if share := float64(flagged) / float64(10*n); share < 0.002 || share > 0.008 {
		t.Errorf("RangeFilter flagged %.4f of fields, want ≈ 0.004", share)
	}
	tab := r.ops[8].(*table)
	for i := range n {
		if _, ok := tab.lookup(uint64(i + 1)); !ok {
			t.Fatalf("message %d not in the table", i+1)
		}
	}
	// Joined values equal the source's parsed fields.
	src := a.NewSource(5)
	for i, e := range r.outputs[4] {
		var j joined
		if err := j.decode(e.p); err != nil {
			t.Fatal(err)
		}
		_, p := src.Next(nil)
		var f taxiFields
		if err := parseTaxiSenML(p, &f); err != nil {
			t.Fatal(err)
		}
		if j.msg != uint64(i+1) {
			t.Fatalf("join output %d is message %d (FIFO executor)", i, j.msg)
		}
		for k, fld := range etlFields {
			if j.v[k] != f.num[fld] && j.flags&flagInterpolated == 0 {
				t.Fatalf("message %d field %s: %v, source %v", j.msg, taxiNames[fld], j.v[k], f.num[fld])
			}
		}
	}
}

// TestNWMFailuresBeforeSuccess holds join-by-host's reports against an
// oracle over the generated log.
func TestNWMFailuresBeforeSuccess(t *testing.T) {
	a := NWM()
	r := newRun(a)
	r.trace = true
	const n = 3000
	r.feed(t, 9, n)
	pending := map[uint64]uint64{}
	var want []uint64
	src := a.NewSource(9)
	for range n {
		_, p := src.Next(nil)
		f := strings.Fields(string(p))
		host, _ := numAfter([]byte(f[1]), "host")
		if f[3] == "Accepted" {
			want = append(want, pending[host])
			pending[host] = 0
		} else {
			pending[host]++
			want = append(want, pending[host])
		}
	}
	if len(r.outputs[8]) != n {
		t.Fatalf("join emitted %d reports, want %d", len(r.outputs[8]), n)
	}
	for i, e := range r.outputs[8] {
		rd := reader{b: e.p}
		rd.u64()
		rd.byte1()
		if got := rd.u64(); got != want[i] {
			t.Fatalf("report %d: %d, want %d", i, got, want[i])
		}
	}
}

// TestSenMLSampleShape parses the RIoTBench TAXI sample (when the shared
// data is present) and checks that generated messages have its shape:
// the same entries in the same order with the same units and value kinds,
// and a mean size within 10%.
func TestSenMLSampleShape(t *testing.T) {
	f, err := os.Open("/work/shared/data/traces/raw/riotbench_TAXI_sample_data_senml.csv")
	if err != nil {
		t.Skipf("sample not available: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var shape string
	size, lines := 0, 0
	for sc.Scan() {
		line := sc.Bytes()
		i := bytes.IndexByte(line, ',')
		msg := line[i+1:]
		var tf taxiFields
		if err := parseTaxiSenML(msg, &tf); err != nil {
			t.Fatalf("sample line %d: %v", lines+1, err)
		}
		if lines == 0 {
			shape = senmlShape(t, msg)
		}
		size += len(msg)
		lines++
	}
	src := newTaxiSource(1, "etl")
	gsize := 0
	for i := range 1000 {
		_, p := src.Next(nil)
		if s := senmlShape(t, p); s != shape {
			t.Fatalf("generated message %d has shape\n%s\nsample\n%s", i, s, shape)
		}
		gsize += len(p)
	}
	ms, mg := float64(size)/float64(lines), float64(gsize)/1000
	t.Logf("sample: %d messages, mean %.0f bytes; generated mean %.0f bytes", lines, ms, mg)
	if math.Abs(mg-ms) > 0.1*ms {
		t.Errorf("generated mean size %.0f, sample %.0f", mg, ms)
	}
}

// senmlShape lists each entry's member names and (for u and n) values.
func senmlShape(t *testing.T, msg []byte) string {
	var b strings.Builder
	s := jscan{b: msg}
	i := bytes.Index(msg, []byte(`"e":[`))
	s.i = i + 5
	for {
		s.ws()
		if s.eat(']') {
			break
		}
		s.eat(',')
		s.ws()
		if !s.eat('{') {
			t.Fatalf("bad entry at %d", s.i)
		}
		for first := true; ; first = false {
			if s.eat('}') {
				break
			}
			if !first {
				s.eat(',')
			}
			k, _ := s.str()
			s.colon()
			v, _ := s.str()
			b.Write(k)
			if string(k) == "u" || string(k) == "n" {
				b.WriteString("=" + string(v))
			}
			b.WriteByte(' ')
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestMQTTLayout(t *testing.T) {
	for _, n := range []int{0, 10, 200, 20000} {
		payload := bytes.Repeat([]byte{'x'}, n)
		p := appendMQTTPublish(nil, []byte("a/b"), payload)
		if p[0] != 0x30 {
			t.Fatalf("header %#x", p[0])
		}
		topic, got, err := parseMQTTPublish(p)
		if err != nil || string(topic) != "a/b" || !bytes.Equal(got, payload) {
			t.Fatalf("payload %d: %q %d %v", n, topic, len(got), err)
		}
	}
	// §2.2.3's example: 321 = 0xC1 0x02.
	p := appendMQTTPublish(nil, []byte("t"), make([]byte, 318))
	if p[1] != 0xC1 || p[2] != 0x02 {
		t.Fatalf("remaining length bytes %#x %#x, want 0xc1 0x02", p[1], p[2])
	}
}

func TestBloom(t *testing.T) {
	reg := registry()
	var id [32]byte
	for k := range Taxis {
		if registered(k) && !reg.has(taxiID(id[:0], k)) {
			t.Fatalf("registered taxi %d not in the filter", k)
		}
	}
	// Ids of taxis beyond the fleet: the false-positive rate is ≈ 0.5%.
	fp := 0
	const n = 10000
	for k := Taxis; k < Taxis+n; k++ {
		if reg.has(taxiID(id[:0], k)) {
			fp++
		}
	}
	if fp > n/50 {
		t.Errorf("%d false positives of %d", fp, n)
	}
	t.Logf("false positives: %d of %d", fp, n)
}

// TestBadInput feeds every operator truncated and corrupted versions of
// its real inputs: no panic, and an error changes no state and emits
// nothing.
func TestBadInput(t *testing.T) {
	for _, name := range AppNames() {
		a := appFor(t, name)
		r := newRun(a)
		r.keep = 5
		r.feed(t, 4, 5)
		for i, s := range a.Operators {
			op := s.New()
			st := r.states[i].clone()
			for _, in := range r.inputs[i] {
				p := in.Payload
				var bad [][]byte
				for cut := 0; cut < len(p); cut += 1 + len(p)/40 {
					bad = append(bad, p[:cut])
				}
				for j := 0; j < len(p); j += 1 + len(p)/20 {
					c := slices.Clone(p)
					c[j] ^= 0xff
					bad = append(bad, c)
				}
				bad = append(bad, append(slices.Clone(p), 0))
				if s.Stateful { // the right payload under another key
					before := st.clone()
					rec := in
					rec.Key++
					if err := op.Process(rec, st, &collector{}); err == nil || !st.equal(before) {
						t.Errorf("%s/%s: a record under a key not its own: err %v, state changed %v", name, s.Name, err, !st.equal(before))
					}
				}
				for _, b := range bad {
					before := st.clone()
					var c collector
					rec := in
					rec.Payload = b
					err := op.Process(rec, st, &c)
					if err == nil {
						continue
					}
					if !strings.HasPrefix(err.Error(), "ops: ") {
						t.Errorf("%s/%s: error %q lacks the package prefix", name, s.Name, err)
					}
					if !st.equal(before) || len(c.out) > 0 {
						t.Fatalf("%s/%s: a failing record changed state or emitted (%v)", name, s.Name, err)
					}
				}
			}
		}
	}
}

// TestConcurrentInstances runs one instance of every operator from four
// goroutines with separate keyed stores (run with -race).
func TestConcurrentInstances(t *testing.T) {
	for _, name := range AppNames() {
		a := appFor(t, name)
		r := newRun(a)
		r.keep = 50
		r.feed(t, 6, 50)
		for i, s := range a.Operators {
			op := s.New()
			done := make(chan struct{})
			for range 4 {
				go func() {
					defer func() { done <- struct{}{} }()
					st := memState{}
					for _, in := range r.inputs[i] {
						if err := op.Process(in, st, discard{}); err != nil {
							t.Errorf("%s/%s: %v", name, s.Name, err)
							return
						}
					}
				}()
			}
			for range 4 {
				<-done
			}
		}
	}
}
