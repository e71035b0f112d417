package kcfs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The build machine's layout: cgroup v1 controllers plus an empty unified
// hierarchy (no cpu controller in cgroup v2).
const hybridMountinfo = `24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
31 24 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
35 31 0:30 / /sys/fs/cgroup/cpu rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,cpu
36 31 0:31 / /sys/fs/cgroup/cpuacct rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,cpuacct
37 31 0:32 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup rw,memory
`

const hybridSelf = "4:memory:/x\n2:cpuacct:/\n1:cpu:/\n0::/\n"

const unifiedMountinfo = `30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`

func TestParseMountinfo(t *testing.T) {
	ms := parseMountinfo(hybridMountinfo + `40 31 0:40 / /sys/fs/cgroup/cpu,cpuacct ro,relatime - cgroup cgroup ro,cpu,cpuacct
41 31 0:41 / /mnt/with\040space rw - cgroup2 cgroup2 rw
`)
	type got struct {
		point    string
		v2, cpu  bool
		readOnly bool
	}
	var g []got
	for _, m := range ms {
		g = append(g, got{m.point, m.v2, m.cpu, m.readOnly})
	}
	want := []got{
		{"/sys/fs/cgroup/unified", true, false, false},
		{"/sys/fs/cgroup/cpu", false, true, false},
		{"/sys/fs/cgroup/cpuacct", false, false, false},
		{"/sys/fs/cgroup/memory", false, false, false},
		{"/sys/fs/cgroup/cpu,cpuacct", false, true, true},
		{"/mnt/with space", true, false, false},
	}
	if len(g) != len(want) {
		t.Fatalf("mounts %+v, want %+v", g, want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("mount %d: %+v, want %+v", i, g[i], want[i])
		}
	}
}

func TestSelfPaths(t *testing.T) {
	v2, v1, h2, h1 := selfPaths("5:cpu,cpuacct:/a/b\n0::/user.slice\n")
	if v2 != "/user.slice" || v1 != "/a/b" || !h2 || !h1 {
		t.Errorf("selfPaths: %q %q %v %v", v2, v1, h2, h1)
	}
	if _, _, h2, h1 := selfPaths("3:memory:/\n"); h2 || h1 {
		t.Errorf("selfPaths without cpu or v2: %v %v", h2, h1)
	}
}

// TestDetect walks the choice between versions with a probe that accepts
// only what the test allows.
func TestDetect(t *testing.T) {
	okFor := func(dirs ...string) func(*Controller) error {
		return func(c *Controller) error {
			for _, d := range dirs {
				if c.Parent == d {
					return nil
				}
			}
			return errors.New(c.Version.String() + " at " + c.Parent + ": refused by the test")
		}
	}
	// Hybrid: v2 has no cpu controller (its probe fails), v1 works.
	c, err := detect(hybridMountinfo, hybridSelf, okFor("/sys/fs/cgroup/cpu"))
	if err != nil || c.Version != V1 || c.Parent != "/sys/fs/cgroup/cpu" {
		t.Fatalf("hybrid: %+v, %v; want v1 at /sys/fs/cgroup/cpu", c, err)
	}
	// Unified with the cpu controller.
	c, err = detect(unifiedMountinfo, "0::/\n", okFor("/sys/fs/cgroup"))
	if err != nil || c.Version != V2 {
		t.Fatalf("unified: %+v, %v; want v2", c, err)
	}
	// Neither usable: every reason is given.
	_, err = detect(hybridMountinfo, hybridSelf, okFor())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("nothing usable: %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"cgroup v2 at /sys/fs/cgroup/unified", "cgroup v1 at /sys/fs/cgroup/cpu"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	_, err = detect(unifiedMountinfo, "0::/\n", okFor())
	if err == nil || !strings.Contains(err.Error(), "no cgroup v1 hierarchy with the cpu controller") {
		t.Errorf("unified only, refused: %v", err)
	}
	ro := strings.Replace(hybridMountinfo, "/sys/fs/cgroup/cpu rw,", "/sys/fs/cgroup/cpu ro,", 1)
	_, err = detect(ro, hybridSelf, okFor("/sys/fs/cgroup/cpu"))
	if err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only v1 cpu mount: %v, want a read-only reason", err)
	}
	_, err = detect("", "", okFor())
	if err == nil || !strings.Contains(err.Error(), "no cgroup v2 mount") {
		t.Errorf("no mounts: %v", err)
	}
}

