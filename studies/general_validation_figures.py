"""Theory against finite-size training for the general model (issue 20's validations).

Reads ``studies/data/general_validation/theory_<case>.json`` (``general_validation_theory.py``)
and ``<case>.json`` (``general_validation_runs.py``) and, per case and omega, plots ``eps_t`` and
``eps_g`` against alpha: the replica-symmetric global minimum (mean over scrambles, with their
standard error) and every other fixed point found, against the lowest training minimum per
instance (mean and standard error over seeds) at each ``d``.  It prints, per alpha, the gap
``training(d) - theory`` and the exponent ``a`` of a fit ``|gap| = c d^-a`` over the ``d``
values (weighted least squares in log-log; printed with the fit's standard error; ``-`` when the
gaps are not all of one sign or fewer than three ``d`` are available).

Rerun: ``python studies/general_validation_figures.py [--cases rank2,L3,appendix]``; figures go
to ``docs/figures/general_<case>_<omega>.png``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "general_validation"
FIGS = Path(__file__).resolve().parent.parent / "docs" / "figures"


def training_table(case: str) -> dict:
    """``{(omega, d, alpha): {"eps_t": [..], "eps_g": [..]}}`` of the lowest minimum per seed."""
    data = json.loads((DATA / f"{case}.json").read_text())
    out = defaultdict(lambda: defaultdict(list))
    for run in data["runs"]:
        low = run["starts"][run["lowest"]]
        key = (round(run["omega"], 6), run["d"], round(run["alpha"], 6))
        for k in ("eps_t", "eps_g"):
            out[key][k].append(low[k])
    return out


def mean_se(v):
    v = np.asarray(v, float)
    return float(v.mean()), (float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else np.nan)


def fit_exponent(ds, gaps, errs):
    """``(a, a_err)`` of ``|gap| = c d^-a``, or ``None``."""
    ds, gaps, errs = map(np.asarray, (ds, gaps, errs))
    if len(ds) < 3 or not (np.all(gaps > 0) or np.all(gaps < 0)):
        return None
    y = np.log(np.abs(gaps))
    w = (np.abs(gaps) / np.maximum(errs, 1e-300)) ** 2
    X = np.stack([np.ones_like(ds, float), -np.log(ds)], axis=1)
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    beta = cov @ X.T @ (w * y)
    return float(beta[1]), float(np.sqrt(cov[1, 1]))


def main(argv=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="rank2,L3,appendix")
    args = ap.parse_args(argv)
    FIGS.mkdir(parents=True, exist_ok=True)
    for case in args.cases.split(","):
        tpath = DATA / f"theory_{case}.json"
        if not tpath.exists() or not (DATA / f"{case}.json").exists():
            print(f"{case}: missing data, skipped")
            continue
        theory = json.loads(tpath.read_text())
        train = training_table(case)
        for sub, block in theory.items():
            omega = block["params"]["omega"]
            alphas = sorted(float(a) for a in block["alphas"])
            fig, axes = plt.subplots(1, 2, figsize=(10, 4))
            print(f"== {case} omega = {omega}")
            for ax, k in zip(axes, ("eps_t", "eps_g")):
                g = [block["alphas"][f"{a:g}"]["global"] for a in alphas]
                y = np.array([x[k] for x in g], float)
                e = np.array([x[k + "_err"] if x[k + "_err"] is not None else np.nan for x in g])
                ax.errorbar(alphas, y, yerr=e, color="k", lw=2, label="RS global minimum")
                others = defaultdict(list)
                for a in alphas:
                    rule0 = block["alphas"][f"{a:g}"]["rules"][0]["fixed_points"]
                    for fp in rule0[1:]:
                        others[fp["character"]].append((a, fp[k]))
                for ch, pts in others.items():
                    pa, pv = zip(*pts)
                    ax.plot(pa, pv, ".", alpha=0.5, label=f"other fixed points ({ch})")
                ds = sorted({d for (om, d, a) in train if abs(om - omega) < 1e-9})
                for d in ds:
                    pts = [(a, *mean_se(train[(round(omega, 6), d, round(a, 6))][k]))
                           for a in alphas if (round(omega, 6), d, round(a, 6)) in train]
                    if pts:
                        pa, pm, pe = zip(*pts)
                        ax.errorbar(pa, pm, yerr=pe, fmt="o", ms=4, capsize=2,
                                    label=f"training, d = {d}")
                ax.set_xlabel(r"$\alpha$")
                ax.set_ylabel(k)
                ax.set_title(f"{case}, omega = {omega}: {k}")
                ax.legend(fontsize=7)
                for a, th, te in zip(alphas, y, e):
                    rows = [(d, *mean_se(train[(round(omega, 6), d, round(a, 6))][k]))
                            for d in ds if (round(omega, 6), d, round(a, 6)) in train]
                    if not rows:
                        continue
                    gaps = [m - th for _, m, _ in rows]
                    errs = [np.hypot(se if np.isfinite(se) else 0, te if np.isfinite(te) else 0)
                            for _, _, se in rows]
                    fit = fit_exponent([d for d, _, _ in rows], gaps, errs)
                    txt = "-" if fit is None else f"{fit[0]:.2f} ± {fit[1]:.2f}"
                    cells = "  ".join(f"d={d}: {gp:+.2e}±{er:.1e}" for (d, _, _), gp, er
                                      in zip(rows, gaps, errs))
                    print(f"  {k} alpha={a:g} theory {th:.6f}  gap {cells}  exponent {txt}")
            fig.tight_layout()
            out = FIGS / f"general_{case}_{sub}.png"
            fig.savefig(out, dpi=110)
            plt.close(fig)
            print(f"wrote {out}")


if __name__ == "__main__":
    main()
