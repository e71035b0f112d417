package planner

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"streamscale/serve/runtime"
	"streamscale/serve/runtime/provider/local"
	"streamscale/serve/runtime/worker"
)

// workerEnv makes the test binary run as a worker process of the app its
// value names (chain2: two no-op operators; or a runtime.Apps name), for
// the tests and benchmarks between processes.
const workerEnv = "STREAMSCALE_RT_TEST_WORKER"

var chain2 = runtime.Chain("chain2", 2, 0)

func TestMain(m *testing.M) {
	if name := os.Getenv(workerEnv); name != "" {
		app := chain2
		if name == "ledger-wc" {
			app = ledgerWC()
		} else if name != "chain2" {
			var err error
			if app, err = runtime.Apps(name); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
		fs := flag.NewFlagSet("worker", flag.ExitOnError)
		pl := fs.String("planner", "", "")
		addr := fs.String("addr", "", "")
		id := fs.Uint("id", 0, "")
		fs.Parse(os.Args[1:]) //nolint:errcheck // ExitOnError
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		w, err := worker.New(worker.Config{ID: uint32(*id), Addr: *addr, Planner: *pl, App: app, Interval: -1, Batch: 256})
		if err == nil {
			err = w.Run(ctx, nil)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// BenchmarkRemoteDispatch measures chained requests sent between two
// worker processes: chain2's first operator on worker 0, its second on
// worker 1, so every input makes one remote request (batched over the h2c
// stream). The planner offers -rate inputs/s for 3 s, open loop; the
// metric is completed requests per second from the start to the last
// completion (equal to the offered rate while the runtime keeps up).
func BenchmarkRemoteDispatch(b *testing.B) {
	for _, rate := range []float64{100_000, 200_000} {
		b.Run(fmt.Sprintf("offered=%.0f", rate), func(b *testing.B) {
			for b.Loop() {
				res := runProcesses(b, "chain2", nil, Config{App: chain2, Rate: rate, Duration: 3 * time.Second, Workers: 2, Shares: [][]float64{{1, 0}, {0, 1}}, Miss: 25})
				b.ReportMetric(float64(res.Completed)/res.ElapsedS, "requests/s")
				b.ReportMetric(res.P95MS, "p95-ms")
				if res.Completed != res.Inputs {
					b.Logf("rate %.0f: %d of %d inputs completed", rate, res.Completed, res.Inputs)
				}
			}
		})
	}
}

// runProcesses runs a planner here and its workers as processes of this
// test binary running app; during, if set, runs beside the load.
func runProcesses(b testing.TB, app string, during func(*local.Provider, *Planner), cfg Config) Result {
	b.Helper()
	res, _ := runProcessesPlanner(b, app, during, cfg)
	return res
}

// runProcessesPlanner is runProcesses returning the planner too.
func runProcessesPlanner(b testing.TB, app string, during func(*local.Provider, *Planner), cfg Config) (Result, *Planner) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	lp := &local.Provider{Bin: os.Args[0], Args: []string{}, Planner: ln.Addr().String(), Env: []string{workerEnv + "=" + app}}
	defer lp.Close()
	cfg.Provider = lp
	if testing.Verbose() && cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if during != nil {
		go during(lp, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := p.Serve(ctx, ln, nil)
	if err != nil {
		b.Fatal(err)
	}
	return res, p
}
