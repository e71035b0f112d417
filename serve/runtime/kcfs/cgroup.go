package kcfs

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Prefix starts the name of every cgroup this package makes:
// Prefix + "<pid of the creating process>-<sequence>".
const Prefix = "streamscale-kcfs-"

// MinQuota is the kernel's smallest CFS quota (1 ms): a smaller allocation
// is raised to it (Documentation/scheduler/sched-bwc.rst).
const MinQuota = time.Millisecond

// Version is a cgroup hierarchy version.
type Version int

const (
	V1 Version = 1 // cpu.cfs_quota_us / cpu.cfs_period_us
	V2 Version = 2 // cpu.max "quota period"
)

func (v Version) String() string { return "cgroup v" + strconv.Itoa(int(v)) }

// ErrUnavailable wraps every reason Detect gives for finding no usable CPU
// cgroup (errors.Is).
var ErrUnavailable = errors.New("kcfs: no writable CPU cgroup")

// Controller is a usable CPU cgroup hierarchy: New makes task cgroups in
// Parent.
type Controller struct {
	Version Version
	Parent  string // directory the task cgroups are made in
	seq     atomic.Int64
}

// Detect finds a CPU cgroup this process may create children in, trying
// cgroup v2 (the cpu controller enabled in the unified hierarchy) first
// and then the v1 cpu controller. It probes by making, configuring and
// removing a cgroup. When neither is usable the error wraps
// ErrUnavailable and says why for each version (no cpu controller, not
// root, read-only mount…).
func Detect() (*Controller, error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return detect(string(mounts), string(self), probe)
}

// mount is one cgroup mount of /proc/self/mountinfo.
type mount struct {
	point    string
	readOnly bool
	v2       bool
	cpu      bool // v1: the cpu controller is attached to this hierarchy
}

// parseMountinfo returns the cgroup mounts (proc(5), /proc/pid/mountinfo:
// "id parent maj:min root mountpoint options [optional…] - fstype source
// superoptions").
func parseMountinfo(s string) []mount {
	var out []mount
	for _, line := range strings.Split(s, "\n") {
		left, right, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 6 || len(rf) < 1 {
			continue
		}
		m := mount{point: unescapeMount(lf[4]), readOnly: hasOpt(lf[5], "ro")}
		switch rf[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			if len(rf) >= 3 {
				m.cpu = hasOpt(rf[2], "cpu")
			}
		default:
			continue
		}
		if len(rf) >= 3 && hasOpt(rf[2], "ro") {
			m.readOnly = true
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space…).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hasOpt(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// selfPaths parses /proc/self/cgroup: the v2 path ("0::/p") and the v1
// path of the hierarchy holding the cpu controller ("n:cpu,cpuacct:/p").
func selfPaths(s string) (v2, v1cpu string, hasV2, hasV1 bool) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			v2, hasV2 = f[2], true
		} else if hasOpt(f[1], "cpu") {
			v1cpu, hasV1 = f[2], true
		}
	}
	return
}

// parentDir is mount point + the process's cgroup path, or the mount point
// when that directory is not visible (another cgroup namespace).
func parentDir(point, path string) string {
	d := filepath.Join(point, filepath.Clean("/"+path))
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return point
}

