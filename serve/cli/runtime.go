package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parquet-go/parquet-go"

	"streamscale/clasp"
	"streamscale/internal/command"
	"streamscale/internal/costfile"
	"streamscale/serve/runtime"
	"streamscale/serve/runtime/ckptstore"
	"streamscale/serve/runtime/kcfs"
	"streamscale/serve/runtime/planner"
	"streamscale/serve/runtime/provider/k8s"
	"streamscale/serve/runtime/provider/local"
	"streamscale/serve/runtime/wire"
	"streamscale/serve/runtime/worker"
	"streamscale/traces"
)

// runWorker runs one runtime worker process (package serve/runtime/worker).
func runWorker(ctx context.Context, args []string, o command.IO) error {
	fs := command.NewFlagSet("serve worker")
	var cfg worker.Config
	fs.StringVar(&cfg.Planner, "planner", "", "planner address host:port (required)")
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:0", "listen address for peers (host:port; loopback unless -public)")
	fs.BoolVar(&cfg.Public, "public", false, "allow a non-loopback -addr (use -token)")
	id := fs.Int("id", -1, "worker ID (-1: the planner assigns one)")
	appName := fs.String("app", "wc", "application ("+strings.Join(runtime.AppNames(), ", ")+")")
	fs.StringVar(&cfg.Token, "token", "", "shared token the planner and the peers must present (default $"+RuntimeTokenEnv+")")
	fs.IntVar(&cfg.Slots, "slots", 10, "executor slots")
	fs.IntVar(&cfg.Batch, "batch", 64, "dispatch a queue at once when it holds this many requests (B)")
	fs.DurationVar(&cfg.Check, "check", 5*time.Millisecond, "how often queue ages are checked")
	interval := fs.Duration("interval", 20*time.Millisecond, "dispatch a queue whose oldest request is this old (T; 0: at once)")
	fs.IntVar(&cfg.MaxInFlight, "max-in-flight", 100_000, "requests a worker holds at most")
	fs.DurationVar(&cfg.Flush, "flush", 2*time.Millisecond, "remote-send batching timer")
	fs.IntVar(&cfg.Millicores, "millicores", 1000, "initial CPU allocation of every task")
	fs.IntVar(&cfg.Budget, "budget", 0, "CPU budget all the worker's tasks share on top of their own allocations, millicores (0: none; in-process enforcement only)")
	verbose := fs.Bool("v", false, "log events to stderr")
	healthAddr := fs.String("health-addr", "", "if set, serve GET /healthz on this address (for Kubernetes probes)")
	fs.DurationVar(&cfg.Report, "report", time.Second, "metrics report interval")
	perOp := fs.String("alloc", "", "initial allocation per operator, comma-separated millicores (overrides -millicores)")
	procBudget := fs.Int("process-budget", 0, "CPU budget of the whole worker process, millicores, enforced by the kernel: the process (transport, decoding, dispatch and operators) runs in a CPU cgroup with this CFS quota per 100 ms, as under a container CPU limit (0: none; needs a writable CPU cgroup, i.e. root)")
	fs.IntVar(&cfg.JoinTries, "join-tries", 10, "joins of the planner that may fail in a row (unreachable, token refused, no welcome) before the worker exits with an error")
	fs.DurationVar(&cfg.JoinBackoff, "join-backoff", 100*time.Millisecond, "wait after the first failed join, doubled after each further one (at most 5s)")
	fs.DurationVar(&cfg.JoinTimeout, "join-timeout", 5*time.Second, "bound on one join, dial to welcome")
	enforce := fs.String("cpu-enforce", "inprocess", "CPU allocation enforcement: inprocess (package cfs) or kernel (each task in a 'serve taskhost' process under a CPU cgroup's CFS quota; needs a writable CPU cgroup, i.e. root, and an app whose operators keep no keyed state)")
	if err := command.Parse(fs, "usage: serve worker -planner HOST:PORT [flags]\nruns one stream-processing worker of the planner/worker runtime", args, o); err != nil {
		return err
	}
	o = o.Fill()
	switch {
	case cfg.Planner == "":
		return command.Usagef("serve worker: -planner is required")
	case *id < -1 || *id >= int(wire.NoID):
		return command.Usagef("serve worker: -id %d, want -1 or a worker ID ≥ 0", *id)
	case cfg.Slots < 1:
		return command.Usagef("serve worker: -slots %d, want ≥ 1", cfg.Slots)
	case cfg.Batch < 1:
		return command.Usagef("serve worker: -batch %d, want ≥ 1", cfg.Batch)
	case cfg.Check <= 0 || *interval < 0 || cfg.Flush <= 0:
		return command.Usagef("serve worker: -check %v and -flush %v must be > 0, -interval %v ≥ 0", cfg.Check, cfg.Flush, *interval)
	case cfg.MaxInFlight < 1:
		return command.Usagef("serve worker: -max-in-flight %d, want ≥ 1", cfg.MaxInFlight)
	case cfg.JoinTries < 1:
		return command.Usagef("serve worker: -join-tries %d, want ≥ 1", cfg.JoinTries)
	case cfg.JoinBackoff <= 0 || cfg.JoinTimeout <= 0:
		return command.Usagef("serve worker: -join-backoff %v and -join-timeout %v must be > 0", cfg.JoinBackoff, cfg.JoinTimeout)
	case cfg.Millicores < 1 || cfg.Millicores > wire.MaxMillicores:
		return command.Usagef("serve worker: -millicores %d, want 1..%d", cfg.Millicores, wire.MaxMillicores)
	case cfg.Budget < 0 || cfg.Budget > wire.MaxMillicores:
		return command.Usagef("serve worker: -budget %d, want 0 (none) or 1..%d", cfg.Budget, wire.MaxMillicores)
	case cfg.Budget > 0 && *enforce != "inprocess":
		return command.Usagef("serve worker: -budget needs -cpu-enforce inprocess")
	case *procBudget < 0 || *procBudget > wire.MaxMillicores:
		return command.Usagef("serve worker: -process-budget %d, want 0 (none) or 1..%d", *procBudget, wire.MaxMillicores)
	case *procBudget > 0 && *enforce != "inprocess":
		// Task hosts run in cgroups of their own beside the worker's,
		// outside its budget.
		return command.Usagef("serve worker: -process-budget needs -cpu-enforce inprocess (task hosts would run outside the worker's cgroup)")
	}
	app, err := runtime.Apps(*appName)
	if err != nil {
		return command.Usagef("serve worker: -app: %v", err)
	}
	cfg.App = app
	if cfg.Report <= 0 {
		return command.Usagef("serve worker: -report %v, want > 0", cfg.Report)
	}
	if cfg.Alloc, err = parseAlloc(*perOp, len(app.Operators)); err != nil {
		return command.Usagef("serve worker: -alloc: %v", err)
	}
	cfg.ID = wire.NoID
	if *id >= 0 {
		cfg.ID = uint32(*id)
	}
	cfg.Interval = *interval
	if cfg.Interval == 0 {
		cfg.Interval = -1
	}
	if cfg.Token == "" {
		cfg.Token = o.Env(RuntimeTokenEnv)
	}
	if *verbose {
		cfg.Log = o.Stderr
	}
	cfg.Notices = o.Stderr
	if o.Getenv != nil && o.Env("GOGC") == "" {
		// A worker's live heap is its state; at GOGC=100 collections land
		// in migration pauses (BenchmarkMigrationPause: a few ms without
		// GC, tens of ms with it on a loaded machine).
		debug.SetGCPercent(gcPercent)
	}
	mode, err := kcfs.ParseMode(*enforce)
	if err != nil {
		return command.Usagef("serve worker: -cpu-enforce: %v", err)
	}
	if mode == kcfs.Kernel {
		closeHosts, err := workerHosts(&cfg, *appName, o.Stderr)
		if err != nil {
			return fmt.Errorf("serve worker: -cpu-enforce kernel: %w", err)
		}
		defer closeHosts()
	}
	w, err := worker.New(cfg)
	if err != nil {
		return command.Usagef("serve worker: %v", err)
	}
	if *procBudget > 0 {
		c, err := kcfs.Confine(*procBudget, kcfs.DefaultPeriod)
		if err != nil {
			return fmt.Errorf("serve worker: -process-budget: %w", err)
		}
		defer c.Release() //nolint:errcheck // a cgroup left busy is removed by the next Confine (RemoveStale)
	}
	if *healthAddr != "" {
		stop, err := serveHealth(*healthAddr)
		if err != nil {
			return fmt.Errorf("serve worker: -health-addr: %w", err)
		}
		defer stop()
	}
	if err := w.Run(ctx, func(addr string) { fmt.Fprintf(o.Stderr, "serve worker: listening on %s\n", addr) }); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// RuntimeTokenEnv is read when -token is not given (planner and worker).
const RuntimeTokenEnv = "STREAMSCALE_RUNTIME_TOKEN"

// stepsFlag parses -scale-at T:K[,T:K…] (T a duration or seconds).
type stepsFlag []planner.Step

func (s *stepsFlag) String() string {
	var parts []string
	for _, st := range *s {
		parts = append(parts, fmt.Sprintf("%v:%d", st.At, st.Workers))
	}
	return strings.Join(parts, ",")
}

func (s *stepsFlag) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		t, k, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return fmt.Errorf("scale step %q, want T:K", part)
		}
		at, err := time.ParseDuration(t)
		if err != nil {
			sec, err2 := strconv.ParseFloat(t, 64)
			if err2 != nil || sec < 0 || sec > 1e6 {
				return fmt.Errorf("scale step %q: time %q is neither a duration nor seconds", part, t)
			}
			at = time.Duration(sec * float64(time.Second))
		}
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 || at < 0 {
			return fmt.Errorf("scale step %q: want a time ≥ 0 and ≥ 1 workers", part)
		}
		*s = append(*s, planner.Step{At: at, Workers: n})
	}
	return nil
}

