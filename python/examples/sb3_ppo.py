"""Stable-Baselines3 PPO on streamscale/ETL-v0 with the paper's
hyperparameters (not run in CI: needs torch).

    apt-get install -y python3-torch python3-pandas python3-matplotlib
    PYTHONPATH=../shared/peers/python:python /usr/bin/python3 python/examples/sb3_ppo.py [timesteps]

14 envs on the four training scenarios (taxi-train ×1 and ×2, placements
42 and 37) through SB3's own DummyVecEnv, one server started here.
"""

import sys

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

import streamscale_env
from streamscale_env import LocalServer

SCENARIOS = [(m, p) for m in (1.0, 2.0) for p in (42, 37)]


def main():
    timesteps = int(sys.argv[1]) if len(sys.argv) > 1 else 57_344
    server = LocalServer(["-max-envs-per-conn", "32"])
    try:
        def make(i):
            m, p = SCENARIOS[i % len(SCENARIOS)]
            return lambda: Monitor(gym.make("streamscale/ETL-v0", trace="taxi-train", scenario="realistic",
                                            placement_seed=p, rate_mult=m, addr=server.addr))
        venv = DummyVecEnv([make(i) for i in range(14)])
        model = PPO("MultiInputPolicy", venv, n_steps=2048, batch_size=256, n_epochs=20, gamma=0.995, gae_lambda=0.95,
                    learning_rate=3e-4, clip_range=0.2, ent_coef=0.05, vf_coef=0.5, max_grad_norm=0.5,
                    policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=torch.nn.Tanh),
                    seed=0, verbose=1)
        model.learn(total_timesteps=timesteps)
        model.save("sb3_ppo_etl")
        venv.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
