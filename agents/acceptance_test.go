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

func TestVRebalanceAcceptance(t *testing.T) {
	// A 20-step interval gives 19 evaluations in the 400-step episode, so
	// the GP (after 5 random points per tier) runs too.
	cfg := agents.DefaultVRebalanceConfig()
	cfg.Interval = 20
	controllertest.RunScenario(t, "vrebalance", func(sc env.Config) (agents.Controller, error) {
		return agents.NewVRebalance(cfg, sc)
	})
}
