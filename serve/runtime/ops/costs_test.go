package ops

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "measure every operator and rewrite costs.md")

// costInputs runs app over seed 1 and returns the run, with each
// operator's first keep inputs recorded.
func costInputs(tb testing.TB, a App, n, keep int) *run {
	r := newRun(a)
	r.keep = keep
	r.feed(tb, 1, n)
	return r
}

func costInputCount(name string) (inputs, keep int) {
	if name == "syn" {
		return 30, 30
	}
	return 3000, 2000
}

// BenchmarkOperator measures each operator on the records it received in
// a run of its app (seed 1), cycling through them over the state the run
// left; ns/op is the cost per record.
func BenchmarkOperator(b *testing.B) {
	for _, name := range AppNames() {
		a := appByNameB(b, name)
		n, keep := costInputCount(name)
		r := costInputs(b, a, n, keep)
		for i, s := range a.Operators {
			b.Run(name+"/"+s.Name, func(b *testing.B) {
				op := s.New()
				st := r.states[i].clone()
				in := r.inputs[i]
				j := 0
				b.ReportAllocs()
				for b.Loop() {
					_ = op.Process(in[j%len(in)], st, discard{})
					j++
				}
			})
		}
	}
}

func appByNameB(tb testing.TB, name string) App {
	a, err := AppByName(name)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

type cost struct {
	app, op       string
	mean, cv, p50 float64 // µs, -, µs
	records       int
}

// measure runs op over its recorded inputs (after a warm pass) on a locked
// thread. Pass one gives the mean: the thread CPU time per record over all
// samples, untimed one by one (robust to a loaded machine). Pass two times
// each record alone for the median and the coefficient of variation: with
// the thread CPU clock when the mean is at least 10 µs (the clock costs
// about 0.3 µs a read), else with the monotonic clock (about 0.03 µs),
// over the fastest 99% of samples (the slowest 1% are preemptions on the
// shared machine).
func measure(a App, r *run, i, samples int) cost {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	op := a.Operators[i].New()
	st := r.states[i].clone()
	in := r.inputs[i]
	for _, rec := range in {
		_ = op.Process(rec, st, discard{})
	}
	c0 := threadCPU()
	for j := range samples {
		_ = op.Process(in[j%len(in)], st, discard{})
	}
	cpu := float64((threadCPU() - c0).Nanoseconds()) / 1e3 / float64(samples)
	clock := func() time.Duration { return time.Duration(time.Now().UnixNano()) }
	if cpu >= 10 {
		clock = threadCPU
	}
	d := make([]float64, samples)
	for j := range d {
		t0 := clock()
		_ = op.Process(in[j%len(in)], st, discard{})
		d[j] = float64((clock() - t0).Nanoseconds()) / 1e3
	}
	slices.Sort(d)
	d = d[:len(d)-len(d)/100]
	var sum, sq float64
	for _, x := range d {
		sum += x
	}
	mean := sum / float64(len(d))
	for _, x := range d {
		sq += (x - mean) * (x - mean)
	}
	return cost{app: a.Name, op: a.Operators[i].Name, mean: cpu,
		cv: math.Sqrt(sq/float64(len(d)-1)) / mean, p50: d[len(d)/2], records: samples}
}

// TestWriteCosts measures every operator and rewrites costs.md (only with
// -update).
func TestWriteCosts(t *testing.T) {
	if !*update {
		t.Skip("run with -update to measure and rewrite costs.md")
	}
	var b strings.Builder
	b.WriteString("# Operator costs\n\n")
	b.WriteString("CPU cost per record of every operator of every app, measured by\n")
	b.WriteString("`go test ./serve/runtime/ops -run TestWriteCosts -update` (which rewrites this file).\n")
	b.WriteString("Each operator processes the records it received in a run of its app (seed 1, 3,000 inputs; SYN 30),\n")
	b.WriteString("cycling over them on the state the run left, on a locked thread. **mean** is the thread CPU time\n")
	b.WriteString("(CLOCK_THREAD_CPUTIME_ID) of a pass over all timed records, per record, which a loaded machine\n")
	b.WriteString("barely affects. A second pass times each record alone: **median** and **CV** (standard deviation /\n")
	b.WriteString("mean) are over the fastest 99% of those times (the slowest 1% are preemptions on the shared\n")
	b.WriteString("machine), taken with the thread CPU clock for operators of 10 µs or more and with the monotonic\n")
	b.WriteString("clock below (its 0.03 µs per reading inflates the smallest medians and CVs, and preemptions\n")
	b.WriteString("still inflate the wall-clock CVs). `go test ./serve/runtime/ops -bench Operator` gives batch figures.\n\n")
	fmt.Fprintf(&b, "Go %s, %s/%s, %d CPUs.\n\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	b.WriteString("| app | operator | mean CPU µs | CV | median µs | records timed |\n|---|---|---:|---:|---:|---:|\n")
	for _, name := range AppNames() {
		a := appByName(t, name)
		n, keep := costInputCount(name)
		r := costInputs(t, a, n, keep)
		samples := 20000
		if name == "syn" {
			samples = 500
		}
		for i := range a.Operators {
			c := measure(a, r, i, samples)
			fmt.Fprintf(&b, "| %s | %s | %.3f | %.2f | %.3f | %d |\n", c.app, c.op, c.mean, c.cv, c.p50, c.records)
		}
	}
	if err := os.WriteFile("costs.md", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCostsFile: costs.md lists every operator of every app (not the
// numbers, which are measurements).
func TestCostsFile(t *testing.T) {
	b, err := os.ReadFile("costs.md")
	if err != nil {
		t.Fatalf("costs.md: %v (regenerate with -run TestWriteCosts -update)", err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, "|")
		if len(f) == 8 {
			rows[strings.TrimSpace(f[1])+"/"+strings.TrimSpace(f[2])] = true
		}
	}
	for _, name := range AppNames() {
		for _, s := range appByName(t, name).Operators {
			if !rows[name+"/"+s.Name] {
				t.Errorf("costs.md has no row for %s/%s", name, s.Name)
			}
		}
	}
}
