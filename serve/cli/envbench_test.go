package cli

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"streamscale/env"
	"streamscale/serve/envserver"
	"streamscale/traces"
)

// benchEnvs is the vector of the remote-speed goal: 16 ETL envs.
const benchEnvs = 16

// BenchmarkEnvServeCPU holds the CPU `serve env` spends per env step
// against the same vector stepped in process. The server runs as a child
// process (this test binary as `serve env`, or $STREAMSCALE_ENV_BIN, an
// older build for a before/after), stepped by a Go client over the frame
// protocol over loopback TCP (stream) or a Unix socket (unix), or plain
// HTTP over TCP (http); its CPU is read from
// /proc/<pid>/stat (Linux only), the in-process one from getrusage
// around each local step. Each iteration is one remote and one local
// vector step of 16 ETL envs (realistic physics, taxi-train, placements
// 42 and 37, NEXT_STEP autoreset, the same actions), so both see the
// same load. Metrics: server-µs/env-step and inproc-µs/env-step (CPU),
// their ratio, and remote env-steps/s of wall time.
func BenchmarkEnvServeCPU(b *testing.B) {
	for _, transport := range []string{"stream", "unix", "http"} {
		b.Run(transport, func(b *testing.B) { benchServeCPU(b, transport) })
	}
}

func benchServeCPU(b *testing.B, transport string) {
	addr, pid := startServeEnv(b, transport == "unix")
	if _, err := procCPU(pid); err != nil {
		b.Skipf("no per-process CPU time: %v", err)
	}
	var c benchClient
	var err error
	if transport != "http" {
		c, err = dialFrames(addr)
	} else {
		c, err = dialHTTP(addr)
	}
	if err != nil {
		b.Skip(err)
	}
	defer c.close()
	var cr envserver.CreateResponse
	js, _ := json.Marshal(envserver.CreateRequest{Profile: "etl", NumEnvs: benchEnvs, PlacementSeeds: []uint64{42, 37}})
	out, err := c.call(envserver.OpCreate, 0, js)
	if err == nil {
		err = json.Unmarshal(out, &cr)
	}
	if err != nil {
		b.Fatalf("create: %v", err)
	}
	if _, err := c.call(envserver.OpReset, cr.ID, []byte(`{"seed":1}`)); err != nil {
		b.Fatalf("reset: %v", err)
	}
	v, acts := localVec(b, len(cr.Spaces.Nvec))
	bodies := make([][]byte, len(acts))
	for k, a := range acts {
		var flat []int64
		for _, x := range a {
			for _, ch := range x.Choices {
				flat = append(flat, int64(ch))
			}
		}
		bodies[k] = envserver.AppendInt64s(nil, flat)
	}
	s0, err := procCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	var local, wall time.Duration
	k := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.call(envserver.OpStep, cr.ID, bodies[k%len(bodies)]); err != nil {
			b.Fatalf("remote step: %v", err)
		}
		wall += time.Since(t0)
		u0 := selfCPU()
		if _, err := v.Step(acts[k%len(acts)]); err != nil {
			b.Fatal(err)
		}
		local += selfCPU() - u0
		k++
	}
	s1, err := procCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	steps := float64(benchEnvs * k)
	server := float64((s1 - s0).Microseconds()) / steps
	inproc := float64(local.Microseconds()) / steps
	b.ReportMetric(server, "server-µs/env-step")
	b.ReportMetric(inproc, "inproc-µs/env-step")
	b.ReportMetric(server/inproc, "server/inproc")
	b.ReportMetric(steps/wall.Seconds(), "remote-env-steps/s")
}

