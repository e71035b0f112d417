"""streamscale_env.sb3.VecEnv against Stable-Baselines3's own DummyVecEnv
over single remote envs (the reference VecEnv semantics): same episode
seeds and actions → the same observations, rewards, dones and infos,
terminal_observation and TimeLimit.truncated included; and the VecEnv API
contract (seed, reset_infos, get_attr, env_method, env_is_wrapped).
Needs stable_baselines3 (../shared/peers/python) and torch (Debian)."""

import os
import unittest
import warnings

import gymnasium as gym
import numpy as np

from streamscale_env import LocalServer, StreamscaleEnv, StreamscaleVectorEnv

try:
    from stable_baselines3.common.vec_env import DummyVecEnv

    from streamscale_env.sb3 import VecEnv, _per_env
except ImportError:
    if os.environ.get("STREAMSCALE_ENV_REQUIRE_SB3"):  # CI: a missing SB3 fails, never skips
        raise
    DummyVecEnv = VecEnv = None


class _Seeds(gym.Wrapper):
    """Resets the wrapped env with the next seed of a given list,
    whatever seed it is asked for (to replay the adapter's episodes)."""

    def __init__(self, env, seeds):
        super().__init__(env)
        self.seeds = list(seeds)

    def reset(self, *, seed=None, options=None):
        return self.env.reset(seed=self.seeds.pop(0) if self.seeds else 0)