// externalProvider is the provider of `serve planner` without -spawn:
// workers are started elsewhere and join by themselves.
type externalProvider struct{}

func (externalProvider) Scale(context.Context, int) ([]string, error) { return nil, nil }
func (externalProvider) Workers(context.Context) ([]string, error)    { return nil, nil }
func (externalProvider) Close() error                                 { return nil }

// runPlanner runs the planner; workers join from elsewhere unless -spawn.
func runPlanner(ctx context.Context, args []string, o command.IO) error {
	return plannerCommand(ctx, "serve planner", "127.0.0.1:7400", false, args, o)
}

// runLocal runs the planner in this process and its workers as processes
// of this binary on loopback ports.
func runLocal(ctx context.Context, args []string, o command.IO) error {
	return plannerCommand(ctx, "serve local", "127.0.0.1:0", true, args, o)
}

func plannerCommand(ctx context.Context, name, defAddr string, spawn bool, args []string, o command.IO) error {
	fs := command.NewFlagSet(name)
	var cfg planner.Config
	fs.StringVar(&cfg.Addr, "addr", defAddr, "listen address (host:port; loopback unless -public)")
	fs.BoolVar(&cfg.Public, "public", false, "allow a non-loopback -addr (use -token)")
	fs.StringVar(&cfg.Token, "token", "", "shared token workers must present (default $"+RuntimeTokenEnv+")")
	appName := fs.String("app", "wc", "application ("+strings.Join(runtime.AppNames(), ", ")+")")
	fs.IntVar(&cfg.Workers, "workers", 1, "initial worker count")
	fs.Float64Var(&cfg.Rate, "rate", 1000, "constant input rate, inputs/s (ignored with -trace)")
	traceName := fs.String("trace", "", "replay a trace ("+strings.Join(traces.Names(), ", ")+", or a .csv/.parquet path) instead of -rate")
	fs.DurationVar(&cfg.TraceStep, "trace-step", time.Second, "time per trace point (time compression)")
	fs.Float64Var(&cfg.RateMult, "rate-mult", 1, "multiply the trace's rates")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long the load runs")
	fs.DurationVar(&cfg.Drain, "drain", 10*time.Second, "then how long to wait for inputs in flight")
	var steps stepsFlag
	fs.Var(&steps, "scale-at", "scale steps T:K[,T:K…]: at T after the load starts run K workers (repeatable)")
	fs.StringVar(&cfg.Controller, "controller", "none", "placement controller: none (only -scale-at), or a horizontal planner of eval clasp, every baseline behind CLASP's triggers: clasp, faasflow, zhang24, ds2, faasflow-sp, zhang24-sp, hpa, clasp-paper, clasp-h90")
	fs.IntVar(&cfg.MaxWorkers, "max-workers", 8, "most workers the controller may use")
	costModel := fs.String("cost-model", "", "CLASP's cost model (α, β, γ, W of Eq. 1) from a calibration.json or scenario.json of eval calibrate, for CLASP and the baselines' triggers (default: the paper's)")
	alloc := fs.String("alloc", "none", "vertical allocation loop: none or threshold (±100 mc when a task uses > 90% or < 50%)")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the input source")
	fs.IntVar(&cfg.Miss, "miss", 5, "heartbeats (200 ms) a worker may miss before it is declared dead")
	fs.DurationVar(&cfg.CheckpointInterval, "checkpoint-interval", time.Second, "checkpoint the workers' keyed state this often, so that a failover restores a dead worker's state: exactly-once state (0: no checkpoints; a dead worker's state is lost, at-least-once)")
	fs.DurationVar(&cfg.CheckpointTimeout, "checkpoint-timeout", 5*time.Second, "discard a checkpoint not complete within this time (ingress pause included)")
	fs.StringVar(&cfg.Restart.Strategy, "restart-strategy", "", "what a job whose workers all died does, after Flink's: none (fail: status failed, exit 1), fixed-delay (restart at most -restart-attempts times) or failure-rate (restart unless -restart-attempts restarts fell within -restart-interval); a restart waits -restart-delay, asks for the workers and restores the last checkpoint (default: fixed-delay with checkpoints, none without)")
	fs.IntVar(&cfg.Restart.Attempts, "restart-attempts", 3, "restarts allowed: in all (fixed-delay) or within -restart-interval (failure-rate)")
	fs.DurationVar(&cfg.Restart.Delay, "restart-delay", time.Second, "wait between the loss of every worker and the restart")
	fs.DurationVar(&cfg.Restart.Interval, "restart-interval", time.Minute, "the failure-rate strategy's window")
	fs.StringVar(&cfg.CheckpointMode, "checkpoint-mode", planner.ModeBarrier, "how a checkpoint is cut: barrier (barriers in the data, aligned at every task; the ingress never stops) or pause (the ingress stops until every input in flight completed)")
	ckptDir := fs.String("checkpoint-dir", "", "also write every complete checkpoint to this directory (atomically, checksummed), so that a planner restarted with -restore resumes the job; needs -checkpoint-interval > 0")
	ckptKeep := fs.Int("checkpoint-keep", 3, "with -checkpoint-dir: keep the last this many checkpoint files")
	restore := fs.String("restore", "", "resume the job from the latest checkpoint in this directory (or from this checkpoint file) that a planner of the same job (-app, -seed, -rate or -trace, -trace-step, -rate-mult, -duration) wrote before it died; given a directory and -checkpoint-interval > 0, the new checkpoints go on into it unless -checkpoint-dir names another")
	var kill killFlag
	restartAfter := time.Duration(0)
	if spawn {
		fs.Var(&kill, "kill-at", "failure injection: SIGKILL worker W at T seconds after the load starts (T:W[,T:W…], whole seconds; repeatable)")
		fs.DurationVar(&restartAfter, "restart-after", time.Second, "with -kill-at: restart the killed worker this long after the kill (0: never)")
	}
	parquetPath := fs.String("parquet", "", "write one row per second to this Parquet file")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	verbose := fs.Bool("v", false, "log events (and the workers' output) to stderr")
	slots := fs.Int("slots", 10, "executor slots per worker (with spawned workers)")
	healthAddr := fs.String("health-addr", "", "if set, serve GET /healthz on this address (for Kubernetes probes)")
	providerName := "local"
	var kc k8s.Config
	var svc serviceFlags
	if !spawn {
		fs.StringVar(&providerName, "provider", "external", "worker provider: external (workers join by themselves with serve worker), k8s (scale a StatefulSet in this cluster; the -k8s-* flags) or, with -serve, local (worker processes of this binary)")
		kc.RegisterFlags(fs)
		svc.register(fs)
	}
	synopsis := "usage: " + name + " [flags]\nruns the planner of the planner/worker runtime and a load"
	if spawn {
		synopsis += " with -workers worker processes of this binary on loopback"
	} else {
		synopsis += "; workers join with `serve worker -planner ADDR`"
	}
	if err := command.Parse(fs, synopsis, args, o); err != nil {
		return err
	}
	o = o.Fill()
	cfg.Steps = steps
	switch {
	case cfg.Workers < 1:
		return command.Usagef("%s: -workers %d, want ≥ 1", name, cfg.Workers)
	case !(cfg.Rate >= 0 && cfg.Rate <= 1e7):
		return command.Usagef("%s: -rate %v, want 0..1e7 inputs/s", name, cfg.Rate)
	case cfg.Duration <= 0 || cfg.Drain < 0 || cfg.TraceStep <= 0:
		return command.Usagef("%s: -duration %v and -trace-step %v must be > 0, -drain %v ≥ 0", name, cfg.Duration, cfg.TraceStep, cfg.Drain)
	case cfg.MaxWorkers < 1:
		return command.Usagef("%s: -max-workers %d, want ≥ 1", name, cfg.MaxWorkers)
	case *alloc != "none" && *alloc != "threshold":
		return command.Usagef("%s: -alloc %q, want none or threshold", name, *alloc)
	case cfg.Miss < 1:
		return command.Usagef("%s: -miss %d, want ≥ 1", name, cfg.Miss)
	case cfg.CheckpointInterval < 0 || cfg.CheckpointTimeout <= 0:
		return command.Usagef("%s: -checkpoint-interval %v must be ≥ 0 and -checkpoint-timeout %v > 0", name, cfg.CheckpointInterval, cfg.CheckpointTimeout)
	case cfg.CheckpointMode != planner.ModeBarrier && cfg.CheckpointMode != planner.ModePause:
		return command.Usagef("%s: -checkpoint-mode %q, want %s or %s", name, cfg.CheckpointMode, planner.ModeBarrier, planner.ModePause)
	case cfg.Restart.Strategy != "" && cfg.Restart.Strategy != planner.RestartNone && cfg.Restart.Strategy != planner.RestartFixedDelay && cfg.Restart.Strategy != planner.RestartFailureRate:
		return command.Usagef("%s: -restart-strategy %q, want %s, %s or %s", name, cfg.Restart.Strategy, planner.RestartNone, planner.RestartFixedDelay, planner.RestartFailureRate)
	case cfg.Restart.Attempts < 1 || cfg.Restart.Delay < 0 || cfg.Restart.Interval <= 0:
		return command.Usagef("%s: -restart-attempts %d must be ≥ 1, -restart-delay %v ≥ 0, -restart-interval %v > 0", name, cfg.Restart.Attempts, cfg.Restart.Delay, cfg.Restart.Interval)
	case restartAfter < 0:
		return command.Usagef("%s: -restart-after %v, want ≥ 0", name, restartAfter)
	case *slots < 1:
		return command.Usagef("%s: -slots %d, want ≥ 1", name, *slots)
	case !(cfg.RateMult > 0):
		return command.Usagef("%s: -rate-mult %v, want > 0", name, cfg.RateMult)
	case providerName != "local" && providerName != "external" && providerName != "k8s":
		return command.Usagef("%s: -provider %q, want external or k8s", name, providerName)
	case *ckptDir != "" && cfg.CheckpointInterval == 0:
		return command.Usagef("%s: -checkpoint-dir needs -checkpoint-interval > 0", name)
	case *ckptKeep < 1:
		return command.Usagef("%s: -checkpoint-keep %d, want ≥ 1", name, *ckptKeep)
	case (*ckptDir != "" || *restore != "") && svc.serve:
		return command.Usagef("%s: -checkpoint-dir and -restore run one job, not with -serve", name)
	}
	costLine := "" // said once the flags are all checked
	if *costModel != "" && cfg.Controller == "none" {
		return command.Usagef("%s: -cost-model without a -controller", name)
	}
	if cfg.Controller != "none" {
		methods := clasp.Methods(cfg.MaxWorkers, clasp.DefaultCostModel())
		used := costfile.Paper()
		if *costModel != "" {
			var err error
			if used, err = costfile.Load(*costModel, os.ReadFile); err != nil {
				return command.Usagef("%s: -cost-model: %v", name, err)
			}
			if methods, err = costfile.Methods(cfg.MaxWorkers, used.Model); err != nil {
				return command.Usagef("%s: -cost-model %s: %v", name, *costModel, err)
			}
		}
		var names []string
		for _, m := range methods {
			names = append(names, m.Name)
			if m.Name == cfg.Controller {
				cfg.NewPlacer = m.New
			}
		}
		if cfg.NewPlacer == nil {
			return command.Usagef("%s: -controller %q, want none or one of %s", name, cfg.Controller, strings.Join(names, ", "))
		}
		costLine = fmt.Sprintf("serve: %s with the cost model α %.4g µs, β %.4g µs, γ %.4g µs, W %.4g µs/s from %s\n", cfg.Controller, used.AlphaUS, used.BetaUS, used.GammaUS, used.BudgetUSPerS, used.Source)
	}
	app, err := runtime.Apps(*appName)
	if err != nil {
		return command.Usagef("%s: -app: %v", name, err)
	}
	cfg.App = app
	if *alloc == "threshold" {
		cfg.Allocate = planner.Threshold(0.5, 0.9, 100, 100)
	}
	if *traceName != "" {
		tr, err := traces.Load(*traceName, traces.Options{Seed: cfg.Seed, Logf: func(f string, a ...any) { fmt.Fprintf(o.Stderr, "serve: "+f+"\n", a...) }})
		if err != nil {
			return command.Usagef("%s: -trace: %v", name, err)
		}
		cfg.Trace = tr
	}
	if cfg.Token == "" {
		cfg.Token = o.Env(RuntimeTokenEnv)
	}
	if cfg.Restart.Strategy == "" {
		// The planner's default, but with the attempts, delay and interval
		// of the flags.
		cfg.Restart.Strategy = planner.RestartNone
		if cfg.CheckpointInterval > 0 {
			cfg.Restart.Strategy = planner.RestartFixedDelay
		}
	}
	if *verbose {
		cfg.Log = o.Stderr
	}
	if err := checkpointFiles(&cfg, *restore, *ckptDir, *ckptKeep); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var rows []planner.Row
	var lp *local.Provider
	cfg.Rows = func(r planner.Row) {
		rows = append(rows, r)
		if lp != nil {
			kill.due(ctx, r.T, lp, restartAfter, o.Stderr)
		}
		if *verbose {
			fmt.Fprintf(o.Stderr, "serve: t=%3.0fs offered %5d completed %5d p95 %7.1f ms workers %d queue %d\n", r.T, r.Offered, r.Completed, r.P95MS, r.Workers, r.PlannerQueue+r.WorkerQueue)
		}
	}
	serviceLocal := svc.serve && providerName == "local"
	if !spawn && !svc.serve && providerName == "local" {
		return command.Usagef("%s: -provider local needs -serve (or use serve local)", name)
	}
	if serviceLocal {
		spawn = true
	}
	if spawn {
		lp = &local.Provider{Extra: []string{"-app", *appName, "-slots", strconv.Itoa(*slots)}}
		if cfg.Token != "" {
			lp.Env = []string{RuntimeTokenEnv + "=" + cfg.Token}
		}
		if *verbose {
			lp.Output = o.Stderr
			lp.Extra = append(lp.Extra, "-v")
		}
		cfg.Provider = lp
		defer lp.Close()
	} else if providerName == "k8s" {
		kp, err := kc.InCluster()
		if err != nil {
			return fmt.Errorf("%s: -provider k8s: %w", name, err)
		}
		cfg.Provider = kp
		defer kp.Close()
	} else {
		cfg.Provider = externalProvider{}
	}
	io.WriteString(o.Stderr, costLine) //nolint:errcheck // a diagnostic line
	if *healthAddr != "" {
		stop, err := serveHealth(*healthAddr)
		if err != nil {
			return fmt.Errorf("%s: -health-addr: %w", name, err)
		}
		defer stop()
	}
	if svc.serve {
		return runService(ctx, name, cfg, lp, svc, o)
	}
	p, err := planner.New(cfg)
	if err != nil {
		return command.Usagef("%s: %v", name, err)
	}
	res, err := p.Run(ctx, func(addr string) {
		if lp != nil {
			lp.Planner = addr
		}
		fmt.Fprintf(o.Stderr, "serve: planner listening on %s\n", addr)
	})
	kill.stop()
	if lp != nil {
		lp.Close()
	}
	if err != nil && !errors.Is(err, planner.ErrJobFailed) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve: %w", err)
	}
	if *parquetPath != "" {
		if werr := writeRows(*parquetPath, rows); werr != nil {
			return werr
		}
	}
	if *asJSON {
		enc := json.NewEncoder(o.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	} else {
		printResult(o.Stdout, res)
	}
	switch {
	case res.Status == planner.StatusFailed:
		return fmt.Errorf("serve: the job failed: %s", res.Reason)
	case err != nil:
		return errors.New("serve: interrupted; the result covers the run until then")
	}
	if res.StateLostGroups > 0 {
		// Every input completed, but a failure without checkpoints lost the
		// state of these key groups: the counts are not what a fault-free
		// run computes, which a zero exit would hide.
		return fmt.Errorf("serve: %d key groups lost their state in failures without checkpoints (at-least-once): the job's state is incomplete; run with checkpoints (-checkpoint-interval > 0, the default) for exactly-once state", res.StateLostGroups)
	}
	if res.CheckpointSaveErrors > 0 {
		return fmt.Errorf("serve: %d checkpoints could not be written to the checkpoint directory (see the log): the last one saved is %q", res.CheckpointSaveErrors, res.CheckpointFile)
	}
	return nil
}

