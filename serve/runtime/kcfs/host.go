package kcfs

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"streamscale/serve/runtime/cfs"
	"streamscale/serve/runtime/ops"
)

// HostConfig configures a task host: a child process running one
// operator instance.
type HostConfig struct {
	// Command is the host's argv (default: this executable with the
	// argument "taskhost", the serve binary's hidden subcommand).
	Command []string
	// Env is appended to this process's environment for the child.
	Env []string
	// Procs is the child's GOMAXPROCS (default 1: a task runs one batch
	// at a time, and a second P only adds runtime CPU — spinning threads
	// looking for work after every pipe wake-up — which the kernel quota
	// charges; serve cfscheck -host-procs measures it).
	Procs int
	// App and Op name the operator (an app name the child resolves, an
	// operator index).
	App string
	Op  int
	// Mode is InProcess (the host enforces the allocation with a
	// cfs.Quota) or Kernel (the host runs in a cgroup of Cgroups with the
	// allocation as its CFS quota).
	Mode Mode
	// Millicores is the initial allocation (1..cfs.MaxMillicores); Period
	// the CFS period (default DefaultPeriod, at most 1 s).
	Millicores int
	Period     time.Duration
	// Cgroups is where Kernel mode makes the host's cgroup (required for
	// Kernel).
	Cgroups *Controller
	// Stderr receives the child's stderr (nil: discarded).
	Stderr io.Writer
}

// Host is a running task host. Send and Recv may be used from two
// goroutines (one each); Exec, Set, Millicores and Stats are safe for
// concurrent use. Close must not run while a Recv or Exec is waiting.
type Host struct {
	cfg  HostConfig
	cmd  *exec.Cmd
	cg   *Cgroup
	in   io.WriteCloser
	bw   *bufio.Writer
	out  *bufio.Reader
	wbuf []byte
	rbuf []byte

	wmu  sync.Mutex // frames written
	xmu  sync.Mutex // Exec: one batch at a time
	smu  sync.Mutex
	mc   int
	last Result // counters of the latest result
	seq  uint64
	done bool
}

// StartHost starts a task host and waits for it to accept the hello. In
// Kernel mode the child is moved into a fresh cgroup before it is told
// what to run, so none of the work escapes the quota. On any error
// nothing is left behind (no child, no cgroup).
func StartHost(ctx context.Context, cfg HostConfig) (*Host, error) {
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	switch {
	case cfg.Period < time.Millisecond || cfg.Period > time.Second:
		return nil, fmt.Errorf("kcfs: period %v, want 1ms..1s", cfg.Period)
	case cfg.Millicores < cfs.MinMillicores || cfg.Millicores > cfs.MaxMillicores:
		return nil, fmt.Errorf("kcfs: %d millicores, want %d..%d", cfg.Millicores, cfs.MinMillicores, cfs.MaxMillicores)
	case cfg.Mode != InProcess && cfg.Mode != Kernel:
		return nil, fmt.Errorf("kcfs: %v, want inprocess or kernel", cfg.Mode)
	case cfg.Mode == Kernel && cfg.Cgroups == nil:
		return nil, errors.New("kcfs: kernel mode needs a CPU cgroup controller (Detect)")
	case cfg.Op < 0:
		return nil, fmt.Errorf("kcfs: operator %d", cfg.Op)
	}
	if len(cfg.Command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("kcfs: task host command: %w", err)
		}
		cfg.Command = []string{exe, "taskhost"}
	}
	h := &Host{cfg: cfg, mc: cfg.Millicores}
	if cfg.Mode == Kernel {
		g, err := cfg.Cgroups.New()
		if err != nil {
			return nil, err
		}
		if err := g.Set(cfg.Millicores, cfg.Period); err != nil {
			g.Remove() //nolint:errcheck // the Set error is the one to report
			return nil, err
		}
		h.cg = g
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	procs := cfg.Procs
	if procs <= 0 {
		procs = 1
	}
	cmd.Env = append(append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs)), cfg.Env...)
	cmd.Stderr = cfg.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		h.cleanup()
		return nil, fmt.Errorf("kcfs: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		h.cleanup()
		return nil, fmt.Errorf("kcfs: %w", err)
	}
	if err := cmd.Start(); err != nil {
		h.cleanup()
		return nil, fmt.Errorf("kcfs: start task host %q: %w", cfg.Command[0], err)
	}
	h.cmd, h.in, h.bw, h.out = cmd, in, bufio.NewWriterSize(in, 64<<10), bufio.NewReaderSize(out, 64<<10)
	fail := func(err error) (*Host, error) {
		h.kill()
		return nil, err
	}
	if h.cg != nil {
		if err := h.cg.Add(cmd.Process.Pid); err != nil {
			return fail(err)
		}
	}
	stop := context.AfterFunc(ctx, h.kill)
	defer stop()
	body := appendHello(nil, hello{mode: cfg.Mode, millicores: uint32(cfg.Millicores), period: cfg.Period, app: cfg.App, op: uint32(cfg.Op)})
	if err := h.send(tHello, body); err != nil {
		return fail(fmt.Errorf("kcfs: task host hello: %w", err))
	}
	typ, b, rb, err := readFrame(h.out, nil)
	h.rbuf = rb
	switch {
	case err != nil:
		return fail(fmt.Errorf("kcfs: task host did not answer its hello: %w", err))
	case typ == tError:
		return fail(fmt.Errorf("kcfs: task host: %s", b))
	case typ != tReady:
		return fail(fmt.Errorf("kcfs: task host answered its hello with frame type %d", typ))
	}
	return h, nil
}

