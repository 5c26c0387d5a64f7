r"""Figures of a validation run (:mod:`symattn.experiments.validation`); matplotlib, Agg backend, PNG and PDF.

* ``validation_order_parameters``: one panel per quantity against :math:`\alpha` -- the theory's
  two branches as lines, the simulations as points with standard-error bars (colour: ``d``;
  marker: warm start), the theory's :math:`\alpha_c` and :math:`\alpha_l` as vertical lines,
  :math:`\varepsilon_{\rm lin}` as a horizontal line; the last panel is the paired training-loss
  difference whose sign change is :math:`\alpha_c`.
* ``validation_gap``: :math:`|\bar x - x_{\rm theory}|` against ``d`` on log-log axes for the
  semantic start's :math:`\theta` and :math:`\varepsilon_g`, one colour per :math:`\alpha`,
  with the fitted power law (exponent in the legend); filled markers: positive gap, open:
  negative.
* ``validation_thresholds``: the finite-size :math:`\alpha_c` and :math:`\alpha_l` against ``d``
  with bootstrap error bars, and the theory's values as bands.

All quantities are dimensionless (the order parameters are in the units of model page §3:
pre-activation variances in units where the token-noise variance is :math:`\sigma^2`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

__all__ = ["make_figures", "LABELS"]

#: Axis labels (model page notation).
LABELS = {
    "m": r"positional overlap $m = p_1\cdot Q/d$",
    "theta": r"semantic overlap $\theta = \sigma^2\, Q\cdot Q^*/d$",
    "q": r"student variance $q = \sigma^2 |Q|^2/d$",
    "eps_t": r"training loss $\varepsilon_t = \min\, R/d$  ($\times 10^{-3}$)",
    "eps_g": r"test error $\varepsilon_g$  ($\times 10^{-3}$)",
    "delta": r"$\varepsilon_t^{\rm sem} - \varepsilon_t^{\rm pos}$  ($\times 10^{-4}$)",
}
_SCALE = {"eps_t": 1e3, "eps_g": 1e3, "delta": 1e4}
_ALPHA = r"sample complexity $\alpha = n/d$"
_MARKER = {"semantic": "o", "positional": "s"}
_LINESTYLE = {"semantic": "-", "positional": "--"}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 9, "axes.titlesize": 9, "legend.fontsize": 8,
                         "axes.labelsize": 9, "figure.dpi": 100})
    return plt


def _save(fig, out: Path, name: str) -> list:
    paths = []
    for ext in ("png", "pdf"):
        p = Path(out) / f"{name}.{ext}"
        fig.savefig(p, dpi=150 if ext == "png" else None, bbox_inches="tight")
        paths.append(p)
    return paths


def _nan(v):
    return math.nan if v is None else v


def _params_title(out: Path) -> str:
    import json
    try:                     # a title only: a damaged run.json was refused when the run began
        p = json.loads((Path(out) / "run.json").read_text())["params"]
        A = p["A"]
        return (rf"$\sigma = {p['sigma']:g}$, $\lambda = {p['lam']:g}$, "
                rf"$\omega = {p['omega']:g}$, "
                rf"$A = [[{A[0][0]:g}, {A[0][1]:g}], [{A[1][0]:g}, {A[1][1]:g}]]$")
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return ""


def _d_colours(ds):
    import matplotlib
    cmap = matplotlib.colormaps["viridis"]
    n = len(ds)
    return {d: cmap(0.9 * i / max(1, n - 1)) for i, d in enumerate(ds)}


def _thresholds_lines(ax, th, with_label=False):
    for key, style, name in (("alpha_c", ":", r"theory $\alpha_c$"),
                             ("alpha_l", "-.", r"theory $\alpha_l$")):
        if key in th:
            ax.axvline(th[key], color="0.45", lw=0.9, ls=style, zorder=0,
                       label=name if with_label else None)


def plot_order_parameters(res: dict, grid, out: Path) -> list:
    plt = _plt()
    from matplotlib.lines import Line2D
    th = res["theory_thresholds"]
    theory = res["theory"]
    t_alphas = sorted({a for a, _ in theory})
    colours = _d_colours(grid.ds)
    nd = len(grid.ds)
    span = (max(grid.alphas) - min(grid.alphas)) or 1.0
    offset = {d: (i - (nd - 1) / 2) * 0.008 * span for i, d in enumerate(grid.ds)}

    fig, axes = plt.subplots(2, 3, figsize=(11, 6.6), sharex=True)
    panels = list(QUANT_PANELS)
    for ax, k in zip(axes.flat, panels):
        s = _SCALE.get(k, 1.0)
        if k == "delta":
            y = [(_nan(theory[(a, "semantic")]["eps_t"]) - _nan(theory[(a, "positional")]["eps_t"]))
                 if theory[(a, "semantic")]["found"] and theory[(a, "positional")]["found"]
                 else math.nan for a in t_alphas]
            ax.plot(t_alphas, s * np.array(y), color="k", lw=1.3)
            ax.axhline(0, color="0.6", lw=0.6)
            for t in res["thresholds"]:
                xs = np.array(grid.alphas) + offset[t["d"]]
                m = np.array([v for v, _ in t["delta_eps_t"]])
                e = np.array([v for _, v in t["delta_eps_t"]])
                ax.errorbar(xs, s * m, yerr=s * e, fmt="D", ms=3.5, color=colours[t["d"]],
                            elinewidth=0.8, capsize=1.5, lw=0)
        else:
            for b in ("semantic", "positional"):
                y = [_nan(theory[(a, b)][k]) if theory[(a, b)]["found"] else math.nan
                     for a in t_alphas]
                ax.plot(t_alphas, s * np.array(y), color="k", lw=1.3, ls=_LINESTYLE[b])
            for r in res["summary"]:
                filled = r["start"] == "semantic"
                c = colours[r["d"]]
                ax.errorbar(r["alpha"] + offset[r["d"]], s * r[k], yerr=s * _nan(r[k + "_err"]),
                            fmt=_MARKER[r["start"]], ms=3.5, color=c,
                            mfc=c if filled else "white", mec=c, elinewidth=0.8, capsize=1.5)
            if k == "eps_g" and "eps_lin" in th:
                ax.axhline(s * th["eps_lin"], color="tab:red", lw=1.0, ls=(0, (4, 2)))
        _thresholds_lines(ax, th)
        ax.set_ylabel(LABELS[k])
        ax.grid(alpha=0.25, lw=0.5)
    for ax in axes[-1]:
        ax.set_xlabel(_ALPHA)
    for ax in axes[0]:
        ax.tick_params(labelbottom=True)
    axes.flat[-1].set_title("paired difference (same data set); sign change = $\\alpha_c$")

    handles = [Line2D([], [], color="k", ls="-", lw=1.3, label="theory, semantic branch"),
               Line2D([], [], color="k", ls="--", lw=1.3, label="theory, positional branch"),
               Line2D([], [], color="0.3", marker="o", ls="", label="semantic start ($Q = Q^*$)"),
               Line2D([], [], color="0.3", marker="s", mfc="white", ls="",
                      label=r"positional start ($Q = (1,\dots,1)$)"),
               Line2D([], [], color="0.45", ls=":", label=r"theory $\alpha_c$"),
               Line2D([], [], color="0.45", ls="-.", label=r"theory $\alpha_l$"),
               Line2D([], [], color="tab:red", ls=(0, (4, 2)),
                      label=r"$\varepsilon_{\rm lin}$ (theory)")]
    handles += [Line2D([], [], color=colours[d], marker="o", ls="", label=f"$d = {d}$")
                for d in grid.ds]
    fig.legend(handles=handles, loc="lower center", ncol=min(6, len(handles)),
               bbox_to_anchor=(0.5, -0.01), frameon=False)
    seeds = ", ".join(f"{grid.n_seeds(d)}" for d in grid.ds)
    fig.suptitle("Theory (lines) against finite-size training (points: mean $\\pm$ standard error "
                 f"over {seeds} seeds at $d$ = {', '.join(map(str, grid.ds))})\n"
                 + _params_title(out), y=0.995)
    fig.tight_layout(rect=(0, 0.09, 1, 0.97))
    paths = _save(fig, out, "validation_order_parameters")
    plt.close(fig)
    return paths


QUANT_PANELS = ("m", "theta", "q", "eps_t", "eps_g", "delta")


def _determined(fit: dict) -> bool:
    """A fit worth drawing: at least one degree of freedom and an exponent error below 2."""
    return fit["dof"] >= 1 and np.isfinite(fit["exponent_err"]) and fit["exponent_err"] < 2


def plot_gaps(res: dict, grid, out: Path, quantities=("theta", "eps_g"), start="semantic") -> list:
    plt = _plt()
    import matplotlib
    import matplotlib.ticker
    from matplotlib.lines import Line2D
    cmap = matplotlib.colormaps["plasma"]
    na = len(grid.alphas)
    colours = {a: cmap(0.85 * i / max(1, na - 1)) for i, a in enumerate(grid.alphas)}
    rows = [("", "gap of the mean"), ("_cv", "control-variate (teacher-norm) estimate")]
    fig, axes = plt.subplots(len(rows), len(quantities), figsize=(5.2 * len(quantities), 4.0 * len(rows)),
                             squeeze=False)
    names = {"theta": r"\theta", "eps_g": r"\varepsilon_g", "m": "m", "q": "q",
             "eps_t": r"\varepsilon_t"}
    ds = np.array(grid.ds, float)
    dd = np.geomspace(ds.min() * 0.85, ds.max() * 1.15, 50)
    for (sfx, title), axrow in zip(rows, axes):
        for ax, k in zip(axrow, quantities):
            handles, floor = [], []
            for a in grid.alphas:
                pts = [r for r in res["summary"] if r["start"] == start and r["alpha"] == a
                       and r["gap_" + k + sfx] is not None]
                if not pts:
                    continue
                c = colours[a]
                shift = 1.0 + 0.035 * (list(grid.alphas).index(a) - (na - 1) / 2)
                x = np.array([r["d"] for r in pts], float) * shift
                g = np.array([r["gap_" + k + sfx] for r in pts])
                e = np.array([_nan(r["gap_" + k + sfx + "_err"]) for r in pts])
                y = np.abs(g)
                lo = np.minimum(e, y * 0.999)          # clip the lower bar on log axes
                floor += [v for v in np.minimum(y, e) if v > 0]
                fit = next((f for f in res["fits"] if f["start"] == start and f["alpha"] == a
                            and f["quantity"] == k + sfx), None)
                label = rf"$\alpha = {a:g}$"
                if fit is not None and _determined(fit):
                    label += rf": $a = {fit['exponent']:.2f} \pm {fit['exponent_err']:.2f}$"
                    ax.plot(dd, np.abs(fit["_fit"].predict(dd)), color=c, lw=1.0)
                elif fit is not None:
                    label += ": exponent undetermined"
                pos = g > 0
                for sel, face in ((pos, c), (~pos, "white")):
                    if sel.any():
                        ax.errorbar(x[sel], y[sel], yerr=[lo[sel], e[sel]], fmt="o", color=c,
                                    ms=4, mfc=face, elinewidth=0.8, capsize=2)
                handles.append(Line2D([], [], color=c, marker="o", lw=1.0, label=label))
            ax.set_xscale("log")
            ax.set_yscale("log")
            if floor:
                ax.set_ylim(bottom=min(floor) / 3)     # bars reaching zero run off the bottom
            ax.set_xticks(grid.ds)
            ax.set_xticklabels([str(d) for d in grid.ds])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            sym = names.get(k, k)
            ax.set_xlabel("dimension $d$")
            ax.set_ylabel(rf"$|\langle {sym} \rangle_{{\rm sim}} - {sym}^{{\rm theory}}|$")
            ax.set_title(f"{start} start, ${sym}$: {title}")
            ax.grid(alpha=0.25, which="both", lw=0.5)
            ax.legend(handles=handles, title=r"fit ${\rm gap} = c\,d^{-a}$", loc="best")
    fig.suptitle("Finite-size gap against $d$ (filled: simulation above theory; open: below; "
                 "bars: one standard error)\n" + _params_title(out), y=1.0)
    fig.tight_layout()
    paths = _save(fig, out, "validation_gap")
    plt.close(fig)
    return paths


def plot_thresholds(res: dict, grid, out: Path) -> list:
    plt = _plt()
    import matplotlib.ticker
    th = res["theory_thresholds"]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    spec = (("alpha_c", r"$\alpha_c$ (equal training losses)", "tab:blue", "o", 0.97),
            ("alpha_l", r"$\alpha_l$ (global $\varepsilon_g = \varepsilon_{\rm lin}$)",
             "tab:orange", "s", 1.03))
    for key, label, c, mk, shift in spec:
        pts = [t for t in res["thresholds"] if t[key] is not None]
        if pts:
            ax.errorbar([t["d"] * shift for t in pts], [t[key] for t in pts],
                        yerr=[_nan(t[key + "_err"]) for t in pts], fmt=mk, color=c, ms=5,
                        capsize=2.5, label=f"finite size, {label}")
        if key in th:
            ax.axhline(th[key], color=c, lw=1.0, ls="--", label=f"theory {label.split(' (')[0]}")
            ax.axhspan(th[key] - th[key + "_err"], th[key] + th[key + "_err"], color=c, alpha=0.2,
                       lw=0)
    ax.set_xscale("log")
    ax.set_xticks(grid.ds)
    ax.set_xticklabels([str(d) for d in grid.ds])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("dimension $d$")
    ax.set_ylabel(r"threshold in $\alpha = n/d$")
    ax.set_title("Finite-size thresholds (bootstrap errors over seeds)\n" + _params_title(out),
                 fontsize=8)
    ax.grid(alpha=0.25, which="both", lw=0.5)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    fig.tight_layout()
    paths = _save(fig, out, "validation_thresholds")
    plt.close(fig)
    return paths


def make_figures(res: dict, grid, out: Path) -> list:
    """All figures of a validation run; returns the written paths."""
    paths = plot_order_parameters(res, grid, out)
    paths += plot_gaps(res, grid, out)
    if res["thresholds"]:
        paths += plot_thresholds(res, grid, out)
    return paths
