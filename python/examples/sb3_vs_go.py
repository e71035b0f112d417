"""Side-by-side check of this project's PPO (go run ./train) against
Stable-Baselines3 PPO through the remote env, on the same scenario, budget
and hyperparameters (the paper's: sb3_ppo.PAPER = ppo.DefaultConfig).

    apt-get install -y python3-torch python3-matplotlib
    PYTHONPATH=../shared/peers/python:python /usr/bin/python3 python/examples/sb3_vs_go.py \\
        [-steps 57344] [-profile etl] [-scenario realistic] [-out runs/sb3-vs-go] [-figure python/examples/sb3_vs_go.png]

Run from the repository root (traces are found from there). It builds
serve and train, then trains one after the other (not concurrently): SB3
on 14 remote envs of a local ``serve env`` (torch on one thread), then
``train -profile P -scenario S -steps N -workers 1`` (the Go update on one
goroutine too). It writes <out>/sb3/progress.csv (SB3's CSV logger),
<out>/go/ (the train command's artifacts), <out>/summary.json (per
iteration: ep_rew_mean, explained variance, entropy, value loss, rollout
and update seconds for SB3, wall seconds of each run) and the figure:
learning curves of both per iteration. -plot-only redraws the figure
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

# What each panel shows: (column of progress.csv, title, transform).
PANELS = [
    ("rollout/ep_rew_mean", "ep_rew_mean (last 100 episodes)", lambda v: v),
    ("train/explained_variance", "explained variance (rollout values)", lambda v: v),
    ("train/entropy_loss", "policy entropy, nats (−entropy_loss)", lambda v: -v),
    ("train/value_loss", "value loss (MSE, unnormalised returns)", lambda v: v),
]


def read_progress(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    out = {}
    for k in rows[0]:
        out[k] = np.array([float(r[k]) if r[k] not in ("", None) else np.nan for r in rows])
    return out


def run_sb3(args, serve_bin, out):
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
        model = make_model(server.addr, profile=args.profile, scenario=args.scenario, seed=args.seed, verbose=0)
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


def run_go(args, train_bin, out):
    cmd = [train_bin, "-profile", args.profile, "-scenario", args.scenario, "-steps", str(args.steps),
           "-seed", str(args.go_seed), "-workers", "1", "-out", out, "-json"]
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

    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.0 * len(PANELS), 3.2))
    for ax, (col, title, _) in zip(axes, PANELS):
        key = {"train/entropy_loss": "entropy"}.get(col, col.split("/")[1])
        for name, style in (("sb3", dict(marker="o", color="tab:blue")), ("go", dict(marker="s", color="tab:orange"))):
            s = summary[name]
            label = {"sb3": "SB3 %s (%.0f s)", "go": "go run ./train (%.0f s)"}[name]
            label = label % ((summary["sb3_version"], s["wall_s"]) if name == "sb3" else (s["wall_s"],))
            ax.plot(s["iterations"], s[key], label=label, **style)
        if col == "train/entropy_loss":
            ax.axhline(summary["max_entropy"], color="grey", lw=0.8, ls="--", label="maximum Σ log nvec")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("iteration (28,672 transitions each)", fontsize=8)
        ax.set_xticks(summary["sb3"]["iterations"])
        ax.tick_params(labelsize=8)
    axes[0].legend(fontsize=7)
    axes[2].legend(fontsize=7)
    fig.suptitle(f"PPO, paper hyperparameters, {summary['profile']} / {summary['scenario']} / taxi-train, "
                 f"{summary['steps']:,} transitions", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-steps", type=int, default=57_344, help="transitions (2 iterations of 14 × 2048)")
    ap.add_argument("-profile", default="etl")
    ap.add_argument("-scenario", default="realistic")
    ap.add_argument("-seed", type=int, default=0, help="SB3 seed")
    ap.add_argument("-go-seed", type=int, default=284572, help="go run ./train -seed")
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
        sb3_out, go_out = os.path.join(args.out, "sb3"), os.path.join(args.out, "go")
        sb3 = run_sb3(args, os.path.abspath(os.path.join(bins, "serve")), sb3_out)
        go = run_go(args, os.path.join(bins, "train"), go_out)
        summary = {"profile": args.profile, "scenario": args.scenario, "steps": args.steps,
                   "sb3_version": stable_baselines3.__version__, "torch_version": torch.__version__,
                   "sb3": summarize(sb3, align_sb3(read_progress(os.path.join(sb3_out, "progress.csv")))),
                   "go": summarize(go, read_progress(os.path.join(go_out, "progress.csv")))}
        # train's entropy_fraction is entropy over its maximum Σ log nvec.
        prog = read_progress(os.path.join(go_out, "progress.csv"))
        summary["max_entropy"] = float(-prog["train/entropy_loss"][0] / prog["train/entropy_fraction"][0])
        with open(summary_path, "w") as f:
            json.dump(summary, f, indent=1)
    plot(summary, args.figure)
    for name in ("sb3", "go"):
        s = summary[name]
        print(f"{name}: wall {s['wall_s']:.1f} s; per iteration: " + "; ".join(
            f"it {i}: ep_rew_mean {r:.1f}, EV {ev:.3f}, entropy {h:.3f}, value loss {vl:.1f}, {t:.1f} s"
            for i, r, ev, h, vl, t in zip(s["iterations"], s["ep_rew_mean"], s["explained_variance"], s["entropy"],
                                          s["value_loss"], s["iteration_s_from_fps"])))
    print(f"figure: {args.figure}")


if __name__ == "__main__":
    main()
