"""Gymnasium environments over a ``serve env`` server."""

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from ._protocol import ServerError, connect, decode, encode_actions

_SEED_HIGH = 2**63 - 1


def _spaces(meta):
    sp = meta["spaces"]
    boxes = {}
    for key in sp["keys"]:
        b = sp["observation"][key]
        shape = tuple(b["shape"])
        boxes[key] = gym.spaces.Box(np.array(b["low"], dtype=np.float32).reshape(shape),
                                    np.array(b["high"], dtype=np.float32).reshape(shape), shape, np.float32)
    return gym.spaces.Dict(boxes), gym.spaces.MultiDiscrete(np.array(sp["nvec"], dtype=np.int64))


class _Remote:
    """What a single env and a vector share: connection, instance, layout."""

    def _open(self, addr, request):
        self._conn, self._server = connect(addr)
        self._id = None
        try:
            self.meta = self._conn.json("POST", "/v1/envs", request)
        except BaseException:
            self._shutdown()
            raise
        self._id = self.meta["id"]
        obs_space, act_space = _spaces(self.meta)
        self._keys = self.meta["spaces"]["keys"]
        self._shapes = [obs_space[k].shape for k in self._keys]
        self._sizes = [int(np.prod(s)) for s in self._shapes]
        self._flat = self.meta["flat_size"]
        self._ntasks = len(self.meta["spaces"]["nvec"])
        self._nvec = np.array(self.meta["spaces"]["nvec"], dtype=np.int64)
        return obs_space, act_space

    def _split(self, flat, lead=()):
        out, off = {}, 0
        flat = flat.reshape(*lead, self._flat)
        for k, shape, size in zip(self._keys, self._shapes, self._sizes):
            out[k] = np.array(flat[..., off:off + size]).reshape(*lead, *shape)
            off += size
        return out

    def _post(self, verb, body, ctype):
        if self._id is None:
            raise ServerError(410, "closed", "streamscale_env: the environment is closed")
        return decode(self._conn.request("POST", f"/v1/envs/{self._id}/{verb}", body, ctype))

    def _reset_remote(self, seed):
        return self._post("reset", f'{{"seed":{int(seed)}}}'.encode(), "application/json")

    def _step_remote(self, actions, n):
        a = np.asarray(actions)
        if a.size != n * self._ntasks:
            raise ValueError(f"streamscale_env: action has {a.size} entries, want {n * self._ntasks}")
        return self._post("step", encode_actions(a), "application/octet-stream")

    def _shutdown(self):
        try:
            if self._id is not None:
                try:
                    self._conn.request("DELETE", f"/v1/envs/{self._id}")
                except (ServerError, OSError):
                    pass  # already freed, or the server is gone
                self._id = None
            self._conn.close()
        finally:
            if self._server is not None:
                self._server.stop()
                self._server = None


class StreamscaleEnv(_Remote, gym.Env):
    """One remote streamscale environment (env.Env served by ``serve env``).

    Observation: Dict of float32 Boxes app (11,), server (servers, 5) and
    task (tasks, 15) with the server's bounds; action: MultiDiscrete of 5
    CPU changes per task (env.DeltaMillicores). The server is ``addr``,
    else $STREAMSCALE_ENV_ADDR, else one started here and stopped on
    close(). Reset seeds go to env.Env.Reset unchanged, so a seeded
    episode equals the Go env's (observations as float32, rewards exact).
    """

    metadata = {"render_modes": []}

    def __init__(self, profile="etl", trace="taxi-train", scenario="realistic", placement_seed=42, rate_mult=1.0,
                 steps=0, addr=None):
        request = {"profile": profile, "trace": trace, "scenario": scenario, "placement_seed": int(placement_seed),
                   "rate_mult": float(rate_mult), "steps": int(steps)}
        self.observation_space, self.action_space = self._open(addr, request)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        s = seed if seed is not None else int(self.np_random.integers(0, _SEED_HIGH))
        (_, obs), (_, info) = self._reset_remote(s)
        return self._split(obs), info

    def step(self, action):
        (_, obs), (_, rew), (_, flags), (_, info) = self._step_remote(action, 1)
        return self._split(obs), float(rew[0]), bool(flags[0]), bool(flags[1]), info

    def close(self):
        self._shutdown()


class StreamscaleVectorEnv(_Remote, VectorEnv):
    """``num_envs`` remote environments stepped in one request (the
    server's vector form, env.VecEnv, parallel on the server).

    autoreset_mode "next_step" (default; Gymnasium's NEXT_STEP): the step
    that ends an episode returns its final observation; the next step
    resets that env, ignores its action and returns reward 0.
    "same_step" (Gymnasium 0.29's SyncVectorEnv and SB3 convention): the
    ended env restarts inside the step. Either way infos carry
    "final_observation" (object array, None where no episode ended) and
    "episode" {"r", "l"} with their "_" masks. Env i of placement_seeds
    (cycled) gets that placement. Reset seeds are a base: env i's episode
    k is reset with env.VecSeed(base, i, k).
    """

    metadata = {"render_modes": [], "autoreset_mode": "next_step"}

    def __init__(self, num_envs=16, profile="etl", trace="taxi-train", scenario="realistic", placement_seeds=(42, 37),
                 rate_mult=1.0, steps=0, autoreset_mode="next_step", addr=None):
        request = {"profile": profile, "trace": trace, "scenario": scenario, "placement_seeds": [int(p) for p in placement_seeds],
                   "rate_mult": float(rate_mult), "steps": int(steps), "num_envs": int(num_envs), "autoreset": autoreset_mode}
        single_obs, single_act = self._open(addr, request)
        self.metadata = dict(self.metadata, autoreset_mode=autoreset_mode)
        super().__init__(num_envs, single_obs, single_act)
        self._actions = None
        self._rng = None

    def reset_wait(self, seed=None, options=None, **kwargs):
        if isinstance(seed, (list, tuple)):
            seed = seed[0]
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        elif self._rng is None:
            self._rng = np.random.default_rng()
        base = seed if seed is not None else int(self._rng.integers(0, _SEED_HIGH))
        (_, obs), (_, info) = self._reset_remote(base)
        return self._split(obs, (self.num_envs,)), {k: np.asarray(v) for k, v in info.items()}

    def step_async(self, actions):
        self._actions = actions

    def step_wait(self, **kwargs):
        n = self.num_envs
        secs = self._step_remote(self._actions, n)
        (_, obs), (_, rew), (_, flags), (_, final), (_, info) = secs
        term, trunc, ended = flags[:n].astype(bool), flags[n:2 * n].astype(bool), flags[2 * n:].astype(bool)
        infos, mask = {}, np.ones(n, dtype=bool)
        for k, v in info.items():
            if k in ("episode_return", "episode_length"):
                continue
            infos[k] = np.asarray(v)
            infos["_" + k] = mask
        if ended.any():
            fo = np.empty(n, dtype=object)
            finals = self._split(final, (int(ended.sum()),))
            for j, i in enumerate(np.flatnonzero(ended)):
                fo[i] = {k: v[j] for k, v in finals.items()}
            infos["final_observation"], infos["_final_observation"] = fo, ended
            infos["episode"] = {"r": np.where(ended, info["episode_return"], 0.0),
                                "l": np.where(ended, info["episode_length"], 0)}
            infos["_episode"] = ended
        return self._split(obs, (n,)), np.array(rew, dtype=np.float64), term, trunc, infos

    def close_extras(self, **kwargs):
        self._shutdown()