// localVec is the vector the server builds for the benchmark's create
// request, and 64 steps of actions (choice (t·3 + k + i) mod 5).
func localVec(b *testing.B, tasks int) (*env.VecEnv, [][]env.Action) {
	tr, err := traces.Load("taxi-train", traces.Options{RateMult: 1, Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	scen, err := env.ResolveScenario(env.ScenarioRealistic, nil)
	if err != nil {
		b.Fatal(err)
	}
	var cfgs []env.Config
	for i := range benchEnvs {
		c, err := env.EdgeConfig("etl", []uint64{42, 37}[i%2], tr)
		if err != nil {
			b.Fatal(err)
		}
		if err := scen.Apply(&c); err != nil {
			b.Fatal(err)
		}
		cfgs = append(cfgs, c)
	}
	v, err := env.NewVec(cfgs, env.NextStep, 0)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := v.Reset(1); err != nil {
		b.Fatal(err)
	}
	acts := make([][]env.Action, 64)
	for t := range acts {
		acts[t] = make([]env.Action, benchEnvs)
		for i := range acts[t] {
			ch := make([]int, tasks)
			for k := range ch {
				ch[k] = (t*3 + k + i) % 5
			}
			acts[t][i] = env.Action{Choices: ch}
		}
	}
	return v, acts
}

// startServeEnv starts `serve env` as a child process on a free loopback
// port or a Unix socket, stopped when b ends; it returns its address
// ("unix:PATH" for a socket) and pid.
func startServeEnv(b *testing.B, unix bool) (string, int) {
	listen := "127.0.0.1:0"
	if unix {
		listen = "unix:" + filepath.Join(b.TempDir(), "env.sock")
	}
	args := []string{"env", "-addr", listen, "-max-envs-per-conn", "32"}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), reexecEnv+"=1")
	if bin := os.Getenv("STREAMSCALE_ENV_BIN"); bin != "" {
		cmd = exec.Command(bin, args...)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // gone already is fine
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }() //nolint:errcheck // exit status of a stopped server
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill() //nolint:errcheck // last resort
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	switch {
	case unix && line == "":
		b.Skipf("serve env -addr %s printed no address (a build without Unix sockets?)", listen)
	case err != nil || !strings.HasPrefix(line, "http://") && !strings.HasPrefix(line, "unix:"):
		b.Fatalf("serve env printed %q: %v", line, err)
	}
	go io.Copy(io.Discard, stdout) //nolint:errcheck // drain until it exits
	return strings.TrimPrefix(strings.TrimSpace(line), "http://"), cmd.Process.Pid
}

// procCPU is the user + system CPU time of process pid (all its threads)
// from /proc/<pid>/stat, in Linux's USER_HZ ticks of 10 ms.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

// selfCPU is this process's user + system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru) //nolint:errcheck // RUSAGE_SELF does not fail
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchClient makes one protocol call: the response body, or an error.
type benchClient interface {
	call(op byte, id uint64, payload []byte) ([]byte, error)
	close()
}

// frameClient speaks the frame protocol.
type frameClient struct {
	nc       net.Conn
	br       *bufio.Reader
	out, buf []byte
}

func dialFrames(addr string) (*frameClient, error) {
	network, host := "tcp", addr
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, host, addr = "unix", path, "localhost"
	}
	nc, err := net.Dial(network, host)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(nc, "GET /v1/stream HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n", addr, envserver.StreamProtocol)
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		nc.Close()
		if err == nil {
			err = fmt.Errorf("upgrade refused: %s (a serve env without the frame protocol)", resp.Status)
		}
		return nil, err
	}
	return &frameClient{nc: nc, br: br}, nil
}

func (c *frameClient) call(op byte, id uint64, payload []byte) ([]byte, error) {
	c.out = envserver.AppendFrameHeader(c.out[:0], envserver.FrameHeader{Op: op, ID: id, N: uint32(len(payload))})
	c.out = append(c.out, payload...)
	if _, err := c.nc.Write(c.out); err != nil {
		return nil, err
	}
	var h [envserver.ResponseHeaderLen]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint32(h[2:]))
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	c.buf = c.buf[:n]
	if _, err := io.ReadFull(c.br, c.buf); err != nil {
		return nil, err
	}
	if st := binary.LittleEndian.Uint16(h[:]); st != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", st, c.buf)
	}
	return c.buf, nil
}

func (c *frameClient) close() { c.nc.Close() }

// httpClient speaks the HTTP routes over one kept-alive connection.
type httpClient struct {
	base string
	hc   *http.Client
	buf  bytes.Buffer
}

func dialHTTP(addr string) (*httpClient, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1}
	return &httpClient{base: "http://" + addr, hc: &http.Client{Transport: tr}}, nil
}

func (c *httpClient) call(op byte, id uint64, payload []byte) ([]byte, error) {
	path, ctype := fmt.Sprintf("/v1/envs/%d/", id), "application/json"
	switch op {
	case envserver.OpCreate:
		path = "/v1/envs"
	case envserver.OpReset:
		path += "reset"
	case envserver.OpStep:
		path, ctype = path+"step", "application/octet-stream"
	default:
		return nil, fmt.Errorf("op %q has no route here", op)
	}
	resp, err := c.hc.Post(c.base+path, ctype, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	c.buf.Reset()
	if _, err := io.Copy(&c.buf, resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, c.buf.Bytes())
	}
	return c.buf.Bytes(), nil
}

func (c *httpClient) close() { c.hc.CloseIdleConnections() }
