"""Remote vector stepping speed: env steps/s of a StreamscaleVectorEnv of
16 ETL envs (realistic physics) with random actions, and where the time
goes: CPU of this client and of the server per vector step (the server's
from /proc when this script starts it, Linux only). CPU per step is the
steadier figure on a shared machine; wall time moves with other load.

    PYTHONPATH=../shared/peers/python:python /usr/bin/python3 python/examples/speed.py [seconds] [repeats]
"""

import os
import sys
import time

import numpy as np

from streamscale_env import LocalServer, StreamscaleVectorEnv


def _proc_cpu(root):
    """CPU seconds (user + system) of process root and its descendants, or
    None where /proc is not readable."""
    try:
        parent, cpu = {}, {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(d)] = int(fields[1])
            cpu[int(d)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        total, todo = 0.0, [root]
        while todo:
            p = todo.pop()
            total += cpu.get(p, 0.0)
            todo += [c for c, pp in parent.items() if pp == p]
        return total
    except OSError:
        return None


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    addr = os.environ.get("STREAMSCALE_ENV_ADDR")
    server = None if addr else LocalServer()
    v = StreamscaleVectorEnv(num_envs=16, profile="etl", addr=addr or server.addr)
    try:
        v.reset(seed=0)
        rng = np.random.default_rng(0)
        acts = rng.integers(0, 5, size=(256, 16, v.single_action_space.shape[0]))
        for i in range(50):  # warm-up
            v.step(acts[i % 256])
        for _ in range(repeats):
            s0 = _proc_cpu(server.proc.pid) if server else None
            n, c0, t0 = 0, time.process_time(), time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                v.step(acts[n % 256])
                n += 1
            dt, cpu = time.perf_counter() - t0, time.process_time() - c0
            s1 = _proc_cpu(server.proc.pid) if server else None
            srv = f", server CPU {1e6 * (s1 - s0) / n:.0f} µs" if s0 is not None and s1 is not None else ""
            print(f"{n} vector steps of 16 envs in {dt:.2f} s: {16 * n / dt:,.0f} env steps/s "
                  f"({1e3 * dt / n:.3f} ms per vector step; client CPU {1e6 * cpu / n:.0f} µs{srv})", flush=True)
    finally:
        v.close()
        if server:
            server.stop()


if __name__ == "__main__":
    main()
