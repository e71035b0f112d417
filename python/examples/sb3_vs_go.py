"""Side-by-side check of this project's PPO (go run ./train) against
Stable-Baselines3 PPO through the remote env, on the same scenario, budget
and hyperparameters (the paper's: sb3_ppo.PAPER = ppo.DefaultConfig).

    apt-get install -y python3-torch python3-matplotlib
    PYTHONPATH=../shared/peers/python:python /usr/bin/python3 python/examples/sb3_vs_go.py \\
        [-steps 57344] [-profile etl] [-scenario realistic] [-seeds 0,1] [-go-seeds 284572,1] \\
        [-out runs/sb3-vs-go] [-figure python/examples/sb3_vs_go.png]

Run from the repository root (traces are found from there). It builds
serve and train, then trains one run after the other (never
concurrently), alternating per seed: SB3 on 14 remote envs of a local
``serve env`` (torch on one thread), then ``train -profile P -scenario S
-steps N -seed S -workers 1`` (the Go update on one goroutine too). It
writes <out>/sb3-seed<S>/progress.csv (SB3's CSV logger), <out>/go-seed<S>/
(the train command's artifacts), <out>/summary.json (per run and
iteration: ep_rew_mean, explained variance, entropy, value loss,
approx_kl, clip fraction; SB3's rollout and update seconds; wall seconds
of each run) and the figure: learning curves of every run per iteration. -plot-only redraws the figure
from <out>.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time

import numpy as np

# What each panel shows: (column of progress.csv, title); entropy is
# −train/entropy_loss (summarize).
PANELS = [
    ("rollout/ep_rew_mean", "ep_rew_mean (last 100 episodes)"),
    ("train/explained_variance", "explained variance (rollout values)"),
    ("train/entropy_loss", "policy entropy, nats (−entropy_loss)"),
    ("train/value_loss", "value loss (MSE, unnormalised returns)"),
]


def read_progress(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    out = {}
    for k in rows[0]:
        out[k] = np.array([float(r[k]) if r[k] not in ("", None) else np.nan for r in rows])
    return out


def run_sb3(args, seed, serve_bin, out):
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import configure

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from sb3_ppo import make_model

    from streamscale_env import LocalServer

    class Timer(BaseCallback):
        """Wall-clock marks of each rollout's start and end."""

        def __init__(self):
            super().__init__()
            self.marks = []

        def _on_rollout_start(self):
            self.marks.append(("start", time.perf_counter()))

        def _on_rollout_end(self):
            self.marks.append(("end", time.perf_counter()))

        def _on_step(self):
            return True

    torch.set_num_threads(1)
    os.environ["STREAMSCALE_ENV_BIN"] = serve_bin
    server = LocalServer(["-max-envs-per-conn", "32"])
    try:
        t0 = time.perf_counter()
        model = make_model(server.addr, profile=args.profile, scenario=args.scenario, seed=seed, verbose=0)
        model.set_logger(configure(out, ["csv"]))
        timer = Timer()
        model.learn(total_timesteps=args.steps, callback=timer)
        t_end = time.perf_counter()
        # SB3 dumps an iteration's rollout/* with the previous iteration's
        # train/* (it logs before it updates): flush the last update's.
        model.logger.dump(step=model.num_timesteps)
        model.get_env().close()
    finally:
        server.stop()
    starts = [t for k, t in timer.marks if k == "start"]
    ends = [t for k, t in timer.marks if k == "end"]
    rollout = [e - s for s, e in zip(starts, ends)]
    update = [s - e for e, s in zip(ends, starts[1:] + [t_end])]
    return {"wall_s": t_end - t0, "rollout_s": rollout, "update_s": update}


def run_go(args, seed, train_bin, out):
    cmd = [train_bin, "-profile", args.profile, "-scenario", args.scenario, "-steps", str(args.steps),
           "-seed", str(seed), "-workers", "1", "-out", out, "-json"]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"sb3_vs_go: {' '.join(cmd)} failed: {res.stderr[-2000:]}")
    return {"wall_s": wall, "command": " ".join(cmd[1:])}


def align_sb3(prog):
    """SB3's row k holds iteration k's rollout/* and time/* but iteration
    k−1's train/* (and a last row only the last update's train/*): moves
    train/* up one row so that row k is iteration k, as train writes it."""
    out = {}
    for k, v in prog.items():
        out[k] = v[1:] if k.startswith("train/") else v[:-1]
    return out


def summarize(run, prog):
    it = prog["time/iterations"].astype(int).tolist()
    s = {k.split("/")[1]: prog[k].tolist() for k in ("rollout/ep_rew_mean", "rollout/ep_len_mean",
                                                      "train/explained_variance", "train/value_loss",
                                                      "train/policy_gradient_loss", "train/approx_kl",
                                                      "train/clip_fraction", "time/fps")}
    s["entropy"] = (-prog["train/entropy_loss"]).tolist()
    s["iterations"] = it
    s.update(run)
    # Seconds per iteration from the cumulative fps SB3 and train both log.
    t = prog["time/total_timesteps"] / prog["time/fps"]
    s["iteration_s_from_fps"] = np.diff(np.concatenate([[0.0], t])).tolist()
    return s


