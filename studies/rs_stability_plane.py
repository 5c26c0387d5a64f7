"""Where does replica symmetry hold?  The RS-stability report over the (alpha, omega) plane of the
default phase diagram (issue 21, item 5; docs/stability.md).

For every omega of the default phase diagram (docs/phase_diagram_default.csv: omega = 0 ... 0.45)
and alpha = 0.5, 0.6, ..., 2.5, both branches are followed in alpha on one scrambled Sobol rule
of 2^13 points (``solve_branch``, warm-started along alpha; a branch that is not found is
recorded as absent) and the stability report of each fixed point is computed
(``symattn.numerics.stability.rs_stability``: the replicon of the continuous prox, the jump
coefficient s at delta = 1e-3 and 1e-2, the measure near a tie, the verdict).

Writes studies/data/rs_stability_plane.json (after every omega; resumes) and
docs/figures/rs_stability_plane.png: the jump coefficient s of the global minimum (positional
below alpha_c, semantic above) over the plane, with alpha_c and alpha_l from the CSV.
Rerun: ``python studies/rs_stability_plane.py [--workers 2]`` (about 15 minutes on 2 cores);
``--figure`` redraws from the JSON.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
OUT = ROOT / "data" / "rs_stability_plane.json"
CSV = ROOT.parent / "docs" / "phase_diagram_default.csv"
FIGURE = ROOT.parent / "docs" / "figures" / "rs_stability_plane.png"
ALPHAS = np.round(np.arange(0.5, 2.5001, 0.1), 10)
LOG2N = 13


def thresholds_csv():
    with CSV.open() as fh:
        return [{k: float(v) if k in ("omega", "alpha_c", "alpha_l") else v
                 for k, v in row.items()} for row in csv.DictReader(fh)]


def omega_task(omega):
    from symattn.model import ModelParams
    from symattn.numerics.branches import BranchNotFound, solve_branch
    from symattn.numerics.channel import OutputChannel
    from symattn.numerics.quadrature import SobolRule
    from symattn.numerics.stability import rs_stability
    from symattn.numerics.prox import prox
    t0 = time.perf_counter()
    p = ModelParams(omega=omega)
    ch = OutputChannel(p, SobolRule(LOG2N, 0).nodes())
    points = []
    for branch in ("positional", "semantic"):
        x0 = None
        for alpha in ALPHAS:
            try:
                with np.errstate(all="ignore"):
                    fp = solve_branch(p, branch, float(alpha), ch, x0=x0, with_eps_g=False)
            except (BranchNotFound, ArithmeticError, ValueError, np.linalg.LinAlgError):
                x0 = None
                continue
            if not fp.converged:
                x0 = None
                continue
            x0 = fp.x
            q, m, theta, V = fp.x
            w, t = ch.diagonal_nodes(q, m, theta)
            pr = prox(w, t, V, p.sigma, gtol=ch.gtol)
            r3 = rs_stability(ch, fp.x, float(alpha), minima=pr)
            r2 = rs_stability(ch, fp.x, float(alpha), delta=1e-2, minima=pr)
            points.append({"branch": branch, "alpha": float(alpha), "x": list(fp.x),
                           "eps_t": fp.eps_t, **r3.to_dict(), "growth_1e-2": r2.growth})
    return {"omega": omega, "points": points, "wall_time": time.perf_counter() - t0}


def figure(rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    th = thresholds_csv()
    ac = {r["omega"]: r["alpha_c"] for r in th}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    # left: the global minimum's jump coefficient s
    ax = axes[0]
    pts = []
    for row in rows:
        om = row["omega"]
        for pt in row["points"]:
            glob = "positional" if pt["alpha"] < ac.get(om, np.inf) else "semantic"
            if pt["branch"] == glob:
                pts.append((pt["alpha"], om, pt["growth"], pt["replicon"], pt["verdict"]))
    a, o, s, lam, verdict = (np.array(v) for v in zip(*pts))
    pos = s > 0
    sc = ax.scatter(a[pos], o[pos], c=s[pos], cmap="viridis", norm=LogNorm(1e-6, 3e-3),
                    marker="s", s=28)
    ax.scatter(a[~pos], o[~pos], facecolors="none", edgecolors="r", marker="o", s=28,
               label="no node within 1e-3 of a tie")
    fig.colorbar(sc, ax=ax, label="jump coefficient s (lambda_R ~ s beta)")
    ax.set_title("global minimum: growth of the replicon with beta")
    # right: the replicon of the continuous prox
    ax = axes[1]
    sc = ax.scatter(a, o, c=lam, cmap="magma", vmin=0, vmax=1, marker="s", s=28)
    fig.colorbar(sc, ax=ax, label="lambda_cont (replicon of the continuous prox)")
    ax.set_title("global minimum: replicon without the jumps")
    oms = [r["omega"] for r in th]
    for ax in axes:
        ax.plot([r["alpha_c"] for r in th], oms, "k-", lw=1.5, label="alpha_c")
        ax.plot([r["alpha_l"] for r in th], oms, "k--", lw=1.2, label="alpha_l")
        ax.set_xlabel("alpha")
        ax.set_ylabel("omega")
        ax.set_xlim(0.45, 2.55)
    axes[0].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3)
    fig.suptitle(f"RS stability over the default phase diagram (one scramble of 2^{LOG2N} "
                 "points per point)", fontsize=10)
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=120)
    print(f"figure: {FIGURE}")


def summary(rows):
    th = {r["omega"]: r for r in thresholds_csv()}
    print(f"{'omega':>6} {'alpha_c':>8}  global minimum: stable / undecided / unstable alphas "
          "(s at alpha_c-: positional, alpha_c+: semantic)")
    for row in sorted(rows, key=lambda r: r["omega"]):
        om = row["omega"]
        ac = th[om]["alpha_c"]
        glob = [p for p in row["points"]
                if p["branch"] == ("positional" if p["alpha"] < ac else "semantic")]
        by = {v: [p["alpha"] for p in glob if p["verdict"] == v]
              for v in ("stable", "undecided", "unstable")}
        below = [p for p in glob if p["alpha"] < ac]
        above = [p for p in glob if p["alpha"] > ac]
        sb = below[-1]["growth"] if below else float("nan")
        sa = above[0]["growth"] if above else float("nan")
        cells = "  ".join(f"{v}: {_ranges(by[v])}" for v in by)
        print(f"{om:>6.3f} {ac:>8.4f}  {cells}   s: {sb:.1e} / {sa:.1e}")


def _ranges(vals):
    if not vals:
        return "-"
    vals = sorted(vals)
    out, start, prev = [], vals[0], vals[0]
    for v in vals[1:] + [None]:
        if v is None or v - prev > 0.1 + 1e-9:
            out.append(f"{start:g}" if start == prev else f"{start:g}-{prev:g}")
            if v is not None:
                start = v
        prev = v if v is not None else prev
    return ",".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--figure", action="store_true", help="only redraw from the JSON")
    args = ap.parse_args(argv)
    rows = json.loads(OUT.read_text())["rows"] if OUT.exists() else []
    if not args.figure:
        from concurrent.futures import as_completed

        from symattn.runs.executors import process_pool
        done = {r["omega"] for r in rows}
        todo = [r["omega"] for r in thresholds_csv() if r["omega"] not in done]
        with process_pool(args.workers) as pool:
            futs = [pool.submit(omega_task, om) for om in todo]
            for f in as_completed(futs):
                rows.append(f.result())
                OUT.parent.mkdir(parents=True, exist_ok=True)
                OUT.write_text(json.dumps({"rows": rows}, indent=1))
                print(f"omega = {rows[-1]['omega']:g}: {len(rows[-1]['points'])} points, "
                      f"{rows[-1]['wall_time']:.0f} s", flush=True)
    summary(rows)
    figure(rows)


if __name__ == "__main__":
    main()
