package env

import (
	"fmt"
	"math"
	"sort"
)

// ServerModel is one entry of the edge-server catalogue.
type ServerModel struct {
	Name        string  // catalogue name
	Cores       int     // physical cores; CPU capacity is Cores×1000 millicores
	MIPSPerCore float64 // processing capacity of one core, MIPS
	RAMMB       float64 // memory, MB
}

// Catalogue is the default catalogue of heterogeneous edge servers. The
// models differ in core count, per-core speed and memory, so that the same
// millicore allocation buys different processing capacity on different
// hosts (paper Eq. 1).
var Catalogue = []ServerModel{
	{Name: "edge-s", Cores: 16, MIPSPerCore: 1800, RAMMB: 32768},
	{Name: "edge-m", Cores: 24, MIPSPerCore: 2200, RAMMB: 65536},
	{Name: "edge-l", Cores: 32, MIPSPerCore: 2600, RAMMB: 131072},
	{Name: "edge-f", Cores: 20, MIPSPerCore: 3000, RAMMB: 65536},
}

// Server is an edge server attached to a switch.
type Server struct {
	Name   string  // unique name
	Model  string  // catalogue model name (informational)
	CPU    float64 // CPU capacity c_i, millicores
	MIPS   float64 // processing capacity ĉ_i, MIPS (all cores)
	RAMMB  float64 // memory m_i, MB
	Switch int     // index of the switch it is attached to
}

// ServerFromModel builds a server of model m attached to switch sw.
func ServerFromModel(name string, m ServerModel, sw int) Server {
	return Server{
		Name: name, Model: m.Name,
		CPU:   float64(m.Cores) * 1000,
		MIPS:  float64(m.Cores) * m.MIPSPerCore,
		RAMMB: m.RAMMB, Switch: sw,
	}
}

// Link is an undirected network link between two switches.
type Link struct {
	A, B          int     // switch indices
	BandwidthBps  float64 // capacity, bits per second
	PropagationMS float64 // one-way propagation delay, milliseconds
}

// Network is an undirected graph of switches and links.
type Network struct {
	Switches int
	Links    []Link
}

// HexGrid returns a rows×cols hexagonal grid of switches (odd rows shifted
// right by half a cell), each switch linked to its up-to-six neighbours.
// Switch (r, c) has index r·cols + c. A 3×3 grid has 9 switches and 16 links.
func HexGrid(rows, cols int, bandwidthBps, propagationMS float64) Network {
	n := Network{Switches: rows * cols}
	id := func(r, c int) int { return r*cols + c }
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if c+1 < cols {
				n.Links = append(n.Links, Link{id(r, c), id(r, c+1), bandwidthBps, propagationMS})
			}
			if r+1 >= rows {
				continue
			}
			lo, hi := c-1, c // even row: below-left and below
			if r%2 == 1 {
				lo, hi = c, c+1 // odd row: below and below-right
			}
			for cc := lo; cc <= hi; cc++ {
				if cc >= 0 && cc < cols {
					n.Links = append(n.Links, Link{id(r, c), id(r+1, cc), bandwidthBps, propagationMS})
				}
			}
		}
	}
	return n
}

// DefaultServerSwitches are the switches of the default 3×3 region that host
// the seven servers: every switch but the two far corners (0 and 6), so any
// two servers are at most two hops apart.
var DefaultServerSwitches = []int{1, 2, 3, 4, 5, 7, 8}

// DefaultRegion returns the default edge region: a 3×3 hexagonal grid of
// 9 switches and 16 links of 1 Gbps and 10 ms propagation, and 7
// heterogeneous servers drawn round-robin from Catalogue.
func DefaultRegion() (Network, []Server) {
	net := HexGrid(3, 3, 1e9, 10)
	servers := make([]Server, len(DefaultServerSwitches))
	for i, sw := range DefaultServerSwitches {
		m := Catalogue[i%len(Catalogue)]
		servers[i] = ServerFromModel(fmt.Sprintf("s%d-%s", i, m.Name), m, sw)
	}
	return net, servers
}

