package traces

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Trace is a replayable arrival-rate series.
type Trace struct {
	Name   string    // "taxi", "taxi-train", "intel", or the path given
	Source string    // file path read, or "synthetic"
	Counts []float64 // raw window counts, one per step (already cycled/extended to the trace length)
	Scale  float64   // events per second per window count (documented per named trace)
	Mult   float64   // rate multiplier (x2 = the paper's doubled training variant); 0 means 1
}

// FromRates returns the trace named name that replays rates, events/s per
// step (Counts rates, Scale 1, Source "synthetic"): a workload built in
// memory (a constant rate, the CLASP load modes, a test's series). It
// keeps rates, which the caller must not modify afterwards.
func FromRates(name string, rates []float64) *Trace {
	return &Trace{Name: name, Source: "synthetic", Counts: rates, Scale: 1}
}

// Origin names where the trace came from without host-specific paths:
// the base name of the file read, or Source itself when it is
// "synthetic" or empty.
func (t *Trace) Origin() string {
	if t.Source == "synthetic" || t.Source == "" {
		return t.Source
	}
	return filepath.Base(t.Source)
}

// Len returns the number of steps, len(t.Counts).
func (t *Trace) Len() int { return len(t.Counts) }

// Rate returns the arrival rate, in events per second, at step (0-based):
//
//	Counts[step mod Len] × Scale × Mult.
//
// Steps past the end wrap around, as do negative steps. A Mult of 0 is taken
// as 1. Rate is never negative or NaN: an empty trace, or a product that is
// negative or NaN, gives 0.
func (t *Trace) Rate(step int) float64 {
	n := len(t.Counts)
	if n == 0 {
		return 0
	}
	i := step % n
	if i < 0 {
		i += n
	}
	r := t.Counts[i] * t.Scale * t.mult()
	if !(r > 0) { // negative, zero, or NaN
		return 0
	}
	return r
}

// MaxRate is the largest rate, events/s, of a trace point that [Load]
// accepts (10⁹: the paper's traces peak near 5,000/s). It is env.MaxRate,
// the bound the simulator validates: a rate beyond some 10²⁴ leaves the
// range of its event times.
const MaxRate = 1e9

// checkRates refuses a trace with a point whose rate exceeds MaxRate.
func checkRates(t *Trace) error {
	for i := range t.Counts {
		if r := t.Rate(i); r > MaxRate {
			return fmt.Errorf("traces: %s: point %d: rate %g events/s (count %g × scale %g × multiplier %g) exceeds the maximum %g",
				t.Name, i, r, t.Counts[i], t.Scale, t.mult(), float64(MaxRate))
		}
	}
	return nil
}

// mult is the rate multiplier, Mult with 0 taken as 1.
func (t *Trace) mult() float64 {
	if t.Mult == 0 {
		return 1
	}
	return t.Mult
}

// Options configures [Load].
type Options struct {
	Dir      string                           // data directory; "" means DefaultDir()
	RateMult float64                          // rate multiplier stored as Trace.Mult; 0 means 1; must be finite and > 0
	Seed     uint64                           // root seed for the synthetic fallback
	Logf     func(format string, args ...any) // where the fallback log line goes; nil = log.Printf
}

// named describes one named trace.
type named struct {
	file   string  // file name under the data directory
	skip   int     // points of the file skipped before the ones used
	use    int     // points taken from the file (after skip)
	length int     // steps after cyclic extension (≥ use)
	scale  float64 // events/s per window count, when peakOf is ""
	// peakOf names the trace whose peak rate this one is scaled to:
	// Scale = max rate of peakOf / max of this trace's replayed counts.
	peakOf string
	// scaleOf names the trace whose Scale this one takes (a held-out
	// slice of the same source keeps its events/s per count).
	scaleOf string
	synth   synthParams
}

