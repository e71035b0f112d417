"""Gymnasium environments over a ``serve env`` server."""

import itertools
import struct

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from ._protocol import OP_CLOSE, OP_RESET, OP_STEP, ServerError, StepFrame, connect, decode, encode_actions

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
        n = request.get("num_envs")
        if n:  # the vector's step fast path (_step_vec)
            self._step_frame = StepFrame(self._id, n * self._ntasks)
            self._vec_layout = _VecStepLayout(n, self._flat, self._ntasks, lay)
            self._rows = _InfoRows(lay)
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

    def _info_dicts(self, secs, n, extra):
        """The infos of a vector response from its four info sections as
        n dicts of Python values, the single env's keys in its order (what
        _vec_info gives, without the masks and episode keys, one dict per
        env), each with extra (key, bool array) added; and, as lists, the
        episode_return and episode_length rows. One tolist per section:
        building the dicts is most of the SB3 adapter's time per step."""
        (_, f), (_, ints), (_, b), (_, per_task) = secs
        r = self._rows
        i_rows = ints.reshape(r.ni, n).tolist()
        for j in r.unsigned:
            i_rows[j] = ints[j * n:(j + 1) * n].view(np.uint64).tolist()
        f_rows = f.reshape(r.nf, n).tolist()
        cols = [i_rows[j] for j in r.ints]
        cols += [f_rows[j] for j in r.floats]
        cols += b.view(np.bool_).reshape(r.nb, n).tolist()
        cols.append(per_task.reshape(n, self._ntasks).tolist())
        cols.append(extra[1].tolist())
        keys = r.keys + [extra[0]]
        return [dict(zip(keys, row)) for row in zip(*cols)], f_rows[r.ep_return], i_rows[r.ep_length]

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

    def _step_vec(self, actions):
        """One vector step, the fast path: the actions written into the
        reused request frame, the response split at offsets computed once
        (_VecStepLayout.split). Returns its sections as _step_remote
        would, checked as strictly."""
        a = np.asarray(actions)
        f = self._step_frame
        if a.size != f.n:
            raise ValueError(f"streamscale_env: action has {a.size} entries, want {f.n}")
        if self._id is None:
            raise ServerError(410, "closed", "streamscale_env: the environment is closed")
        f.fill(a)
        return self._vec_layout.split(self._conn.call(OP_STEP, self._id, f.body, f.frame))

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


class _InfoRows:
    """Which rows of a vector's info sections are which single-env key
    (from the create response's info_layout), for _info_dicts."""

    def __init__(self, lay):
        self.ni, self.nf, self.nb = len(lay["int64"]), len(lay["float64"]), len(lay["bool"])
        self.ints = [j for j, k in enumerate(lay["int64"]) if k not in _EPISODE_KEYS]
        self.unsigned = [j for j, k in enumerate(lay["int64"]) if k in lay["uint64"]]
        self.floats = [j for j, k in enumerate(lay["float64"]) if k not in _EPISODE_KEYS]
        self.ep_return = lay["float64"].index("episode_return")
        self.ep_length = lay["int64"].index("episode_length")
        self.keys = ([lay["int64"][j] for j in self.ints] + [lay["float64"][j] for j in self.floats]
                     + list(lay["bool"]) + list(lay["per_task"]))


class _VecStepLayout:
    """Where the sections of a vector step response of n envs start: the
    layout is fixed by the create response but for the K final
    observations, so two struct reads (with pad bytes over the data) check
    every section header, and numpy views are taken at computed offsets.
    split() gives what decode() and the kind check of _post give (a
    ValueError otherwise), tests hold it against them."""

    _KINDS = (b"f", b"d", b"b", b"f", *_INFO_KINDS)

    def __init__(self, n, flat, ntasks, lay):
        self.n, self.flat = n, flat
        nf, ni, nb = len(lay["float64"]), len(lay["int64"]), len(lay["bool"])
        h = 5  # section header
        # obs | rewards | flags | final-obs header; then K·flat floats.
        self.head1 = struct.Struct(f"<cI{4 * n * flat}xcI{8 * n}xcI{3 * n}xcI")
        self.want1 = (b"f", n * flat, b"d", n, b"b", 3 * n, b"f")
        self.o_obs, self.o_rew = h, 2 * h + 4 * n * flat
        self.o_flags = self.o_rew + 8 * n + h
        self.o_final = self.o_flags + 3 * n + h
        # The four info sections after the final observations.
        self.head2 = struct.Struct(f"<cI{8 * nf * n}xcI{8 * ni * n}xcI{nb * n}xcI")
        self.want2 = (b"d", nf * n, b"i", ni * n, b"b", nb * n, b"d", n * ntasks)
        self.i_f = h
        self.i_i = self.i_f + 8 * nf * n + h
        self.i_b = self.i_i + 8 * ni * n + h
        self.i_t = self.i_b + nb * n + h
        self.tail = self.i_t + 8 * n * ntasks
        self.counts = (n * flat, n, 3 * n, None, nf * n, ni * n, nb * n, n * ntasks)

    def split(self, body):
        """The eight sections of a step response body (a buffer), as
        [(kind, array)] like decode(): obs float32 n·flat, rewards float64,
        flags uint8 3n, finals float32 K·flat, infos."""
        n1 = self.head1.size
        if len(body) >= n1:
            h1 = self.head1.unpack_from(body)
            k4 = h1[7]
            base = self.o_final + 4 * k4
            if h1[:7] == self.want1 and k4 % self.flat == 0 and len(body) == base + self.tail:
                h2 = self.head2.unpack_from(body, base)
                if h2 == self.want2:
                    fb = np.frombuffer
                    n, nf = self.n, self.flat
                    return [(b"f", fb(body, "<f4", n * nf, self.o_obs)), (b"d", fb(body, "<f8", n, self.o_rew)),
                            (b"b", fb(body, "u1", 3 * n, self.o_flags)), (b"f", fb(body, "<f4", k4, self.o_final)),
                            (b"d", fb(body, "<f8", self.want2[1], base + self.i_f)),
                            (b"i", fb(body, "<i8", self.want2[3], base + self.i_i)),
                            (b"b", fb(body, "u1", self.want2[5], base + self.i_b)),
                            (b"d", fb(body, "<f8", self.want2[7], base + self.i_t))]
        # Not the expected layout: the general decoder names the fault.
        secs = decode(body)
        if [k for k, _ in secs] != list(self._KINDS):
            raise ValueError(f"streamscale_env: step response has sections {b''.join(k for k, _ in secs)!r}, "
                             f"want {b''.join(self._KINDS)!r}")
        got = [len(a) for _, a in secs]
        raise ValueError(f"streamscale_env: step response has section sizes {got}, want "
                         f"{[c if c is not None else 'K×' + str(self.flat) for c in self.counts]}")


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
        secs = self._step_vec(self._actions)
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
