package kcfs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"streamscale/serve/runtime/ops"
)

// TestHostInProcess runs word count's split in a task host (in-process
// quota, no cgroup): outputs, failures and allocation changes.
func TestHostInProcess(t *testing.T) {
	app := ops.WC()
	h, err := StartHost(context.Background(), testHost(HostConfig{App: "wc", Op: 0, Mode: InProcess, Millicores: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close() //nolint:errcheck // checked below
	in, err := OperatorInputs(app, 0, 1, 20)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: the operator run here.
	var want collect
	for i, r := range in {
		want.cur = i
		if err := app.Operators[0].New().Process(r, memState{}, &want); err != nil {
			t.Fatal(err)
		}
	}
	var res Result
	if err := h.Exec(in, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != len(in) || len(res.Emits) != len(want.out) {
		t.Fatalf("%d flags, %d emits; want %d, %d", len(res.Failed), len(res.Emits), len(in), len(want.out))
	}
	for i, e := range res.Emits {
		w := want.out[i]
		if e.Parent != w.Parent || e.To != w.To || e.Key != w.Key || string(e.Payload) != string(w.Payload) {
			t.Fatalf("emit %d: %+v, want %+v", i, e, w)
		}
	}
	bad := []ops.Record{{Key: 1, Payload: []byte("   ")}, in[0]}
	if err := h.Exec(bad, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Failed[0] || res.Failed[1] {
		t.Errorf("failed flags %v, want [true false] (an empty sentence, then a good one)", res.Failed)
	}
	if err := h.Set(300); err != nil || h.Millicores() != 300 {
		t.Errorf("Set(300): %v, millicores %d", err, h.Millicores())
	}
	if err := h.Exec(in[:1], &res); err != nil {
		t.Fatal(err)
	}
	if st := h.Stats(); st.Used <= 0 {
		t.Errorf("stats %+v, want the host's CPU", st)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Exec(in, &res); err == nil {
		t.Error("Exec after Close succeeded")
	}
}

func TestHostRefusals(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		cfg  HostConfig
		want string
	}{
		{HostConfig{App: "nope", Mode: InProcess, Millicores: 100}, "unknown app"},
		{HostConfig{App: "wc", Op: 5, Mode: InProcess, Millicores: 100}, "has 2 operators"},
		{HostConfig{App: "wc", Mode: Kernel, Millicores: 100}, "needs a CPU cgroup"},
		{HostConfig{App: "wc", Mode: InProcess, Millicores: 0}, "millicores"},
		{HostConfig{App: "wc", Mode: 7, Millicores: 10}, "want inprocess or kernel"},
	} {
		h, err := StartHost(ctx, testHost(c.cfg))
		if err == nil {
			h.Close() //nolint:errcheck // wrongly started
			t.Errorf("%+v started", c.cfg)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := StartHost(ctx, HostConfig{Command: []string{"/nonexistent/taskhost"}, App: "wc", Mode: InProcess, Millicores: 100}); err == nil {
		t.Error("a missing task-host binary started")
	}
}

// TestHostKernel runs a host in its own cgroup: the child is in it with
// the quota of its allocation, Set rewrites the quota, and Close (and a
// start-up failure) leave no cgroup behind.
func TestHostKernel(t *testing.T) {
	c := requireCgroups(t)
	h, err := StartHost(context.Background(), testHost(HostConfig{App: "wc", Op: 0, Mode: Kernel, Millicores: 400, Cgroups: c}))
	if err != nil {
		t.Fatal(err)
	}
	g := h.Cgroup()
	procs, err := os.ReadFile(filepath.Join(g.Dir, "cgroup.procs"))
	if err != nil || !strings.Contains(string(procs), strconv.Itoa(h.Pid())) {
		t.Errorf("cgroup.procs %q (%v) does not hold the host %d", procs, err, h.Pid())
	}
	if err := h.Set(700); err != nil {
		t.Fatal(err)
	}
	file, want := "cpu.cfs_quota_us", "70000"
	if g.Version == V2 {
		file, want = "cpu.max", "70000 100000"
	}
	if b, err := os.ReadFile(filepath.Join(g.Dir, file)); err != nil || strings.TrimSpace(string(b)) != want {
		t.Errorf("after Set(700): %s = %q (%v), want %q", file, b, err, want)
	}
	in, err := OperatorInputs(ops.WC(), 0, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := h.Exec(in, &res); err != nil || len(res.Failed) != len(in) {
		t.Fatalf("exec: %v, %d flags", err, len(res.Failed))
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir); err == nil {
		t.Errorf("%s left after Close", g.Dir)
	}
	// A host that fails its hello leaves no cgroup either.
	before := ourCgroups(t, c)
	if _, err := StartHost(context.Background(), testHost(HostConfig{App: "nope", Mode: Kernel, Millicores: 100, Cgroups: c})); err == nil {
		t.Fatal("unknown app started")
	}
	if after := ourCgroups(t, c); after != before {
		t.Errorf("%d of this process's cgroups after a failed start, %d before", after, before)
	}
}

func ourCgroups(t *testing.T, c *Controller) int {
	t.Helper()
	ents, err := os.ReadDir(c.Parent)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), Prefix+strconv.Itoa(os.Getpid())+"-") {
			n++
		}
	}
	return n
}
