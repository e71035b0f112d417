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
