package cli

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"golang.org/x/net/netutil"

	"streamscale/env"
	"streamscale/internal/command"
	"streamscale/internal/regfile"
	"streamscale/serve/envserver"
)

// runEnv serves the simulator as remote Gymnasium environments
// (package envserver). It prints the listening address on stdout (one
// line, "http://HOST:PORT", or "unix:PATH" for -addr unix:PATH), so that
// a client starting it with -addr 127.0.0.1:0 learns the port.
func runEnv(ctx context.Context, args []string, o command.IO) error {
	fs := command.NewFlagSet("serve env")
	var cfg envserver.Config
	addr := fs.String("addr", "127.0.0.1:8090", "listen address: host:port (port 0 picks a free one, printed on stdout), or unix:PATH for a Unix socket at PATH (local clients only; a round trip costs less than over loopback TCP)")
	fs.IntVar(&cfg.MaxEnvs, "max-envs", envserver.DefaultMaxEnvs, fmt.Sprintf("simulator environments alive in total (a vector of N counts N), 1..%d", envserver.MaxEnvsLimit))
	fs.IntVar(&cfg.MaxEnvsPerConn, "max-envs-per-conn", 0, fmt.Sprintf("environments alive per client connection (0: min(%d, -max-envs)); an env is freed when its connection closes", envserver.DefaultMaxEnvsPerConn))
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", envserver.DefaultIdleTimeout, "free an instance no request touched for this long, and close a connection idle this long (freeing its envs)")
	fs.Int64Var(&cfg.MaxJSONBytes, "max-body", envserver.DefaultMaxJSONBytes, "JSON request body limit in bytes (step bodies are capped at their exact size)")
	fs.StringVar(&cfg.TracesDir, "traces", "", "trace directory (default $STREAMSCALE_TRACES or ../shared/data/traces; synthetic traces if absent)")
	fs.IntVar(&cfg.Workers, "workers", 0, "goroutines stepping one vector (0: GOMAXPROCS)")
	scenario := fs.String("scenario", "", "default scenario of created environments: a physics preset ("+strings.Join(env.Scenarios(), " or ")+") or a scenario file (eval calibrate -out writes one); default realistic")
	maxConns := fs.Int("max-conns", 256, "open client connections at most; further ones wait in the kernel's accept queue")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (diagnostics)")
	withStdin := fs.Bool("exit-with-stdin", false, "shut down when standard input ends: a parent that starts serve env with a pipe it never writes as stdin (the Python client's LocalServer does) stops it by exiting, even when it is killed")
	if err := command.Parse(fs, "usage: serve env [flags]\nserves the simulator as remote Gymnasium environments over HTTP/1.1 and h2c", args, o); err != nil {
		return err
	}
	switch {
	case cfg.MaxEnvs < 1 || cfg.MaxEnvs > envserver.MaxEnvsLimit:
		return command.Usagef("serve env: -max-envs %d, want 1..%d", cfg.MaxEnvs, envserver.MaxEnvsLimit)
	case cfg.MaxEnvsPerConn < 0 || cfg.MaxEnvsPerConn > cfg.MaxEnvs:
		return command.Usagef("serve env: -max-envs-per-conn %d, want 0..%d (-max-envs)", cfg.MaxEnvsPerConn, cfg.MaxEnvs)
	case cfg.IdleTimeout <= 0:
		return command.Usagef("serve env: -idle-timeout %v, want > 0", cfg.IdleTimeout)
	case cfg.MaxJSONBytes < 1024:
		return command.Usagef("serve env: -max-body %d, want ≥ 1024", cfg.MaxJSONBytes)
	case *maxConns < 1:
		return command.Usagef("serve env: -max-conns %d, want ≥ 1", *maxConns)
	case *withStdin && o.Stdin == nil:
		return command.Usagef("serve env: -exit-with-stdin, but this run has no standard input")
	}
	if *scenario != "" {
		sc, err := env.ResolveScenario(*scenario, regfile.Reader(env.MaxScenarioFile))
		if err != nil {
			return command.Usagef("serve env: -scenario: %v", err)
		}
		cfg.Scenario = &sc
	}
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(o.Stderr, "serve: "+format+"\n", args...) }
	s, err := envserver.New(cfg)
	if err != nil {
		return command.Usagef("serve env: %v", err)
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
	network, laddr, shown := "tcp", *addr, "http://"
	if path, ok := strings.CutPrefix(*addr, "unix:"); ok {
		if path == "" {
			return command.Usagef("serve env: -addr unix: names no path")
		}
		network, laddr, shown = "unix", path, "unix:"
	}
	ln, err := net.Listen(network, laddr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// A Unix listener removes its socket file when closed.
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil && !ap.Addr().Unmap().IsLoopback() {
		fmt.Fprintf(o.Stderr, "serve: note: listening on %s, which is not a loopback address\n", ap)
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Protocols:         &protos,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		// A trainer's connection sits idle during its policy update;
		// keep it as long as its environments live.
		IdleTimeout:    cfg.IdleTimeout,
		MaxHeaderBytes: maxHeaderBytes,
		ErrorLog:       log.New(o.Stderr, "serve: http: ", 0),
	}
	// Handler, and the hooks that free an env with its connection.
	s.Configure(srv)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.Run(sctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(netutil.LimitListener(ln, *maxConns)) }()
	fmt.Fprintf(o.Stdout, "%s%s\n", shown, ln.Addr())
	st := s.Stats()
	fmt.Fprintf(o.Stderr, "serve: env: listening on %s%s (HTTP/1.1 and h2c, frames after an upgrade; at most %d envs, %d per connection, idle timeout %v)\n",
		shown, ln.Addr(), st.MaxEnvs, st.MaxEnvsPerConn, cfg.IdleTimeout)
	// With -exit-with-stdin, the end of standard input is the parent's
	// exit (nothing is ever written to it; whatever is, is discarded).
	var stdinEnded <-chan struct{}
	if *withStdin {
		ended := make(chan struct{})
		go func() {
			io.Copy(io.Discard, o.Stdin) //nolint:errcheck // any end, EOF or error, is the parent gone
			close(ended)
		}()
		stdinEnded = ended
	}
	select {
	case <-ctx.Done():
	case <-stdinEnded:
		fmt.Fprintln(o.Stderr, "serve: standard input ended (-exit-with-stdin)")
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(o.Stderr, "serve: shutting down")
	shctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if err := srv.Shutdown(shctx); err != nil {
		srv.Close() //nolint:errcheck // cut what did not finish in time
	}
	s.CloseStreams() // upgraded connections, which Shutdown does not track
	<-served
	return nil
}
