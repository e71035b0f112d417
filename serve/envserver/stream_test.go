package envserver

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// streamClient is a minimal Go client of the frame protocol: one
// connection, upgraded.
type streamClient struct {
	nc  net.Conn
	br  *bufio.Reader
	out []byte
	buf []byte
}

func dialStream(t testing.TB, ts *httptest.Server) *streamClient {
	t.Helper()
	nc, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	fmt.Fprintf(nc, "GET /v1/stream HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", StreamProtocol)
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != StreamProtocol {
		t.Fatalf("upgrade: %s, Upgrade %q", resp.Status, resp.Header.Get("Upgrade"))
	}
	return &streamClient{nc: nc, br: br}
}

// call sends one frame and returns the response (status, body).
func (c *streamClient) call(op byte, id uint64, payload []byte) (int, []byte, error) {
	c.out = AppendFrameHeader(c.out[:0], FrameHeader{Op: op, ID: id, N: uint32(len(payload))})
	c.out = append(c.out, payload...)
	if _, err := c.nc.Write(c.out); err != nil {
		return 0, nil, err
	}
	return readResponseFrame(c.br, &c.buf)
}

func readResponseFrame(r io.Reader, buf *[]byte) (int, []byte, error) {
	var h [ResponseHeaderLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[2:])
	if n > 64<<20 {
		return 0, nil, fmt.Errorf("response frame of %d bytes", n)
	}
	*buf = append((*buf)[:0], make([]byte, n)...)
	if _, err := io.ReadFull(r, *buf); err != nil {
		return 0, nil, err
	}
	return int(binary.LittleEndian.Uint16(h[:])), *buf, nil
}

// must is call expecting status 200.
func (c *streamClient) must(t *testing.T, op byte, id uint64, payload []byte) []byte {
	t.Helper()
	st, b, err := c.call(op, id, payload)
	if err != nil || st != http.StatusOK {
		t.Fatalf("%c %d: status %d, %q, %v", op, id, st, b, err)
	}
	return bytes.Clone(b)
}

// wantErr is call expecting an error response with status and code.
func (c *streamClient) wantErr(t *testing.T, op byte, id uint64, payload []byte, status int, code string) string {
	t.Helper()
	st, b, err := c.call(op, id, payload)
	var e apiError
	if err != nil || st != status || json.Unmarshal(b, &e) != nil || e.Code != code {
		t.Fatalf("%c %d: status %d body %q err %v; want %d %s", op, id, st, b, err, status, code)
	}
	return e.Msg
}

