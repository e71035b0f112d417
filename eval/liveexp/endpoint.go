package liveexp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"streamscale/serve/api"
	"streamscale/serve/client"
)

// Endpoint is a policy endpoint (the serve api routes) this process
// started: in process, or as a serve binary in a process group of its own.
// Close stops it and everything it started.
type Endpoint struct {
	// URL is the endpoint's base URL, http://127.0.0.1:PORT.
	URL string

	closeOnce sync.Once
	stop      func()
}

// Close stops the endpoint: the in-process server's listener and
// connections, or the binary's whole process group (SIGTERM, SIGKILL after
// 5 s), and waits until it is gone. It is safe to call more than once.
func (e *Endpoint) Close() {
	e.closeOnce.Do(e.stop)
}

// StartEndpoint serves the policies of dir (<dir>/<name>/policy.json) on a
// free loopback port. With bin "" the server runs in this process
// (serve/api); otherwise bin is started as `bin api -policies dir -addr
// ADDR` in its own process group, with SIGKILL as its parent-death signal,
// and waited for up to 5 minutes (until it lists its policies). log
// receives the server's messages.
func StartEndpoint(ctx context.Context, dir, bin string, log io.Writer) (*Endpoint, error) {
	if bin == "" {
		return startInProcess(dir, log)
	}
	return startBinary(ctx, dir, bin, log)
}

// startInProcess serves dir from an api.Server in this process.
func startInProcess(dir string, w io.Writer) (*Endpoint, error) {
	s, err := api.New(api.Config{Dir: dir, Log: w})
	if err != nil {
		return nil, fmt.Errorf("liveexp: policy endpoint: %w", err)
	}
	if err := s.Reload(); err != nil {
		return nil, fmt.Errorf("liveexp: policy endpoint over %s: %w", dir, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("liveexp: %w", err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(w, "liveexp: http: ", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln) //nolint:errcheck // http.ErrServerClosed after Close
	}()
	return &Endpoint{URL: "http://" + ln.Addr().String(), stop: func() {
		srv.Close() //nolint:errcheck // closing: nothing to do on error
		<-done
	}}, nil
}

// startBinary runs bin's api command in its own process group.
func startBinary(ctx context.Context, dir, bin string, w io.Writer) (*Endpoint, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("liveexp: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "api", "-policies", dir, "-addr", addr)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("liveexp: start the policy endpoint: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }() //nolint:errcheck // the exit status after our SIGTERM is not an error
	pgid := cmd.Process.Pid                 // Setpgid: the group is the child's pid
	e := &Endpoint{URL: "http://" + addr, stop: func() {
		syscall.Kill(-pgid, syscall.SIGTERM) //nolint:errcheck // it may have exited
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		syscall.Kill(-pgid, syscall.SIGKILL) //nolint:errcheck // the group may be gone
		<-done
	}}
	if err := awaitReady(ctx, e.URL, done); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// awaitReady polls url's policy list until it answers, the process exits
// (done closes), ctx ends or 5 minutes pass.
func awaitReady(ctx context.Context, url string, done <-chan struct{}) error {
	c, err := client.New(url, nil)
	if err != nil {
		return fmt.Errorf("liveexp: %w", err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Policies(rctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return errors.New("liveexp: the policy endpoint exited before it was ready")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("liveexp: the policy endpoint on %s was not ready within 5 minutes: %v", url, err)
		}
	}
}