// checkpointFiles reads the checkpoint to resume from (-restore: the
// latest of a directory, or a file) and opens the store the checkpoints
// are written to (-checkpoint-dir, or the restore's directory when
// checkpoints are on).
func checkpointFiles(cfg *planner.Config, restore, dir string, keep int) error {
	if restore != "" {
		st, err := os.Stat(restore)
		if err != nil {
			return fmt.Errorf("-restore: %w", err)
		}
		var c ckptstore.Checkpoint
		from := restore
		if st.IsDir() {
			c, from, err = ckptstore.Latest(restore)
			if dir == "" && cfg.CheckpointInterval > 0 {
				dir = restore
			}
		} else {
			c, err = ckptstore.Load(restore)
		}
		if err != nil {
			return fmt.Errorf("-restore: %w", err)
		}
		cfg.Restore, cfg.RestoreFrom = &c, from
	}
	if dir == "" {
		return nil
	}
	s, err := ckptstore.Open(dir, keep)
	if err != nil {
		return fmt.Errorf("-checkpoint-dir: %w", err)
	}
	cfg.Store = s
	return nil
}

// printResult prints a run's result as text: the status, what became of
// the inputs, the state's guarantee and losses, the latency, the
// migrations, and the failures and checkpoints if any.
func printResult(w io.Writer, res planner.Result) {
	status := res.Status
	if res.Reason != "" {
		status += " (" + res.Reason + ")"
	}
	fmt.Fprintf(w, "%s: %s; %d inputs, %d completed, %d dropped, %d unfinished, %d duplicated; state %s, %d key groups lost; latency p50 %.1f ms p95 %.1f ms p99 %.1f ms; %d migrations (planner ≤ %.1f ms, worker pause ≤ %.2f ms)\n",
		res.App, status, res.Inputs, res.Completed, res.Dropped, res.Unfinished, res.Duplicated, res.Guarantee, res.StateLostGroups, res.P50MS, res.P95MS, res.P99MS, len(res.Migrations), res.MigrationPlannerMS, res.MigrationWorkerPauseMSMax)
	if r := res.Resumed; r != nil {
		fmt.Fprintf(w, "resumed checkpoint %d from %s: inputs before %d were in its state, the source resumed there (t = %.3f s)\n", r.Checkpoint, r.File, r.Cut, r.AtS)
	}
	if res.CheckpointsSaved+res.CheckpointSaveErrors > 0 {
		fmt.Fprintf(w, "%d checkpoints saved (%d failed), the last %s\n", res.CheckpointsSaved, res.CheckpointSaveErrors, res.CheckpointFile)
	}
	if res.Checkpoints+res.CheckpointsDiscarded > 0 || res.Failures > 0 {
		fmt.Fprintf(w, "%d failures, %d restarts; %d checkpoints by %s (%d discarded), ingress pause ≤ %.1f ms (mean %.1f ms), duration mean %.1f ms, alignment ≤ %.1f ms, snapshot ≤ %.2f ms, ≤ %d keys and %d bytes; %d key groups restored, %d inputs replayed\n",
			res.Failures, res.Restarts, res.Checkpoints, res.CheckpointMode, res.CheckpointsDiscarded, res.CheckpointMSMax, res.CheckpointMSMean, res.CheckpointDurationMSMean, res.CheckpointAlignMSMax, res.CheckpointSnapshotMSMax, res.CheckpointKeysMax, res.CheckpointBytesMax, res.RestoredGroups, res.Replayed)
	}
}

