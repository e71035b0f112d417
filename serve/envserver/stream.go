package envserver

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// The frame protocol (see the package doc, "Frames"): after an HTTP/1.1
// upgrade to StreamProtocol the connection carries request frames
// op | id | n | n payload bytes and response frames status | n | n
// payload bytes, one response per request, in order.

// StreamProtocol is the Upgrade token of version 1 of the frame protocol.
// A later, incompatible version gets a new token; a server answers a
// token it does not speak with 426 upgrade_required naming this one.
const StreamProtocol = "streamscale-env.v1"

// Operations of a request frame.
const (
	OpCreate byte = 'C' // payload: JSON CreateRequest → JSON CreateResponse (id 0)
	OpReset  byte = 'R' // payload: JSON ResetRequest → binary, as POST …/reset
	OpStep   byte = 'S' // payload: binary action → binary, as POST …/step
	OpClose  byte = 'D' // no payload → JSON {"closed": id}
)

// Frame header lengths, bytes.
const (
	RequestHeaderLen  = 13 // op (1) | id (uint64 LE) | n (uint32 LE)
	ResponseHeaderLen = 6  // status (uint16 LE) | n (uint32 LE)
)

// discardLimit is the largest refused payload a stream reads and drops to
// keep the connection (net/http's own bound on an unread body); a frame
// claiming more is answered and the stream closed.
const discardLimit = 256 << 10

// FrameHeader is a decoded request frame header.
type FrameHeader struct {
	Op byte
	ID uint64 // the instance (0 for OpCreate)
	N  uint32 // payload bytes that follow
}

// ParseFrameHeader decodes a request frame header. It fails, wrapping
// ErrMalformed, when b is not RequestHeaderLen bytes or names an unknown
// operation; it never panics.
func ParseFrameHeader(b []byte) (FrameHeader, error) {
	if len(b) != RequestHeaderLen {
		return FrameHeader{}, fmt.Errorf("%w: frame header of %d bytes, want %d", ErrMalformed, len(b), RequestHeaderLen)
	}
	h := FrameHeader{Op: b[0], ID: binary.LittleEndian.Uint64(b[1:]), N: binary.LittleEndian.Uint32(b[9:])}
	switch h.Op {
	case OpCreate, OpReset, OpStep, OpClose:
		return h, nil
	}
	return h, fmt.Errorf("%w: unknown frame op %#x, want one of C R S D", ErrMalformed, h.Op)
}

// AppendFrameHeader appends a request frame header.
func AppendFrameHeader(b []byte, h FrameHeader) []byte {
	b = append(b, h.Op)
	b = binary.LittleEndian.AppendUint64(b, h.ID)
	return binary.LittleEndian.AppendUint32(b, h.N)
}

// upgrade is GET /v1/stream: it switches the connection to the frame
// protocol and serves frames on it until the client closes it, it stays
// idle for the idle timeout, or CloseStreams. The connection keeps its
// number, so instances created over it before the upgrade stay its own.
func (s *Server) upgrade(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(strings.TrimSpace(r.Header.Get("Upgrade")), StreamProtocol) || !headerHasToken(r.Header, "Connection", "upgrade") {
		w.Header().Set("Upgrade", StreamProtocol)
		writeError(w, fmt.Errorf("%w: GET /v1/stream needs \"Connection: Upgrade\" and \"Upgrade: %s\" (got Upgrade %q)",
			ErrBadRequest, StreamProtocol, r.Header.Get("Upgrade")), http.StatusUpgradeRequired, "upgrade_required")
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok || r.ProtoMajor != 1 {
		writeError(w, fmt.Errorf("%w: the frame protocol upgrades an HTTP/1.1 connection, not %s", ErrBadRequest, r.Proto), http.StatusBadRequest, "bad_request")
		return
	}
	owner := connOf(r)
	s.mu.Lock()
	c := s.conns[owner]
	switch {
	case owner == 0:
		s.mu.Unlock()
		writeErr(w, errNoConn)
		return
	case c == nil || s.closing:
		s.mu.Unlock()
		writeErr(w, fmt.Errorf("%w: connection %d is closing", ErrClosed, owner))
		return
	}
	c.stream = true // ConnState keeps its instances through the hijack
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	nc, rw, err := hj.Hijack()
	if err != nil {
		s.mu.Lock()
		c.stream = false
		s.mu.Unlock()
		writeErr(w, fmt.Errorf("%w: upgrade: %v", ErrBadRequest, err))
		return
	}
	defer s.dropConn(owner)
	defer nc.Close()
	s.mu.Lock()
	s.streams[owner] = nc
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.streams, owner)
		s.mu.Unlock()
	}()
	nc.SetDeadline(time.Time{}) //nolint:errcheck // the loop sets its own
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true) //nolint:errcheck // Go's default already; best effort
	}
	rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + StreamProtocol + "\r\n\r\n") //nolint:errcheck // the flush reports it
	if rw.Flush() != nil {
		return
	}
	s.serveFrames(owner, rw.Reader, nc, func(read bool) {
		t := s.cfg.Now().Add(s.cfg.IdleTimeout)
		if read {
			nc.SetReadDeadline(t) //nolint:errcheck // a closed conn fails the read
		} else {
			nc.SetWriteDeadline(t) //nolint:errcheck // a closed conn fails the write
		}
	})
}

// headerHasToken reports whether a comma-separated header has token
// (case-insensitive).
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