func (h *Host) send(typ byte, body []byte) error {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if err := writeFrame(h.bw, typ, body); err != nil {
		return err
	}
	return h.bw.Flush()
}

// Pid returns the host's process id.
func (h *Host) Pid() int { return h.cmd.Process.Pid }

// Cgroup returns the host's cgroup (nil in InProcess mode).
func (h *Host) Cgroup() *Cgroup { return h.cg }

// Send sends a batch; Recv returns its Result. A caller pipelining
// batches must Recv from one goroutine.
func (h *Host) Send(recs []ops.Record) (uint64, error) {
	h.wmu.Lock()
	h.seq++
	id := h.seq
	h.wbuf = AppendBatch(h.wbuf[:0], id, recs)
	err := writeFrame(h.bw, tBatch, h.wbuf)
	if err == nil {
		err = h.bw.Flush()
	}
	h.wmu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("kcfs: send batch: %w", err)
	}
	return id, nil
}

// Recv reads the next result into r (payloads valid until the next Recv).
func (h *Host) Recv(r *Result) error {
	typ, body, rb, err := readFrame(h.out, h.rbuf)
	h.rbuf = rb
	switch {
	case err != nil:
		return fmt.Errorf("kcfs: task host: %w", err)
	case typ == tError:
		return fmt.Errorf("kcfs: task host: %s", body)
	case typ != tResult:
		return fmt.Errorf("kcfs: task host sent frame type %d, want a result", typ)
	}
	if err := DecodeResult(body, r); err != nil {
		return err
	}
	h.smu.Lock()
	h.last = Result{ProcCPU: r.ProcCPU, Charged: r.Charged, Periods: r.Periods, Throttled: r.Throttled}
	h.smu.Unlock()
	return nil
}

// Exec runs one batch and waits for its result.
func (h *Host) Exec(recs []ops.Record, r *Result) error {
	h.xmu.Lock()
	defer h.xmu.Unlock()
	id, err := h.Send(recs)
	if err != nil {
		return err
	}
	if err := h.Recv(r); err != nil {
		return err
	}
	if r.ID != id || len(r.Failed) != len(recs) {
		return fmt.Errorf("kcfs: task host answered batch %d (%d records) with result %d (%d records)", id, len(recs), r.ID, len(r.Failed))
	}
	return nil
}

