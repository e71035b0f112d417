package cli

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"streamscale/internal/command"
	"streamscale/serve/api"
	"streamscale/serve/loadgen"
)

// TokenEnv is the environment variable read when -admin-token is not given.
const TokenEnv = "STREAMSCALE_ADMIN_TOKEN"

const usage = `usage:
  serve api     [-policies DIR] [-addr 127.0.0.1:8080] [-admin-token TOKEN] [-max-conns 1024] [-drain-delay 2s] ...
  serve loadgen [-addr 127.0.0.1:8080] -policy NAME [-duration 10s] [-concurrency 32] ...
  serve env     [-addr 127.0.0.1:8090] [-max-envs 64] [-max-envs-per-conn 32] [-idle-timeout 10m] ...
  serve planner [-addr 127.0.0.1:7400] [-app wc] [-workers N] [-rate R | -trace NAME] [-duration D] [-scale-at T:K] [-controller clasp] ...
  serve planner -serve -token T [-provider local|k8s] [-control-addr 127.0.0.1:7401] [-app wc] ...   (a service for eval live -planner)
  serve worker  -planner HOST:PORT [-addr 127.0.0.1:0] [-app wc] [-slots 10] ...
  serve local   [-app wc] [-workers N] [-rate R] [-duration D] [-scale-at T:K] [-json] ...
  serve cfscheck [-app syn] [-op noop0] [-millicores 250,500,1500] [-duration 10s] [-json]   (in-process vs kernel CPU quota)
run "serve SUBCOMMAND -h" (api, loadgen, env, planner, worker, local, cfscheck) for every flag
`

// Main runs the command with args (without the program name) and returns
// the exit status: 0 success (or -h), 1 failure, 2 usage.
func Main(ctx context.Context, args []string, o command.IO) int {
	return command.Dispatch(ctx, "serve", usage, map[string]func(context.Context, []string, command.IO) error{
		"api":      runAPI,
		"loadgen":  runLoadgen,
		"env":      runEnv,
		"planner":  runPlanner,
		"worker":   runWorker,
		"local":    runLocal,
		"cfscheck": runCFSCheck,
		"taskhost": runTaskHost, // hidden: the task-host child of -cpu-enforce kernel and cfscheck
	}, args, o)
}

// Server timeouts and limits.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 10 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	gcPercent         = 400 // unless $GOGC is set
	// defaultMemoryLimit is serve api's soft memory limit (unless
	// $GOMEMLIMIT is set): GOGC=400 alone let 1,000 reloads grow the heap
	// in use to about 1 GiB (api.TestReloadHeapBounded); the live heap is
	// a few MB.
	defaultMemoryLimit = 256 << 20
)

