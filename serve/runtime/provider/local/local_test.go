package local

import (
	"context"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// sleeper returns a provider whose "workers" are shells sleeping (the
// worker flags become the script's positional parameters).
func sleeper() *Provider {
	return &Provider{Bin: "/bin/sh", Args: []string{"-c", "sleep 30", "sh"}, Planner: "127.0.0.1:1", Stop: time.Second}
}

func alivePid(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestScaleKillClose(t *testing.T) {
	p := sleeper()
	defer p.Close()
	ctx := context.Background()
	addrs, err := p.Scale(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		ap, err := netip.ParseAddrPort(a)
		if err != nil || !ap.Addr().IsLoopback() || seen[a] {
			t.Fatalf("address %q: not a distinct loopback address (%v)", a, err)
		}
		seen[a] = true
	}
	if got, _ := p.Workers(ctx); len(got) != 3 || got[2] != addrs[2] {
		t.Fatalf("Workers %v, want %v", got, addrs)
	}
	pids := []int{p.procs[0].cmd.Process.Pid, p.procs[1].cmd.Process.Pid, p.procs[2].cmd.Process.Pid}
	// Scale down stops the highest indices; the others keep their address.
	got, err := p.Scale(ctx, 1)
	if err != nil || len(got) != 1 || got[0] != addrs[0] {
		t.Fatalf("Scale(1) = %v, %v", got, err)
	}
	if alivePid(pids[1]) || alivePid(pids[2]) {
		t.Fatal("scaled-in workers still run")
	}
	// A killed worker is restarted by the next Scale.
	if err := p.Kill(0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Scale(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if p.procs[0].cmd.Process.Pid == pids[0] || !alive(p.procs[0]) {
		t.Fatal("the killed worker was not restarted")
	}
	last := p.procs[0].cmd.Process.Pid
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if alivePid(last) {
		t.Fatal("Close left a worker running")
	}
	if _, err := p.Scale(ctx, -1); err == nil {
		t.Fatal("Scale(-1) accepted")
	}
	if err := p.Kill(5); err == nil {
		t.Fatal("Kill of a missing worker accepted")
	}
}
