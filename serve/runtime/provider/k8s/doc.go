// Package k8s is the runtime's Kubernetes worker provider: the workers are
// the pods of one StatefulSet, governed by a headless Service, and the
// provider scales them through client-go (the StatefulSet's scale
// subresource). It implements provider.Provider; the local provider
// (processes on this machine) stays the default, and only binaries that
// import this package link client-go.
//
// # Addresses
//
// Worker i is the StatefulSet's pod "<statefulset>-i", whose stable DNS name
// is "<statefulset>-i.<headless service>.<namespace>.svc.<cluster domain>"
// (Kubernetes documents this identity under "StatefulSets: Stable Network
// ID"). The provider returns that name with the worker port, so worker i
// keeps its address while i < n, as the provider contract asks. The shipped
// headless Service publishes not-ready addresses, so the names resolve as
// soon as a pod has an IP, before the worker reports ready.
//
// # Scale, Workers, Close
//
// Scale sets spec.replicas through the scale subresource (GetScale, then
// UpdateScale, retried on a write conflict) and polls the StatefulSet
// (every PollInterval, 1 s by default) until its controller has observed the
// change (status.observedGeneration ≥ metadata.generation), exactly n pods
// exist (status.replicas = n) and all n are ready (status.readyReplicas ≥ n);
// the wait is bounded only by the caller's context. Workers lists the pods
// matched by the StatefulSet's selector and returns the addresses of the
// ready ones (phase Running, condition Ready, not being deleted) in ordinal
// order; a pod whose name is not "<statefulset>-<ordinal>" is ignored, so a
// stray pod that happens to carry the workers' labels never becomes a worker.
// Because a worker that is not ready is left out, the index in Workers' slice
// equals the ordinal only when every worker is ready; the address itself
// always names the ordinal.
//
// Close stops only the workers this provider started: at its first Scale the
// provider records the replica count it found (0 with the shipped
// manifests); if any Scale raised the count above it, Close sets the count
// back to that baseline (so with the shipped manifests, to 0), without
// waiting for the pods to terminate. A provider that never scaled up leaves
// the StatefulSet alone. After Close, every method returns ErrClosed.
//
// # Permissions
//
// The provider needs, in its namespace: get on statefulsets, get and update
// on statefulsets/scale, and list on pods. deploy/k8s/planner-rbac.yaml
// grants exactly these (plus patch, for operators using kubectl); a test
// replays the provider's requests against that Role.
//
// # Concurrency and determinism
//
// A Provider is safe for concurrent use; its methods are serialised. Its
// outputs are the addresses, which depend only on the names, the port and
// the cluster's pod state, sorted by ordinal (never by list order).
package k8s
