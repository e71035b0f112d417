package agents_test

import (
	"testing"

	"streamscale/agents"
	"streamscale/agents/controllertest"
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
