"""Loads the Parquet outputs of ``eval paired`` with pandas and draws one
figure: per controller, the violation rate against the mean CPU of its
runs (runs.parquet), and its mean total CPU per interval over the episode
(intervals.parquet).

    go run ./eval paired -out runs/paired ...
    /usr/bin/python3 python/examples/eval_figure.py --runs runs/paired --out paired.png [--profile etl]

pandas reads Parquet through pyarrow or fastparquet. Debian 12 packages
pandas (python3-pandas) and matplotlib but neither engine; install one
where a package index is reachable (pip install pyarrow).
"""

import argparse
import os
import sys


def load(runs_dir):
    """(runs, intervals) DataFrames of an eval paired output directory."""
    import pandas as pd
    try:
        runs = pd.read_parquet(os.path.join(runs_dir, "runs.parquet"))
        intervals = pd.read_parquet(os.path.join(runs_dir, "intervals.parquet"))
    except ImportError as e:
        raise SystemExit(f"eval_figure: pandas cannot read Parquet here ({e}); install pyarrow or fastparquet "
                         "(Debian 12 packages neither)") from None
    return runs, intervals


def figure(runs, intervals, path, profile=None):
    """Draws the figure from the two frames into path (PNG)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if profile:
        runs, intervals = runs[runs.profile == profile], intervals[intervals.profile == profile]
    if runs.empty:
        raise SystemExit(f"eval_figure: no runs{' of profile ' + profile if profile else ''}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    per = runs.groupby("controller", sort=True)[["violation_rate", "mean_cpu_millicores"]].mean()
    for name, row in per.iterrows():
        left.scatter(100 * row.violation_rate, row.mean_cpu_millicores / 1000, s=30)
        left.annotate(name, (100 * row.violation_rate, row.mean_cpu_millicores / 1000), fontsize=7,
                      xytext=(3, 3), textcoords="offset points")
    left.set(xlabel="SLO violations, % of intervals", ylabel="mean CPU, cores",
             title=f"runs.parquet: {len(runs)} runs, mean per controller")
    curve = intervals.groupby(["controller", "step"], sort=True)["total_cpu"].mean()
    for name in sorted(intervals.controller.unique()):
        c = curve.loc[name]
        right.plot(c.index, c.values / 1000, lw=1, label=name)
    right.set(xlabel="interval", ylabel="total CPU, cores", title="intervals.parquet: mean over runs")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", required=True, help="an `eval paired -out` directory (runs.parquet, intervals.parquet)")
    ap.add_argument("--out", required=True, help="the figure to write (PNG)")
    ap.add_argument("--profile", choices=("etl", "pred"), help="only this profile's runs (default all)")
    args = ap.parse_args()
    runs, intervals = load(args.runs)
    figure(runs, intervals, args.out, args.profile)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
