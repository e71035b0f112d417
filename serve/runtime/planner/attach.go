package planner

// PlacedWorkers returns the number of live workers of the last placement
// (the workers in use), for a caller observing a run from its Allocator.
func (p *Planner) PlacedWorkers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.core.Placed())
}