// CloseStreams closes every connection upgraded to the frame protocol
// (freeing its instances), refuses further upgrades and waits for their
// loops to end. http.Server.Shutdown does not track hijacked
// connections: call this after it.
func (s *Server) CloseStreams() {
	s.mu.Lock()
	s.closing = true
	for _, nc := range s.streams {
		nc.Close() //nolint:errcheck // ends the stream's read
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// stream is one connection's frame loop state: buffers reused per frame.
type stream struct {
	hdr [RequestHeaderLen]byte
	in  []byte
	out []byte // the response frame: header and body
}

// serveFrames answers request frames read from r on w until r fails (the
// client closed the connection, or the deadline passed) or a frame
// cannot be skipped. deadline(true) is called before each frame is read,
// deadline(false) before each response is written. A bad frame gets an
// error response, never a panic.
func (s *Server) serveFrames(owner uint64, r *bufio.Reader, w io.Writer, deadline func(read bool)) {
	var st stream
	for {
		deadline(true)
		if _, err := io.ReadFull(r, st.hdr[:]); err != nil {
			if err != io.EOF {
				s.cfg.Logf("envserver: stream of connection %d: %v", owner, err)
			}
			return
		}
		status, body, keep := s.frame(owner, &st, r)
		deadline(false)
		// One write of header and body, copied together: net.Buffers
		// makes one writev only on a bare *net.TCPConn or *net.UnixConn,
		// and the listener's connections are wrapped (netutil's limit),
		// so it wrote the 6-byte header alone first, and the client
		// woke for it and then again for the body. The copy (16 KB for
		// 16 envs) costs less than either.
		st.out = binary.LittleEndian.AppendUint16(st.out[:0], uint16(status))
		st.out = binary.LittleEndian.AppendUint32(st.out, uint32(len(body)))
		st.out = append(st.out, body...)
		if _, err := w.Write(st.out); err != nil || !keep {
			return
		}
	}
}

// frame reads the payload of the frame whose header is in st.hdr and
// answers it: status, response body (binary, or JSON for create, close
// and errors), and whether the stream can go on.
func (s *Server) frame(owner uint64, st *stream, r *bufio.Reader) (int, []byte, bool) {
	h, err := ParseFrameHeader(st.hdr[:])
	if err != nil {
		return s.refuse(r, h.N, err)
	}
	var in *instance
	limit := s.cfg.MaxJSONBytes
	switch h.Op {
	case OpCreate:
		if h.ID != 0 {
			return s.refuse(r, h.N, fmt.Errorf("%w: create frame names id %d, want 0", ErrBadRequest, h.ID))
		}
	case OpClose:
		limit = 0
		fallthrough
	default:
		if in, err = s.acquire(owner, h.ID); err != nil {
			return s.refuse(r, h.N, err)
		}
		in.last.Store(s.cfg.Now().UnixNano())
		if h.Op == OpStep {
			limit = in.stepSize()
		}
	}
	if int64(h.N) > limit {
		if in != nil {
			in.mu.Unlock()
		}
		return s.refuse(r, h.N, fmt.Errorf("%w: %c frame payload of %d bytes, limit %d", ErrTooLarge, h.Op, h.N, limit))
	}
	buf := &st.in
	if h.Op == OpStep {
		buf = &in.in
	}
	if cap(*buf) < int(h.N) {
		*buf = make([]byte, h.N)
	}
	*buf = (*buf)[:h.N]
	if _, err := io.ReadFull(r, *buf); err != nil {
		if in != nil {
			in.mu.Unlock()
		}
		return errFrame(fmt.Errorf("%w: reading a %d-byte payload: %v", ErrMalformed, h.N, err), false)
	}
	payload := *buf
	switch h.Op {
	case OpCreate:
		resp, err := s.createOp(owner, payload)
		if err != nil {
			return errFrame(err, true)
		}
		return jsonFrame(resp)
	case OpClose:
		return jsonFrame(s.closeOp(in))
	}
	var out []byte
	if h.Op == OpReset {
		out, err = s.resetOp(in, payload)
	} else {
		out, err = s.stepOp(in, payload)
	}
	in.last.Store(s.cfg.Now().UnixNano())
	in.mu.Unlock()
	// out stays valid after the unlock: only this connection can name in,
	// and its next frame is read after out is written.
	if err != nil {
		return errFrame(err, true)
	}
	return http.StatusOK, out, true
}

// refuse answers a refused frame, first reading and dropping its payload
// of n bytes if that is at most discardLimit (else the stream ends).
func (s *Server) refuse(r *bufio.Reader, n uint32, err error) (int, []byte, bool) {
	if n > discardLimit {
		return errFrame(fmt.Errorf("%w (%d payload bytes, over the %d a refused frame may carry and keep the connection)", err, n, discardLimit), false)
	}
	if _, derr := r.Discard(int(n)); derr != nil {
		return errFrame(err, false)
	}
	return errFrame(err, true)
}

func errFrame(err error, keep bool) (int, []byte, bool) {
	status, code := errStatus(err)
	b, jerr := json.Marshal(map[string]string{"error": err.Error(), "code": code})
	if jerr != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"envserver: encoding the response failed","code":"internal"}`)
	}
	return status, b, keep
}

func jsonFrame(v any) (int, []byte, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return errFrame(fmt.Errorf("envserver: encoding the response: %w", err), true)
	}
	return http.StatusOK, b, true
}
