package horizontal

import (
	"errors"
	"fmt"
	"math"

	"streamscale/clasp"
	"streamscale/env"
)

// DefaultBandwidthBytes is the bandwidth told to a planner when the
// scenario has no links (every replica behind one switch): 10 Gbps, the
// CLASP experiments' star network, in bytes/s.
const DefaultBandwidthBytes = 10e9 / 8

// NewEdge builds CLASP for a horizontal edge scenario (see Counterpart):
// clasp.DefaultConfig with MaxWorkers set to the number of servers, the
// plan workers mapped onto the servers by NewMapping, the scenario's
// request costs with the mapped budget W as a fixed capacity model
// (estimation off; see the package documentation), the narrowest link's
// bandwidth, and over-capacity detection at the headroom-scaled budget.
func NewEdge(scenario env.Config) (*Adapter, error) {
	if !scenario.SharedCPU {
		return nil, errors.New("horizontal: CLASP needs a shared-CPU scenario (build it with horizontal.Counterpart)")
	}
	mp, err := NewMapping(scenario.Servers)
	if err != nil {
		return nil, err
	}
	app, err := ClaspApp(scenario.App, mp.RefMIPSPerCore)
	if err != nil {
		return nil, err
	}
	rc := scenario.Requests
	model := clasp.CostModel{Alpha: rc.AlphaUS, Beta: rc.BetaUS, Gamma: rc.GammaUS, Budget: mp.BudgetUS}
	cfg := clasp.DefaultConfig()
	cfg.MaxWorkers = len(scenario.Servers)
	cfg.Estimator.Fallback = model
	cfg.Estimator.Initial.Budget = mp.BudgetUS
	cfg.Estimator.MinSamples = math.MaxInt
	p, err := clasp.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("horizontal: %w", err)
	}
	bw := math.Inf(1)
	for _, l := range scenario.Network.Links {
		bw = min(bw, l.BandwidthBps/8)
	}
	if math.IsInf(bw, 1) {
		bw = DefaultBandwidthBytes
	}
	return NewAdapter(p, app, len(scenario.Servers), AdapterConfig{
		Servers: mp.Servers, Speedup: mp.Speedup, BandwidthBytes: bw,
		CapacityUS: cfg.Headroom * model.Budget,
	})
}
