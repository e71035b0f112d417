package claspexp

import (
	"fmt"

	"streamscale/clasp"
)

// The cost of one state access on the executing worker and on another, µs
// (paper §2.4: ≈ 400 and ≈ 1,400).
const (
	LocalStateUS  = 400
	RemoteStateUS = 1400
)

// StateLocality is the paper's §2.4 experiment for one application: the
// maximum sustained throughput on n workers with every stateful operator's
// state on the worker that executes it (Local) and with every state access
// remote (Remote), and Local/Remote (paper, 10 workers: WC 3.5×, PL 1.5×).
type StateLocality struct {
	Local  float64 `json:"local"`  // events/s
	Remote float64 `json:"remote"` // events/s
	Ratio  float64 `json:"ratio"`
}

// RemoteState returns app with every state access remote: each execution
// of a stateful operator makes one state access, which costs
// RemoteStateUS − LocalStateUS more than the local access its ExecUS
// already includes.
func RemoteState(app clasp.App) clasp.App {
	out := app
	out.Operators = append([]clasp.Operator(nil), app.Operators...)
	for i := range out.Operators {
		if out.Operators[i].Stateful {
			out.Operators[i].ExecUS += RemoteStateUS - LocalStateUS
		}
	}
	return out
}

// StateLocalities measures StateLocality for every app with a stateful
// operator on n workers, each variant under CLASP's placement for its own
// execution times (CLASPPlacer), with MaxRate's search under pr.
func StateLocalities(apps []clasp.App, n int, pr Probe) (map[string]StateLocality, error) {
	out := map[string]StateLocality{}
	for _, app := range apps {
		if app.StateTouchFraction() == 0 {
			continue
		}
		var rates [2]float64
		for i, a := range []clasp.App{app, RemoteState(app)} {
			pred, err := PredictedRate(a, n)
			if err != nil {
				return nil, err
			}
			if rates[i], err = MaxRate(a, n, CLASPPlacer(n), pred, pr); err != nil {
				return nil, fmt.Errorf("claspexp: state locality of %s: %w", app.Name, err)
			}
		}
		s := StateLocality{Local: rates[0], Remote: rates[1]}
		if s.Remote > 0 {
			s.Ratio = s.Local / s.Remote
		}
		out[app.Name] = s
	}
	return out, nil
}
