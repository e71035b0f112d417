"""Gymnasium environments over a ``serve env`` server."""

import itertools

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from ._protocol import OP_CLOSE, OP_RESET, OP_STEP, ServerError, connect, decode, encode_actions

_SEED_HIGH = 2**63 - 1
_EPISODE_KEYS = ("episode_return", "episode_length")
_INFO_KINDS = (b"d", b"i", b"b", b"d")  # a vector's info sections (serve/envserver doc)


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
            self.meta = self._conn.create(request)
        except BaseException:
            self._shutdown()
            raise
        self._id = self.meta["id"]
        self._conn.bound = True  # the server frees the env with this connection
        obs_space, act_space = _spaces(self.meta)
        self._keys = self.meta["spaces"]["keys"]
        self._shapes = [obs_space[k].shape for k in self._keys]
        self._sizes = [int(np.prod(s)) for s in self._shapes]
        self._flat = self.meta["flat_size"]
        self._ntasks = len(self.meta["spaces"]["nvec"])
        self._nvec = np.array(self.meta["spaces"]["nvec"], dtype=np.int64)
        self._layout = lay = self.meta.get("info_layout")
        if request.get("num_envs") and lay is None:
            self._shutdown()
            raise RuntimeError(f"streamscale_env: the server at {self._conn.addr} sends no info_layout for a vector "
                               "(an older serve env); rebuild it")
        if lay is not None:
            # A vector's info keys, in the single env's order, and their masks.
            keys = [*lay["int64"], *lay["float64"], *lay["bool"], *lay["per_task"]]
            self._mask_keys = ["_" + k for k in keys if k not in _EPISODE_KEYS]
        return obs_space, act_space

    def _split(self, flat, n=None):
        """Views of one flat float32 observation (n None) or of n of them
        (env-major) per Dict key: no copy, the arrays share the response's
        buffer (writable, its own per response)."""
        out, off = {}, 0
        if n is None:
            for k, shape, size in zip(self._keys, self._shapes, self._sizes):
                out[k] = flat[off:off + size].reshape(shape)
                off += size
            return out
        rows = flat.reshape(n, self._flat)
        for k, shape, size in zip(self._keys, self._shapes, self._sizes):
            out[k] = rows[:, off:off + size].reshape(n, *shape)
            off += size
        return out

    def _vec_info(self, secs, n):
        """The infos of a vector response from its four info sections
        (layout in the create response): Gymnasium's vector convention, a
        dict of arrays (one entry per env) each with its "_key" mask, in the
        single env's key order; plus episode_return and episode_length."""
        (_, f), (_, ints), (_, b), (_, per_task) = secs
        lay = self._layout
        info = dict(zip(lay["int64"], ints.reshape(len(lay["int64"]), n)))
        for k in lay["uint64"]:
            info[k] = info[k].view(np.uint64)
        info.update(zip(lay["float64"], f.reshape(len(lay["float64"]), n)))
        info.update(zip(lay["bool"], b.view(np.bool_).reshape(len(lay["bool"]), n)))
        (k,) = lay["per_task"]
        info[k] = per_task.reshape(n, self._ntasks)
        info.update(zip(self._mask_keys, itertools.repeat(np.ones(n, dtype=np.bool_))))
        return info

    def _post(self, op, body, kinds):
        if self._id is None:
            raise ServerError(410, "closed", "streamscale_env: the environment is closed")
        secs = decode(self._conn.call(op, self._id, body))
        if [k for k, _ in secs] != kinds:
            verb = "reset" if op == OP_RESET else "step"
            raise ValueError(f"streamscale_env: {verb} response has sections {b''.join(k for k, _ in secs)!r}, "
                             f"want {b''.join(kinds)!r}")
        return secs

    def _reset_remote(self, seed, vector):
        kinds = [b"f", *_INFO_KINDS] if vector else [b"f", b"j"]
        return self._post(OP_RESET, f'{{"seed":{int(seed)}}}'.encode(), kinds)

    def _step_remote(self, actions, n, vector):
        a = np.asarray(actions)
        if a.size != n * self._ntasks:
            raise ValueError(f"streamscale_env: action has {a.size} entries, want {n * self._ntasks}")
        kinds = [b"f", b"d", b"b", b"f", *_INFO_KINDS] if vector else [b"f", b"d", b"b", b"j"]
        return self._post(OP_STEP, encode_actions(a), kinds)

    def _shutdown(self):
        try:
            if self._id is not None:
                try:
                    self._conn.call(OP_CLOSE, self._id)
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

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}

    def __init__(self, profile="etl", trace="taxi-train", scenario="realistic", placement_seed=42, rate_mult=1.0,
                 steps=0, addr=None, render_mode=None):
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"streamscale_env: render_mode {render_mode!r}, want None or one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self._last_obs = None
        request = {"profile": profile, "trace": trace, "scenario": scenario, "placement_seed": int(placement_seed),
                   "rate_mult": float(rate_mult), "steps": int(steps)}
        self.observation_space, self.action_space = self._open(addr, request)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        s = seed if seed is not None else int(self.np_random.integers(0, _SEED_HIGH))
        (_, obs), (_, info) = self._reset_remote(s, False)
        self._last_obs = self._split(obs)
        return self._last_obs, info

    def step(self, action):
        (_, obs), (_, rew), (_, flags), (_, info) = self._step_remote(action, 1, False)
        self._last_obs = self._split(obs)
        return self._last_obs, float(rew[0]), bool(flags[0]), bool(flags[1]), info

    def render(self):
        """render_mode "rgb_array": the last observation as an RGB image
        (uint8, 64 × 12·tasks × 3), one column per task: blue its CPU
        allocation (task feature "cpu", in [0, 1]), green its throughput
        ratio (feature 5, in [0, 2], drawn as half). None before a reset
        or with render_mode None."""
        if self.render_mode != "rgb_array" or self._last_obs is None:
            return None
        task = self._last_obs["task"]
        h, w = 64, 12
        img = np.full((h, w * len(task), 3), 255, dtype=np.uint8)
        for k, row in enumerate(task):
            for frac, col, rgb in ((row[0], 1, (40, 90, 200)), (row[5] / 2, 6, (40, 170, 70))):
                n = int(round(float(np.clip(frac, 0.0, 1.0)) * h))
                if n:
                    img[h - n:, k * w + col:k * w + col + 5] = rgb
        return img

    def close(self):
        self._shutdown()


