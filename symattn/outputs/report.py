"""The validation report: ``summary.md`` and the figures of a validation run.

Renders what :func:`symattn.experiments.validation.summarise` returns; computes nothing new.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..experiments.validation import TheorySettings, ValidationGrid
from ..runs.files import atomic_write_text, read_json
from ..simulation.instances import PAIRED_STARTS, QUANTITIES

__all__ = ["format_pm", "validation_markdown", "write_validation_report"]


def format_pm(v, e, sig: int = 2) -> str:
    """``value(error)`` in the last digits, e.g. ``0.1346(12)`` for 0.13459 +- 0.0012;
    ``-`` for a missing value."""
    if v is None or not np.isfinite(v):
        return "–"
    if e is None or not np.isfinite(e) or e <= 0:
        return f"{v:.5g}"
    dec = max(0, sig - 1 - int(math.floor(math.log10(e))))
    return f"{v:.{dec}f}({round(e * 10 ** dec):d})"


def _z(gap, err) -> str:
    if gap is None or err is None or not np.isfinite(err) or err <= 0:
        return ""
    return f"{gap / err:+.1f}"


def validation_markdown(res: dict, grid: ValidationGrid, theory: TheorySettings, out: Path) -> str:
    """The Markdown report of a validation run in ``out`` (its ``run.json`` gives the model)."""
    meta = read_json(out / "run.json", "out") if (out / "run.json").exists() else {}
    p = meta.get("params", {})
    th = res["theory_thresholds"]
    L = ["# Theory against finite-size training", ""]
    L.append(f"Model: sigma = {p.get('sigma')}, lambda = {p.get('lam')}, omega = {p.get('omega')}, "
             f"A = {p.get('A')}.  Grid: alpha in {list(grid.alphas)}, d in {list(grid.ds)}, "
             f"seeds per (d, alpha): {', '.join(f'{grid.n_seeds(d)} at d = {d}' for d in grid.ds)}; "
             "both warm starts on each data set (paired), "
             f"{grid.n_test} test sentences per task.  Theory: {theory.rules} scrambled Sobol rules "
             f"of 2^{theory.log2n} points.")
    L.append("")
    L.append("Notation: `0.1346(12)` is 0.1346 +- 0.0012 (one standard error: over seeds for the "
             "simulation, over Sobol rules for the theory).  Gap = simulation - theory of the "
             "matching branch (semantic start vs semantic branch, positional vs positional); "
             "z = gap / its error.")
    L += ["", "## Thresholds", ""]
    L.append("Finite size: `alpha_c` where the seed mean of the paired difference "
             "eps_t(semantic start) - eps_t(positional start) changes sign; `alpha_l` where "
             "eps_g of the lower-eps_t minimum minus eps_lin (per seed) does; linear interpolation "
             "on the alpha grid, bootstrap errors over seeds (fraction of resamplings with a "
             "crossing in brackets when below 1).")
    L += ["", "| d | seeds | alpha_c | alpha_l |", "|---:|---:|---:|---:|"]
    for t in res["thresholds"]:
        cells = []
        for k in ("alpha_c", "alpha_l"):
            v = t[k]
            c = format_pm(v, t[k + "_err"]) if v is not None else t[k + "_note"]
            if v is not None and t[k + "_boot_fraction"] < 1:
                c += f" [{t[k + '_boot_fraction']:.3f}]"
            cells.append(c)
        L.append(f"| {t['d']} | {t['n_seeds']} | {cells[0]} | {cells[1]} |")
    if "alpha_c" in th:
        L.append(f"| theory | {theory.rules} rules | {format_pm(th['alpha_c'], th['alpha_c_err'])} | "
                 f"{format_pm(th['alpha_l'], th['alpha_l_err'])} |")
    elif "error" in th:
        L.append(f"| theory | | not found: {th['error']} | |")
    g = res["theory_on_grid"]
    if g["alpha_c"] is not None or g["alpha_l"] is not None:
        fmt = (lambda v: "–" if v is None else f"{v:.4f}")
        L.append(f"| theory curves, same interpolation on the grid | | {fmt(g['alpha_c'])} | "
                 f"{fmt(g['alpha_l'])} |")
    if res["thresholds"]:
        L += ["", "Paired training-loss difference eps_t(semantic) - eps_t(positional), "
              "mean over seeds (units of 1e-4):", ""]
        L.append("| d | " + " | ".join(f"alpha = {a:g}" for a in grid.alphas) + " |")
        L.append("|---:|" + "---:|" * len(grid.alphas))
        for t in res["thresholds"]:
            L.append(f"| {t['d']} | " + " | ".join(format_pm(1e4 * m, 1e4 * e)
                                                   for m, e in t["delta_eps_t"]) + " |")
        tt = res["theory"]
        cells = []
        for a in grid.alphas:
            s, q = tt.get((a, "semantic"), {}), tt.get((a, "positional"), {})
            cells.append(format_pm(1e4 * (s["eps_t"] - q["eps_t"]),
                                   1e4 * math.hypot(s["eps_t_err"], q["eps_t_err"]))
                         if s.get("found") and q.get("found") else "–")
        L.append("| theory | " + " | ".join(cells) + " |")

    L += ["", "## Order parameters and errors", ""]
    L.append("Mean over seeds; the theory row is the branch matching the start.  eps_t, eps_g in "
             "units of 1e-3.")
    L += ["", "| alpha | start | d | m | theta | q | eps_t | eps_g | conv. |",
          "|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    scale = {"eps_t": 1e3, "eps_g": 1e3}
    for a in grid.alphas:
        for start in PAIRED_STARTS:
            tv = res["theory"].get((a, start), {})
            cells = [format_pm(scale.get(k, 1) * tv[k], scale.get(k, 1) * tv[k + "_err"])
                     if tv.get("found") else "not found" for k in QUANTITIES]
            L.append(f"| {a:g} | {start} | theory | " + " | ".join(cells) + " | |")
            for r in res["summary"]:
                if r["alpha"] == a and r["start"] == start:
                    cells = [format_pm(scale.get(k, 1) * r[k], scale.get(k, 1) * r[k + "_err"])
                             for k in QUANTITIES]
                    L.append(f"| {a:g} | {start} | {r['d']} | " + " | ".join(cells)
                             + f" | {r['n_converged']}/{r['n_seeds']} |")
    L += ["", "## Gap simulation - theory (z-score)", ""]
    L.append("eps_t, eps_g gaps in units of 1e-5, m, theta, q in units of 1e-3.")
    L += ["", "| alpha | start | d | m | theta | q | eps_t | eps_g |",
          "|---:|---|---:|---:|---:|---:|---:|---:|"]
    gscale = {"m": 1e3, "theta": 1e3, "q": 1e3, "eps_t": 1e5, "eps_g": 1e5}
    for a in grid.alphas:
        for start in PAIRED_STARTS:
            for r in res["summary"]:
                if r["alpha"] == a and r["start"] == start:
                    cells = []
                    for k in QUANTITIES:
                        gp, ge = r["gap_" + k], r["gap_" + k + "_err"]
                        cells.append("–" if gp is None else
                                     f"{format_pm(gscale[k] * gp, gscale[k] * ge)} ({_z(gp, ge)})")
                    L.append(f"| {a:g} | {start} | {r['d']} | " + " | ".join(cells) + " |")
    L += ["", "## Power-law fits of the gap against d", ""]
    L.append("gap(d) = c (d/d0)^(-a), weighted least squares on the signed gap, one fit per alpha "
             "(the d are independent data sets).  Errors scaled by sqrt(chi2/dof) when that is > 1. "
             "`sig.`: points with |gap| > 2 err.  `_cv`: the control-variate (teacher-norm) "
             "estimates, see below.  An exponent error above ~1 means the gap is not resolved.")
    L += ["", "| start | quantity | alpha | exponent a | chi2 / dof | points (sig.) |",
          "|---|---|---:|---:|---:|---:|"]
    order = [("semantic", "theta"), ("semantic", "eps_g"), ("semantic", "theta_cv"),
             ("semantic", "eps_g_cv"), ("positional", "m"), ("positional", "eps_g")]
    for start, q in order:
        for f in res["fits"]:
            if f["start"] == start and f["quantity"] == q:
                a = f"{f['alpha']:g}"
                L.append(f"| {start} | {q} | {a} | {format_pm(f['exponent'], f['exponent_err'])} | "
                         f"{f['chi2']:.1f} / {f['dof']} | {f['n_points']} ({f['n_significant']}) |")
    L += ["", "All fits (every quantity, both starts) are in `fits.csv`.", "",
          "## Control variate", "",
          "The teacher norm t = |Q*|^2/d has mean exactly 1 and standard deviation sqrt(2/d); "
          "the `_cv` columns of `summary.csv` are the least-squares regression of each quantity "
          "on t across seeds, evaluated at t = 1 (the data are not renormalised).  They estimate "
          "the same expectation with the teacher-norm part of the seed-to-seed spread removed.", ""]
    L += ["| alpha | start | d | theta | theta (cv) | eps_g x 1e3 | eps_g x 1e3 (cv) |",
          "|---:|---|---:|---:|---:|---:|---:|"]
    for a in grid.alphas:
        for r in res["summary"]:
            if r["alpha"] == a and r["start"] == "semantic":
                L.append(f"| {a:g} | semantic | {r['d']} | {format_pm(r['theta'], r['theta_err'])} | "
                         f"{format_pm(r['theta_cv'], r['theta_cv_err'])} | "
                         f"{format_pm(1e3 * r['eps_g'], 1e3 * r['eps_g_err'])} | "
                         f"{format_pm(1e3 * r['eps_g_cv'], 1e3 * r['eps_g_cv_err'])} |")
    if "eps_lin" in th:
        L += ["", f"Theory eps_lin = {th['eps_lin']:.8f} (independent of alpha)."]
    L.append("")
    return "\n".join(L)


def write_validation_report(out, res: dict, grid: ValidationGrid, theory: TheorySettings,
                            make_plots: bool = True) -> list:
    """Write ``summary.md`` (and, with ``make_plots``, the figures) into ``out``; return the
    figure paths."""
    out = Path(out)
    atomic_write_text(out / "summary.md", validation_markdown(res, grid, theory, out))
    if not make_plots:
        return []
    from . import plots
    return plots.make_figures(res, grid, out)
