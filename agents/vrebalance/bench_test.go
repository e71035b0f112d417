package vrebalance_test

import (
	"testing"

	"streamscale/agents"
	"streamscale/agents/controllertest"
	"streamscale/agents/vrebalance"
	"streamscale/env"
)

// BenchmarkEpisode measures one whole 3,600-step PRED and ETL episode
// (a diurnal workload) with each controller, environment included; the
// difference to static:500 is the controller's cost. For VRebalance it
// reports the GP suggestions made (about 30 ms each at 30 observations in
// 9 dimensions, see bo.BenchmarkSuggest).
func BenchmarkEpisode(b *testing.B) {
	for _, profile := range []string{"pred", "etl"} {
		sc, err := env.EdgeConfig(profile, 7, controllertest.Diurnal(3600))
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			mk   func() (agents.Controller, error)
		}{
			{"static500", func() (agents.Controller, error) { return agents.NewStatic(500) }},
			{"threshold", func() (agents.Controller, error) { return agents.NewThreshold(agents.DefaultThresholdConfig()) }},
			{"vrebalance", func() (agents.Controller, error) {
				return vrebalance.New(vrebalance.DefaultConfig(), sc)
			}},
		} {
			b.Run(profile+"/"+c.name, func(b *testing.B) {
				ctl, err := c.mk()
				if err != nil {
					b.Fatal(err)
				}
				var viol float64
				for b.Loop() {
					viol, _ = controllertest.Episode(b, sc, ctl, 1)
				}
				b.ReportMetric(viol, "violations")
				if v, ok := ctl.(*vrebalance.Controller); ok {
					gp := 0
					for _, ts := range v.Tiers() {
						gp += ts.Explores - ts.RandomPoints
					}
					b.ReportMetric(float64(gp), "gp-suggests")
				}
			})
		}
	}
}
