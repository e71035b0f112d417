"""Stable-Baselines3 PPO on streamscale/ETL-v0 or PRED-v0 with the paper's
hyperparameters (not run in CI: a training run).

    apt-get install -y python3-torch
    PYTHONPATH=../shared/peers/python /usr/bin/python3 python/examples/sb3_ppo.py \\
        --profile etl --out runs/sb3-ppo [--timesteps 57344] [--fast]

Default: 14 envs on the four training scenarios (taxi-train ×1 and ×2,
placements 42 and 37, as go run ./train cycles them) through SB3's own
DummyVecEnv, one HTTP round trip per env per step. --fast uses
streamscale_env.sb3.VecEnv instead (one round trip per vector step; one
rate multiplier per vector, so ×1 only). One server is started here. The
model is written to <out>/sb3_ppo_<profile>.zip and SB3's logs (CSV and
stdout) to <out>. PAPER and make_model are the configuration the
side-by-side check (sb3_vs_go.py) uses; PAPER matches ppo.DefaultConfig
(the value clip 0.2 included; SB3's Adam ε is already 1e-5).
"""

import argparse
import os

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.logger import configure
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

import streamscale_env  # noqa: F401  (registers the ids)
from streamscale_env import LocalServer
from streamscale_env.sb3 import VecEnv

SCENARIOS = [(m, p) for m in (1.0, 2.0) for p in (42, 37)]
NUM_ENVS = 14
PAPER = dict(n_steps=2048, batch_size=256, n_epochs=20, gamma=0.995, gae_lambda=0.95, learning_rate=3e-4,
             clip_range=0.2, clip_range_vf=0.2, ent_coef=0.05, vf_coef=0.5, max_grad_norm=0.5,
             policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=torch.nn.Tanh))
ENV_IDS = {"etl": "streamscale/ETL-v0", "pred": "streamscale/PRED-v0"}


def make_model(addr, profile="etl", scenario="realistic", seed=0, verbose=1, fast=False):
    """PPO("MultiInputPolicy") with PAPER on NUM_ENVS remote envs of the
    server at addr: Monitor-wrapped single envs in a DummyVecEnv, or with
    fast one streamscale_env.sb3.VecEnv."""
    if fast:
        venv = VecEnv(num_envs=NUM_ENVS, profile=profile, scenario=scenario, placement_seeds=(42, 37), addr=addr)
    else:
        def make(i):
            m, p = SCENARIOS[i % len(SCENARIOS)]
            return lambda: Monitor(gym.make(ENV_IDS[profile], trace="taxi-train", scenario=scenario, placement_seed=p,
                                            rate_mult=m, addr=addr))
        venv = DummyVecEnv([make(i) for i in range(NUM_ENVS)])
    return PPO("MultiInputPolicy", venv, seed=seed, verbose=verbose, **PAPER)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=sorted(ENV_IDS), default="etl", help="application profile (default etl)")
    ap.add_argument("--scenario", default="realistic", help="physics preset (default realistic)")
    ap.add_argument("--timesteps", type=int, default=57_344, help="env steps to train (default 57344)")
    ap.add_argument("--seed", type=int, default=0, help="SB3 seed (default 0)")
    ap.add_argument("--fast", action="store_true", help="one streamscale_env.sb3.VecEnv instead of DummyVecEnv")
    ap.add_argument("--out", required=True, help="directory for the model and SB3's logs (created)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    server = LocalServer(["-max-envs-per-conn", "32"])
    try:
        model = make_model(server.addr, profile=args.profile, scenario=args.scenario, seed=args.seed, fast=args.fast)
        model.set_logger(configure(args.out, ["stdout", "csv"]))
        model.learn(total_timesteps=args.timesteps)
        path = os.path.join(args.out, f"sb3_ppo_{args.profile}.zip")
        model.save(path)
        print(f"wrote {path}")
        model.get_env().close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
