package live

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/kcfs"
	"streamscale/serve/runtime/wire"
	"streamscale/serve/runtime/worker"
)

// TokenEnv is the environment variable that carries the runtime's shared
// token to the worker processes (as `serve worker` reads it).
const TokenEnv = "STREAMSCALE_RUNTIME_TOKEN"

// RunWorker runs one worker process of a live run: the flags the
// provider passes (-planner, -addr, -id) and the ones Run adds (-app,
// -report, -millicores). getenv reads the token (TokenEnv). It returns
// when ctx ends or the planner goes away; bad flags are an error naming
// the flag.
func RunWorker(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("live worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var cfg worker.Config
	fs.StringVar(&cfg.Planner, "planner", "", "planner address")
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:0", "listen address for peers")
	id := fs.Int("id", -1, "worker ID")
	app := fs.String("app", "", "application")
	fs.DurationVar(&cfg.Report, "report", time.Second, "metrics interval")
	fs.IntVar(&cfg.Millicores, "millicores", 1000, "initial allocation of every task")
	fs.IntVar(&cfg.Slots, "slots", 10, "executor slots")
	fs.IntVar(&cfg.Budget, "budget", 0, "CPU budget the worker's tasks share, millicores (0: none)")
	procBudget := fs.Int("process-budget", 0, "CPU budget of the whole worker process, millicores, by a kernel CPU cgroup (kcfs.Confine; 0: none)")
	perOp := fs.String("alloc", "", "initial allocation per operator, comma-separated millicores (overrides -millicores)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("live worker: %w", err)
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("live worker: unexpected argument %q", fs.Arg(0))
	case cfg.Planner == "":
		return fmt.Errorf("live worker: -planner is required")
	case *id < -1 || *id >= int(wire.NoID):
		return fmt.Errorf("live worker: -id %d out of range", *id)
	case cfg.Report <= 0:
		return fmt.Errorf("live worker: -report %v, want > 0", cfg.Report)
	case cfg.Millicores < 1 || cfg.Millicores > wire.MaxMillicores:
		return fmt.Errorf("live worker: -millicores %d, want 1..%d", cfg.Millicores, wire.MaxMillicores)
	case cfg.Slots < 1:
		return fmt.Errorf("live worker: -slots %d, want ≥ 1", cfg.Slots)
	case cfg.Budget < 0 || cfg.Budget > wire.MaxMillicores:
		return fmt.Errorf("live worker: -budget %d, want 0 (none) or 1..%d", cfg.Budget, wire.MaxMillicores)
	case *procBudget < 0 || *procBudget > wire.MaxMillicores:
		return fmt.Errorf("live worker: -process-budget %d, want 0 (none) or 1..%d", *procBudget, wire.MaxMillicores)
	}
	a, err := runtime.Apps(*app)
	if err != nil {
		return fmt.Errorf("live worker: -app: %w", err)
	}
	cfg.App = a
	cfg.ID = wire.NoID
	if *id >= 0 {
		cfg.ID = uint32(*id)
	}
	var mcs []int
	if *perOp != "" {
		for i, f := range strings.Split(*perOp, ",") {
			mc, err := strconv.Atoi(f)
			if err != nil || mc < 1 || mc > wire.MaxMillicores {
				return fmt.Errorf("live worker: -alloc entry %d %q, want 1..%d millicores", i, f, wire.MaxMillicores)
			}
			mcs = append(mcs, mc)
		}
		if len(mcs) != len(a.Operators) {
			return fmt.Errorf("live worker: -alloc has %d entries, app %s has %d operators", len(mcs), a.Name, len(a.Operators))
		}
	}
	cfg.Alloc = mcs
	cfg.Token = getenv(TokenEnv)
	w, err := worker.New(cfg)
	if err != nil {
		return fmt.Errorf("live worker: %w", err)
	}
	if *procBudget > 0 {
		c, err := kcfs.Confine(*procBudget, kcfs.DefaultPeriod)
		if err != nil {
			return fmt.Errorf("live worker: -process-budget: %w", err)
		}
		defer c.Release() //nolint:errcheck // a cgroup left busy is removed by the next Confine (RemoveStale)
	}
	if err := w.Run(ctx, nil); err != nil {
		return fmt.Errorf("live worker: %w", err)
	}
	return nil
}
