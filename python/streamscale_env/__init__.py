"""streamscale's simulator as Gymnasium environments, served by the Go
program ``serve env`` (package serve/envserver).

    import gymnasium as gym, streamscale_env
    env = gym.make("streamscale/ETL-v0", trace="taxi-train", scenario="realistic", placement_seed=42)

Registered ids: ``streamscale/ETL-v0`` and ``streamscale/PRED-v0`` (kwargs
trace, scenario, placement_seed, rate_mult, steps, addr, render_mode). The
server is ``addr=``, else $STREAMSCALE_ENV_ADDR, else a local ``serve env``
started by the env and stopped by close(): $STREAMSCALE_ENV_BIN, else
``streamscale-serve`` on PATH, else built once per process with ``go build
./serve`` from the checkout ($STREAMSCALE_REPO, the one this package sits
in, or the working directory's). serve env ties an env to the connection
that created it: closing it (or the process ending) frees the env.

For Stable-Baselines3, ``streamscale_env.sb3.VecEnv`` steps N envs in one
request (the fast path; DummyVecEnv over single envs makes N). Pure
Python: standard library, numpy and gymnasium (SB3 for the adapter).
"""

import gymnasium

from ._protocol import LocalServer, ServerError
from .env import StreamscaleEnv, StreamscaleVectorEnv

__all__ = ["LocalServer", "ServerError", "StreamscaleEnv", "StreamscaleVectorEnv"]

for _name, _profile in (("ETL", "etl"), ("PRED", "pred")):
    if f"streamscale/{_name}-v0" not in gymnasium.registry:
        gymnasium.register(id=f"streamscale/{_name}-v0", entry_point="streamscale_env.env:StreamscaleEnv",
                           kwargs={"profile": _profile}, disable_env_checker=True)