@unittest.skipIf(VecEnv is None, "stable_baselines3 not importable")
class SB3VecEnvTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = LocalServer()
        cls.addr = cls.server.addr

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def run_adapter(self, n, steps, t, seed):
        v = VecEnv(num_envs=n, steps=steps, addr=self.addr)
        try:
            v.seed(seed)
            obs = v.reset()
            rng = np.random.default_rng(seed)
            out = {"obs": [obs], "rew": [], "done": [], "infos": [], "acts": [], "reset_infos": v.reset_infos}
            for _ in range(t):
                a = rng.integers(0, 5, size=(n, v.action_space.shape[0]))
                obs, rew, done, infos = v.step(a)
                out["obs"].append(obs)
                out["rew"].append(rew)
                out["done"].append(done)
                out["infos"].append(infos)
                out["acts"].append(a)
            return out
        finally:
            v.close()

    def test_matches_dummy_vec_env(self):
        n, steps, t = 3, 4, 11
        got = self.run_adapter(n, steps, t + 1, seed=5)
        # Episode seeds of env i, in order: its "seed" info at each step.
        seeds = [[got["reset_infos"][i]["seed"]] for i in range(n)]
        for infos in got["infos"]:
            for i in range(n):
                if infos[i]["seed"] != seeds[i][-1]:
                    seeds[i].append(infos[i]["seed"])
        # The step that ends an episode reports the ended one's seed; the
        # next episode's shows from the following step on.
        placements = (42, 37)
        ref = DummyVecEnv([lambda i=i: _Seeds(StreamscaleEnv(profile="etl", placement_seed=placements[i % 2], steps=steps,
                                                              addr=self.addr), seeds[i]) for i in range(n)])
        try:
            obs = ref.reset()
            self.assert_obs(obs, got["obs"][0], "reset")
            ends = 0
            for s in range(t):
                obs, rew, done, infos = ref.step(got["acts"][s])
                at = f"step {s}"
                self.assert_obs(obs, got["obs"][s + 1], at)
                np.testing.assert_array_equal(rew, got["rew"][s], at)
                self.assertEqual(rew.dtype, got["rew"][s].dtype, at)
                np.testing.assert_array_equal(done, got["done"][s], at)
                for i in range(n):
                    g, w = got["infos"][s][i], infos[i]
                    self.assertEqual(g["TimeLimit.truncated"], w["TimeLimit.truncated"], at)
                    self.assertEqual(g["step"], w["step"], at)
                    self.assertEqual(g["reward_total"], w["reward_total"], at)
                    self.assertEqual(g["applied"], w["applied"], at)
                    if done[i]:
                        ends += 1
                        for k in w["terminal_observation"]:
                            np.testing.assert_array_equal(g["terminal_observation"][k], w["terminal_observation"][k], at)
                        self.assertEqual(g["episode"]["l"], steps, at)
                    else:
                        self.assertNotIn("terminal_observation", g, at)
                        self.assertNotIn("episode", g, at)
            self.assertEqual(ends, n * (t // steps))
        finally:
            ref.close()

    def assert_obs(self, got, want, at):
        self.assertEqual(set(got), set(want), at)
        for k in want:
            np.testing.assert_array_equal(got[k], want[k], f"{at}: {k}")
            self.assertEqual(got[k].dtype, want[k].dtype, f"{at}: {k}")

    def test_infos_are_the_gymnasium_vectors(self):
        """The adapter builds its per-env infos straight from the response:
        they equal, key order and value types included, what converting
        the Gymnasium vector's infos (same seed, same actions, same-step
        autoreset) gives, terminal_observation and episode included."""
        n, steps = 3, 3
        v = VecEnv(num_envs=n, steps=steps, addr=self.addr)
        g = StreamscaleVectorEnv(num_envs=n, steps=steps, autoreset_mode="same_step", addr=self.addr)
        try:
            v.seed(6)
            obs = v.reset()
            gobs, ginfo = g.reset(seed=6)
            self.assert_obs(obs, gobs, "reset")
            self.assertEqual(v.reset_infos, _per_env(ginfo, n))
            rng = np.random.default_rng(6)
            ends = 0
            for s in range(8):
                a = rng.integers(0, 5, size=(n, v.action_space.shape[0]))
                obs, rew, done, infos = v.step(a)
                gobs, grew, term, trunc, ginfo = g.step(a)
                at = f"step {s}"
                self.assert_obs(obs, gobs, at)
                np.testing.assert_array_equal(rew, grew.astype(np.float32), at)
                np.testing.assert_array_equal(done, term | trunc, at)
                want = _per_env(ginfo, n, ("TimeLimit.truncated", trunc & ~term))
                for i in np.flatnonzero(done):
                    ends += 1
                    want[i]["terminal_observation"] = ginfo["final_observation"][i]
                    want[i]["episode"] = {"r": float(ginfo["episode"]["r"][i]), "l": int(ginfo["episode"]["l"][i])}
                for i in range(n):
                    got = dict(infos[i])
                    if "episode" in got:
                        self.assertIsInstance(got["episode"].pop("t"), float, at)
                    self.assertEqual(list(got), list(want[i]), at)
                    if "terminal_observation" in got:
                        self.assert_obs(got.pop("terminal_observation"), want[i].pop("terminal_observation"), at)
                    self.assertEqual(got, want[i], at)
                    self.assertEqual([type(x) for x in got.values()], [type(x) for x in want[i].values()], at)
            self.assertEqual(ends, n * (8 // steps))
        finally:
            v.close()
            g.close()

    def test_seed_determinism(self):
        a = self.run_adapter(2, 0, 6, seed=11)
        b = self.run_adapter(2, 0, 6, seed=11)
        c = self.run_adapter(2, 0, 6, seed=12)
        flat = lambda r: np.concatenate([o[k].ravel() for o in r["obs"] for k in sorted(o)] + r["rew"]).tobytes()
        self.assertEqual(flat(a), flat(b))
        self.assertNotEqual(flat(a), flat(c))

    def test_api(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "render_mode not defined" warning
            v = VecEnv(num_envs=4, addr=self.addr)
        try:
            self.assertEqual(v.num_envs, 4)
            self.assertIsNone(v.render_mode)
            self.assertEqual(v.get_attr("placement_seed"), [42, 37, 42, 37])
            self.assertEqual(v.get_attr("placement_seed", indices=[1, 2]), [37, 42])
            self.assertEqual(v.get_attr("render_mode", indices=3), [None])
            self.assertEqual(v.get_attr("action_space")[0], v.action_space)
            with self.assertRaises(AttributeError):
                v.get_attr("no_such_attribute")
            with self.assertRaises(AttributeError):
                v.set_attr("placement_seed", 1)
            with self.assertRaises(AttributeError):
                v.env_method("reset")
            self.assertEqual(v.env_is_wrapped(gym.Wrapper), [False] * 4)
            self.assertEqual(v.seed(7), [7, 8, 9, 10])
            obs = v.reset()
            self.assertTrue(v.observation_space.contains({k: x[0] for k, x in obs.items()}))
            self.assertEqual(len(v.reset_infos), 4)
            self.assertEqual(v._seeds, [None] * 4)  # seeds are used once, as DummyVecEnv does
            with self.assertRaises(RuntimeError):
                v.step_wait()
            v.step_async(np.zeros((4, v.action_space.shape[0]), dtype=np.int64))
            obs, rew, done, infos = v.step_wait()
            self.assertEqual((rew.shape, rew.dtype, done.dtype, len(infos)), ((4,), np.float32, np.bool_, 4))
            self.assertIsInstance(infos[0]["step"], int)
        finally:
            v.close()

    def test_sb3_checks(self):
        """SB3's own checks of the contract: its env checker on the single
        env, check_for_correct_spaces, and the VecCheckNan, VecNormalize
        and VecFrameStack wrappers stepping the adapter through episode
        ends (they read obs dicts, dones and terminal_observation)."""
        from stable_baselines3.common.env_checker import check_env as sb3_check_env
        from stable_baselines3.common.utils import check_for_correct_spaces
        from stable_baselines3.common.vec_env import VecCheckNan, VecFrameStack, VecNormalize
        single = StreamscaleEnv(profile="etl", addr=self.addr)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # its advice on Box bounds and image spaces
                sb3_check_env(single, warn=True, skip_render_check=True)
        finally:
            single.close()
        v = VecEnv(num_envs=3, steps=4, addr=self.addr)
        try:
            check_for_correct_spaces(v, v.observation_space, v.action_space)
            w = VecFrameStack(VecNormalize(VecCheckNan(v, raise_exception=True, check_inf=True)), n_stack=2)
            w.seed(3)
            obs = w.reset()
            tasks, feats = v.observation_space["task"].shape
            self.assertEqual(obs["task"].shape, (3, tasks, 2 * feats))  # stacked on the last axis
            rng = np.random.default_rng(3)
            ended = 0
            for _ in range(9):
                obs, rew, done, infos = w.step(rng.integers(0, 5, size=(3, v.action_space.shape[0])))
                self.assertTrue(np.isfinite(rew).all())
                for i in np.flatnonzero(done):
                    ended += 1
                    self.assertIn("terminal_observation", infos[i])
                    self.assertEqual(infos[i]["episode"]["l"], 4)
            self.assertEqual(ended, 6)  # two episodes of 4 steps per env in 9 steps
        finally:
            v.close()

    def test_ppo_learns_a_few_steps(self):
        """SB3's PPO runs on the adapter (a smoke test: 2 updates)."""
        import torch
        from stable_baselines3 import PPO
        torch.set_num_threads(1)
        v = VecEnv(num_envs=4, steps=16, addr=self.addr)
        try:
            model = PPO("MultiInputPolicy", v, n_steps=16, batch_size=32, n_epochs=1, seed=0, verbose=0, device="cpu")
            model.learn(total_timesteps=128)
            self.assertEqual(model.num_timesteps, 128)
            self.assertGreater(len(model.ep_info_buffer), 0)  # "episode" infos reached SB3's logger
        finally:
            v.close()


if __name__ == "__main__":
    unittest.main()
