"""Checks of the client by Gymnasium's own checker and against the Go env.

Run against the installed package (pip install ./python), from the
repository root (for the golden files; else they are skipped):
    PYTHONPATH=../shared/peers/python /usr/bin/python3 -m unittest streamscale_env.tests.test_env
One ``serve env`` is started for the suite (streamscale_env._protocol.server_binary).
"""

import json
import os
import time
import unittest
import unittest.mock
import warnings

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

import streamscale_env
from streamscale_env import LocalServer, ServerError, StreamscaleEnv, StreamscaleVectorEnv
from streamscale_env._protocol import Connection, decode, repo_root

_REPO = repo_root()
GOLDEN = os.path.join(_REPO, "serve", "envserver", "testdata", "trajectory_{}.json") if _REPO else None


def flat(obs):
    return np.concatenate([obs[k].ravel() for k in ("app", "server", "task")])


class RemoteEnvTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = LocalServer()
        cls.addr = cls.server.addr

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_check_env(self):
        for env_id in ("streamscale/ETL-v0", "streamscale/PRED-v0"):
            for render_mode in (None, "rgb_array"):
                with self.subTest(env_id, render_mode=render_mode):
                    env = gym.make(env_id, addr=self.addr, render_mode=render_mode)
                    with warnings.catch_warnings():
                        warnings.simplefilter("error")  # a checker warning fails the test
                        check_env(env.unwrapped, skip_render_check=render_mode is None)
                    env.close()

    def test_render(self):
        env = StreamscaleEnv(profile="etl", addr=self.addr, render_mode="rgb_array")
        try:
            self.assertIsNone(env.render())  # before a reset
            obs, _ = env.reset(seed=1)
            img = env.render()
            n = obs["task"].shape[0]
            self.assertEqual((img.shape, img.dtype), ((64, 12 * n, 3), np.uint8))
            k = int(np.argmax(obs["task"][:, 0]))
            want = int(round(float(obs["task"][k, 0]) * 64))
            self.assertEqual(int((img[:, 12 * k + 1] != 255).any(axis=1).sum()), want)
        finally:
            env.close()
        with self.assertRaises(ValueError):
            StreamscaleEnv(profile="etl", addr=self.addr, render_mode="human")

    def test_sb3_make_vec_env_warns_nothing(self):
        try:
            from stable_baselines3.common.env_util import make_vec_env
        except ImportError:
            if os.environ.get("STREAMSCALE_ENV_REQUIRE_SB3"):
                raise
            self.skipTest("stable_baselines3 is not importable (../shared/peers/python on PYTHONPATH)")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            v = make_vec_env("streamscale/ETL-v0", n_envs=2, env_kwargs={"addr": self.addr})
        try:
            self.assertEqual(v.render_mode, "rgb_array")  # make_vec_env's default
            v.seed(3)
            obs = v.reset()
            self.assertEqual(obs["task"].shape[0], 2)
        finally:
            v.close()

    def test_envs_belong_to_their_connection(self):
        """serve env ties an env to the connection that created it: another
        connection cannot step or delete it by id, and closing the
        connection without DELETE frees it."""
        def envs_alive():
            c = Connection(self.addr)
            try:
                return c.json("GET", "/v1/healthz")["envs"]
            finally:
                c.close()
        before = envs_alive()
        env = StreamscaleEnv(profile="etl", addr=self.addr)
        env.reset(seed=1)
        other = Connection(self.addr)
        try:
            for method, path in (("POST", f"/v1/envs/{env._id}/reset"), ("DELETE", f"/v1/envs/{env._id}")):
                with self.assertRaises(ServerError) as cm:
                    other.request(method, path, b'{"seed":1}' if method == "POST" else None)
                self.assertEqual(cm.exception.code, "unknown_env")
        finally:
            other.close()
        env.step(np.zeros(env.action_space.shape[0], dtype=np.int64))  # untouched
        self.assertEqual(envs_alive(), before + 1)
        env._conn.close()  # as a crashed client: no DELETE
        deadline = time.monotonic() + 20
        while envs_alive() != before and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(envs_alive(), before, "the env outlived its connection")
        with self.assertRaises(ConnectionError) as cm:
            env.step(np.zeros(env.action_space.shape[0], dtype=np.int64))
        self.assertIn("freed", str(cm.exception))
        env._id = None
        env.close()

    def test_golden_trajectory(self):
        """Same seed and actions as the Go env's recorded trajectory:
        observations and rewards bit for bit."""
        if GOLDEN is None:
            self.skipTest("no streamscale checkout here (run from the repository root or set STREAMSCALE_REPO)")
        for profile in ("etl", "pred"):
            with self.subTest(profile):
                with open(GOLDEN.format(profile)) as f:
                    g = json.load(f)
                env = StreamscaleEnv(profile=profile, trace=g["trace"], scenario=g["scenario"],
                                     placement_seed=g["placement_seed"], addr=self.addr)
                if env.meta["trace_source"] != g["trace_source"]:
                    env.close()
                    self.skipTest(f"trace {env.meta['trace_source']} here, {g['trace_source']} in the golden file")
                obs, _ = env.reset(seed=g["seed"])
                np.testing.assert_array_equal(flat(obs).view(np.uint32), np.array(g["obs_bits"][0], dtype=np.uint32))
                for t, a in enumerate(g["actions"]):
                    obs, r, term, trunc, info = env.step(np.array(a))
                    self.assertEqual(flat(obs).view(np.uint32).tolist(), g["obs_bits"][t + 1], f"step {t}")
                    self.assertEqual(np.float64(r).view(np.uint64), np.uint64(g["reward_bits"][t]), f"step {t}")
                    self.assertEqual(trunc, g["truncated"][t])
                    self.assertFalse(term)
                    self.assertEqual(info["reward_total"], r)
                env.close()

    def test_transports_give_the_same_bytes(self):
        """The frame protocol (the default) and plain HTTP give the same
        observations, rewards and infos, single and vector."""
        def run(transport):
            with unittest.mock.patch.dict(os.environ, {"STREAMSCALE_ENV_TRANSPORT": transport}):
                env = StreamscaleEnv(profile="etl", addr=self.addr, steps=6)
                vec = StreamscaleVectorEnv(num_envs=3, profile="pred", addr=self.addr, steps=4)
            try:
                self.assertEqual(env._conn.stream, transport == "stream")
                self.assertEqual(vec._conn.stream, transport == "stream")
                env.action_space.seed(5)
                vec.action_space.seed(5)
                obs, info = env.reset(seed=2)
                vobs, vinfo = vec.reset(seed=2)
                out = [flat(obs), json.dumps(info).encode(), *(vobs[k].tobytes() for k in vobs)]
                for _ in range(6):
                    obs, r, term, trunc, info = env.step(env.action_space.sample())
                    vobs, vr, vterm, vtrunc, vinfo = vec.step(vec.action_space.sample())
                    out += [flat(obs), np.float64(r).tobytes(), json.dumps(info).encode(), vr.tobytes(),
                            vterm.tobytes(), vtrunc.tobytes(), vinfo["reward_total"].tobytes(), *(vobs[k].tobytes() for k in vobs)]
                    if term or trunc:
                        obs, info = env.reset(seed=3)
                return b"".join(o if isinstance(o, bytes) else o.tobytes() for o in out)
            finally:
                env.close()
                vec.close()
        self.assertEqual(run("stream"), run("http"))

    def test_unix_and_tcp_servers_agree(self):
        """The suite's server is on a Unix socket (LocalServer's default);
        one on loopback TCP gives the same episode."""
        self.assertTrue(self.addr.startswith("unix:"), self.addr)
        tcp = LocalServer(unix=False)
        try:
            self.assertFalse(tcp.addr.startswith("unix:"))
            out = []
            for addr in (self.addr, tcp.addr):
                env = StreamscaleEnv(profile="etl", addr=addr)
                try:
                    obs, _ = env.reset(seed=4)
                    rows = [flat(obs)]
                    for k in range(5):
                        obs, r, *_ = env.step(np.full(env.action_space.shape[0], k % 5))
                        rows += [flat(obs), np.array([r], dtype=np.float32)]
                    out.append(np.concatenate(rows).tobytes())
                finally:
                    env.close()
            self.assertEqual(out[0], out[1])
        finally:
            tcp.stop()

    def test_same_seed_same_bytes(self):
        def run(seed):
            env = StreamscaleEnv(profile="etl", addr=self.addr)
            env.action_space.seed(5)
            obs, _ = env.reset(seed=seed)
            out = [flat(obs)]
            for _ in range(10):
                obs, r, *_ = env.step(env.action_space.sample())
                out += [flat(obs), np.array([r])]
            env.close()
            return np.concatenate(out)
        a, b, c = run(3), run(3), run(4)
        self.assertEqual(a.tobytes(), b.tobytes())
        self.assertNotEqual(a.tobytes(), c.tobytes())

    def test_errors_change_nothing(self):
        env = StreamscaleEnv(profile="pred", addr=self.addr)
        ref = StreamscaleEnv(profile="pred", addr=self.addr)
        env.reset(seed=9)
        ref.reset(seed=9)
        n = env.action_space.shape[0]
        with self.assertRaises(ValueError):
            env.step(np.zeros(n + 1, dtype=np.int64))
        with self.assertRaises(ServerError) as cm:
            env.step(np.full(n, 5))
        self.assertEqual(cm.exception.code, "bad_action")
        with self.assertRaises(ServerError) as cm:
            env.step(np.full(n, -1))
        self.assertEqual(cm.exception.code, "bad_action")
        a = np.full(n, 3)
        o1, r1, *_ = env.step(a)
        o2, r2, *_ = ref.step(a)
        self.assertEqual(flat(o1).tobytes(), flat(o2).tobytes())
        self.assertEqual(r1, r2)
        env.close()
        ref.close()
        with self.assertRaises(ServerError) as cm:
            env.step(a)
        self.assertEqual(cm.exception.code, "closed")

    def test_vector(self):
        def run():
            v = StreamscaleVectorEnv(num_envs=4, steps=3, addr=self.addr)
            v.action_space.seed(1)
            obs, _ = v.reset(seed=2)
            self.assertIn(obs["task"].shape[0], (4,))
            self.assertTrue(v.observation_space.contains(obs))
            rows, ended_at = [], []
            for t in range(8):
                obs, r, term, trunc, info = v.step(v.action_space.sample())
                rows += [flat({k: x.reshape(-1) for k, x in obs.items()}), r]
                if trunc.any():
                    ended_at.append(t)
                    self.assertTrue(info["_final_observation"].all())
                    for i in range(4):
                        np.testing.assert_array_equal(info["final_observation"][i]["task"], obs["task"][i])
                    np.testing.assert_array_equal(info["episode"]["l"], [3] * 4)
            v.close()
            return np.concatenate(rows), ended_at
        a, ends = run()
        b, _ = run()
        self.assertEqual(ends, [2, 6])  # next-step autoreset: step 3 resets
        self.assertEqual(a.tobytes(), b.tobytes())

    def test_vector_infos_are_the_single_envs(self):
        """Reset and step infos of the vector form carry, for env i, what a
        single env with env i's placement and episode seed carries (the
        same keys, values bit for bit), as arrays with "_key" masks."""
        n, placements = 3, (42, 37)
        v = StreamscaleVectorEnv(num_envs=n, placement_seeds=placements, addr=self.addr)
        obs, info = v.reset(seed=5)
        singles = [StreamscaleEnv(profile="etl", placement_seed=placements[i % 2], addr=self.addr) for i in range(n)]
        try:
            self.assertEqual(info["step"].tolist(), [-1] * n)
            self.assertEqual(info["seed"].dtype, np.uint64)
            self.assertEqual(info["violated"].dtype, np.bool_)
            self.assertEqual(len(set(info["seed"].tolist())), n)
            self.assertTrue(np.all(info["next_offered_rate"] > 0))
            ref = []
            for i, e in enumerate(singles):
                o, si = e.reset(seed=int(info["seed"][i]))
                ref.append(si)
                self.assertEqual(flat(o).tobytes(), flat({k: x[i] for k, x in obs.items()}).tobytes())
            self.assert_infos(info, ref, n, "reset")
            acts = np.stack([np.arange(v.single_action_space.shape[0]) % 5] * n)
            for t in range(3):
                acts = (acts + 1 + np.arange(n)[:, None]) % 5
                obs, rew, _, _, info = v.step(acts)
                ref = [e.step(acts[i]) for i, e in enumerate(singles)]
                self.assertEqual(rew.tolist(), [r[1] for r in ref], f"step {t}")
                self.assert_infos(info, [r[4] for r in ref], n, f"step {t}")
        finally:
            v.close()
            for e in singles:
                e.close()

    def assert_infos(self, info, ref, n, at):
        for k in ref[0]:
            self.assertIn(k, info, at)
            self.assertEqual(info["_" + k].tolist(), [True] * n, f"{at}: _{k}")
            for i in range(n):
                got, want = info[k][i], ref[i][k]
                if isinstance(want, list):
                    self.assertEqual(np.asarray(got).tolist(), want, f"{at}: {k}[{i}]")
                elif want is None:  # JSON null: not finite
                    self.assertFalse(np.isfinite(got), f"{at}: {k}[{i}]")
                else:
                    self.assertEqual(got, want, f"{at}: {k}[{i}]")
                    self.assertEqual(isinstance(got, np.bool_), isinstance(want, bool), f"{at}: {k}[{i}]")
        self.assertEqual({k for k in info if not k.startswith("_")}, set(ref[0]), at)

    def test_step_layout_matches_decode(self):
        """The vector step's fast split (offsets computed once) gives
        what the general decoder gives, on real responses of both
        autoreset modes with and without ended episodes; a response off
        the layout is a ValueError, as from the decoder."""
        for mode in ("next_step", "same_step"):
            v = StreamscaleVectorEnv(num_envs=3, steps=3, autoreset_mode=mode, addr=self.addr)
            bodies, call = [], v._conn.call

            def record(*a, **kw):
                out = call(*a, **kw)
                bodies.append(bytes(out))
                return out

            v._conn.call = record
            try:
                v.reset(seed=4)
                v.action_space.seed(4)
                for _ in range(5):
                    v.step(v.action_space.sample())
            finally:
                v._conn.call = call
                v.close()
            lay = v._vec_layout
            steps = bodies[1:]
            self.assertEqual(len(steps), 5)
            finals = 0
            for body in steps:
                fast, ref = lay.split(bytearray(body)), decode(bytearray(body))
                self.assertEqual([k for k, _ in fast], [k for k, _ in ref], mode)
                for (_, a), (_, b) in zip(fast, ref):
                    self.assertEqual((a.dtype, a.tobytes()), (b.dtype, b.tobytes()), mode)
                finals += len(fast[3][1])
            self.assertGreater(finals, 0, mode)  # some responses carry final observations
            body, last = steps[1], 5 + 8 * 3 * v._ntasks  # the last section: applied, float64
            for bad in (body[:-1], body + b"\x00", b"g" + body[1:], body[:1] + bytes([body[1] ^ 1]) + body[2:],
                        body[:-last] + b"i" + body[1 - last:], b""):
                with self.assertRaises(ValueError, msg=mode):
                    lay.split(bytearray(bad))

    def test_starts_its_own_server(self):
        env = StreamscaleEnv(profile="etl", addr=None) if os.environ.get("STREAMSCALE_ENV_ADDR") is None else None
        if env is None:
            self.skipTest("STREAMSCALE_ENV_ADDR is set")
        proc = env._server.proc
        env.reset(seed=1)
        env.close()
        self.assertIsNotNone(proc.poll(), "the server started by the env still runs after close()")


if __name__ == "__main__":
    unittest.main()
