package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"streamscale/serve/api"
	"streamscale/serve/loadgen"
)

// TokenEnv is the environment variable read when -admin-token is not given.
const TokenEnv = "STREAMSCALE_ADMIN_TOKEN"

// IO is the command's environment.
type IO struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

const usage = `usage:
  serve api     [-policies DIR] [-addr 127.0.0.1:8080] [-admin-token TOKEN] ...
  serve loadgen [-addr 127.0.0.1:8080] -policy NAME [-duration 10s] [-concurrency 32] ...
run "serve api -h" or "serve loadgen -h" for every flag`

// Main runs the command with args (without the program name) and returns
// the exit code.
func Main(ctx context.Context, args []string, env IO) int {
	if len(args) == 0 {
		fmt.Fprintln(env.Stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "api":
		err = runAPI(ctx, args[1:], env)
	case "loadgen":
		err = runLoadgen(ctx, args[1:], env)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(env.Stdout, usage)
		return 0
	default:
		fmt.Fprintf(env.Stderr, "serve: unknown command %q\n%s\n", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(env.Stderr, err)
		return 2
	}
	fmt.Fprintln(env.Stderr, err)
	return 1
}

var errUsage = errors.New("serve: usage")

func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// Server timeouts and limits.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 10 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	gcPercent         = 400 // unless $GOGC is set
)

func runAPI(ctx context.Context, args []string, env IO) error {
	fs := flag.NewFlagSet("serve api", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	cfg := api.Config{Log: env.Stderr}
	fs.StringVar(&cfg.Dir, "policies", "policies", "directory of policies: <DIR>/<name>/policy.json and policy.safetensors")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (host:port; loopback unless you mean otherwise)")
	fs.StringVar(&cfg.AdminToken, "admin-token", "", "bearer token enabling POST /admin/reload, ≥16 bytes (default $"+TokenEnv+"; none: no admin routes)")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body", api.DefaultMaxBodyBytes, "request body limit in bytes")
	fs.IntVar(&cfg.MaxBatch, "max-batch", api.DefaultMaxBatch, "observations per batch request")
	grace := fs.Duration("shutdown-timeout", 10*time.Second, "how long requests in flight may take to finish at shutdown")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (diagnostics)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if cfg.AdminToken == "" && env.Getenv != nil {
		cfg.AdminToken = env.Getenv(TokenEnv)
	}
	if env.Getenv != nil && env.Getenv("GOGC") == "" {
		// The live heap is a few MB; at GOGC=100 a loaded server collects
		// about ten times a second, and each cycle shows in the tail.
		debug.SetGCPercent(gcPercent)
	}
	s, err := api.New(cfg)
	if err != nil {
		return usageErr("%v", err)
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
		fmt.Fprintf(env.Stderr, "serve: note: listening on %s, which is not a loopback address\n", ap)
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(env.Stderr, "serve: http: ", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(env.Stderr, "serve: listening on http://%s\n", ln.Addr())
	shutdown := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), *grace)
		defer cancel()
		err := srv.Shutdown(sctx)
		<-served
		if err != nil {
			return fmt.Errorf("serve: shutdown: %w", err)
		}
		return nil
	}

	if err := s.Reload(); err != nil {
		shutdown() //nolint:errcheck // the load error is the one to report
		return fmt.Errorf("serve: %w", err)
	}
	pols := s.Policies()
	fmt.Fprintf(env.Stderr, "serve: ready: %d policies; admin routes %s\n", len(pols), map[bool]string{true: "on", false: "off"}[cfg.AdminToken != ""])

	select {
	case <-ctx.Done():
		fmt.Fprintln(env.Stderr, "serve: shutting down")
		return shutdown()
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
}

func runLoadgen(ctx context.Context, args []string, env IO) error {
	fs := flag.NewFlagSet("serve loadgen", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var cfg loadgen.Config
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "server address (loopback only)")
	fs.StringVar(&cfg.Policy, "policy", "", "policy name (required)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured duration (≤ 10m)")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "unmeasured warm-up before it (0: none)")
	fs.IntVar(&cfg.Concurrency, "concurrency", 32, "keep-alive connections, one request in flight each (≤ 256)")
	fs.Int64Var(&cfg.MaxRequests, "requests", 0, "stop after this many measured requests (0: duration only)")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Second, "per-request timeout")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if cfg.Policy == "" {
		return usageErr("-policy is required")
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = -1 // loadgen's zero means the default
	}
	fmt.Fprintf(env.Stderr, "serve: loadgen: %s policy %s, %d connections, %v (+%v warm-up)\n", cfg.Addr, cfg.Policy, cfg.Concurrency, cfg.Duration, max(cfg.Warmup, 0))
	res, err := loadgen.Run(ctx, cfg)
	if res != nil {
		fmt.Fprintln(env.Stdout, res)
	}
	return err
}