func runAPI(ctx context.Context, args []string, o command.IO) error {
	fs := command.NewFlagSet("serve api")
	cfg := api.Config{Log: o.Stderr}
	fs.StringVar(&cfg.Dir, "policies", "policies", "directory of policies: with <DIR>/manifest.json every set it lists, <DIR>/<set>/<profile>/policy.{json,safetensors}, served as <profile> (set default) or <set>-<profile>; without, every <DIR>/<name>/policy.json, served as <name>")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (host:port; loopback unless you mean otherwise)")
	fs.StringVar(&cfg.AdminToken, "admin-token", "", "bearer token enabling POST /admin/reload, ≥16 bytes (default $"+TokenEnv+"; none: no admin routes)")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body", api.DefaultMaxBodyBytes, "request body limit in bytes")
	fs.IntVar(&cfg.MaxBatch, "max-batch", api.DefaultMaxBatch, "observations per batch request")
	maxConns := fs.Int("max-conns", 1024, "open client connections at most; at the cap the one idle longest is closed for a newcomer, and with none idle the newcomer gets a -health-conns slot")
	healthConns := fs.Int("health-conns", 8, "connections beyond -max-conns that serve only /healthz, /readyz and /v2/health/* at once (other requests on them wait up to 5 s for a slot, then 503); further ones wait in the kernel's accept queue")
	drain := fs.Duration("drain-delay", 2*time.Second, "at shutdown, how long /readyz reports 503 while every route still serves, before the listener closes")
	grace := fs.Duration("shutdown-timeout", 10*time.Second, "then how long requests in flight may take to finish")
	fs.DurationVar(&cfg.ReloadInterval, "reload-interval", api.DefaultReloadInterval, "least time between two POST /admin/reload; sooner ones get 429 with Retry-After (negative: no limit)")
	memLimit := fs.Int64("memory-limit", defaultMemoryLimit, "soft memory limit of the Go runtime in bytes (runtime/debug.SetMemoryLimit; $GOMEMLIMIT, when set, wins)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (diagnostics)")
	if err := command.Parse(fs, "usage: serve api [flags]\nserves the policies of a directory over HTTP", args, o); err != nil {
		return err
	}
	switch {
	case *maxConns < 1:
		return command.Usagef("serve api: -max-conns %d, want ≥ 1", *maxConns)
	case *healthConns < 0:
		return command.Usagef("serve api: -health-conns %d, want ≥ 0", *healthConns)
	case *drain < 0:
		return command.Usagef("serve api: -drain-delay %v, want ≥ 0", *drain)
	case *grace <= 0:
		return command.Usagef("serve api: -shutdown-timeout %v, want > 0", *grace)
	case *memLimit < 16<<20:
		return command.Usagef("serve api: -memory-limit %d, want ≥ %d (16 MiB)", *memLimit, 16<<20)
	case cfg.ReloadInterval == 0:
		return command.Usagef("serve api: -reload-interval 0; want > 0, or negative for no limit")
	}
	switch {
	case cfg.AdminToken != "" && len(cfg.AdminToken) < api.MinAdminToken:
		return command.Usagef("serve api: -admin-token has %d bytes, want at least %d", len(cfg.AdminToken), api.MinAdminToken)
	case cfg.AdminToken == "":
		cfg.AdminToken = o.Env(TokenEnv)
		if cfg.AdminToken != "" && len(cfg.AdminToken) < api.MinAdminToken {
			return command.Usagef("serve api: $%s (no -admin-token) has %d bytes, want at least %d", TokenEnv, len(cfg.AdminToken), api.MinAdminToken)
		}
	}
	if o.Getenv != nil && o.Env("GOGC") == "" {
		// The live heap is a few MB; at GOGC=100 a loaded server collects
		// about ten times a second, and each cycle shows in the tail. Never
		// without a memory limit: garbage (a reload allocates about 2 MB)
		// would otherwise pile up to five times the heap at the last
		// collection.
		debug.SetGCPercent(gcPercent)
	}
	if o.Getenv != nil && o.Env("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(*memLimit)
	}
	cfg.Build = command.BuildInfo()
	s, err := api.New(cfg)
	if err != nil {
		return command.Usagef("serve api: -max-body %d, -max-batch %d: %v", cfg.MaxBodyBytes, cfg.MaxBatch, err)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil && !ap.Addr().Unmap().IsLoopback() {
		fmt.Fprintf(o.Stderr, "serve: note: listening on %s, which is not a loopback address\n", ap)
	}
	tcp, ok := ln.(*net.TCPListener)
	if !ok {
		ln.Close() //nolint:errcheck
		return fmt.Errorf("serve: -addr %s is not a TCP address", *addr)
	}
	limiter := newConnLimiter(tcp, *maxConns, *healthConns)
	srv := &http.Server{
		Handler:           limiter.handler(s.Handler()),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(o.Stderr, "serve: http: ", 0),
	}
	final := newFinalListener(limiter, tcp)
	var fresh newConns
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		fresh.state(c, st)
		limiter.state(c, st)
	}
	srv.ConnContext = limiter.connContext
	ln = s.InstrumentServer(srv, final)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(o.Stderr, "serve: listening on http://%s (at most %d connections, %d more for health probes; commit %.12s, %s)\n", ln.Addr(), *maxConns, *healthConns, cfg.Build.Commit, cfg.Build.GoVersion)
	shutdown := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), *grace)
		defer cancel()
		err := srv.Shutdown(sctx)
		if err != nil {
			srv.Close() //nolint:errcheck // cut what did not finish in time
		}
		<-served
		if err != nil {
			return fmt.Errorf("serve: shutdown: requests still in flight after -shutdown-timeout %v: %w", *grace, err)
		}
		return nil
	}

	if err := s.Reload(); err != nil {
		shutdown() //nolint:errcheck // the load error is the one to report
		return fmt.Errorf("serve: %w", err)
	}
	pols := s.Policies()
	fmt.Fprintf(o.Stderr, "serve: ready: %d policies; admin routes %s\n", len(pols), map[bool]string{true: "on", false: "off"}[cfg.AdminToken != ""])

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
	// Graceful shutdown: not ready at once, keep serving for the drain
	// delay (load balancers notice the 503 and stop sending; responses say
	// Connection: close, so clients reconnect elsewhere); then take what
	// waits in the accept queue, close the listener and let requests in
	// flight finish. (Not
	// srv.SetKeepAlivesEnabled(false): it closes idle connections at once,
	// under the feet of clients that are sending on them.)
	s.Drain()
	fmt.Fprintf(o.Stderr, "serve: draining: /readyz 503 for %v, then shutting down\n", *drain)
	select {
	case <-time.After(*drain):
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
	// Requests sent before now are answered, however late this process
	// gets the CPU to accept and read them (drain.go).
	queued := final.finish()
	waitNew(final, &fresh, min(*grace, readHeaderTimeout))
	fmt.Fprintf(o.Stderr, "serve: shutting down (%d connections taken from the accept queue)\n", queued)
	if err := shutdown(); err != nil {
		return err
	}
	fmt.Fprintln(o.Stderr, "serve: stopped")
	return nil
}

func runLoadgen(ctx context.Context, args []string, o command.IO) error {
	fs := command.NewFlagSet("serve loadgen")
	var cfg loadgen.Config
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "server address (loopback only)")
	fs.StringVar(&cfg.Policy, "policy", "", "policy name (required)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured duration (≤ 10m)")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "unmeasured warm-up before it (0: none)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 32, "keep-alive connections, one request in flight each (≤ 256)")
	fs.Int64Var(&cfg.MaxRequests, "requests", 0, "stop after this many measured requests (0: duration only)")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Second, "per-request timeout")
	if err := command.Parse(fs, "usage: serve loadgen -policy NAME [flags]\nsends act requests to a running serve api and reports throughput and latency", args, o); err != nil {
		return err
	}
	if cfg.Policy == "" {
		return command.Usagef("serve loadgen: -policy is required")
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = -1 // loadgen's zero means the default
	}
	fmt.Fprintf(o.Stderr, "serve: loadgen: %s policy %s, %d connections, %v (+%v warm-up)\n", cfg.Addr, cfg.Policy, cfg.Concurrency, cfg.Duration, max(cfg.Warmup, 0))
	res, err := loadgen.Run(ctx, cfg)
	if res != nil {
		fmt.Fprintln(o.Stdout, res)
	}
	return err
}