func (n Network) validate() error {
	if n.Switches <= 0 {
		return fmt.Errorf("env: network has %d switches", n.Switches)
	}
	for i, l := range n.Links {
		if l.A < 0 || l.A >= n.Switches || l.B < 0 || l.B >= n.Switches || l.A == l.B {
			return fmt.Errorf("env: link %d joins switches %d and %d of %d", i, l.A, l.B, n.Switches)
		}
		if !(l.BandwidthBps > 0) || math.IsInf(l.BandwidthBps, 0) {
			return fmt.Errorf("env: link %d bandwidth %v bps, want > 0", i, l.BandwidthBps)
		}
		if !(l.PropagationMS >= 0) || math.IsInf(l.PropagationMS, 0) {
			return fmt.Errorf("env: link %d propagation %v ms, want >= 0", i, l.PropagationMS)
		}
	}
	return nil
}

// route is a path between two switches as a list of link indices.
type route []int

// shortestRoutes computes, for every ordered pair of switches, a
// minimum-hop path. Ties are broken deterministically: breadth-first search
// visits neighbours in increasing switch id, so among equal-length paths the
// one through lower ids wins. (Library shortest paths break ties by map
// order, which would make runs irreproducible.) Unreachable pairs get nil.
func shortestRoutes(n Network) [][]route {
	type nb struct{ sw, link int }
	adj := make([][]nb, n.Switches)
	for i, l := range n.Links {
		adj[l.A] = append(adj[l.A], nb{l.B, i})
		adj[l.B] = append(adj[l.B], nb{l.A, i})
	}
	for _, a := range adj {
		sort.Slice(a, func(i, j int) bool {
			if a[i].sw != a[j].sw {
				return a[i].sw < a[j].sw
			}
			return a[i].link < a[j].link
		})
	}
	routes := make([][]route, n.Switches)
	prevSw := make([]int, n.Switches)
	prevLink := make([]int, n.Switches)
	for src := 0; src < n.Switches; src++ {
		routes[src] = make([]route, n.Switches)
		for i := range prevSw {
			prevSw[i] = -2
		}
		prevSw[src] = -1
		queue := []int{src}
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			for _, e := range adj[u] {
				if prevSw[e.sw] == -2 {
					prevSw[e.sw], prevLink[e.sw] = u, e.link
					queue = append(queue, e.sw)
				}
			}
		}
		for dst := 0; dst < n.Switches; dst++ {
			if dst == src {
				routes[src][dst] = route{}
				continue
			}
			if prevSw[dst] == -2 {
				continue
			}
			var r route
			for v := dst; v != src; v = prevSw[v] {
				r = append(r, prevLink[v])
			}
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			routes[src][dst] = r
		}
	}
	return routes
}

// maxMinShares returns the max-min fair bandwidth share (bits/s) of each
// flow, where flow f crosses the links in paths[f] and every flow is
// elastic (progressive filling: repeatedly saturate the link with the
// smallest equal share among its unfrozen flows and freeze those flows).
// A flow that crosses no link gets +Inf. Flows are processed in index order
// and links in index order, so the result is deterministic.
func maxMinShares(links []Link, paths []route, shares []float64) {
	remaining := make([]float64, len(links))
	for i, l := range links {
		remaining[i] = l.BandwidthBps
	}
	frozen := make([]bool, len(paths))
	for f := range shares {
		shares[f] = math.Inf(1)
		if len(paths[f]) == 0 {
			frozen[f] = true
		}
	}
	for {
		best, bestShare := -1, math.Inf(1)
		for li := range links {
			cnt := 0
			for f, p := range paths {
				if frozen[f] {
					continue
				}
				for _, x := range p {
					if x == li {
						cnt++
						break
					}
				}
			}
			if cnt == 0 {
				continue
			}
			if s := remaining[li] / float64(cnt); s < bestShare {
				best, bestShare = li, s
			}
		}
		if best < 0 {
			return
		}
		for f, p := range paths {
			if frozen[f] {
				continue
			}
			uses := false
			for _, x := range p {
				if x == best {
					uses = true
					break
				}
			}
			if !uses {
				continue
			}
			shares[f] = bestShare
			frozen[f] = true
			for _, x := range p {
				remaining[x] -= bestShare
			}
		}
	}
}
