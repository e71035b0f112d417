"""Ray RLlib PPO spreading rollout workers over several env servers
(written for Ray 2.x; not runnable here: no RLlib on these machines).

Start one server per machine (or several per machine on different ports):

    go run ./serve env -addr 0.0.0.0:8090 -max-envs 64 -max-envs-per-conn 32

then list them in STREAMSCALE_ENV_SERVERS (comma-separated host:port), and

    python3 python/examples/rllib_ppo.py --profile etl --out runs/rllib [--iterations 2]

Worker w (1-based; 0 is the driver) and its sub-env v connect to server
(w·envs_per_worker + v) mod len(servers), so the envs spread evenly. The
final checkpoint goes to <out>.
"""

import argparse
import os

import gymnasium as gym
from ray.rllib.algorithms.ppo import PPOConfig
from ray.tune.registry import register_env

import streamscale_env  # noqa: F401  (registers the ids)

SERVERS = os.environ.get("STREAMSCALE_ENV_SERVERS", "127.0.0.1:8090").split(",")
ENVS_PER_WORKER = 4


def make_env(ctx):
    i = ctx.worker_index * ENVS_PER_WORKER + ctx.vector_index
    return gym.make(ctx.get("env_id", "streamscale/ETL-v0"), trace="taxi-train", scenario="realistic",
                    placement_seed=(42, 37)[i % 2], rate_mult=(1.0, 2.0)[(i // 2) % 2],
                    addr=SERVERS[i % len(SERVERS)])


register_env("streamscale-etl-remote", make_env)

config = (
    PPOConfig()
    .environment("streamscale-etl-remote", env_config={"env_id": "streamscale/ETL-v0"})
    .env_runners(num_env_runners=len(SERVERS) * 2, num_envs_per_env_runner=ENVS_PER_WORKER,
                 rollout_fragment_length=2048 // ENVS_PER_WORKER)
    .training(gamma=0.995, lambda_=0.95, lr=3e-4, clip_param=0.2, entropy_coeff=0.05, vf_loss_coeff=0.5,
              grad_clip=0.5, train_batch_size=2048 * 14, minibatch_size=256, num_epochs=20,
              model={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
)

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=("etl", "pred"), default="etl")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--out", required=True, help="checkpoint directory")
    args = ap.parse_args()
    config = config.environment("streamscale-etl-remote",
                                env_config={"env_id": {"etl": "streamscale/ETL-v0", "pred": "streamscale/PRED-v0"}[args.profile]})
    algo = config.build()
    for it in range(args.iterations):
        print(it, algo.train()["env_runners"]["episode_return_mean"])
    print(algo.save(os.path.abspath(args.out)))
