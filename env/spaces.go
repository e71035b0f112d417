package env

import "fmt"

// Feature counts of the Dict observation (paper Table 1).
const (
	TaskFeatures   = 15 // features per task
	ServerFeatures = 5  // features per server
	AppFeatures    = 11 // features for the application
)

// DeltaMillicores is the CPU change, in millicores, of each action choice.
// Index 2 (0 millicores) is "no change".
var DeltaMillicores = [5]float64{-500, -50, 0, 50, 500}

// NoChange is the action index that leaves an allocation as it is.
const NoChange = 2

// Observation is one Dict observation. Each slice is a row-major matrix:
// Task is NumTasks×TaskFeatures, Server is NumServers×ServerFeatures and
// App has AppFeatures entries. Flattened for a policy, the keys are taken in
// sorted order: app, server, task.
type Observation struct {
	App    []float64
	Server []float64
	Task   []float64
}

// Clone returns a deep copy of o.
func (o Observation) Clone() Observation {
	return Observation{
		App:    append([]float64(nil), o.App...),
		Server: append([]float64(nil), o.Server...),
		Task:   append([]float64(nil), o.Task...),
	}
}

// Flatten appends app, server and task features (sorted key order) to dst
// and returns the extended slice.
func (o Observation) Flatten(dst []float64) []float64 {
	dst = append(dst, o.App...)
	dst = append(dst, o.Server...)
	return append(dst, o.Task...)
}

// NumTasks is the number of task rows in o.
func (o Observation) NumTasks() int { return len(o.Task) / TaskFeatures }

// Action is what a controller asks of the environment for one step. Exactly
// one field is set: Choices holds one index into
// DeltaMillicores per task (the MultiDiscrete action); Targets holds an
// absolute CPU allocation in millicores per task, for controllers that
// think in allocations (static, VRebalance). Both are clipped to the
// allocation bounds and projected onto server capacity the same way.
type Action struct {
	Choices []int
	Targets []float64
	// Replicas, for horizontal controllers, replaces the replica plan:
	// Replicas[k] lists task k's servers and input shares (as
	// Config.Replicas). Queued events and the moved share of each task's
	// state travel to their new replicas over the network, which start
	// serving once they have arrived. Allocations are kept (in
	// shared-CPU scenarios they follow the plan).
	Replicas [][]Replica
	// Hold keeps everything as it is (the only way to pass a step in
	// shared-CPU scenarios without re-planning).
	Hold bool
}

// Box describes one Box space of the Dict observation: its shape and the
// per-element bounds (row-major, same length as the flattened shape).
type Box struct {
	Shape []int     `json:"shape"`
	Low   []float64 `json:"low"`
	High  []float64 `json:"high"`
}

// Size is the number of elements in the box.
func (b Box) Size() int {
	n := 1
	for _, s := range b.Shape {
		n *= s
	}
	return n
}

// Contains reports whether x has the box's size and lies inside its bounds;
// if not, the error names the first offending element.
func (b Box) Contains(x []float64) error {
	if len(x) != b.Size() {
		return fmt.Errorf("env: box has %d entries, want %d", len(x), b.Size())
	}
	for i, v := range x {
		if v != v || v < b.Low[i] || v > b.High[i] {
			return fmt.Errorf("env: entry %d = %v outside [%v, %v]", i, v, b.Low[i], b.High[i])
		}
	}
	return nil
}

// Spaces describes the observation (a Dict of Boxes, keys in sorted order)
// and the action (MultiDiscrete) of an environment, in a form a trainer or
// an HTTP client can read.
type Spaces struct {
	// Keys lists the Dict keys in sorted order: "app", "server", "task".
	Keys []string `json:"keys"`
	// Observation maps each key to its Box.
	Observation map[string]Box `json:"observation"`
	// Nvec is the MultiDiscrete action: 5 choices per task.
	Nvec []int `json:"nvec"`
	// DeltaMillicores is the CPU change of each choice; empty when the
	// choices are target utilizations.
	DeltaMillicores []float64 `json:"delta_millicores"`
	// TargetUtilization, when set, is the target utilization of each
	// choice (Config.ActionUtilization; 0 holds), in place of
	// DeltaMillicores.
	TargetUtilization []float64 `json:"target_utilization,omitempty"`
}

// FlatSize is the length of a flattened observation.
func (s Spaces) FlatSize() int {
	n := 0
	for _, k := range s.Keys {
		n += s.Observation[k].Size()
	}
	return n
}
