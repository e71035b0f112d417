// Package controllers is the evaluation's registry of autoscaling
// controllers, keyed by spec strings:
//
//	static:N     every task held at N millicores (agents.NewStatic)
//	threshold    the HPA-style utilization-band autoscaler with its
//	             default configuration (agents.NewThreshold)
//	vrebalance   VRebalance with its default configuration
//	             (vrebalance.New)
//	ppo          the trained PPO policy of the scenario's profile,
//	             <PoliciesDir>/<profile>/policy.{json,safetensors}
//	ppo:DIR      the PPO policy in DIR/policy.{json,safetensors}
//	clasp        CLASP (horizontal scaling) with its default configuration
//	             on the horizontal counterpart of the edge scenario
//	             (horizontal.Scenario, horizontal.New)
//
// The first four are vertical: they set each task's CPU on the edge
// scenario and are fed the observation (Spec.New). clasp is horizontal: it
// runs on a scenario of its own (Spec.Scenario: shared CPU, the paper's
// request costs, the seed's random placement as the initial replicas) and
// is fed the step's env.Info (Spec.NewHorizontal). Spec.Check builds either
// kind.
//
// PPO policies act deterministically (argmax). A policy that does not
// exist makes Spec.New fail with an error wrapping ErrNoPolicy.
//
// A name the registry knows but whose implementation has not landed yet
// parses to an error wrapping ErrUnavailable ("controller X is not
// available yet"), so a command can refuse it before doing any work.
//
// Units: allocations in millicores. Concurrency: a Registry and a Spec are
// safe for concurrent use (a Spec reads each policy once, under a lock);
// every Spec.New call builds a fresh controller, which must be used by one goroutine at a time. Determinism: a
// controller draws randomness only from the seed given to its Reset.
package controllers
