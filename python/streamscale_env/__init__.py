"""streamscale's simulator as Gymnasium environments, served by the Go
program ``serve env`` (package serve/envserver).

    import gymnasium as gym, streamscale_env
    env = gym.make("streamscale/ETL-v0", trace="taxi-train", scenario="realistic", placement_seed=42)

Registered ids: ``streamscale/ETL-v0`` and ``streamscale/PRED-v0`` (kwargs
trace, scenario, placement_seed, rate_mult, steps, addr). The server is
``addr=``, else $STREAMSCALE_ENV_ADDR, else a local ``serve env`` started
by the env ($STREAMSCALE_ENV_BIN, else ``go run ./serve`` in the
repository) and stopped by close(). Pure Python: standard library, numpy
and gymnasium.
"""

import gymnasium

from ._protocol import LocalServer, ServerError
from .env import StreamscaleEnv, StreamscaleVectorEnv

__all__ = ["LocalServer", "ServerError", "StreamscaleEnv", "StreamscaleVectorEnv"]

for _name, _profile in (("ETL", "etl"), ("PRED", "pred")):
    if f"streamscale/{_name}-v0" not in gymnasium.registry:
        gymnasium.register(id=f"streamscale/{_name}-v0", entry_point="streamscale_env.env:StreamscaleEnv",
                           kwargs={"profile": _profile}, disable_env_checker=True)
