"""The Python client's CPU per vector step of 16 envs without the socket:
responses of a real ``serve env`` are recorded, then replayed through the
client's step (decode, numpy views, infos) from memory, so the figure
moves little with other load on the machine (speed.py's client CPU also
holds the send and receive, and the cache misses of waking up).

    PYTHONPATH=../shared/peers/python /usr/bin/python3 python/examples/client_cpu.py \
        [--steps 20000] [--repeats 3] [--modes sb3,gym]

Point PYTHONPATH at another checkout's python/ to measure its client with
the same script (it needs only Connection.call(op, id, body, ...)).
"""

import argparse
import time

import numpy as np

from streamscale_env import LocalServer, StreamscaleVectorEnv

N = 16


class _Replay:
    """Stands in for the connection: answers each call with the next
    recorded response, in a fresh buffer as a socket read would give."""

    def __init__(self, bodies):
        self.bodies, self.k = bodies, 0

    def call(self, op, id=0, body=b"", frame=None):
        b = self.bodies[self.k % len(self.bodies)]
        self.k += 1
        return memoryview(bytearray(b))

    def close(self):
        pass


def make(mode, addr):
    """(step function, inner vector env, close, tasks) for mode."""
    if mode == "sb3":
        from streamscale_env.sb3 import VecEnv
        v = VecEnv(num_envs=N, addr=addr)
        v.seed(0)
        v.reset()
        return v.step, v.venv, v.close, v.action_space.shape[0]
    v = StreamscaleVectorEnv(num_envs=N, addr=addr)
    v.reset(seed=0)
    return v.step, v, v.close, v.single_action_space.shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20000, help="replayed vector steps per repeat (default 20000)")
    ap.add_argument("--record", type=int, default=512, help="responses recorded (default 512)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--modes", default="sb3,gym")
    args = ap.parse_args()
    server = LocalServer(["-max-envs-per-conn", "32"])
    try:
        for mode in args.modes.split(","):
            step, inner, close, ntasks = make(mode, server.addr)
            try:
                acts = np.random.default_rng(0).integers(0, 5, size=(256, N, ntasks))
                conn, bodies = inner._conn, []
                real = conn.call

                def record(*a, **kw):
                    out = real(*a, **kw)
                    bodies.append(bytes(out))
                    return out

                conn.call = record
                for i in range(args.record):
                    step(acts[i % 256])
                conn.call = real
                inner._conn = _Replay(bodies)
                ended = sum(1 for b in bodies if len(b) != len(bodies[0]))
                for rep in range(args.repeats):
                    c0 = time.process_time()
                    for i in range(args.steps):
                        step(acts[i % 256])
                    cpu = time.process_time() - c0
                    print(f"{mode:5s} repeat {rep}: client CPU {1e6 * cpu / args.steps:.1f} µs per vector step of {N} "
                          f"(replayed {len(bodies)} responses, {ended} with ended episodes)", flush=True)
                inner._conn = conn
            finally:
                close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
