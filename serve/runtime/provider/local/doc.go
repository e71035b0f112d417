// Package local is the default worker provider: worker processes on this
// machine, each listening on its own loopback port, started by exec'ing a
// binary with the "worker" subcommand (the running program by default, so
// `go run ./serve local` works) and stopped on Scale down, StopWorkers (exactly the workers named) or Close. On
// Linux each child also gets SIGKILL if the provider's process dies, so no
// worker outlives its planner even after a SIGKILL. The provider binds each
// worker's port itself and hands the bound socket to the worker
// (transport.InheritedEnv), so no other process can take the port between
// its choice and the worker's start; a worker restarted after it died gets
// a new port.
package local
