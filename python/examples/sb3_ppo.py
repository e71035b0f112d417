"""Stable-Baselines3 PPO on streamscale/ETL-v0 with the paper's
hyperparameters (not run in CI: needs torch).

    apt-get install -y python3-torch python3-pandas python3-matplotlib
    PYTHONPATH=../shared/peers/python:python /usr/bin/python3 python/examples/sb3_ppo.py [timesteps]

14 envs on the four training scenarios (taxi-train ×1 and ×2, placements
42 and 37, as go run ./train cycles them) through SB3's own DummyVecEnv,
one server started here. PAPER and make_model are the configuration the
side-by-side check (sb3_vs_go.py) uses; PAPER matches ppo.DefaultConfig
(the value clip 0.2 included; SB3's Adam ε is already 1e-5).
"""

import sys

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

import streamscale_env  # noqa: F401  (registers the ids)
from streamscale_env import LocalServer

SCENARIOS = [(m, p) for m in (1.0, 2.0) for p in (42, 37)]
NUM_ENVS = 14
PAPER = dict(n_steps=2048, batch_size=256, n_epochs=20, gamma=0.995, gae_lambda=0.95, learning_rate=3e-4,
             clip_range=0.2, clip_range_vf=0.2, ent_coef=0.05, vf_coef=0.5, max_grad_norm=0.5,
             policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=torch.nn.Tanh))


def make_model(addr, profile="etl", scenario="realistic", seed=0, verbose=1):
    """PPO("MultiInputPolicy") with PAPER on NUM_ENVS Monitor-wrapped
    remote envs of the server at addr."""
    env_id = {"etl": "streamscale/ETL-v0", "pred": "streamscale/PRED-v0"}[profile]

    def make(i):
        m, p = SCENARIOS[i % len(SCENARIOS)]
        return lambda: Monitor(gym.make(env_id, trace="taxi-train", scenario=scenario, placement_seed=p,
                                        rate_mult=m, addr=addr))
    venv = DummyVecEnv([make(i) for i in range(NUM_ENVS)])
    return PPO("MultiInputPolicy", venv, seed=seed, verbose=verbose, **PAPER)


def main():
    timesteps = int(sys.argv[1]) if len(sys.argv) > 1 else 57_344
    torch.set_num_threads(1)
    server = LocalServer(["-max-envs-per-conn", "32"])
    try:
        model = make_model(server.addr)
        model.learn(total_timesteps=timesteps)
        model.save("sb3_ppo_etl")
        model.get_env().close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