// Set changes the allocation: Kernel mode rewrites the cgroup's quota,
// InProcess mode tells the host's cfs.Quota. Millicores are clamped into
// [cfs.MinMillicores, cfs.MaxMillicores].
func (h *Host) Set(millicores int) error {
	millicores = min(max(millicores, cfs.MinMillicores), cfs.MaxMillicores)
	h.smu.Lock()
	h.mc = millicores
	h.smu.Unlock()
	if h.cg != nil {
		return h.cg.Set(millicores, h.cfg.Period)
	}
	return h.send(tSet, binary.LittleEndian.AppendUint32(nil, uint32(millicores)))
}

// Millicores returns the allocation last set.
func (h *Host) Millicores() int {
	h.smu.Lock()
	defer h.smu.Unlock()
	return h.mc
}

// Stats returns the host's counters as of its latest result, in cfs.Stats
// terms: Used is the host's process CPU (all of it is what a kernel quota
// charges); Periods and Throttled come from cpu.stat in Kernel mode and
// from the host's quota in InProcess mode.
func (h *Host) Stats() cfs.Stats {
	h.smu.Lock()
	s := cfs.Stats{Used: h.last.ProcCPU, Periods: h.last.Periods, Throttled: h.last.Throttled}
	h.smu.Unlock()
	if h.cg != nil {
		if st, err := h.cg.Stat(); err == nil {
			s.Periods, s.Throttled, s.ThrottledTime = st.Periods, st.Throttled, st.ThrottledTime
		}
	}
	return s
}

// Close stops the host (closing its stdin ends it; it is killed after a
// second) and removes its cgroup.
func (h *Host) Close() error {
	h.wmu.Lock()
	if h.done {
		h.wmu.Unlock()
		return nil
	}
	h.done = true
	h.in.Close() //nolint:errcheck // the host exits on EOF either way
	h.wmu.Unlock()
	exited := make(chan struct{})
	timer := time.AfterFunc(time.Second, func() {
		select {
		case <-exited:
		default:
			h.cmd.Process.Kill() //nolint:errcheck // it may have exited
		}
	})
	io.Copy(io.Discard, h.out) //nolint:errcheck // drain so the host is not blocked writing
	werr := h.cmd.Wait()
	close(exited)
	timer.Stop()
	if err := h.cleanup(); err != nil {
		return err
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return fmt.Errorf("kcfs: task host: %w", werr)
	}
	return nil
}

// kill ends the child at once and cleans up (start-up failures).
func (h *Host) kill() {
	if h.cmd != nil && h.cmd.Process != nil {
		h.cmd.Process.Kill() //nolint:errcheck // it may have exited
		h.in.Close()         //nolint:errcheck // closing on the way out
		h.cmd.Wait()         //nolint:errcheck // killed
	}
	h.cleanup() //nolint:errcheck // best effort on the failure path
}

func (h *Host) cleanup() error {
	if h.cg != nil {
		return h.cg.Remove()
	}
	return nil
}

// Serve is the task host's side: it reads the hello from r, resolves the
// operator with apps, answers Ready, then runs every batch it reads and
// writes its Result to w, until r ends (nil) or a frame is malformed
// (the error is also sent to the parent as an error frame). The operator
// keeps its keyed state in the host's memory.
func Serve(r io.Reader, w io.Writer, apps func(string) (ops.App, error)) error {
	br, bw := bufio.NewReaderSize(r, 64<<10), bufio.NewWriterSize(w, 64<<10)
	fatal := func(err error) error {
		writeFrame(bw, tError, []byte(err.Error())) //nolint:errcheck // the parent may be gone
		bw.Flush()                                  //nolint:errcheck // as above
		return err
	}
	typ, body, buf, err := readFrame(br, nil)
	if err != nil {
		return fatal(fmt.Errorf("kcfs: task host: reading hello: %w", err))
	}
	if typ != tHello {
		return fatal(fmt.Errorf("kcfs: task host: first frame has type %d, want hello", typ))
	}
	h, err := decodeHello(body)
	if err != nil {
		return fatal(err)
	}
	app, err := apps(h.app)
	if err != nil {
		return fatal(err)
	}
	if int(h.op) >= len(app.Operators) {
		return fatal(fmt.Errorf("kcfs: app %s has %d operators, not %d", app.Name, len(app.Operators), h.op+1))
	}
	spec := app.Operators[h.op]
	x := &hostExec{op: spec.New(), st: memState{}}
	if h.mode == InProcess {
		x.quota = cfs.New(h.period, int(h.millicores))
	}
	if err := writeFrame(bw, tReady, nil); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	var recs []ops.Record
	var out []byte
	for {
		typ, body, buf, err = readFrame(br, buf)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fatal(err)
		}
		switch typ {
		case tSet:
			if len(body) != 4 {
				return fatal(fmt.Errorf("kcfs: task host: set of %d bytes, want 4", len(body)))
			}
			if x.quota != nil {
				x.quota.Set(int(binary.LittleEndian.Uint32(body)))
			}
		case tBatch:
			var id uint64
			id, recs, err = DecodeBatch(body, recs)
			if err != nil {
				return fatal(err)
			}
			x.run(recs)
			x.res.ID = id
			out = AppendResult(out[:0], &x.res)
			if err := writeFrame(bw, tResult, out); err != nil {
				return err
			}
			// Flush only when no further batch is already waiting, so
			// pipelined batches share system calls.
			if br.Buffered() == 0 {
				if err := bw.Flush(); err != nil {
					return err
				}
			}
		default:
			return fatal(fmt.Errorf("kcfs: task host: unexpected frame type %d", typ))
		}
	}
}

