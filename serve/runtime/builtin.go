package runtime

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"streamscale/rng"
	"streamscale/serve/runtime/ops"
)

// Apps returns the application of a name: the real applications of package
// ops (pred, etl, wc, sd, aa, pl, nwm, syn), and "chain", ten no-op
// operators for measuring dispatch alone.
var Apps = func(name string) (ops.App, error) {
	if name == "chain" {
		return Chain("chain", 10, 0), nil
	}
	app, err := ops.AppByName(name)
	if err != nil {
		return ops.App{}, fmt.Errorf("runtime: %w (or chain)", err)
	}
	return app, nil
}

// BuiltinNames are the small test applications' names (Builtin).
var BuiltinNames = []string{"wc", "syn", "chain"}

// AppNames lists the names Apps accepts.
func AppNames() []string { return append(ops.AppNames(), "chain") }

// Builtin returns one of the runtime's own small applications, which its
// tests and benchmarks use because their outputs are simple to check:
// "wc" (split lines of WordsPerLine words → count words, the count
// stateful and exact), "syn" (10 operators of 400 µs of busy work each),
// "chain" (10 no-op operators, for dispatch speed). The applications the
// commands run are the real ones of package ops (Apps).
func Builtin(name string) (ops.App, error) {
	switch name {
	case "wc":
		return WordCount(), nil
	case "syn":
		return Chain("syn", 10, 400*time.Microsecond), nil
	case "chain":
		return Chain("chain", 10, 0), nil
	}
	return ops.App{}, fmt.Errorf("runtime: unknown app %q (have %s)", name, strings.Join(BuiltinNames, ", "))
}

// Vocabulary is the word-count source's vocabulary size.
const Vocabulary = 1000

// WordsPerLine is the number of words of each generated line.
const WordsPerLine = 10

// WordCount is split → count: the source generates lines of WordsPerLine
// words drawn uniformly from Vocabulary words ("w0" … "w999") from the
// named stream rng.RuntimeLines of the seed; split emits each word keyed by its FNV-1a hash; count
// keeps each word's count as 8 little-endian bytes.
func WordCount() ops.App {
	return ops.App{
		Name: "wc",
		Operators: []ops.Spec{
			{Name: "split", New: func() ops.Operator { return splitOp{} }},
			{Name: "count", Stateful: true, New: func() ops.Operator { return countOp{} }},
		},
		Edges:     [][2]int{{0, 1}},
		NewSource: func(seed uint64) ops.Source { return &lineSource{r: rng.New(seed, rng.RuntimeLines)} },
	}
}

// WordKey is the key of a word.
func WordKey(word []byte) uint64 {
	h := fnv.New64a()
	h.Write(word)
	return h.Sum64()
}

type lineSource struct {
	r    *rand.Rand
	line uint64
}

func (s *lineSource) Next(buf []byte) (uint64, []byte) {
	buf = buf[:0]
	for i := range WordsPerLine {
		if i > 0 {
			buf = append(buf, ' ')
		}
		buf = append(buf, 'w')
		buf = fmt.Appendf(buf, "%d", s.r.IntN(Vocabulary))
	}
	s.line++
	return s.line % 1024, buf
}

type splitOp struct{}

func (splitOp) Process(in ops.Record, _ ops.State, out ops.Emitter) error {
	p := in.Payload
	for len(p) > 0 {
		i := 0
		for i < len(p) && p[i] != ' ' {
			i++
		}
		if i > 0 {
			out.Emit(1, WordKey(p[:i]), p[:i])
		}
		if i < len(p) {
			i++
		}
		p = p[i:]
	}
	return nil
}

type countOp struct{}

func (countOp) Process(in ops.Record, st ops.State, _ ops.Emitter) error {
	var n uint64
	if v, ok := st.Get(in.Key); ok {
		if len(v) != 8 {
			return fmt.Errorf("wc: count of key %d has %d bytes", in.Key, len(v))
		}
		n = binary.LittleEndian.Uint64(v)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n+1)
	st.Put(in.Key, b[:])
	return nil
}

// Chain is n stateless operators in a line, each spinning for work of CPU
// time per record (0: none) and passing the record on with its key.
func Chain(name string, n int, work time.Duration) ops.App {
	app := ops.App{Name: name, NewSource: func(seed uint64) ops.Source { return &keySource{r: rng.New(seed, rng.RuntimeKeys)} }}
	for i := range n {
		last := i == n-1
		app.Operators = append(app.Operators, ops.Spec{Name: fmt.Sprintf("op%d", i), New: func() ops.Operator { return chainOp{next: i + 1, last: last, work: work} }})
		if !last {
			app.Edges = append(app.Edges, [2]int{i, i + 1})
		}
	}
	return app
}

type keySource struct{ r *rand.Rand }

func (s *keySource) Next(buf []byte) (uint64, []byte) {
	buf = append(buf[:0], "event"...)
	return s.r.Uint64N(1 << 20), buf
}

type chainOp struct {
	next int
	last bool
	work time.Duration
}

func (c chainOp) Process(in ops.Record, _ ops.State, out ops.Emitter) error {
	if c.work > 0 {
		spin(c.work)
	}
	if !c.last {
		out.Emit(c.next, in.Key, in.Payload)
	}
	return nil
}

// spin burns about d of CPU time.
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 200 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink.Store(x) // keep the loop from being optimized away
}

var sink atomic.Uint64