func TestParseStat(t *testing.T) {
	v1, err := ParseStat("nr_periods 33\nnr_throttled 31\nthrottled_time 2500000000\nnr_bursts 0\nburst_time 0\n")
	if err != nil || v1 != (Stat{Periods: 33, Throttled: 31, ThrottledTime: 2500 * time.Millisecond, Usage: -1}) {
		t.Errorf("v1: %+v, %v", v1, err)
	}
	v2, err := ParseStat("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 4\nnr_throttled 2\nthrottled_usec 70\n")
	if err != nil || v2 != (Stat{Periods: 4, Throttled: 2, ThrottledTime: 70 * time.Microsecond, Usage: 1500 * time.Microsecond}) {
		t.Errorf("v2: %+v, %v", v2, err)
	}
	for _, bad := range []string{"", "usage_usec 5\n", "nr_periods x\n", "nr_periods -3\n"} {
		if _, err := ParseStat(bad); err == nil {
			t.Errorf("ParseStat(%q) accepted", bad)
		}
	}
}

func TestQuotaMicros(t *testing.T) {
	for _, c := range []struct {
		mc     int
		period time.Duration
		want   int64
	}{{250, DefaultPeriod, 25000}, {1500, DefaultPeriod, 150000}, {1, DefaultPeriod, 1000}, {500, 10 * time.Millisecond, 5000}} {
		if got := quotaMicros(c.mc, c.period); got != c.want {
			t.Errorf("quotaMicros(%d, %v) = %d, want %d", c.mc, c.period, got, c.want)
		}
	}
}

// TestRemoveStale runs on a plain directory standing in for a cgroup
// parent: empty directories rmdir the same way.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	dead := deadPid(t)
	names := map[string]bool{ // name → should survive
		Prefix + strconv.Itoa(dead) + "-1":        false,
		Prefix + strconv.Itoa(dead) + "-probe":    false,
		Prefix + strconv.Itoa(os.Getpid()) + "-1": true,
		Prefix + "junk":               true,
		"other-" + strconv.Itoa(dead): true,
	}
	for n := range names {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{Version: V1, Parent: dir}
	removed, err := c.RemoveStale()
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Errorf("removed %v, want the 2 of pid %d", removed, dead)
	}
	for n, keep := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if exists := err == nil; exists != keep {
			t.Errorf("%s exists %v, want %v", n, exists, keep)
		}
	}
}

// deadPid returns a pid with no process (a child that was waited for).
func deadPid(t *testing.T) int {
	t.Helper()
	for pid := 4_000_000; pid > 1000; pid -= 7919 {
		if !alive(pid) {
			return pid
		}
	}
	t.Skip("found no free pid")
	return 0
}

// TestCgroupLifecycle makes, configures, stats and removes a real cgroup
// when this machine has a writable CPU cgroup.
func TestCgroupLifecycle(t *testing.T) {
	c := requireCgroups(t)
	g, err := c.New()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Remove() //nolint:errcheck // checked below
	if err := g.Set(250, DefaultPeriod); err != nil {
		t.Fatal(err)
	}
	file, want := "cpu.cfs_quota_us", "25000"
	if g.Version == V2 {
		file, want = "cpu.max", "25000 100000"
	}
	b, err := os.ReadFile(filepath.Join(g.Dir, file))
	if err != nil || strings.TrimSpace(string(b)) != want {
		t.Errorf("%s = %q, %v; want %q", file, b, err, want)
	}
	if _, err := g.Stat(); err != nil {
		t.Error(err)
	}
	if err := g.Set(0, DefaultPeriod); err == nil {
		t.Error("Set(0 millicores) accepted")
	}
	if err := g.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after Remove: %v", g.Dir, err)
	}
}

// requireCgroups returns the machine's CPU cgroup controller or skips,
// saying why there is none.
func requireCgroups(t *testing.T) *Controller {
	t.Helper()
	c, err := Detect()
	if err != nil {
		t.Skipf("kernel CPU enforcement not testable here: %v", err)
	}
	return c
}
