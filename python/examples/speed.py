"""Remote vector stepping speed: env steps/s of a StreamscaleVectorEnv of
16 ETL envs (realistic physics) with random actions.

    PYTHONPATH=../shared/peers/python:python /usr/bin/python3 python/examples/speed.py [seconds]
"""

import sys
import time

import numpy as np

from streamscale_env import StreamscaleVectorEnv


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    v = StreamscaleVectorEnv(num_envs=16, profile="etl")
    try:
        v.reset(seed=0)
        rng = np.random.default_rng(0)
        acts = rng.integers(0, 5, size=(256, 16, v.single_action_space.shape[0]))
        for i in range(50):  # warm-up
            v.step(acts[i % 256])
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            v.step(acts[n % 256])
            n += 1
        dt = time.perf_counter() - t0
        print(f"{n} vector steps of 16 envs in {dt:.2f} s: {16 * n / dt:,.0f} env steps/s ({1e3 * dt / n:.3f} ms per vector step)")
    finally:
        v.close()


if __name__ == "__main__":
    main()
