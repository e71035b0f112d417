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
	// MaxSenderPauseS is the longest pause of a sending replica while it
	// transmits (stop-and-copy), seconds.
	MaxSenderPauseS float64
	// MaxRemoteS is the longest time a receiving replica read state
	// remotely (StateMigration.RemoteAccess), seconds.
	MaxRemoteS float64
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
// receives that share of the task's state (Task.StateAt: it grows with the
// keys seen) and of its queued events over the network, from the server
// that lost the most share. Under stop-and-copy (the default) it starts
// serving when the transfer has arrived (propagation plus bytes at the
// route's narrowest link), and the sender's remaining replica pauses while
// it transmits; under StateMigration.RemoteAccess it starts when its queued
// events have arrived and reads the state of keys still in flight remotely
// until the state transfer completes. Replicas that neither gain nor send
// do not pause, so there is no global barrier.
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
	// Requests a worker's cap on requests in flight holds upstream are
	// re-routed to the new replicas, not transferred from the old worker.
	if old.room != nil {
		old.holdUpstream(old.held)
		for r, h := range old.held {
			queued[oldTopo.replicas[r].task] -= h
		}
	}
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
	// The stochastic workload processes restart on the new replicas (the
	// fluid moves the queued mass below).
	nf.attach(e.ph)
	nf.now, nf.end = old.now, old.end
	e.core = nf
	e.rebind()

	routes := shortestRoutes(e.cfg.Network)
	e.migration = Migration{}
	remote := e.cfg.Migration.RemoteAccess
	ready := make([]float64, len(e.topo.replicas))
	for r := range ready {
		ready[r] = now
	}
	var lastEnd float64
	for k, rs := range e.topo.ofTask {
		task := e.cfg.App.Tasks[k]
		stateBytes := task.StateAt(e.processed[k]) * (1 << 20)
		newShare := make([]float64, e.m)
		for _, q := range rs {
			newShare[e.topo.replicas[q].server] += e.topo.replicas[q].share
		}
		// The sender of every gain: the server that lost the most share.
		from, loss := -1, 0.0
		for w := 0; w < e.m; w++ {
			if l := oldShare[k][w] - newShare[w]; l > loss+1e-12 {
				from, loss = w, l
			}
		}
		if from < 0 {
			continue
		}
		var sent float64 // bytes the sender transmits for k
		for _, r := range rs {
			rep := e.topo.replicas[r]
			gain := rep.share - oldShare[k][rep.server]
			if gain <= 1e-12 {
				continue
			}
			qBytes, sBytes := gain*queued[k]*task.OutBytes, gain*stateBytes
			if qBytes+sBytes <= 0 {
				continue
			}
			e.migration.MovedMB += (qBytes + sBytes) / (1 << 20)
			e.migration.Replicas++
			sent += qBytes + sBytes
			if remote {
				ready[r] = now + transferTime(e.cfg, routes, from, rep.server, qBytes)
				if sBytes > 0 {
					e.remoteFrom[r], e.remoteTo[r] = now, now+transferTime(e.cfg, routes, from, rep.server, sBytes)
					e.migration.MaxRemoteS = max(e.migration.MaxRemoteS, e.remoteTo[r]-now)
					lastEnd = max(lastEnd, e.remoteTo[r])
				}
			} else {
				ready[r] = now + transferTime(e.cfg, routes, from, rep.server, qBytes+sBytes)
			}
			e.migration.MaxPauseS = max(e.migration.MaxPauseS, ready[r]-now)
		}
		if remote || sent <= 0 {
			continue
		}
		// Stop-and-copy: the sender's remaining replica of k pauses while
		// it transmits (at its route's narrowest link, without the
		// propagation its receivers wait for).
		for _, r := range rs {
			if rep := e.topo.replicas[r]; rep.server == from {
				pause := transmitTime(e.cfg, routes, from, sent)
				ready[r] = max(ready[r], now+pause)
				e.migration.MaxSenderPauseS = max(e.migration.MaxSenderPauseS, pause)
			}
		}
	}
	e.remoteSteps = 0
	if lastEnd > now {
		// refresh service times every step the windows overlap, and once after
		e.remoteSteps = int(math.Ceil((lastEnd-now)/e.ph.stepLen)) + 1
	}
	for k, rs := range e.topo.ofTask {
		for _, r := range rs {
			rep := e.topo.replicas[r]
			s := &nf.stages[r]
			s.free = ready[r]
			for _, p := range waiting[k] {
				q := p
				q.w *= rep.share
				if q.w <= 0 {
					continue
				}
				if q.as < ready[r] {
					q.as = ready[r]
					q.ae = max(q.ae, ready[r])
				}
				q.bl = s.overlap && q.ae <= now
				s.queue.push(q)
				s.carried += q.w
				s.cumPushed += q.w
			}
		}
	}
}

// transmitTime is the time server a needs to put bytes on the wire toward
// the rest of the network: bytes at the narrowest link of its first hop's
// route to any server, i.e. of its own access link.
func transmitTime(c Config, routes [][]route, a int, bytes float64) float64 {
	bw := math.Inf(1)
	for b := range c.Servers {
		if b == a {
			continue
		}
		if r := routes[c.Servers[a].Switch][c.Servers[b].Switch]; len(r) > 0 {
			bw = min(bw, c.Network.Links[r[0]].BandwidthBps)
		}
	}
	if math.IsInf(bw, 1) {
		return 0
	}
	return bytes * 8 / bw
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
