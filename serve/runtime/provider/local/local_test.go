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

// TestStopWorkersStopsExactlyThose: after worker 1 died and was not
// restarted, stopping worker 3 (a scale-in's drained member) stops it
// alone: worker 2 keeps running (Scale(2) stopped 2 and 3 and restarted
// 1), worker 1 stays dead, and a later Scale fills the holes lowest first.
func TestStopWorkersStopsExactlyThose(t *testing.T) {
	p := sleeper()
	defer p.Close()
	ctx := context.Background()
	if _, err := p.Scale(ctx, 4); err != nil {
		t.Fatal(err)
	}
	pid := func(i int) int { return p.procs[i].cmd.Process.Pid }
	p2 := pid(2)
	if err := p.Kill(1); err != nil {
		t.Fatal(err)
	}
	if err := p.StopWorkers(ctx, []string{p.procs[3].addr, "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	if !alivePid(p2) || alive(p.procs[1]) || len(p.procs) != 3 {
		t.Fatalf("after StopWorkers([3]): worker 2 alive %v, worker 1 alive %v, %d slots; want true, false, 3", alivePid(p2), alive(p.procs[1]), len(p.procs))
	}
	if err := p.StopWorkers(ctx, []string{p.procs[0].addr}); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.Workers(ctx); len(got) != 2 || p.procs[0] != nil {
		t.Fatalf("after StopWorkers([0]): %d workers, slot 0 %v", len(got), p.procs[0])
	}
	if err := p.Kill(0); err == nil {
		t.Fatal("Kill of a stopped worker accepted")
	}
	// Scale(3): worker 1 restarted, hole 0 filled, worker 2 untouched.
	if _, err := p.Scale(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if len(p.procs) != 3 || !alive(p.procs[0]) || !alive(p.procs[1]) || pid(2) != p2 {
		t.Fatalf("Scale(3) after the holes: %d slots, worker 2 pid %d (was %d)", len(p.procs), pid(2), p2)
	}
}