func writeRows(path string, rows []planner.Row) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	w := parquet.NewGenericWriter[planner.Row](f)
	if _, err := w.Write(rows); err != nil {
		f.Close()
		return fmt.Errorf("serve: %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		f.Close()
		return fmt.Errorf("serve: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

var _ flag.Value = (*stepsFlag)(nil)

// killFlag parses -kill-at T:W[,T:W…]: SIGKILL worker W when the
// per-second row for second T closes.
type killFlag struct {
	kills  []kill
	wg     sync.WaitGroup // the restarts
	stopCh chan struct{}
}

type kill struct{ at, worker int }

// stop cancels the pending restarts and waits for those in progress.
func (k *killFlag) stop() {
	if k.stopCh != nil {
		close(k.stopCh)
		k.stopCh = nil
	}
	k.wg.Wait()
}

func (k *killFlag) String() string {
	var parts []string
	for _, x := range k.kills {
		parts = append(parts, fmt.Sprintf("%d:%d", x.at, x.worker))
	}
	return strings.Join(parts, ",")
}

func (k *killFlag) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		t, w, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return fmt.Errorf("kill %q, want T:W", part)
		}
		t = strings.TrimSuffix(t, "s")
		at, err := strconv.Atoi(t)
		if err != nil || at < 1 || at > 1e6 {
			return fmt.Errorf("kill %q: time %q, want whole seconds ≥ 1", part, t)
		}
		id, err := strconv.Atoi(w)
		if err != nil || id < 0 || id >= wire.MaxMembers {
			return fmt.Errorf("kill %q: worker %q, want 0..%d", part, w, wire.MaxMembers-1)
		}
		k.kills = append(k.kills, kill{at, id})
	}
	return nil
}