// hostExec runs batches in the host.
type hostExec struct {
	op    ops.Operator
	st    memState
	quota *cfs.Quota
	res   Result
	buf   []byte
	cur   int
}

// Emit implements ops.Emitter (payloads copied into x.buf).
func (x *hostExec) Emit(to int, key uint64, payload []byte) {
	x.res.Emits = append(x.res.Emits, Emit{Parent: x.cur, To: to, Key: key, Payload: payload})
	x.buf = append(x.buf, payload...)
}

func (x *hostExec) run(recs []ops.Record) {
	x.res.Failed, x.res.Emits, x.buf = x.res.Failed[:0], x.res.Emits[:0], x.buf[:0]
	begin := time.Now()
	work := func() {
		for i, r := range recs {
			x.cur = i
			mark := len(x.res.Emits)
			err := x.op.Process(r, x.st, x)
			if err != nil {
				x.res.Emits = x.res.Emits[:mark]
			}
			x.res.Failed = append(x.res.Failed, err != nil)
		}
	}
	if x.quota != nil {
		x.quota.Run(work)
		s := x.quota.Stats()
		x.res.Charged, x.res.Periods, x.res.Throttled = s.Used, s.Periods, s.Throttled
	} else {
		runtime.LockOSThread()
		work()
		runtime.UnlockOSThread()
	}
	x.res.Exec = time.Since(begin)
	// Payloads were appended to x.buf in order: point the emits at it
	// (the operator reuses its own buffers between calls).
	off := 0
	for i := range x.res.Emits {
		n := len(x.res.Emits[i].Payload)
		x.res.Emits[i].Payload = x.buf[off : off+n : off+n]
		off += n
	}
	x.res.ProcCPU = processCPU()
}

// memState is the host's keyed state.
type memState map[uint64][]byte

func (m memState) Get(k uint64) ([]byte, bool) { v, ok := m[k]; return v, ok }
func (m memState) Put(k uint64, v []byte)      { m[k] = append(m[k][:0], v...) }
func (m memState) Delete(k uint64)             { delete(m, k) }

// processCPU is this process's CPU time (all threads).
func processCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// ServeStdio is Serve on this process's stdin and stdout, the task host's
// entry point (serve taskhost). It switches both pipes to non-blocking
// mode first, so that a read waiting for the next batch parks in Go's
// network poller instead of holding a thread in a blocking system call
// (which makes the runtime hand its P to another thread at every wait:
// CPU that the kernel quota charges to the task).
func ServeStdio(apps func(string) (ops.App, error)) error {
	in, out := os.Stdin, os.Stdout
	if unix.SetNonblock(0, true) == nil && unix.SetNonblock(1, true) == nil {
		in, out = os.NewFile(0, "stdin"), os.NewFile(1, "stdout")
	}
	return Serve(in, out, apps)
}
