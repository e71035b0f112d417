package horizontal

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"streamscale/clasp"
	"streamscale/env"
)

// Counterpart turns an edge scenario (env.EdgeConfig: per-task CPU reservations,
// one replica per task on Placement, no request costs) into its horizontal
// counterpart: the same application, servers, network, workload, placement
// and episode settings, with shared CPU, the paper's request costs
// (clasp.DefaultCostModel: α = 38.5 µs, β = 275 µs, γ = 51,500 µs) and the
// placement as the initial replica plan (one replica per task, share 1).
// It refuses a scenario that already has replicas, request costs or shared
// CPU.
func Counterpart(base env.Config) (env.Config, error) {
	rc := base.Requests
	switch {
	case base.SharedCPU || base.Replicas != nil || rc.AlphaUS != 0 || rc.BetaUS != 0 || rc.GammaUS != 0:
		return env.Config{}, errors.New("horizontal: the base scenario is already horizontal (shared CPU, replicas or request costs)")
	case len(base.Placement) != len(base.App.Tasks):
		return env.Config{}, fmt.Errorf("horizontal: placement has %d entries for %d tasks", len(base.Placement), len(base.App.Tasks))
	case len(base.Servers) == 0:
		return env.Config{}, errors.New("horizontal: no servers")
	}
	cfg := base
	cfg.App.Tasks = append([]env.Task(nil), base.App.Tasks...)
	cfg.Servers = append([]env.Server(nil), base.Servers...)
	cfg.Placement = append([]int(nil), base.Placement...)
	m := clasp.DefaultCostModel()
	cfg.Requests = env.RequestCosts{AlphaUS: m.Alpha, BetaUS: m.Beta, GammaUS: m.Gamma}
	cfg.SharedCPU = true
	cfg.Replicas = make([][]env.Replica, len(base.Placement))
	for k, s := range base.Placement {
		cfg.Replicas[k] = []env.Replica{{Server: s, Share: 1}}
	}
	return cfg, nil
}

// Mapping lays CLASP's homogeneous workers over heterogeneous servers (see
// the package documentation).
type Mapping struct {
	// Servers[i] is the server index of plan worker i: servers ranked by
	// processing capacity ĉ (MIPS, all cores), descending, ties to more CPU
	// millicores, then to the lower index.
	Servers []int
	// Speedup[i] is plan worker i's per-core speed over RefMIPSPerCore, ≥ 1.
	Speedup []float64
	// RefMIPSPerCore is the slowest per-core speed among the servers, MIPS:
	// CLASP's execution times are µs of such a core.
	RefMIPSPerCore float64
	// BudgetUS is W, the smallest server's CPU as µs of core time per
	// second (millicores × 1,000).
	BudgetUS float64
}

// NewMapping derives the mapping of servers. Every server needs a positive,
// finite CPU and MIPS.
func NewMapping(servers []env.Server) (Mapping, error) {
	if len(servers) == 0 {
		return Mapping{}, errors.New("horizontal: no servers")
	}
	m := Mapping{RefMIPSPerCore: math.Inf(1), BudgetUS: math.Inf(1)}
	for i, s := range servers {
		if !(s.CPU > 0) || !(s.MIPS > 0) || math.IsInf(s.CPU+s.MIPS, 0) {
			return Mapping{}, fmt.Errorf("horizontal: server %d (%s) has CPU %v millicores and %v MIPS, want finite values > 0", i, s.Name, s.CPU, s.MIPS)
		}
		m.RefMIPSPerCore = min(m.RefMIPSPerCore, perCore(s))
		m.BudgetUS = min(m.BudgetUS, s.CPU*1000)
		m.Servers = append(m.Servers, i)
	}
	sort.SliceStable(m.Servers, func(a, b int) bool {
		sa, sb := servers[m.Servers[a]], servers[m.Servers[b]]
		if sa.MIPS != sb.MIPS {
			return sa.MIPS > sb.MIPS
		}
		if sa.CPU != sb.CPU {
			return sa.CPU > sb.CPU
		}
		return m.Servers[a] < m.Servers[b]
	})
	for _, s := range m.Servers {
		m.Speedup = append(m.Speedup, perCore(servers[s])/m.RefMIPSPerCore)
	}
	return m, nil
}

// perCore is a server's per-core speed, MIPS.
func perCore(s env.Server) float64 { return s.MIPS / (s.CPU / 1000) }
