package local

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"streamscale/serve/runtime/transport"
)

// Provider starts workers as processes. Set the fields before the first
// Scale; it is safe for concurrent use.
type Provider struct {
	// Bin is the binary to exec (default os.Executable()); Args are put
	// before the worker's own flags (default ["worker"]).
	Bin  string
	Args []string
	// Planner is the planner's address, passed as -planner.
	Planner string
	// Extra flags for every worker (e.g. -token, -slots).
	Extra []string
	// Env is added to the workers' environment.
	Env []string
	// Output receives the workers' stdout and stderr (nil: discarded).
	Output io.Writer
	// Stop is how long a worker has to exit after SIGTERM before SIGKILL
	// (default 3 s).
	Stop time.Duration

	mu    sync.Mutex
	procs []*proc
}

type proc struct {
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// bindFree binds a free loopback port and returns its address and the
// socket as a file for the worker to inherit (transport.InheritedEnv): a
// port picked free and closed before the worker binds it could be taken
// by another process in between.
func bindFree() (string, *os.File, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	defer ln.Close() // the file is a dup
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return "", nil, err
	}
	return ln.Addr().String(), f, nil
}

// Scale implements provider.Provider: worker i runs with -id i. Of the
// workers that exist (a worker StopWorkers stopped leaves a hole), the highest
// indices stop while more than n exist; dead ones are restarted; holes
// are filled lowest first, then new workers appended, until n exist.
func (p *Provider) Scale(ctx context.Context, n int) ([]string, error) {
	if n < 0 {
		return nil, fmt.Errorf("local: %d workers, want ≥ 0", n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.procs) - 1; i >= 0 && p.count() > n; i-- {
		if pr := p.procs[i]; pr != nil {
			p.procs[i] = nil
			p.stop(pr)
		}
	}
	p.trim()
	for i, pr := range p.procs {
		if pr != nil && !alive(pr) { // restart a worker that died
			np, err := p.start(i)
			if err != nil {
				return nil, err
			}
			p.procs[i] = np
		}
	}
	for i := 0; p.count() < n; i++ {
		if i < len(p.procs) && p.procs[i] != nil {
			continue
		}
		pr, err := p.start(i)
		if err != nil {
			return nil, err
		}
		if i < len(p.procs) {
			p.procs[i] = pr
		} else {
			p.procs = append(p.procs, pr)
		}
	}
	return p.addrs(), nil
}

// StopWorkers implements provider.Stopper: it stops exactly the workers
// listening on addrs (one that does not exist is skipped), the others
// untouched, dead ones not restarted.
func (p *Provider) StopWorkers(_ context.Context, addrs []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var wg sync.WaitGroup
	for i, pr := range p.procs {
		if pr != nil && slices.Contains(addrs, pr.addr) {
			p.procs[i] = nil
			wg.Go(func() { p.stop(pr) })
		}
	}
	wg.Wait()
	p.trim()
	return nil
}

// count is the number of workers that exist (p.mu held).
func (p *Provider) count() int {
	n := 0
	for _, pr := range p.procs {
		if pr != nil {
			n++
		}
	}
	return n
}

// trim drops the holes at the end (p.mu held).
func (p *Provider) trim() {
	for len(p.procs) > 0 && p.procs[len(p.procs)-1] == nil {
		p.procs = p.procs[:len(p.procs)-1]
	}
}

func alive(pr *proc) bool {
	select {
	case <-pr.done:
		return false
	default:
		return true
	}
}

// addrs lists the workers' addresses by index, skipping holes (p.mu
// held).
func (p *Provider) addrs() []string {
	out := make([]string, 0, len(p.procs))
	for _, pr := range p.procs {
		if pr != nil {
			out = append(out, pr.addr)
		}
	}
	return out
}

// Workers implements provider.Provider.
func (p *Provider) Workers(context.Context) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addrs(), nil
}

func (p *Provider) start(i int) (*proc, error) {
	bin := p.Bin
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
	}
	addr, sock, err := bindFree()
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	defer sock.Close() // the worker has its own copy
	args := p.Args
	if args == nil {
		args = []string{"worker"}
	}
	args = append(append([]string(nil), args...), "-planner", p.Planner, "-addr", addr, "-id", strconv.Itoa(i))
	args = append(args, p.Extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), p.Env...), transport.InheritedEnv+"="+addr)
	cmd.ExtraFiles = []*os.File{sock} // descriptor 3
	if p.Output != nil {              // nil: /dev/null, no pipe to drain
		cmd.Stdout, cmd.Stderr = p.Output, p.Output
	}
	cmd.WaitDelay = time.Second // a grandchild holding the output open does not block Wait
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("local: start worker %d: %w", i, err)
	}
	pr := &proc{addr: addr, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(pr.done) }() //nolint:errcheck // exit status is not an error here
	return pr, nil
}

func (p *Provider) stop(pr *proc) {
	grace := p.Stop
	if grace == 0 {
		grace = 3 * time.Second
	}
	pr.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
	select {
	case <-pr.done:
	case <-time.After(grace):
		pr.cmd.Process.Kill() //nolint:errcheck
		<-pr.done
	}
}

// Kill sends SIGKILL to worker i (failure tests); it stays in the list and
// the next Scale restarts it.
func (p *Provider) Kill(i int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i < 0 || i >= len(p.procs) || p.procs[i] == nil {
		return fmt.Errorf("local: no worker %d", i)
	}
	pr := p.procs[i]
	if err := pr.cmd.Process.Kill(); err != nil {
		return err
	}
	<-pr.done
	return nil
}

// Close implements provider.Provider: it stops every worker.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var wg sync.WaitGroup
	for _, pr := range p.procs {
		if pr != nil {
			wg.Go(func() { p.stop(pr) })
		}
	}
	wg.Wait()
	p.procs = nil
	return nil
}
