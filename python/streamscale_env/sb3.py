"""Stable-Baselines3 adapter: N remote environments as one SB3 ``VecEnv``,
stepped in one request per vector step (the fast path).

    from stable_baselines3 import PPO
    from streamscale_env.sb3 import VecEnv
    venv = VecEnv(num_envs=16, profile="etl")          # or addr="127.0.0.1:8090"
    model = PPO("MultiInputPolicy", venv, seed=0).learn(100_000)

``DummyVecEnv([lambda: gym.make("streamscale/ETL-v0") ...])`` works too,
but makes one HTTP round trip per env per step (16 per vector step where
this makes one), and the server steps the N envs in parallel. Needs
stable_baselines3 (imported here only).

Contract (SB3's, as DummyVecEnv keeps it):

- reset() returns the Dict observation of every env (arrays with a
  leading N axis); ``reset_infos`` holds each env's reset info.
- step_async(actions) / step_wait() → obs, rewards (float32), dones,
  infos (a list of N dicts: the single env's info keys with Python
  values). An env whose episode ends restarts inside the step (the
  server's same-step autoreset): its obs is the new episode's first, its
  info carries "terminal_observation" (the ended episode's last obs) and "episode"
  {"r": return, "l": length, "t": seconds since this VecEnv was made}, as
  Monitor/VecMonitor would add (so do not wrap it in VecMonitor). Every
  info has "TimeLimit.truncated" (truncated and not terminated).
- seed(s) (PPO(seed=s) calls it): the next reset uses base seed s; env
  i's episode k is reset with env.VecSeed(s, i, k) (server-side), so the
  same seed gives the same bytes. Without a seed the base is drawn from
  fresh entropy. Unlike DummyVecEnv's s + i, the seeds of the N envs are
  not settable one by one.
- get_attr(name) reads attributes of per-env views: render_mode (None),
  observation_space, action_space, metadata, placement_seed, and the
  server's create response ``meta``. An unknown name raises
  AttributeError, as DummyVecEnv does. set_attr and env_method raise
  AttributeError: the envs are not Python objects here, and nothing set
  on a view would reach the server. env_is_wrapped is False for all.
- close() frees the envs on the server (and stops a server started here).
"""

import time

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv as _SB3VecEnv

from .env import StreamscaleVectorEnv

__all__ = ["VecEnv"]


class _EnvView:
    """What get_attr sees of remote env i."""

    def __init__(self, venv, i):
        self.render_mode = None
        self.observation_space = venv.single_observation_space
        self.action_space = venv.single_action_space
        self.metadata = {"render_modes": []}
        self.placement_seed = venv.meta["placement_seeds"][i]
        self.meta = venv.meta


class VecEnv(_SB3VecEnv):
    """num_envs remote streamscale envs as one SB3 VecEnv (see the module
    doc). Arguments are StreamscaleVectorEnv's; autoreset is same-step."""

    def __init__(self, num_envs=16, profile="etl", trace="taxi-train", scenario="realistic", placement_seeds=(42, 37),
                 rate_mult=1.0, steps=0, addr=None):
        self.venv = StreamscaleVectorEnv(num_envs=num_envs, profile=profile, trace=trace, scenario=scenario,
                                         placement_seeds=placement_seeds, rate_mult=rate_mult, steps=steps,
                                         autoreset_mode="same_step", addr=addr)
        self._views = [_EnvView(self.venv, i) for i in range(num_envs)]
        self._actions = None
        self._rng = None
        self._t0 = time.time()
        super().__init__(num_envs, self.venv.single_observation_space, self.venv.single_action_space)

    def reset(self):
        seed = self._seeds[0]
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        elif self._rng is None:
            self._rng = np.random.default_rng()
        # A seed given through seed() is the base; without one, a base
        # drawn from this VecEnv's generator (seeded by the last seed()).
        base = seed if seed is not None else int(self._rng.integers(0, 2**63 - 1))
        obs, info = self.venv.reset(seed=int(base))
        self.reset_infos = _per_env(info, self.num_envs)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions):
        self._actions = actions

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("streamscale_env: step_wait() without step_async()")
        actions, self._actions = self._actions, None
        # The Gymnasium vector's step without its dict of info arrays: the
        # per-env info dicts are built straight from the response.
        v, n = self.venv, self.num_envs
        secs = v._step_vec(actions)
        flags = secs[2][1].view(np.bool_)
        term, trunc, ended = flags[:n], flags[n:2 * n], flags[2 * n:]
        dones = term | trunc
        # TimeLimit.truncated on every step, as DummyVecEnv sets it.
        infos, ep_return, ep_length = v._info_dicts(secs[4:], n, ("TimeLimit.truncated", trunc & ~term))
        if dones.any():
            idx = np.flatnonzero(ended).tolist()
            finals = v._split(secs[3][1], len(idx))
            fo = {i: {k: x[j] for k, x in finals.items()} for j, i in enumerate(idx)}
            t = round(time.time() - self._t0, 6)
            for i in np.flatnonzero(dones).tolist():
                d = infos[i]
                d["terminal_observation"] = fo.get(i)
                d["episode"] = {"r": ep_return[i], "l": ep_length[i], "t": t}
        return v._split(secs[0][1], n), secs[1][1].astype(np.float32), dones, infos

    def close(self):
        self.venv.close()

    def get_attr(self, attr_name, indices=None):
        return [getattr(self._views[i], attr_name) for i in self._get_indices(indices)]

    def set_attr(self, attr_name, value, indices=None):
        raise AttributeError(f"streamscale_env: cannot set {attr_name!r}: the envs are remote (serve env), "
                             "and nothing set here would reach them")

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        raise AttributeError(f"streamscale_env: cannot call {method_name!r} on the remote envs (serve env); "
                             "they are stepped only through this VecEnv")

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False for _ in self._get_indices(indices)]

    def get_images(self):
        return [None for _ in range(self.num_envs)]


_SKIP = ("final_observation", "episode")


def _per_env(info, n, extra=None):
    """Gymnasium's vector info (a dict of arrays with "_key" masks) as a
    list of n dicts of Python values, the single env's form; extra, a
    (key, array) pair, adds one more key."""
    keys = [k for k in info if not k.startswith("_") and k not in _SKIP]
    cols = [info[k].tolist() for k in keys]
    if extra is not None:
        keys.append(extra[0])
        cols.append(extra[1].tolist())
    if not keys:
        return [{} for _ in range(n)]
    return [dict(zip(keys, row)) for row in zip(*cols)]