// namedTraces are the traces of the paper's experiments.
var namedTraces = map[string]named{
	// Evaluation trace: 2015-01-01 00:00 to 2015-01-13 11:55, passengers per
	// 5-minute window (min 255, max 5,117, mean 2,369).
	"taxi": {
		file:   "taxi_nab_5min_2015-01-01_3600pts.csv",
		use:    3600,
		length: 3600,
		scale:  1,
		synth:  taxiSynth(2369, 255, 5117),
	},
	// Training trace: 2014-12-30 00:00 to 2014-12-31 05:15 (min 328,
	// max 3,784, mean 2,075), disjoint from and earlier than "taxi".
	"taxi-train": {
		file:   "taxi_nab_5min_2014-12-30_train_352pts.csv",
		use:    352,
		length: 352,
		scale:  1,
		synth:  taxiSynth(2075, 328, 3784),
	},
	// Intel Lab readings per 5-minute window, 2004-03-04 00:00 to
	// 2004-03-07 15:55 (the paper's 1,056 points), replayed cyclically to the
	// 3,600 steps of the taxi evaluation trace.
	//
	// The Intel counts (hundreds of readings per window) are scaled to the
	// peak rate of the taxi evaluation trace, so that one cluster size
	// serves both: Scale = peak(taxi) / peak(the 1,056 replayed counts),
	// computed from the files at Load; with the files as shipped 5,117 / 362
	// ≈ 14.135, which takes the mean count of 321.9 to 4,550/s.
	"intel": {
		file:   "intel_5min_counts.csv",
		use:    1056,
		length: 3600,
		peakOf: "taxi",
		synth:  intelSynth,
	},
	// The Intel windows after the paper's 1,056, 2004-03-07 16:00 to
	// 2004-03-08 23:55 (384 points: min 292, max 428, mean 355.7 counts),
	// disjoint from "intel" and not used by the paper. At intel's Scale
	// (events/s per count) they span 4,130–6,050/s. A training trace for
	// the ablation that trains on intel-like workloads (train
	// -train-traces); not an evaluation trace.
	"intel-train": {
		file:    "intel_5min_counts.csv",
		skip:    1056,
		use:     384,
		length:  384,
		scaleOf: "intel",
		synth:   intelSynth,
	},
}