// TestStreamMatchesHTTP: the frame protocol answers create, reset, step
// and close with the very bytes HTTP gives for the same requests (a
// single env and a vector, with episode ends), so both clients decode
// one format.
func TestStreamMatchesHTTP(t *testing.T) {
	_, ts := newTestServer(t, Config{})
	for _, req := range []CreateRequest{
		{Profile: "etl", Steps: 4},
		{Profile: "pred", NumEnvs: 3, Steps: 3, PlacementSeeds: []uint64{5, 6}},
		{Profile: "etl", NumEnvs: 2, Steps: 3, Autoreset: "same_step"},
	} {
		hc, sc := newClient(ts), dialStream(t, ts)
		cr, err := hc.create(req)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(req)
		var scr CreateResponse
		if err := json.Unmarshal(sc.must(t, OpCreate, 0, js), &scr); err != nil {
			t.Fatal(err)
		}
		if scr.ID != 1 || cr.ID != 1 || scr.FlatSize != cr.FlatSize || len(scr.PlacementSeeds) != len(cr.PlacementSeeds) {
			t.Fatalf("create: stream %+v, http %+v", scr, cr)
		}
		n := max(req.NumEnvs, 1)
		reset := []byte(`{"seed": 9}`)
		want, err := hc.do("POST", "/v1/envs/1/reset", "application/json", reset)
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.must(t, OpReset, 1, reset); !bytes.Equal(got, want) {
			t.Fatalf("%+v: reset differs", req)
		}
		for k := range 7 {
			var a []int64
			for range n {
				a = append(a, actionAt(k, len(cr.Spaces.Nvec))...)
			}
			body := AppendInt64s(nil, a)
			want, err := hc.do("POST", "/v1/envs/1/step", "application/octet-stream", body)
			if req.NumEnvs == 0 && k == req.Steps {
				// The single env's episode is over: both refuse alike.
				sc.wantErr(t, OpStep, 1, body, http.StatusConflict, "episode_over")
				if code(err) != "episode_over" {
					t.Fatalf("http step %d: %v", k, err)
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.must(t, OpStep, 1, body); !bytes.Equal(got, want) {
				t.Fatalf("%+v: step %d differs", req, k)
			}
		}
		if got := string(sc.must(t, OpClose, 1, nil)); got != `{"closed":1}` {
			t.Fatalf("close: %s", got)
		}
		sc.wantErr(t, OpStep, 1, nil, http.StatusGone, "closed")
	}
}

// TestStreamRefusals: every bad frame gets its error response (status and
// code as over HTTP) and the stream goes on, except a refused payload too
// large to skip, which ends it; a refusal changes nothing.
func TestStreamRefusals(t *testing.T) {
	s, ts := newTestServer(t, Config{MaxEnvs: 8, MaxEnvsPerConn: 4})
	sc := dialStream(t, ts)
	sc.wantErr(t, OpStep, 1, nil, http.StatusNotFound, "unknown_env")
	var cr CreateResponse
	if err := json.Unmarshal(sc.must(t, OpCreate, 0, []byte(`{"profile":"etl","num_envs":2}`)), &cr); err != nil {
		t.Fatal(err)
	}
	act := AppendInt64s(nil, make([]int64, 2*len(cr.Spaces.Nvec)))
	sc.wantErr(t, OpStep, 1, act, http.StatusConflict, "not_reset")
	reset := sc.must(t, OpReset, 1, []byte(`{"seed":1}`))
	for _, c := range []struct {
		op      byte
		id      uint64
		payload []byte
		status  int
		code    string
		msg     string
	}{
		{'X', 1, []byte("abc"), 400, "malformed_body", "unknown frame op 0x58"},
		{OpCreate, 3, []byte(`{"profile":"etl"}`), 400, "bad_request", "names id 3, want 0"},
		{OpCreate, 0, []byte(`{"profile":"etl","num_envs":3}`), 429, "too_many_envs", "exceed 4 per connection"},
		{OpCreate, 0, []byte(`{"profile":"etl","profile":"pred"}`), 400, "bad_request", "profile"},
		{OpCreate, 0, bytes.Repeat([]byte(" "), DefaultMaxJSONBytes+1), 413, "body_too_large", "limit 65536"},
		{OpReset, 1, []byte(`{"seed":-1}`), 400, "bad_request", ""},
		{OpStep, 1, AppendInt64s(nil, make([]int64, 2*len(cr.Spaces.Nvec)-1)), 400, "bad_action", "want " + fmt.Sprint(2*len(cr.Spaces.Nvec))},
		{OpStep, 1, append(bytes.Clone(act), 0), 413, "body_too_large", "limit"},
		{OpStep, 1, append(act[:len(act)-1:len(act)-1], 9), 400, "bad_action", "env 1 action entry"},
		{OpStep, 1, []byte{'q', 0, 0, 0, 0}, 400, "malformed_body", "unknown section kind"},
		{OpStep, 2, act, 404, "unknown_env", "no env 2"},
		{OpClose, 1, []byte("x"), 413, "body_too_large", "limit 0"},
	} {
		msg := sc.wantErr(t, c.op, c.id, c.payload, c.status, c.code)
		if !strings.Contains(msg, c.msg) {
			t.Errorf("%c %q: message %q, want it to contain %q", c.op, c.payload, msg, c.msg)
		}
	}
	// Nothing moved: a fresh reset with the same seed gives the same bytes,
	// and the env still steps.
	if !bytes.Equal(sc.must(t, OpReset, 1, []byte(`{"seed":1}`)), reset) {
		t.Fatal("reset after refusals differs")
	}
	sc.must(t, OpStep, 1, act)
	// Another connection cannot name this one's env.
	other := dialStream(t, ts)
	other.wantErr(t, OpStep, 1, act, http.StatusNotFound, "unknown_env")
	// A payload too large to skip: answered, then the stream ends and its
	// envs are freed.
	big := AppendFrameHeader(nil, FrameHeader{Op: OpStep, ID: 1, N: discardLimit + 1})
	if _, err := sc.nc.Write(big); err != nil {
		t.Fatal(err)
	}
	var buf []byte
	st, b, err := readResponseFrame(sc.br, &buf)
	if err != nil || st != 413 || !strings.Contains(string(b), "keep the connection") {
		t.Fatalf("huge frame: %d %q %v", st, b, err)
	}
	if _, err := sc.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("stream still open after a huge frame: %v", err)
	}
	waitEnvs(t, s, 0)
}

func waitEnvs(t *testing.T, s *Server, want int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.Stats().Envs != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d envs alive, want %d", s.Stats().Envs, want)
		}
	}
}

