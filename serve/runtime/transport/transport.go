package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"
)

// window is the HTTP/2 flow-control window per stream and per connection:
// how many bytes may be in flight before the sender blocks.
const window = 4 << 20

// readBuffer is the bufio buffer in front of each stream.
const readBuffer = 256 << 10

// Stream is one direction pair of an HTTP/2 stream.
type Stream struct {
	R     *bufio.Reader
	w     io.Writer
	flush func() error
	close func()
	once  sync.Once
}

// Write writes b and flushes it to the network.
func (s *Stream) Write(b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	if s.flush != nil {
		return s.flush()
	}
	return nil
}

// CloseWrite ends the dialer's direction only (the peer reads EOF); it is
// a no-op on the listener's side.
func (s *Stream) CloseWrite() error {
	if c, ok := s.w.(io.Closer); ok && s.flush == nil {
		return c.Close()
	}
	return nil
}

// Close ends the stream in both directions.
func (s *Stream) Close() { s.once.Do(s.close) }

func protocols() *http.Protocols {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &p
}

func h2config() *http.HTTP2Config {
	return &http.HTTP2Config{
		MaxReceiveBufferPerStream:     window,
		MaxReceiveBufferPerConnection: 4 * window,
		SendPingTimeout:               5 * time.Second,
		PingTimeout:                   5 * time.Second,
	}
}

// Client dials streams; its connections are shared by every stream to the
// same address (one TCP connection per peer pair).
type Client struct{ hc *http.Client }

// NewClient returns a client.
func NewClient() *Client {
	tr := &http.Transport{
		Protocols:   protocols(),
		HTTP2:       h2config(),
		DialContext: (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 15 * time.Second}).DialContext,
	}
	return &Client{hc: &http.Client{Transport: tr}}
}

// CloseIdle closes the client's idle connections.
func (c *Client) CloseIdle() { c.hc.CloseIdleConnections() }

// Dial opens a stream to addr; it ends when ctx is cancelled or Close is
// called.
func (c *Client) Dial(ctx context.Context, addr string) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/stream", pr)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("transport: dial %s: %w", addr, err)
	}
	req.ContentLength = -1
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		pw.Close()
		return nil, fmt.Errorf("transport: dial %s: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		pw.Close()
		return nil, fmt.Errorf("transport: dial %s: status %s", addr, resp.Status)
	}
	shut := func() {
		pw.Close()
		resp.Body.Close()
	}
	// A blocked read of the response body or a blocked write into the
	// request body ends when ctx does.
	stopWatch := context.AfterFunc(ctx, shut)
	return &Stream{
		R: bufio.NewReaderSize(resp.Body, readBuffer),
		w: pw,
		close: func() {
			stopWatch()
			shut()
			cancel()
		},
	}, nil
}

// InheritedEnv names the environment variable through which a parent
// process hands its child the listening socket of an address already
// bound: the value is the address (host:port), the socket is the child's
// file descriptor 3 (exec.Cmd.ExtraFiles[0]). The worker provider of
// package provider/local binds a free loopback port, keeps it bound and
// hands it over so, since a port picked free and closed before the child
// binds it can be taken by any other process in between (the kernel hands
// the same ephemeral range to outgoing connections).
const InheritedEnv = "STREAMSCALE_LISTENER_FD3"

// inheritedFD is the descriptor InheritedEnv refers to.
const inheritedFD = 3

var inherited struct {
	sync.Mutex
	taken bool
}

// Listen binds addr; an address that is not loopback is refused unless
// public is true, so a runtime never listens on the network by accident.
// If $STREAMSCALE_LISTENER_FD3 (InheritedEnv) equals addr, the first
// Listen of addr takes the inherited socket instead of binding.
func Listen(addr string, public bool) (net.Listener, error) {
	ln, err := listenInherited(addr)
	if ln == nil && err == nil {
		ln, err = net.Listen("tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil && !ap.Addr().Unmap().IsLoopback() && !public {
		ln.Close()
		return nil, fmt.Errorf("transport: %s is not a loopback address (allow it explicitly, with a token)", addr)
	}
	return ln, nil
}

// Serve serves streams on ln until ctx is done: each stream runs
// handle(ctx, s) on its own goroutine and ends when handle returns.
func Serve(ctx context.Context, ln net.Listener, handle func(context.Context, *Stream), errLog io.Writer) error {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /stream", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.EnableFullDuplex()
		w.WriteHeader(http.StatusOK)
		if err := rc.Flush(); err != nil {
			return
		}
		sctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(sctx, func() { r.Body.Close() })()
		s := &Stream{R: bufio.NewReaderSize(r.Body, readBuffer), w: w, flush: rc.Flush, close: cancel}
		handle(sctx, s)
	})
	if errLog == nil {
		errLog = io.Discard
	}
	srv := &http.Server{
		Handler:           mux,
		Protocols:         protocols(),
		HTTP2:             h2config(),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          log.New(errLog, "transport: ", 0),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		srv.Close()
		<-done
		return nil
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("transport: %w", err)
	}
}

// listenInherited returns the socket handed over for addr (InheritedEnv),
// or nil and no error if there is none.
func listenInherited(addr string) (net.Listener, error) {
	env := os.Getenv(InheritedEnv)
	if env == "" || env != addr {
		return nil, nil
	}
	inherited.Lock()
	defer inherited.Unlock()
	if inherited.taken {
		return nil, nil
	}
	inherited.taken = true
	os.Unsetenv(InheritedEnv) //nolint:errcheck // not for this process's children
	f := os.NewFile(inheritedFD, "inherited listener")
	if f == nil {
		return nil, fmt.Errorf("$%s=%s but descriptor %d is not open", InheritedEnv, env, inheritedFD)
	}
	defer f.Close() // FileListener holds a dup
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("$%s=%s: descriptor %d: %w", InheritedEnv, env, inheritedFD, err)
	}
	if got := ln.Addr().String(); got != addr {
		ln.Close()
		return nil, fmt.Errorf("$%s=%s: descriptor %d listens on %s", InheritedEnv, env, inheritedFD, got)
	}
	return ln, nil
}
