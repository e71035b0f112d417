// Package transport carries the runtime's wire frames between processes:
// one long-lived HTTP/2 stream over cleartext TCP (h2c) per direction of a
// connection, ordered and flow-controlled, so a slow receiver pushes back on
// its sender (backpressure) instead of queueing without bound.
//
// Why h2c rather than gRPC: the runtime already has its own binary frames
// (package wire), so gRPC would add code generation and a protobuf layer
// only to wrap bytes; HTTP/2 gives the same multiplexed, flow-controlled
// streams over one TCP connection per peer pair. The implementation is the
// standard library's HTTP/2 (the same code as golang.org/x/net/http2, which
// the module already depends on), enabled for unencrypted connections with
// http.Protocols.SetUnencryptedHTTP2 (Go ≥ 1.24).
//
// A stream is opened by Dial (POST /stream); the request body carries the
// dialer's frames and the response body the listener's. Who may open a
// stream is decided by the handler on the first frame (a wire.Hello with
// the shared token and a member ID); this package only moves bytes.
//
// Concurrency: a Stream's Write may be called by one goroutine at a time
// (the owner's sender loop), its reader by one other goroutine.
package transport
