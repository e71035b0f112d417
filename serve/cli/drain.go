package cli

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// The end of serve api's drain. net/http's Server.Shutdown closes the
// listener, which resets every connection the kernel has completed but the
// server not yet accepted, and a connection it has accepted but whose
// first request it reads only after Shutdown began is closed without an
// answer (net/http's conn.serve returns once the server is shutting down).
// On a host short of CPU both happen to requests sent well before the
// drain ended: the process gets the CPU back, its drain timer fires first,
// and the accept loop and the connection's goroutine run after it. So when
// the drain ends, serve api first (finish) takes the connections waiting
// in the accept queue and closes the listener, then (waitNew) lets the
// server accept them and read the first request of every connection that
// has not sent one yet, and only then calls Shutdown. A request sent
// before the drain ended is answered; only a connection completed in the
// microseconds between the last accept and the close is reset.

// finalListener is what serve api's http.Server accepts from. Until
// finish it passes Accept through to inner (the connection cap over the
// socket); then it returns the connections finish took from the accept
// queue, beyond the cap, and once they are gone blocks until Close.
type finalListener struct {
	net.Listener // inner
	sock         *net.TCPListener

	finished  chan struct{} // closed by finish
	emptied   chan struct{} // closed when Accept found no more taken connections
	closed    chan struct{} // closed by Close
	closeOnce sync.Once

	mu      sync.Mutex
	pending []net.Conn // connections taken by finish, not yet accepted
	empty   bool       // emptied is closed
}

func newFinalListener(inner net.Listener, sock *net.TCPListener) *finalListener {
	return &finalListener{Listener: inner, sock: sock, finished: make(chan struct{}), emptied: make(chan struct{}), closed: make(chan struct{})}
}

// finish takes the connections waiting in the accept queue and closes the
// inner listener; it returns how many it took. Call it once.
func (l *finalListener) finish() int {
	queued := acceptQueued(l.sock)
	l.mu.Lock()
	l.pending = queued
	l.mu.Unlock()
	close(l.finished)  // before the close below: Accept's error must find it
	l.Listener.Close() //nolint:errcheck // Close reports it again
	return len(queued)
}

// Accept returns the next connection: from inner until finish, then the
// ones finish took, then net.ErrClosed once Close is called.
func (l *finalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		return c, nil
	}
	select {
	case <-l.finished:
	default:
		return nil, err
	}
	l.mu.Lock()
	if len(l.pending) > 0 {
		c, l.pending = l.pending[0], l.pending[1:]
		l.mu.Unlock()
		return c, nil
	}
	if !l.empty {
		// The server is back for more: it has registered the last one.
		l.empty = true
		close(l.emptied)
	}
	l.mu.Unlock()
	<-l.closed
	return nil, net.ErrClosed
}

// Close closes inner and ends an Accept blocked after finish. Connections
// finish took and the server has not accepted yet are still returned
// first: Shutdown closes its listeners, then waits for Serve to return,
// which it does at Accept's first error.
func (l *finalListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.closed) })
	select {
	case <-l.finished:
		return nil // finish closed inner
	default:
		return err
	}
}

// newConns counts the server's connections that have not sent their
// first request yet (http.StateNew): its state method is the server's
// ConnState hook.
type newConns struct {
	mu sync.Mutex
	m  map[net.Conn]struct{}
}

func (n *newConns) state(c net.Conn, st http.ConnState) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if st == http.StateNew {
		if n.m == nil {
			n.m = make(map[net.Conn]struct{})
		}
		n.m[c] = struct{}{}
	} else {
		delete(n.m, c)
	}
}

func (n *newConns) len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.m)
}

// waitNew waits, after l.finish and at most until timeout, until the
// server has accepted every connection finish took and every connection
// has sent its first request or closed. A silent connection closes itself
// at the server's ReadHeaderTimeout; Shutdown would wait for it as long.
func waitNew(l *finalListener, n *newConns, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case <-l.emptied:
	case <-deadline.C:
		return
	}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for n.len() > 0 {
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		}
	}
}
