// Package cartpole is Gymnasium's CartPole-v1, reproduced exactly, as a
// small known-answer environment for the PPO trainer.
//
// Dynamics follow Barto, Sutton & Anderson (1983) as Gymnasium implements
// them: explicit Euler with τ = 0.02 s, force ±10 N, cart 1 kg, pole 0.1 kg
// and half-length 0.5 m, g = 9.8 m/s². An episode terminates when the cart
// leaves ±2.4 m or the pole leans more than 12° (0.2094 rad), and is
// truncated after 500 steps (the TimeLimit wrapper). The reward is 1 for
// every step, the terminal one included. Initial states are uniform in
// ±0.05 on each of the four state variables. The state is kept in float64;
// observations are rounded to float32, as Gymnasium returns them.
//
// Units: metres, metres per second, radians, radians per second.
//
// Determinism: an Env draws its initial states from its own PCG stream
// seeded from (seed, FNV-1a of "cartpole/reset"); Reset(seed) reseeds it
// and automatic resets continue it, as Gymnasium's np_random. Vec seeds env
// i with the named stream rng.CartPoleVec+"<i>" of seed. Nothing here reads the clock or uses goroutines; an Env or
// Vec is not safe for concurrent use. This package imports no project
// package (the train command adapts Vec to ppo.VecEnv).
package cartpole
