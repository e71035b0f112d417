package cli

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// serve api's connection cap (-max-conns) with idle reclaim and a health
// reserve. netutil.LimitListener alone let idle keep-alive connections
// hold every slot for the 60 s idle timeout, so new clients and health
// probes waited in the kernel's accept queue all that time.
//
// connLimiter admits at most max+reserve connections (more wait in the
// kernel's accept queue, as before). A connection is "normal" while it
// holds one of the max slots, "reserve" otherwise. When a connection
// arrives with every normal slot taken, the connection idle longest
// between requests (http.StateIdle) is closed and the newcomer takes its
// slot; with none idle, the newcomer is a reserve connection. A reserve
// connection is answered at once on the health routes (healthRoutes), with
// Connection: close; any other request on it waits until it can take a
// normal slot (one frees, or a connection goes idle and is closed), for at
// most promoteWait, then gets 503 with Retry-After. When even the reserve
// is full, Accept closes an idle connection or waits for one to close.
//
// Closing an idle keep-alive connection races a client that sends its
// next request on it at that moment, as net/http's own Shutdown does; Go's
// and most clients retry an idempotent request on a connection the server
// closed while idle.

// promoteWait bounds how long a request on a reserve connection waits for
// a normal slot: the slowloris bound, serve api's read-header timeout.
const promoteWait = readHeaderTimeout

// healthRoutes are served on reserve connections.
var healthRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/v2/health/live": true, "/v2/health/ready": true}

type connLimiter struct {
	net.Listener
	max, reserve int

	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	open    int // admitted, not yet closed
	normal  int // of them holding a normal slot
	seq     uint64
	conns   map[string]*limitedConn // by remote address (the ConnState hook sees the outer wrapper)
	changed chan struct{}           // closed and replaced when a slot frees or a connection goes idle
}

type limitedConn struct {
	net.Conn
	l         *connLimiter
	key       string
	closeOnce sync.Once
	// guarded by l.mu
	normal bool
	idle   uint64 // sequence number of going idle; 0: not idle
}

func newConnLimiter(inner net.Listener, max, reserve int) *connLimiter {
	return &connLimiter{Listener: inner, max: max, reserve: reserve, closed: make(chan struct{}),
		conns: map[string]*limitedConn{}, changed: make(chan struct{})}
}

// signal wakes every waiter; call with l.mu held.
func (l *connLimiter) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// longestIdle returns the normal connection idle longest, or nil; call
// with l.mu held.
func (l *connLimiter) longestIdle() *limitedConn {
	var best *limitedConn
	for _, c := range l.conns {
		if c.normal && c.idle != 0 && (best == nil || c.idle < best.idle) {
			best = c
		}
	}
	return best
}

// reclaim closes the normal connection idle longest, if any, and reports
// whether it did; call with l.mu held (it is released and retaken).
func (l *connLimiter) reclaim() bool {
	c := l.longestIdle()
	if c == nil {
		return false
	}
	c.idle = 0
	l.mu.Unlock()
	c.Close() //nolint:errcheck // its server goroutine sees the error and ends
	l.mu.Lock()
	return true
}

// Accept waits for room (closing an idle connection if the reserve is
// full too), accepts and classifies the connection.
func (l *connLimiter) Accept() (net.Conn, error) {
	l.mu.Lock()
	for l.open >= l.max+l.reserve {
		if l.reclaim() {
			continue
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-l.closed:
			return nil, net.ErrClosed
		}
		l.mu.Lock()
	}
	l.open++
	l.mu.Unlock()

	c, err := l.Listener.Accept()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.open--
		l.signal()
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l, key: c.RemoteAddr().String()}
	l.conns[lc.key] = lc
	if l.normal >= l.max {
		l.reclaim()
	}
	if l.normal < l.max {
		lc.normal = true
		l.normal++
	}
	return lc, nil
}

// Close closes the listener and ends a waiting Accept.
func (l *connLimiter) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		l := c.l
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.conns[c.key] == c {
			delete(l.conns, c.key)
		}
		l.open--
		if c.normal {
			l.normal--
		}
		l.signal()
	})
	return err
}

// state is the http.Server's ConnState hook.
func (l *connLimiter) state(nc net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.conns[nc.RemoteAddr().String()]
	if c == nil {
		return // taken from the accept queue at shutdown, past the cap
	}
	switch st {
	case http.StateIdle:
		l.seq++
		c.idle = l.seq
		l.signal()
	case http.StateActive:
		c.idle = 0
	}
}

type limitedKey struct{}

// connContext is the http.Server's ConnContext hook: it puts the
// connection's limitedConn in every request's context.
func (l *connLimiter) connContext(ctx context.Context, nc net.Conn) context.Context {
	l.mu.Lock()
	c := l.conns[nc.RemoteAddr().String()]
	l.mu.Unlock()
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, limitedKey{}, c)
}

// promote waits until c holds a normal slot, for at most wait or until
// ctx ends, and reports whether it does.
func (l *connLimiter) promote(ctx context.Context, c *limitedConn, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if c.normal {
			return true
		}
		if l.normal >= l.max {
			l.reclaim()
		}
		if l.normal < l.max {
			c.normal = true
			l.normal++
			return true
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			l.mu.Lock()
			return false
		case <-ctx.Done():
			l.mu.Lock()
			return false
		}
		l.mu.Lock()
	}
}

var (
	tooBusy    = []byte(`{"error":"serve: at the connection limit (-max-conns); this connection serves only the health routes"}`)
	retryAfter = []string{"1"}
	jsonCType  = []string{"application/json; charset=utf-8"}
)

// handler wraps h: requests on a reserve connection are served on the
// health routes and otherwise once the connection takes a normal slot.
func (l *connLimiter) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(limitedKey{}).(*limitedConn)
		if c != nil {
			l.mu.Lock()
			normal := c.normal
			l.mu.Unlock()
			if !normal {
				if healthRoutes[r.URL.Path] {
					w.Header()["Connection"] = connectionCloseHdr
					h.ServeHTTP(w, r)
					return
				}
				if !l.promote(r.Context(), c, promoteWait) {
					w.Header()["Connection"] = connectionCloseHdr
					w.Header()["Retry-After"] = retryAfter
					w.Header()["Content-Type"] = jsonCType
					w.WriteHeader(http.StatusServiceUnavailable)
					w.Write(tooBusy) //nolint:errcheck // the client went away
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

var connectionCloseHdr = []string{"close"}
