package kcfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Confined is this process running under a CPU cgroup of its own (Confine).
type Confined struct {
	ctl        *Controller
	cg         *Cgroup
	millicores int
}

// Confine moves this process, every one of its threads and every child it
// starts afterwards, into a new CPU cgroup whose CFS quota is millicores
// per period: the kernel's limit on a whole container (a pod's CPU limit),
// so everything the process does (network I/O, decoding, scheduling and
// the operators) draws on the one budget. This is how CLASP's cost model
// (Eq. 1) sees a worker: its executions and its local and remote request
// costs share the budget W. Cgroups this package left behind by processes
// that died are removed first (Controller.RemoveStale). Release moves the
// process back and removes the cgroup. It needs a writable CPU cgroup
// (Detect; root on this host); the error says why when there is none.
func Confine(millicores int, period time.Duration) (*Confined, error) {
	if millicores < 1 {
		return nil, fmt.Errorf("kcfs: confine to %d millicores, want ≥ 1", millicores)
	}
	ctl, err := Detect()
	if err != nil {
		return nil, err
	}
	ctl.RemoveStale() //nolint:errcheck // best effort: a stale cgroup still in use is not ours to remove
	cg, err := ctl.new("process")
	if err != nil {
		return nil, err
	}
	if err := cg.Set(millicores, period); err != nil {
		return nil, errors.Join(err, cg.Remove())
	}
	if err := cg.Add(os.Getpid()); err != nil {
		return nil, errors.Join(err, cg.Remove())
	}
	return &Confined{ctl: ctl, cg: cg, millicores: millicores}, nil
}

// Dir is the cgroup's directory.
func (c *Confined) Dir() string { return c.cg.Dir }

// Millicores is the quota Confine set.
func (c *Confined) Millicores() int { return c.millicores }

// Stat reads the cgroup's cpu.stat (periods, throttled periods and time).
func (c *Confined) Stat() (Stat, error) { return c.cg.Stat() }

// Release moves the process back into the cgroup it was confined from and
// removes the confining cgroup. Children still running inside it keep it
// busy; Release then reports the error and leaves the cgroup to
// RemoveStale. Release is idempotent.
func (c *Confined) Release() error {
	if c.cg.removed {
		return nil
	}
	if err := os.WriteFile(filepath.Join(c.ctl.Parent, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		return fmt.Errorf("kcfs: move process %d back to %s: %w", os.Getpid(), c.ctl.Parent, explain(err))
	}
	return c.cg.Remove()
}