// due kills the workers due at second t (the row just closed) and, after
// restart (if > 0), starts them again.
func (k *killFlag) due(ctx context.Context, t float64, lp *local.Provider, restart time.Duration, log io.Writer) {
	var killed []int
	for _, x := range k.kills {
		if float64(x.at) != t {
			continue
		}
		if err := lp.Kill(x.worker); err != nil {
			fmt.Fprintf(log, "serve: -kill-at: %v\n", err)
			continue
		}
		fmt.Fprintf(log, "serve: killed worker %d (SIGKILL) at t=%ds\n", x.worker, x.at)
		killed = append(killed, x.worker)
	}
	if len(killed) == 0 || restart <= 0 {
		return
	}
	if k.stopCh == nil {
		k.stopCh = make(chan struct{})
	}
	stop := k.stopCh
	k.wg.Go(func() {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-time.After(restart):
		}
		addrs, err := lp.Workers(ctx)
		if err == nil {
			_, err = lp.Scale(ctx, len(addrs))
		}
		if err != nil {
			fmt.Fprintf(log, "serve: -restart-after: %v\n", err)
			return
		}
		for _, id := range killed {
			fmt.Fprintf(log, "serve: restarted worker %d\n", id)
		}
	})
}

// serveHealth answers GET /healthz with 200 on addr until stop is called:
// the liveness and readiness probe of the Kubernetes manifests
// (deploy/k8s). The process is alive while it serves.
func serveHealth(addr string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout}
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}