class StreamscaleVectorEnv(_Remote, VectorEnv):
    """``num_envs`` remote environments stepped in one request (the
    server's vector form, env.VecEnv, parallel on the server).

    autoreset_mode "next_step" (default; Gymnasium's NEXT_STEP): the step
    that ends an episode returns its final observation; the next step
    resets that env, ignores its action and returns reward 0.
    "same_step" (Gymnasium 0.29's SyncVectorEnv and SB3 convention): the
    ended env restarts inside the step. Infos follow Gymnasium's vector
    convention: every key of the single env's info (reset's and step's)
    as an array with one entry per env and its "_key" mask; the step that
    ends an episode adds "final_observation" (object array, None where no
    episode ended) and "episode" {"r", "l"} with their "_" masks.
    Observation arrays are views of one buffer per response (no copy).
    Env i of placement_seeds (cycled) gets that placement. Reset seeds are
    a base: env i's episode k is reset with env.VecSeed(base, i, k).
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
        secs = self._reset_remote(base, True)
        info = self._vec_info(secs[1:], self.num_envs)
        for k in _EPISODE_KEYS:
            del info[k]
        return self._split(secs[0][1], self.num_envs), info

    def step_async(self, actions):
        self._actions = actions

    def step_wait(self, **kwargs):
        n = self.num_envs
        secs = self._step_remote(self._actions, n, True)
        flags = secs[2][1].view(np.bool_)
        term, trunc, ended = flags[:n], flags[n:2 * n], flags[2 * n:]
        infos = self._vec_info(secs[4:], n)
        ep_return, ep_length = infos.pop("episode_return"), infos.pop("episode_length")
        if ended.any():
            fo = np.empty(n, dtype=object)
            finals = self._split(secs[3][1], int(ended.sum()))
            for j, i in enumerate(np.flatnonzero(ended)):
                fo[i] = {k: v[j] for k, v in finals.items()}
            infos["final_observation"], infos["_final_observation"] = fo, ended
            infos["episode"] = {"r": ep_return, "l": ep_length}
            infos["_episode"] = ended
        return self._split(secs[0][1], n), secs[1][1], term, trunc, infos

    def close_extras(self, **kwargs):
        self._shutdown()
