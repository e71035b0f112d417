package env

import (
	"fmt"
	"math"
)

// Migration reports what the last replica plan moved.
type Migration struct {
	MovedMB   float64 // state and queued events sent between servers, MB
	MaxPauseS float64 // longest wait of a receiving replica for its transfer, seconds
	Replicas  int     // replicas that received something
}

// planFits reports whether the current allocations fit every server under
// a new replica plan (reserved-CPU scenarios).
func (e *Env) planFits(plan [][]Replica) error {
	used := make([]float64, e.m)
	for k, rs := range plan {
		for _, r := range rs {
			used[r.Server] += e.alloc[k] * r.Share
		}
	}
	for w, u := range used {
		if u > e.cfg.Servers[w].CPU+1e-9 {
			return fmt.Errorf("env: plan puts %.0f millicores on server %s of %.0f; lower allocations first", u, e.cfg.Servers[w].Name, e.cfg.Servers[w].CPU)
		}
	}
	return nil
}

// replan rebuilds the replica topology for a validated plan and carries the
// simulation over: every event waiting at a task or travelling to it goes
// to the task's new replicas in proportion to their shares, keeping its
// emission and arrival times. A replica whose server gains share of a task
// receives that share of the task's state (Task.StateMB) and of its queued
// events over the network, from the server that lost the most share, and
// starts serving when the transfer has arrived (propagation plus bytes at
// the route's narrowest link); replicas that keep their share do not
// pause, so there is no global barrier.
func (e *Env) replan(plan [][]Replica) {
	old := e.core.(*fluid)
	oldTopo := e.topo
	n := len(e.cfg.App.Tasks)
	now := old.now

	// Gather, per task, what waits at or travels to it, and the old shares
	// per server.
	waiting := make([][]piece, n)
	queued := make([]float64, n)
	oldShare := make([][]float64, n)
	for k := range oldShare {
		oldShare[k] = make([]float64, e.m)
	}
	for _, r := range oldTopo.replicas {
		oldShare[r.task][r.server] += r.share
	}
	nr := len(oldTopo.replicas)
	for i := range old.stages {
		s := &old.stages[i]
		task, delay := s.task, 0.0
		if s.task < 0 {
			task = oldTopo.replicas[oldTopo.links[oldTopo.flowLink[i-nr]].to].task
			delay = s.delay
		}
		for j := 0; j < s.queue.len(); j++ {
			p := *s.queue.at(j)
			p.as += delay
			p.ae += delay
			p.bl = false
			waiting[task] = append(waiting[task], p)
			queued[task] += p.w
		}
	}

	plan = clonePlan(plan)
	e.cfg.Replicas = plan
	e.replanned = true
	e.topo = buildTopology(&e.cfg)
	nf := newFluid(&e.cfg, e.topo)
	nf.now, nf.end = old.now, old.end
	e.core = nf
	e.rebind()

	routes := shortestRoutes(e.cfg.Network)
	e.migration = Migration{}
	for k, rs := range e.topo.ofTask {
		task := e.cfg.App.Tasks[k]
		for _, r := range rs {
			rep := e.topo.replicas[r]
			s := &nf.stages[r]
			ready := now
			if gain := rep.share - oldShare[k][rep.server]; gain > 1e-12 {
				// The sender: the server that lost the most share of k.
				from, loss := -1, 0.0
				for w := 0; w < e.m; w++ {
					newW := 0.0
					for _, q := range rs {
						if e.topo.replicas[q].server == w {
							newW += e.topo.replicas[q].share
						}
					}
					if l := oldShare[k][w] - newW; l > loss+1e-12 {
						from, loss = w, l
					}
				}
				bytes := gain * (task.StateMB*(1<<20) + queued[k]*task.OutBytes)
				if from >= 0 && bytes > 0 {
					ready = now + transferTime(e.cfg, routes, from, rep.server, bytes)
					e.migration.MovedMB += bytes / (1 << 20)
					e.migration.Replicas++
					e.migration.MaxPauseS = max(e.migration.MaxPauseS, ready-now)
				}
			}
			s.free = ready
			for _, p := range waiting[k] {
				q := p
				q.w *= rep.share
				if q.w <= 0 {
					continue
				}
				if q.as < ready {
					q.as = ready
					q.ae = max(q.ae, ready)
				}
				q.bl = s.overlap && q.ae <= now
				s.queue.push(q)
				s.carried += q.w
				s.cumPushed += q.w
			}
		}
	}
}

// transferTime is the time to send bytes from server a to server b: the
// route's propagation plus transmission at its narrowest link.
func transferTime(c Config, routes [][]route, a, b int, bytes float64) float64 {
	r := routes[c.Servers[a].Switch][c.Servers[b].Switch]
	prop, bw := 0.0, math.Inf(1)
	for _, li := range r {
		l := c.Network.Links[li]
		prop += l.PropagationMS / 1000
		bw = min(bw, l.BandwidthBps)
	}
	if math.IsInf(bw, 1) {
		return prop
	}
	return prop + bytes*8/bw
}

func clonePlan(p [][]Replica) [][]Replica {
	out := make([][]Replica, len(p))
	for k := range p {
		out[k] = append([]Replica(nil), p[k]...)
	}
	return out
}
