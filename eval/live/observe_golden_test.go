package live

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"streamscale/env"
	"streamscale/serve/runtime/planner"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestObserveGolden pins live's observations: fixed worker reports for
// four intervals (two workers, every operator, one task idle in one
// interval so that its service time carries over, a report for an
// operator that is not a task, p95 above and below the SLO, uneven
// allocations) fed through Observe, for both profiles, every feature
// printed exactly (shortest round-trip form). The file was written before
// the observation builder moved into env; rerun with -update only after an
// intended change and review the diff.
func TestObserveGolden(t *testing.T) {
	var buf bytes.Buffer
	for _, profile := range env.Profiles() {
		o, sc := observer(t, profile)
		n := len(sc.App.Tasks)
		for step := range 4 {
			var tasks []planner.TaskObs
			for w := range 2 {
				for op := range o.nOps {
					f := float64(1 + op + 3*w + 7*step)
					obs := planner.TaskObs{Worker: uint32(w), Op: op,
						InputRate: 300 * f, Throughput: 280 * f, Queue: 40 * f * f, LatencyMS: 15 * f,
						CPUCores: 0.01 * f, Millicores: 200 + 100*op}
					if step == 2 && op == 1 {
						obs.Throughput, obs.CPUCores = 0, 0
					}
					tasks = append(tasks, obs)
				}
			}
			tasks = append(tasks, planner.TaskObs{Op: o.nOps + 3, InputRate: 1e6}) // not an operator: ignored
			alloc := make([]float64, n)
			for k := range alloc {
				alloc[k] = min(sc.MinCPU+float64(k*700+step*300), sc.MaxCPU)
			}
			p95 := []float64{40, 900, 2500, 120}[step]
			got := o.Observe(Measured{Tasks: tasks, P95MS: p95, MeanMS: p95 / 3, Throughput: 1234.5 + float64(step)}, alloc)
			fmt.Fprintf(&buf, "%s step %d\napp %s\nserver %s\ntask %s\n", profile, step, exact(got.App), exact(got.Server), exact(got.Task))
		}
	}
	path := filepath.Join("testdata", "observe.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("observations differ from %s:\n got\n%s", path, buf.String())
	}
}

func exact(xs []float64) string {
	var b []byte
	for i, x := range xs {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
	}
	return string(b)
}
