// Package controllers is the evaluation's registry of autoscaling
// controllers, keyed by spec strings:
//
//	static:N     every task held at N millicores (agents.NewStatic)
//	threshold    the HPA-style utilization-band autoscaler with its
//	             default configuration (agents.NewThreshold)
//	threshold:measured the same rule sizing on the allocation in force
//	             when the reported load was measured (the scenario's
//	             metric lag, agents.ThresholdConfig.MetricLagSteps)
//	threshold[:measured]:target=U:tol=T:window=N the rule with tuned
//	             Target, Tolerance and ScaleDownWindow (eval tune)
//	flink[:target=U:tol=T:window=N:catchup=S] the Flink-autoscaler /
//	             DS2-style rule (agents.NewRateRule): target rates from
//	             the sources along the DAG, catch-up for backlog, sizing
//	             on the allocation in force when measured;
//	             :trend=N[:ahead=S] makes it predictive (the sources'
//	             least-squares trend over N steps projected S steps on,
//	             by default agents.LeadSteps)
//	threshold…:start=MC, flink…:start=MC either rule asking MC
//	             millicores for every task at an episode's first step,
//	             before anything is measured (cold-start headroom,
//	             StartCPU of agents.ThresholdConfig and RateConfig)
//	oracle:H:RULE the threshold or flink spec RULE under
//	             agents.Clairvoyant: its targets raised by the peak of
//	             the workload over the next H steps, read ahead from the
//	             trace — an analysis bound on what forecasting can gain,
//	             never a deployable controller
//	vrebalance   VRebalance with its default configuration
//	             (vrebalance.New); vrebalance:evals=N:objective=F sets
//	             its exploration budget per tier and objective form
//	ppo          the trained PPO policy of the scenario's profile,
//	             <PoliciesDir>/<profile>/policy.{json,safetensors}
//	ppo:DIR      the PPO policy in DIR/policy.{json,safetensors}
//	ppo:DIR1+DIR2+… one controller of several seeds, the policies in
//	             DIR1, DIR2, …; ppo:DIR when DIR holds a seeds.json
//	             (`train -seeds -out DIR`) and ppo when
//	             <PoliciesDir>/<profile>/seeds.json exists stand for
//	             those seeds (Spec.Seeds; eval/paired runs each and
//	             judges them together)
//	ppo-sample[:DIR] the same policy sampling its actions (seeded by the
//	             episode seed) instead of taking the argmax
//	clasp        CLASP (horizontal scaling) with its default configuration
//	             on the horizontal counterpart of the edge scenario
//	             (agents/horizontal: Scenario, NewEdge)
//
// All but clasp are vertical: they set each task's CPU on the edge
// scenario and are fed the observation (agents.Controller). clasp is
// horizontal: it
// runs on a scenario of its own (Spec.Config: shared CPU, the paper's
// request costs, the seed's random placement as the initial replicas) and
// is fed the step's env.Info (agents.HorizontalController). Spec.Build
// returns either kind as an agents.Actor; Spec.Check builds and discards
// it. A Spec satisfies eval/runner's Factory. Registry.Select parses an
// evaluation's controller list and picks its candidate.
//
// PPO policies act deterministically (argmax) unless named ppo-sample.
// A policy that does not
// exist makes Spec.Build fail with an error wrapping ErrNoPolicy.
//
// Units: allocations in millicores. Concurrency: a Registry and a Spec are
// safe for concurrent use (a Spec reads each policy once, under a lock);
// every Spec.Build call builds a fresh controller, which must be used by
// one goroutine at a time. Determinism: a
// controller draws randomness only from the seed given to its Reset.
package controllers
