// Package provider is how the planner gets workers: processes on this
// machine (the default) or a Kubernetes StatefulSet (package
// provider/k8s). Workers are addressed by host:port and share nothing but
// the network.
package provider

import "context"

// Provider starts and stops workers.
type Provider interface {
	// Scale makes exactly n workers exist (n ≥ 0) and returns their
	// addresses (host:port) in worker-index order: worker i keeps its
	// address while i < n.
	Scale(ctx context.Context, n int) ([]string, error)
	// Workers returns the addresses of the workers that exist now.
	Workers(ctx context.Context) ([]string, error)
	// Close stops every worker the provider started.
	Close() error
}

// A Stopper stops named workers: the members a scale-in drained, by the
// address each listens on (the one its hello gives the planner, as
// Workers lists it; a member ID changes when a worker rejoins after a
// partition, its address does not), and no other: not a live worker, and
// not a dead one either (it stays dead). The planner calls StopWorkers
// instead of Scale for a scale-in when its provider is a Stopper;
// otherwise Scale(n) decides which workers go, which after an unrestarted
// failure may be a live one.
type Stopper interface {
	StopWorkers(ctx context.Context, addrs []string) error
}
