package agents_test

import (
	"testing"

	"streamscale/agents"
	"streamscale/agents/controllertest"
	"streamscale/env"
)

func TestStaticAcceptance(t *testing.T) {
	controllertest.Run(t, "static", func() agents.Controller {
		s, err := agents.NewStatic(1000)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestThresholdAcceptance(t *testing.T) {
	for _, u := range []agents.Utilization{agents.OfferedLoad, agents.ProcessedLoad} {
		controllertest.Run(t, "threshold-"+u.String(), func() agents.Controller {
			cfg := agents.DefaultThresholdConfig()
			cfg.Utilization = u
			c, err := agents.NewThreshold(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c
		})
	}
}

func TestRateRuleAcceptance(t *testing.T) {
	controllertest.RunScenario(t, "rate", func(sc env.Config) (agents.Controller, error) {
		cfg := agents.DefaultRateConfig()
		if sc.MaxCPU > 0 {
			cfg.MinCPU, cfg.MaxCPU = sc.MinCPU, sc.MaxCPU
		}
		cfg.MetricLagSteps = sc.Physics.MetricLagSteps
		return agents.NewRateRule(cfg, sc.App)
	})
}
