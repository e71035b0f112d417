package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"streamscale/internal/command"
	"streamscale/serve/runtime/planner"
	"streamscale/serve/runtime/provider/local"
	"streamscale/serve/runtime/wire"
	"streamscale/traces"
)

// serviceFlags are the flags of `serve planner -serve`.
type serviceFlags struct {
	serve         bool
	controlAddr   string
	controlPublic bool
	traces        string
}

func (s *serviceFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&s.serve, "serve", false, "run as a service until SIGTERM: no load of its own; clients start trace replays through the control API (eval live -planner)")
	fs.StringVar(&s.controlAddr, "control-addr", "127.0.0.1:7401", "with -serve: the control API's listen address (loopback unless -control-public; requires -token)")
	fs.BoolVar(&s.controlPublic, "control-public", false, "with -serve: allow a non-loopback -control-addr")
	fs.StringVar(&s.traces, "traces", "", "with -serve: trace data directory for named replays (default env STREAMSCALE_TRACES or the built-in one)")
}

// runService runs the planner as a service (planner.Service): the control
// API on -control-addr, one replay at a time, workers from the provider
// (with the local provider, processes of this binary started per replay
// with the replay's report interval and initial allocation).
func runService(ctx context.Context, name string, cfg planner.Config, lp *local.Provider, f serviceFlags, o command.IO) error {
	if cfg.Token == "" {
		return command.Usagef("%s: -serve needs -token or $%s (the control API is authenticated with it)", name, RuntimeTokenEnv)
	}
	sc := planner.ServiceConfig{Base: cfg, ControlAddr: f.controlAddr, ControlPublic: f.controlPublic,
		LoadTrace: func(tn string, seed uint64) (*traces.Trace, error) {
			return traces.Load(tn, traces.Options{Dir: f.traces, Seed: seed})
		}}
	if lp != nil {
		base := append([]string(nil), lp.Extra...)
		sc.Spawn = func(addr string, report time.Duration, alloc []int) {
			lp.Planner = addr
			lp.Extra = append(append([]string(nil), base...), "-report", report.String())
			if len(alloc) > 0 {
				parts := make([]string, len(alloc))
				for i, mc := range alloc {
					parts[i] = strconv.Itoa(mc)
				}
				lp.Extra = append(lp.Extra, "-alloc", strings.Join(parts, ","))
			}
		}
	}
	s, err := planner.NewService(sc)
	if err != nil {
		return command.Usagef("%s: %v", name, err)
	}
	err = s.Serve(ctx, func(addr string) {
		fmt.Fprintf(o.Stderr, "serve: planner service for %s: control API on %s, workers join %s\n", cfg.App.Name, addr, cfg.Addr)
	})
	if lp != nil {
		lp.Close()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// parseAlloc parses a per-operator allocation "mc,mc,…" (empty: none).
func parseAlloc(v string, nOps int) ([]int, error) {
	if v == "" {
		return nil, nil
	}
	var mcs []int
	for i, f := range strings.Split(v, ",") {
		mc, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || mc < 1 || mc > wire.MaxMillicores {
			return nil, fmt.Errorf("entry %d %q, want 1..%d millicores", i, f, wire.MaxMillicores)
		}
		mcs = append(mcs, mc)
	}
	if len(mcs) != nOps {
		return nil, fmt.Errorf("%d entries, the app has %d operators", len(mcs), nOps)
	}
	return mcs, nil
}