// Names returns the names of the named traces, sorted.
func Names() []string {
	names := make([]string, 0, len(namedTraces))
	for n := range namedTraces {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Load returns the named trace nameOrPath ("taxi", "taxi-train", "intel",
// "intel-train"; see
// [Names]) read from opts.Dir, or else the trace in the file nameOrPath, which
// must end in .csv or .parquet; a file is replayed as it is, with Scale 1.
//
// When a named trace's file does not exist, Load logs one line through
// opts.Logf and returns a seeded synthetic trace of the same length and
// similar statistics, with Source "synthetic". A missing path is an error,
// and so are a path that is not a regular file (a FIFO, a device, a
// directory), a file over MaxFileBytes, and a point whose rate (Rate)
// exceeds MaxRate.
func Load(nameOrPath string, opts Options) (*Trace, error) {
	mult := opts.RateMult
	if mult == 0 {
		mult = 1
	}
	if math.IsNaN(mult) || math.IsInf(mult, 0) || mult < 0 {
		return nil, fmt.Errorf("traces: rate multiplier %v, want finite and > 0", opts.RateMult)
	}
	if spec, ok := namedTraces[nameOrPath]; ok {
		t, err := loadNamed(nameOrPath, spec, mult, opts)
		if err != nil {
			return nil, err
		}
		if err := checkRates(t); err != nil {
			return nil, err
		}
		return t, nil
	}
	if nameOrPath == "" {
		return nil, errors.New("traces: empty trace name")
	}
	ext := strings.ToLower(filepath.Ext(nameOrPath))
	if ext != ".csv" && ext != ".parquet" {
		return nil, fmt.Errorf("traces: %q is neither a named trace (%s) nor a .csv or .parquet path",
			nameOrPath, strings.Join(Names(), ", "))
	}
	counts, err := readFile(nameOrPath)
	if err != nil {
		return nil, err
	}
	t := &Trace{Name: nameOrPath, Source: nameOrPath, Counts: counts, Scale: 1, Mult: mult}
	if err := checkRates(t); err != nil {
		return nil, err
	}
	return t, nil
}

func loadNamed(name string, spec named, mult float64, opts Options) (*Trace, error) {
	dir := opts.Dir
	if dir == "" {
		dir = DefaultDir()
	}
	path := filepath.Join(dir, spec.file)
	t := &Trace{Name: name, Source: path, Scale: spec.scale, Mult: mult}
	counts, err := readFile(path)
	lo := spec.skip
	switch {
	case errors.Is(err, fs.ErrNotExist):
		logf := opts.Logf
		if logf == nil {
			logf = log.Printf
		}
		logf("traces: %s: %s not found; using seeded synthetic trace (seed %d)", name, path, opts.Seed)
		counts, lo = synthesize(name, spec.use, spec.synth, opts.Seed), 0
		t.Source = "synthetic"
	case err != nil:
		return nil, err
	case len(counts) < spec.skip+spec.use:
		return nil, fmt.Errorf("traces: %s: %s has %d data rows, want at least %d", name, path, len(counts), spec.skip+spec.use)
	}
	base := counts[lo : lo+spec.use]
	t.Counts = cycle(base, spec.length)
	switch {
	case spec.peakOf != "":
		ref, err := loadNamed(spec.peakOf, namedTraces[spec.peakOf], 1, opts)
		if err != nil {
			return nil, fmt.Errorf("traces: %s: the peak of %s sets its scale: %w", name, spec.peakOf, err)
		}
		peak := slices.Max(base)
		if !(peak > 0) || math.IsInf(peak, 0) {
			return nil, fmt.Errorf("traces: %s: %s peaks at %v, want a finite count > 0", name, path, peak)
		}
		t.Scale = slices.Max(ref.Counts) * ref.Scale / peak
	case spec.scaleOf != "":
		ref, err := loadNamed(spec.scaleOf, namedTraces[spec.scaleOf], 1, opts)
		if err != nil {
			return nil, fmt.Errorf("traces: %s: %s sets its scale: %w", name, spec.scaleOf, err)
		}
		t.Scale = ref.Scale
	}
	return t, nil
}

// cycle returns the first n points of base repeated end to end.
func cycle(base []float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = base[i%len(base)]
	}
	return out
}

// MaxFileBytes bounds a trace file, bytes (64 MiB: some five million CSV
// rows; the shipped traces are under 100 kB). Load refuses a larger file.
const MaxFileBytes = 64 << 20

// errNotRegular and errTooLarge are wrapped by readFile's refusals.
var (
	errNotRegular = errors.New("not a regular file")
	errTooLarge   = errors.New("file too large")
)

// readFile reads the counts of a .csv or .parquet file: a regular file of
// at most MaxFileBytes. It is opened without blocking (O_NONBLOCK, so a
// FIFO with no writer cannot hang it) and checked with fstat before
// anything is read; a FIFO, a device such as /dev/zero, a directory or a
// larger file is refused with an error naming the path (and the limit).
// (internal/regfile does the same for the commands; traces may import no
// project package.)
func readFile(path string) ([]float64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("traces: %s: %w (mode %v)", path, errNotRegular, st.Mode().Type())
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("traces: %s: %w: %d bytes, limit %d", path, errTooLarge, st.Size(), MaxFileBytes)
	}
	if strings.EqualFold(filepath.Ext(path), ".parquet") {
		return ReadParquet(f, st.Size(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("traces: %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("traces: %s: %w: grew past the limit %d while read", path, errTooLarge, MaxFileBytes)
	}
	return ReadCSV(bytes.NewReader(data), path)
}

// DefaultDir returns the data directory: $STREAMSCALE_TRACES if set, else
// ../shared/data/traces relative to the module root, the nearest directory at
// or above the working directory that holds go.mod. It works the same from the
// repository root (go run) and from a package directory (go test). If no
// go.mod is found it returns the plain relative path "../shared/data/traces".
func DefaultDir() string {
	if d := os.Getenv("STREAMSCALE_TRACES"); d != "" {
		return d
	}
	rel := filepath.Join("..", "shared", "data", "traces")
	dir, err := os.Getwd()
	if err != nil {
		return rel
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !st.IsDir() {
			return filepath.Join(dir, rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return rel
		}
		dir = parent
	}
}
