package env

import "testing"

func TestSmoke(t *testing.T) {
	for _, prof := range []string{"pred", "etl"} {
		for _, cpu := range []float64{500, 1000, 2000, 10000} {
			w := sharedTrace(t, "taxi_nab_5min_2015-01-01_3600pts.csv", 1)
			cfg, err := Scenario(prof, 7, w)
			if err != nil {
				t.Fatal(err)
			}
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			e.Reset(1)
			tg := make([]float64, e.NumTasks())
			for i := range tg {
				tg[i] = cpu
			}
			viol, p95, thr, off := 0, 0.0, 0.0, 0.0
			steps := 0
			for {
				_, _, _, tr, info, err := e.StepTargets(tg)
				if err != nil {
					t.Fatal(err)
				}
				steps++
				if info.Violated {
					viol++
				}
				p95 += info.P95MS
				thr += info.Throughput
				off += info.OfferedRate
				if tr {
					break
				}
			}
			t.Logf("%s cpu=%v viol=%.3f meanp95=%.1f thr=%.1f off=%.1f", prof, cpu, float64(viol)/float64(steps), p95/float64(steps), thr/float64(steps), off/float64(steps))
		}
	}
}