// detect is Detect on given file contents; try probes a candidate.
func detect(mountinfo, selfCgroup string, try func(*Controller) error) (*Controller, error) {
	mounts := parseMountinfo(mountinfo)
	p2, p1, has2, has1 := selfPaths(selfCgroup)
	var why []string
	// v2 first (cpu.max), then v1's cpu controller.
	for _, v := range []struct {
		ver        Version
		matches    func(mount) bool
		self       string
		hasSelf    bool
		name, none string
	}{
		{V2, func(m mount) bool { return m.v2 }, p2, has2, "cgroup v2", "no cgroup v2 mount"},
		{V1, func(m mount) bool { return !m.v2 && m.cpu }, p1, has1, "cgroup v1 cpu controller", "no cgroup v1 hierarchy with the cpu controller"},
	} {
		found := false
		for _, m := range mounts {
			if !v.matches(m) {
				continue
			}
			found = true
			dir := m.point
			if v.hasSelf {
				dir = parentDir(m.point, v.self)
			}
			if m.readOnly {
				why = append(why, fmt.Sprintf("%s at %s is mounted read-only", v.name, m.point))
				continue
			}
			c := &Controller{Version: v.ver, Parent: dir}
			if err := try(c); err != nil {
				why = append(why, err.Error())
				continue
			}
			return c, nil
		}
		if !found {
			why = append(why, v.none)
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrUnavailable, strings.Join(why, "; "))
}

// probe checks that c can hold a task cgroup: for v2 the cpu controller
// must be available in Parent and enabled (or enableable) for its
// children; then a cgroup is made, given a quota and removed.
func probe(c *Controller) error {
	if c.Version == V2 {
		ctl, err := os.ReadFile(filepath.Join(c.Parent, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("cgroup v2 at %s: %w", c.Parent, explain(err))
		}
		if !hasWord(string(ctl), "cpu") {
			return fmt.Errorf("cgroup v2 at %s: the cpu controller is not available (cgroup.controllers: %q)", c.Parent, strings.TrimSpace(string(ctl)))
		}
		sub, err := os.ReadFile(filepath.Join(c.Parent, "cgroup.subtree_control"))
		if err != nil {
			return fmt.Errorf("cgroup v2 at %s: %w", c.Parent, explain(err))
		}
		if !hasWord(string(sub), "cpu") {
			if err := os.WriteFile(filepath.Join(c.Parent, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
				return fmt.Errorf("cgroup v2 at %s: the cpu controller is not enabled for child cgroups and enabling it failed (a non-root cgroup holding processes cannot delegate it): %w", c.Parent, explain(err))
			}
		}
	}
	g, err := c.new("probe")
	if err != nil {
		return err
	}
	err = g.Set(500, DefaultPeriod)
	if rerr := g.Remove(); err == nil {
		err = rerr
	}
	return err
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// explain adds the usual cause to a permission or read-only error.
func explain(err error) error {
	switch {
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("read-only file system: %w", err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("not permitted (euid %d; run as root or in a delegated cgroup): %w", os.Geteuid(), err)
	}
	return err
}

// DefaultPeriod is the kernel's default CFS period (100 ms).
const DefaultPeriod = 100 * time.Millisecond

// Cgroup is one task cgroup. Remove it when done (Remove is idempotent).
type Cgroup struct {
	Version Version
	Dir     string
	removed bool
}

// New makes a task cgroup named Prefix + "<pid>-<sequence>".
func (c *Controller) New() (*Cgroup, error) {
	return c.new(strconv.FormatInt(c.seq.Add(1), 10))
}

func (c *Controller) new(suffix string) (*Cgroup, error) {
	dir := filepath.Join(c.Parent, Prefix+strconv.Itoa(os.Getpid())+"-"+suffix)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kcfs: %s: make %s: %w", c.Version, dir, explain(err))
	}
	g := &Cgroup{Version: c.Version, Dir: dir}
	file := "cpu.max"
	if c.Version == V1 {
		file = "cpu.cfs_quota_us"
	}
	if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
		g.Remove() //nolint:errcheck // the missing file is the error to report
		return nil, fmt.Errorf("kcfs: %s: %s has no %s (cpu controller not enabled there)", c.Version, dir, file)
	}
	return g, nil
}

// quotaMicros is the quota of millicores per period in µs (at least
// MinQuota).
func quotaMicros(millicores int, period time.Duration) int64 {
	q := period.Microseconds() * int64(millicores) / 1000
	return max(q, MinQuota.Microseconds())
}

// Set writes the CPU bandwidth: a quota of millicores/1000 × period per
// period (at least MinQuota; period clamped into the kernel's [1 ms, 1 s]).
func (g *Cgroup) Set(millicores int, period time.Duration) error {
	if millicores < 1 {
		return fmt.Errorf("kcfs: %d millicores, want ≥ 1", millicores)
	}
	period = min(max(period, time.Millisecond), time.Second)
	q, p := quotaMicros(millicores, period), period.Microseconds()
	if g.Version == V2 {
		return g.write("cpu.max", fmt.Sprintf("%d %d", q, p))
	}
	// The v1 kernel checks the quota against the period already set, so
	// set the period with the quota unlimited, then the quota.
	if err := g.write("cpu.cfs_quota_us", "-1"); err != nil {
		return err
	}
	if err := g.write("cpu.cfs_period_us", strconv.FormatInt(p, 10)); err != nil {
		return err
	}
	return g.write("cpu.cfs_quota_us", strconv.FormatInt(q, 10))
}

// Add moves a process (all its threads) into the cgroup.
func (g *Cgroup) Add(pid int) error { return g.write("cgroup.procs", strconv.Itoa(pid)) }

func (g *Cgroup) write(file, v string) error {
	if err := os.WriteFile(filepath.Join(g.Dir, file), []byte(v), 0); err != nil {
		return fmt.Errorf("kcfs: write %q to %s: %w", v, filepath.Join(g.Dir, file), explain(err))
	}
	return nil
}

// Remove removes the cgroup. Its processes must have exited (and been
// waited for); a cgroup the kernel still reports busy is retried for a
// second.
func (g *Cgroup) Remove() error {
	if g.removed {
		return nil
	}
	var err error
	for i := 0; i < 100; i++ {
		if err = syscall.Rmdir(g.Dir); err == nil || errors.Is(err, syscall.ENOENT) {
			g.removed = true
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("kcfs: remove %s: %w", g.Dir, err)
}

// Stat is a cgroup's cpu.stat.
type Stat struct {
	Periods       int64         // nr_periods: periods in which the cgroup ran
	Throttled     int64         // nr_throttled: periods that ended with the quota spent
	ThrottledTime time.Duration // throttled_time (v1, ns) / throttled_usec (v2)
	Usage         time.Duration // usage_usec (v2 only; −1 on v1, which keeps it in cpuacct)
}

// Stat reads cpu.stat.
func (g *Cgroup) Stat() (Stat, error) {
	b, err := os.ReadFile(filepath.Join(g.Dir, "cpu.stat"))
	if err != nil {
		return Stat{}, fmt.Errorf("kcfs: %w", err)
	}
	return ParseStat(string(b))
}

// ParseStat parses cpu.stat ("key value" lines) of either version.
func ParseStat(s string) (Stat, error) {
	st := Stat{Usage: -1}
	seen := false
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return Stat{}, fmt.Errorf("kcfs: cpu.stat: %s has value %q, want a count", k, v)
		}
		switch k {
		case "nr_periods":
			st.Periods, seen = n, true
		case "nr_throttled":
			st.Throttled = n
		case "throttled_time":
			st.ThrottledTime = time.Duration(n)
		case "throttled_usec":
			st.ThrottledTime = time.Duration(n) * time.Microsecond
		case "usage_usec":
			st.Usage = time.Duration(n) * time.Microsecond
		}
	}
	if !seen {
		return Stat{}, errors.New("kcfs: cpu.stat has no nr_periods (no CPU bandwidth control)")
	}
	return st, nil
}

// RemoveStale removes the cgroups this package made for processes that no
// longer exist (Prefix + pid of a dead process). It returns the
// directories removed; a stale cgroup still holding processes is left and
// reported in the error.
func (c *Controller) RemoveStale() ([]string, error) {
	ents, err := os.ReadDir(c.Parent)
	if err != nil {
		return nil, fmt.Errorf("kcfs: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), Prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidS, _, _ := strings.Cut(name, "-")
		pid, err := strconv.Atoi(pidS)
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		dir := filepath.Join(c.Parent, e.Name())
		if err := syscall.Rmdir(dir); err != nil {
			errs = append(errs, fmt.Errorf("kcfs: stale %s: %w", dir, err))
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