// TestStreamLifetime: closing a stream's connection frees its envs (also
// those created over HTTP before the upgrade), CloseStreams ends open
// streams and refuses new upgrades, and a plain GET /v1/stream gets 426
// naming the protocol.
func TestStreamLifetime(t *testing.T) {
	s, ts := newTestServer(t, Config{})
	resp, err := http.Get(ts.URL + "/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || resp.Header.Get("Upgrade") != StreamProtocol || !strings.Contains(string(b), "upgrade_required") {
		t.Fatalf("plain GET: %s %q %q", resp.Status, resp.Header.Get("Upgrade"), b)
	}

	nc, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	js := `{"profile":"etl"}`
	fmt.Fprintf(nc, "POST /v1/envs HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(js), js)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("create over http: %v %v", resp, err)
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	fmt.Fprintf(nc, "GET /v1/stream HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: %s\r\n\r\n", strings.ToUpper(StreamProtocol))
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	sc := &streamClient{nc: nc, br: br}
	sc.must(t, OpReset, 1, nil) // the env created before the upgrade is this stream's
	if s.Stats().Envs != 1 {
		t.Fatalf("%d envs after the upgrade, want 1", s.Stats().Envs)
	}
	nc.Close()
	waitEnvs(t, s, 0)

	sc = dialStream(t, ts)
	sc.must(t, OpCreate, 0, []byte(`{"profile":"etl","num_envs":2}`))
	waitEnvs(t, s, 2)
	s.CloseStreams()
	waitEnvs(t, s, 0)
	if _, err := sc.br.ReadByte(); err == nil {
		t.Fatal("stream open after CloseStreams")
	}
	nc, err = net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprintf(nc, "GET /v1/stream HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", StreamProtocol)
	if resp, err := http.ReadResponse(bufio.NewReader(nc), nil); err != nil || resp.StatusCode != http.StatusGone {
		t.Fatalf("upgrade after CloseStreams: %v %v", resp, err)
	}
}

// FuzzStream feeds arbitrary bytes to a stream as a client's frames: the
// server answers with well-formed response frames (a status it documents
// and a body of the announced length) and never panics or hangs.
func FuzzStream(f *testing.F) {
	create := []byte(`{"profile":"etl","num_envs":2,"steps":3}`)
	act := AppendInt64s(nil, make([]int64, 2*9)) // 2 ETL envs of 9 tasks
	frame := func(op byte, id uint64, p []byte) []byte {
		return append(AppendFrameHeader(nil, FrameHeader{Op: op, ID: id, N: uint32(len(p))}), p...)
	}
	f.Add(concat(frame(OpCreate, 0, create), frame(OpReset, 1, []byte(`{"seed":3}`)), frame(OpStep, 1, act), frame(OpClose, 1, nil)))
	f.Add(frame(OpStep, 7, act))
	f.Add([]byte("C\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"))
	s, err := New(Config{MaxEnvs: 4, MaxEnvsPerConn: 4})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s.mu.Lock()
		s.connSeq++
		owner := s.connSeq
		s.conns[owner] = &conn{envs: map[uint64]*instance{}}
		s.mu.Unlock()
		defer s.dropConn(owner)
		var out bytes.Buffer
		s.serveFrames(owner, bufio.NewReader(bytes.NewReader(in)), &out, func(bool) {})
		var buf []byte
		for out.Len() > 0 {
			st, b, err := readResponseFrame(&out, &buf)
			if err != nil {
				t.Fatalf("response stream: %v", err)
			}
			if st != 200 {
				var e apiError
				if json.Unmarshal(b, &e) != nil || e.Code == "" || e.Code == "internal" {
					t.Fatalf("status %d body %q", st, b)
				}
			}
		}
	})
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// writeLog records each Write as one chunk.
type writeLog struct{ chunks [][]byte }

func (w *writeLog) Write(p []byte) (int, error) {
	w.chunks = append(w.chunks, bytes.Clone(p))
	return len(p), nil
}

// TestStreamOneWritePerResponse: each response frame, header and body,
// leaves in one Write (one write system call on the connection), so the
// client wakes once per step; net.Buffers wrote the header alone first on
// the wrapped connections serve env's listener hands out.
func TestStreamOneWritePerResponse(t *testing.T) {
	s, err := New(Config{MaxEnvs: 4, MaxEnvsPerConn: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.connSeq++
	owner := s.connSeq
	s.conns[owner] = &conn{envs: map[uint64]*instance{}}
	s.mu.Unlock()
	defer s.dropConn(owner)
	frame := func(op byte, id uint64, p []byte) []byte {
		return append(AppendFrameHeader(nil, FrameHeader{Op: op, ID: id, N: uint32(len(p))}), p...)
	}
	act := AppendInt64s(nil, make([]int64, 2*9)) // 2 ETL envs of 9 tasks
	in := concat(frame(OpCreate, 0, []byte(`{"profile":"etl","num_envs":2,"steps":3}`)), frame(OpReset, 1, []byte(`{"seed":3}`)),
		frame(OpStep, 1, act), frame(OpStep, 1, act), frame(OpStep, 1, act[:9]), frame(OpClose, 1, nil))
	var w writeLog
	s.serveFrames(owner, bufio.NewReader(bytes.NewReader(in)), &w, func(bool) {})
	wantStatus := []int{200, 200, 200, 200, 400, 200}
	if len(w.chunks) != len(wantStatus) {
		t.Fatalf("%d writes for %d frames", len(w.chunks), len(wantStatus))
	}
	for i, c := range w.chunks {
		var buf []byte
		r := bytes.NewReader(c)
		st, b, err := readResponseFrame(r, &buf)
		if err != nil || st != wantStatus[i] || r.Len() != 0 {
			t.Errorf("write %d: status %d (want %d), body %.200q, %d left over, %v", i, st, wantStatus[i], b, r.Len(), err)
		}
	}
}
