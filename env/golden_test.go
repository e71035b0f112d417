package env

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/golden")

// TestGoldenTrajectories pins short trajectories of both profiles, in both
// simulator cores, under a fixed action schedule, and of the fast core
// under the realistic physics (the tracer's latencies, CFS, noise and
// lag) with and without spread hops end to end. Any change to the
// physics, the reward or the observation shows up as a diff; rerun with
// -update after an intended change and review the diff.
func TestGoldenTrajectories(t *testing.T) {
	realistic, err := ScenarioPhysics(ScenarioRealistic)
	if err != nil {
		t.Fatal(err)
	}
	hops := realistic
	hops.HopMS, hops.HopSpread, hops.HopsEndToEnd = 10, 1, true
	for _, tc := range []struct {
		name    string
		profile string
		mode    Mode
		physics Physics
	}{{"pred_fluid", "pred", Fluid, Physics{}}, {"etl_fluid", "etl", Fluid, Physics{}}, {"pred_perevent", "pred", PerEvent, Physics{}},
		{"etl_realistic", "etl", Fluid, realistic}, {"pred_realistic", "pred", Fluid, realistic},
		{"etl_hops", "etl", Fluid, hops}, {"pred_hops", "pred", Fluid, hops}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := EdgeConfig(tc.profile, 7, diurnal(90))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Mode = tc.mode
			cfg.Physics = tc.physics
			if tc.mode == PerEvent {
				// Keep the per-event core cheap: a twentieth of the rate,
				// twenty times the demand.
				w := diurnal(90)
				for i := range w {
					w[i] /= 20
				}
				cfg.Workload = w
				for k := range cfg.App.Tasks {
					cfg.App.Tasks[k].MIPSPerEvent *= 20
				}
			}
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			obs, _, _ := e.Reset(0)
			fmt.Fprintf(&buf, "# step offered throughput p95_ms mean_ms violated cpu reward slo risk resource progress churn recovery reconf | app features\n")
			fmt.Fprintf(&buf, "reset app=%s\n", fixed(obs.App))
			act := make([]int, e.NumTasks())
			for s := 0; s < 90; s++ {
				for k := range act {
					act[k] = []int{4, 2, 2, 3, 1, 0, 2, 4, 2}[(s/5+k)%9]
				}
				sr, err := e.Step(Action{Choices: act})
				obs := sr.Obs
				rew := sr.Reward
				info := sr.Info
				if err != nil {
					t.Fatal(err)
				}
				r := info.Reward
				fmt.Fprintf(&buf, "%d %.3f %.3f %.3f %.3f %v %.0f %.4f %.4f %.4f %.4f %.4f %.4f %.4f %.4f | %s\n",
					s, info.OfferedRate, info.Throughput, info.P95MS, info.MeanMS, info.Violated, info.TotalCPU, rew,
					r.SLO, r.Risk, r.Resource, r.Progress, r.Churn, r.Recovery, r.Reconf, fixed(obs.App))
			}
			path := filepath.Join("testdata", "golden", tc.name+".txt")
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(want, buf.Bytes()) {
				t.Errorf("trajectory differs from %s; rerun with -update if intended:\n%s", path, firstDiff(string(want), buf.String()))
			}
		})
	}
}

func fixed(x []float64) string {
	var b bytes.Buffer
	for i, v := range x {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.4f", v)
	}
	return b.String()
}

func firstDiff(a, b string) string {
	la, lb := bytes.Split([]byte(a), []byte("\n")), bytes.Split([]byte(b), []byte("\n"))
	for i := 0; i < len(la) && i < len(lb); i++ {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d:\nwant %s\ngot  %s", i+1, la[i], lb[i])
		}
	}
	return "lengths differ"
}
