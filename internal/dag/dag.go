// Package dag holds the graph routine the simulator (env) and the CLASP
// planner (clasp) share without depending on each other.
package dag

// Order returns the nodes 0…n−1 of the directed graph with the given edges
// (from → to) in topological order by Kahn's algorithm, taking the lowest
// index first among ready nodes, so the order is deterministic. If the
// graph has a cycle it returns nil and the lowest node left unordered (a
// node on or behind the cycle); otherwise cycle is −1. Edges must name
// nodes in [0, n).
func Order(n int, edges [][2]int) (order []int, cycle int) {
	indeg := make([]int, n)
	for _, e := range edges {
		indeg[e[1]]++
	}
	order = make([]int, 0, n)
	done := make([]bool, n)
	for len(order) < n {
		next := -1
		for i := range n {
			if !done[i] && indeg[i] == 0 {
				next = i
				break
			}
		}
		if next < 0 {
			for i := range n {
				if !done[i] {
					return nil, i
				}
			}
		}
		done[next] = true
		order = append(order, next)
		for _, e := range edges {
			if e[0] == next {
				indeg[e[1]]--
			}
		}
	}
	return order, -1
}
