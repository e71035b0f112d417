//go:build !linux

package cli

import "net"

// acceptQueued takes nothing where the accept queue cannot be read without
// waiting: the listener's close resets queued connections.
func acceptQueued(*net.TCPListener) []net.Conn { return nil }
