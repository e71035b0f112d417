"""Remote stepping speed from Python: env steps/s of 16 envs (realistic
physics, random actions) three ways, and where the time goes (CPU of this
client and of the server per vector step; the server's from /proc when
this script starts it, Linux only). CPU per step is the steadier figure on
a shared machine; wall time moves with other load (the 1-minute load
average is printed with each repeat).

    dummy   SB3's DummyVecEnv over 16 single remote envs (16 round trips per step)
    sb3     streamscale_env.sb3.VecEnv (one round trip per step; needs SB3)
    gym     streamscale_env.StreamscaleVectorEnv (Gymnasium's VectorEnv, one round trip)
    rtt     the bare round trip: a step frame naming no env, answered with an error at once
            (no env work; its "env steps/s" is 16 per round trip, for scale only)

    PYTHONPATH=../shared/peers/python /usr/bin/python3 python/examples/speed.py \
        [--profile etl] [--seconds 10] [--repeats 3] [--modes dummy,sb3,gym] [--tcp] [--out speed.json]

The server it starts listens on a Unix socket (LocalServer's default),
or on loopback TCP with --tcp; $STREAMSCALE_ENV_ADDR names a running one
instead. $STREAMSCALE_ENV_TRANSPORT=http steps over HTTP, not frames.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from streamscale_env import LocalServer, ServerError, StreamscaleEnv, StreamscaleVectorEnv
from streamscale_env._protocol import OP_STEP, connect

N = 16


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


def _load():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return None


def make(mode, profile, addr):
    """An object with step(actions) over N envs, reset, close."""
    if mode == "rtt":
        conn, _ = connect(addr)

        def rtt(_):
            try:
                conn.call(OP_STEP, 1 << 62, b"")
            except ServerError:
                pass
        return rtt, conn.close, 1
    if mode == "gym":
        v = StreamscaleVectorEnv(num_envs=N, profile=profile, addr=addr)
        v.reset(seed=0)
        return v.step, v.close, v.single_action_space.shape[0]
    from stable_baselines3.common.vec_env import DummyVecEnv
    if mode == "sb3":
        from streamscale_env.sb3 import VecEnv
        v = VecEnv(num_envs=N, profile=profile, addr=addr)
    else:
        v = DummyVecEnv([lambda i=i: StreamscaleEnv(profile=profile, placement_seed=(42, 37)[i % 2], addr=addr)
                         for i in range(N)])
    v.seed(0)
    v.reset()
    return v.step, v.close, v.action_space.shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=("etl", "pred"), default="etl")
    ap.add_argument("--seconds", type=float, default=10.0, help="per repeat (default 10)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--modes", default="dummy,sb3,gym")
    ap.add_argument("--tcp", action="store_true", help="start the server on loopback TCP, not a Unix socket")
    ap.add_argument("--out", help="also write the measurements as JSON here")
    args = ap.parse_args()
    addr = os.environ.get("STREAMSCALE_ENV_ADDR")
    server = None if addr else LocalServer(["-max-envs-per-conn", "32"], unix=False if args.tcp else None)
    addr = addr or server.addr
    rows = []
    try:
        for rep in range(args.repeats):
            for mode in args.modes.split(","):  # interleaved, so drifting load hits every mode alike
                step, close, ntasks = make(mode, args.profile, addr)
                try:
                    acts = np.random.default_rng(0).integers(0, 5, size=(256, N, ntasks))
                    for i in range(20):  # warm-up
                        step(acts[i % 256])
                    s0 = _proc_cpu(server.proc.pid) if server else None
                    n, c0, t0, l0 = 0, time.process_time(), time.perf_counter(), _load()
                    while time.perf_counter() - t0 < args.seconds:
                        step(acts[n % 256])
                        n += 1
                    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
                    s1 = _proc_cpu(server.proc.pid) if server else None
                finally:
                    close()
                row = {"mode": mode, "repeat": rep, "vector_steps": n, "seconds": round(dt, 3),
                       "env_steps_per_s": round(N * n / dt), "client_cpu_us_per_vector_step": round(1e6 * cpu / n),
                       "server_cpu_us_per_vector_step": round(1e6 * (s1 - s0) / n) if s0 is not None and s1 is not None else None,
                       "load1": l0, "addr": addr.split(":")[0] if addr.startswith("unix:") else "tcp"}
                rows.append(row)
                print(f"{mode:5s} repeat {rep}: {row['env_steps_per_s']:>7,} env steps/s ({1e3 * dt / n:.2f} ms per vector "
                      f"step of {N}; client CPU {row['client_cpu_us_per_vector_step']} µs, server CPU "
                      f"{row['server_cpu_us_per_vector_step']} µs; {row['addr']}; load {l0})", flush=True)
    finally:
        if server:
            server.stop()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"profile": args.profile, "num_envs": N, "cpus": os.cpu_count(), "runs": rows}, f, indent=1)
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