def plot(summary, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"sb3": "tab:blue", "go": "tab:orange"}
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.0 * len(PANELS), 3.4))
    for ax, (col, title) in zip(axes, PANELS):
        key = {"train/entropy_loss": "entropy"}.get(col, col.split("/")[1])
        for r in summary["runs"]:
            name = f"SB3 {summary['sb3_version']}" if r["impl"] == "sb3" else "go run ./train"
            ax.plot(r["iterations"], r[key], color=colors[r["impl"]], marker="os^v"[r["index"] % 4],
                    ls=("-", "--", ":", "-.")[r["index"] % 4], label=f"{name}, seed {r['seed']} ({r['wall_s']:.0f} s)")
        if col == "train/entropy_loss":
            ax.axhline(summary["max_entropy"], color="grey", lw=0.8, ls="--", label="maximum Σ log nvec")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("iteration (28,672 transitions each)", fontsize=8)
        ax.set_xticks(summary["runs"][0]["iterations"])
        ax.tick_params(labelsize=8)
    axes[0].legend(fontsize=6)
    fig.suptitle(f"PPO, paper hyperparameters, {summary['profile']} / {summary['scenario']} / taxi-train, "
                 f"{summary['steps']:,} transitions (wall time in the legend)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-steps", type=int, default=57_344, help="transitions (2 iterations of 14 × 2048)")
    ap.add_argument("-profile", default="etl")
    ap.add_argument("-scenario", default="realistic")
    ap.add_argument("-seeds", default="0,1", help="SB3 seeds, comma-separated (one run each)")
    ap.add_argument("-go-seeds", default="284572,1", help="go run ./train -seed values, comma-separated")
    ap.add_argument("-out", default="runs/sb3-vs-go")
    ap.add_argument("-figure", default="python/examples/sb3_vs_go.png")
    ap.add_argument("-plot-only", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    summary_path = os.path.join(args.out, "summary.json")
    if args.plot_only:
        with open(summary_path) as f:
            summary = json.load(f)
    else:
        import stable_baselines3
        import torch
        bins = os.path.join(args.out, "bin")
        os.makedirs(bins, exist_ok=True)
        for name in ("serve", "train"):
            subprocess.run(["go", "build", "-o", os.path.join(bins, name), "./" + name], check=True)
        summary = {"profile": args.profile, "scenario": args.scenario, "steps": args.steps,
                   "sb3_version": stable_baselines3.__version__, "torch_version": torch.__version__, "runs": []}
        # One after the other, alternating SB3 and Go, never concurrently.
        sb3_seeds = [int(x) for x in args.seeds.split(",")]
        go_seeds = [int(x) for x in args.go_seeds.split(",")]
        for i in range(max(len(sb3_seeds), len(go_seeds))):
            if i < len(sb3_seeds):
                out = os.path.join(args.out, f"sb3-seed{sb3_seeds[i]}")
                run = run_sb3(args, sb3_seeds[i], os.path.abspath(os.path.join(bins, "serve")), out)
                s = summarize(run, align_sb3(read_progress(os.path.join(out, "progress.csv"))))
                summary["runs"].append(dict(s, impl="sb3", seed=sb3_seeds[i], index=i))
            if i < len(go_seeds):
                out = os.path.join(args.out, f"go-seed{go_seeds[i]}")
                run = run_go(args, go_seeds[i], os.path.join(bins, "train"), out)
                prog = read_progress(os.path.join(out, "progress.csv"))
                summary["runs"].append(dict(summarize(run, prog), impl="go", seed=go_seeds[i], index=i))
                # train's entropy_fraction is entropy over its maximum Σ log nvec.
                summary["max_entropy"] = float(-prog["train/entropy_loss"][0] / prog["train/entropy_fraction"][0])
        with open(summary_path, "w") as f:
            json.dump(summary, f, indent=1)
    plot(summary, args.figure)
    for s in summary["runs"]:
        phases = ""
        if s.get("rollout_s"):
            phases = " (rollout " + ", ".join(f"{t:.1f}" for t in s["rollout_s"]) + " s; update " + \
                     ", ".join(f"{t:.1f}" for t in s["update_s"]) + " s)"
        print(f"{s['impl']} seed {s['seed']}: wall {s['wall_s']:.1f} s{phases}; " + "; ".join(
            f"it {i}: ep_rew_mean {r:.1f}, EV {ev:.3f}, entropy {h:.4f}, value loss {vl:.1f}, approx_kl {kl:.4f}, "
            f"clip fraction {cf:.3f}"
            for i, r, ev, h, vl, kl, cf in zip(s["iterations"], s["ep_rew_mean"], s["explained_variance"], s["entropy"],
                                               s["value_loss"], s["approx_kl"], s["clip_fraction"])))
    print(f"figure: {args.figure}")


if __name__ == "__main__":
    main()
