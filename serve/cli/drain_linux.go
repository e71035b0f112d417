package cli

import (
	"net"
	"os"
	"syscall"
)

// acceptQueued accepts, without waiting, every connection in ln's accept
// queue.
func acceptQueued(ln *net.TCPListener) []net.Conn {
	rc, err := ln.SyscallConn()
	if err != nil {
		return nil
	}
	var conns []net.Conn
	for {
		var nfd int
		var aerr error
		err := rc.Control(func(fd uintptr) {
			// The listening socket is non-blocking: EAGAIN once the queue
			// is empty. The accepted one is blocking, so that os.NewFile
			// does not register it with the poller (net.FileConn does).
			nfd, _, aerr = syscall.Accept4(int(fd), syscall.SOCK_CLOEXEC)
		})
		switch {
		case err != nil:
			return conns
		case aerr == syscall.EINTR || aerr == syscall.ECONNABORTED:
			continue
		case aerr != nil:
			return conns
		}
		f := os.NewFile(uintptr(nfd), "tcp")
		c, err := net.FileConn(f) // a dup of nfd
		f.Close()                 //nolint:errcheck // the dup stays open
		if err != nil {
			continue
		}
		conns = append(conns, c)
	}
}
