"""Figures of a saved phase diagram (in the spirit of the paper's Figures 2 and 3).

(a) ``m`` and ``theta`` of both branches against ``alpha``, the global minimum drawn thick,
    ``alpha_c`` and ``alpha_l`` marked;
(b) the training-loss difference ``eps_t(positional) - eps_t(semantic)`` against ``alpha``;
(c) ``eps_g`` of the global minimum (and of both branches, thin) with ``eps_lin``;
(d) the phase diagram in ``(alpha, omega)``: ``alpha_c``, ``alpha_l``, the end of the semantic
    branch, with the regions labelled.

Everything is read from the files written by :mod:`.phase_diagram`; nothing is recomputed.
PNG and PDF are written next to each other.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..experiments.phase_diagram import load_points

__all__ = ["plot_phase_diagram", "plot_branches"]


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, out_dir: Path, name: str) -> list:
    paths = []
    for ext in ("png", "pdf"):
        p = out_dir / f"{name}.{ext}"
        fig.savefig(p, dpi=150, bbox_inches="tight")
        paths.append(p)
    return paths


def _arrays(rows, key):
    """``key`` of every row as floats (missing or empty: nan, e.g. results saved before a
    column existed)."""
    return np.array([np.nan if r.get(key) is None else r[key] for r in rows], float)


def plot_branches(out_dir, omega: float = 0.3) -> list:
    """Figures (a)-(c) at the saved ``omega`` closest to the requested one."""
    plt = _plt()
    out_dir = Path(out_dir)
    pts = [p for p in load_points(out_dir) if p.get("curves")]
    if not pts:
        raise FileNotFoundError(f"no branch curves saved in {out_dir}")
    pt = min(pts, key=lambda p: abs(p["omega"] - omega))
    w = pt["omega"]
    pos, sem = pt["curves"]["positional"], pt["curves"]["semantic"]
    ac, al = pt["alpha_c"], pt["alpha_l"]
    a_p, a_s = _arrays(pos, "alpha"), _arrays(sem, "alpha")
    lo, hi = max(min(a_p.min(), a_s.min()), 0.0), min(max(a_p.max(), a_s.max()), 3 * ac)
    paths = []

    def marks(ax):
        ax.axvline(ac, color="k", ls="--", lw=1, label=rf"$\alpha_c = {ac:.4f}$")
        ax.axvline(al, color="0.4", ls=":", lw=1.2, label=rf"$\alpha_l = {al:.4f}$")
        ax.set_xlim(lo, hi)
        ax.set_xlabel(r"sample complexity $\alpha = n/d$")

    # (a) order parameters
    fig, ax = plt.subplots(figsize=(6, 4))
    a_end = pt.get("alpha_spinodal_semantic", np.nan)
    a_end = np.nan if a_end is None else a_end
    for rows, a, name, key, col in ((pos, a_p, "positional", "m", "C0"),
                                    (sem, a_s, "semantic", "theta", "C3")):
        y = _arrays(rows, key)
        glob = (a <= ac) if name == "positional" else (a >= ac)
        # below the semantic branch's end the continuation only follows the tail that the
        # rule's own quadrature error induces (docs/numerics.md): drawn dotted
        tail = (a < a_end) if name == "semantic" else np.zeros_like(a, bool)
        ax.plot(np.where(tail, np.nan, a), y, color=col, lw=1, alpha=0.6)
        ax.plot(np.where(tail | (np.roll(tail, 1) & ~tail), a, np.nan), y, color=col, lw=1,
                ls=":", alpha=0.6)
        ax.plot(np.where(glob, a, np.nan), np.where(glob, y, np.nan), color=col, lw=3,
                label=f"{name} branch: ${'m' if key == 'm' else chr(92) + 'theta'}$")
    ax.plot([], [], color="0.5", lw=3, label="thick: global minimum")
    if np.isfinite(a_end):
        ax.axvline(a_end, color="C3", ls="-.", lw=1,
                   label=rf"semantic branch ends, $\alpha = {a_end:.3f}$")
    marks(ax)
    ax.set_ylabel(r"overlap: $m = p_1\cdot Q/d$, $\theta = \sigma^2 Q\cdot Q^*/d$")
    ax.set_title(rf"order parameters, $\omega = {w:g}$")
    ax.legend(fontsize=8)
    paths += _save(fig, out_dir, "fig_a_order_parameters")
    plt.close(fig)

    # (b) training-loss difference on the common alpha range
    fig, ax = plt.subplots(figsize=(6, 4))
    common = np.linspace(max(a_p.min(), a_s.min()), min(a_p.max(), a_s.max()), 400)
    op, os_ = np.argsort(a_p), np.argsort(a_s)
    d = (np.interp(common, a_p[op], _arrays(pos, "eps_t")[op])
         - np.interp(common, a_s[os_], _arrays(sem, "eps_t")[os_]))
    ax.plot(common, d, color="k")
    ax.axhline(0, color="0.6", lw=0.8)
    marks(ax)
    ax.set_xlim(common.min(), min(common.max(), hi))
    ax.set_ylabel(r"$\varepsilon_t^{\rm pos} - \varepsilon_t^{\rm sem}$ (training loss / $d$)")
    ax.set_title(rf"which minimum is global, $\omega = {w:g}$ (>0: semantic)")
    ax.legend(fontsize=8)
    paths += _save(fig, out_dir, "fig_b_training_loss_difference")
    plt.close(fig)

    # (c) test errors
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(a_p, _arrays(pos, "eps_g"), color="C0", lw=1, alpha=0.6, label="positional branch")
    ax.plot(a_s, _arrays(sem, "eps_g"), color="C3", lw=1, alpha=0.6, label="semantic branch")
    g_alpha = np.linspace(lo, hi, 400)
    g = np.where(g_alpha < ac, np.interp(g_alpha, a_p[op], _arrays(pos, "eps_g")[op]),
                 np.interp(g_alpha, a_s[os_], _arrays(sem, "eps_g")[os_]))
    ax.plot(g_alpha, g, color="k", lw=2.5, label=r"global minimum $\varepsilon_g$")
    ax.axhline(pt["eps_lin"], color="C2", lw=1.5, label=r"linear baseline $\varepsilon_{\rm lin}$")
    marks(ax)
    ax.set_ylabel(r"test error $\varepsilon_g$ (per dimension)")
    ax.set_title(rf"test error, $\omega = {w:g}$")
    ax.legend(fontsize=8)
    paths += _save(fig, out_dir, "fig_c_test_error")
    plt.close(fig)
    return paths


def plot_phase_diagram(out_dir) -> list:
    """Figure (d): the phase diagram in the ``(alpha, omega)`` plane."""
    plt, out_dir, pts, w, fig, ax = _start_diagram(out_dir)
    for key, lab, col, ls in (("alpha_c", r"$\alpha_c$ (equal training loss)", "k", "-"),
                              ("alpha_l", r"$\alpha_l$ ($\varepsilon_g = \varepsilon_{\rm lin}$)",
                               "C2", "-"),
                              ("alpha_spinodal_semantic", "end of the semantic branch" "\n"
                               "(it leaves the trivial point)", "C3", "--")):
        a, e = _arrays(pts, key), _arrays(pts, key + "_err")
        ax.errorbar(a, w, xerr=np.nan_to_num(e), color=col, ls=ls, marker="o", ms=3,
                    capsize=2, label=lab)
    ac = _arrays(pts, "alpha_c")
    xmax = np.nanmax(_arrays(pts, "alpha_l")) * 1.3
    ax.fill_betweenx(w, 0, ac, color="C0", alpha=0.08)
    ax.fill_betweenx(w, ac, xmax, color="C3", alpha=0.08)
    mid = len(w) // 2
    top = max(len(w) - 2, 0)
    end = _arrays(pts, "alpha_spinodal_semantic")[top]
    x_lab = 0.5 * (end + ac[top]) if np.isfinite(end) else 0.5 * ac[top]
    ax.text(x_lab, w[top], "positional\nglobal\nminimum", ha="center", va="center",
            fontsize=8, color="C0")
    ax.text(ac[mid] + 0.6 * (xmax - ac[mid]), w[mid], "semantic\nglobal minimum", ha="center",
            va="center", fontsize=9, color="C3")
    return _finish_diagram(plt, fig, ax, xmax, "phase diagram", out_dir, "fig_d_phase_diagram")


def _start_diagram(out_dir):
    """``(plt, out_dir, points, omegas, fig, ax)`` for a phase diagram of the finished
    points in ``out_dir``."""
    plt = _plt()
    out_dir = Path(out_dir)
    pts = [p for p in load_points(out_dir) if p.get("status") == "ok"]
    if not pts:
        raise FileNotFoundError(f"no finished omega points in {out_dir}")
    fig, ax = plt.subplots(figsize=(6, 4.5))
    return plt, out_dir, pts, _arrays(pts, "omega"), fig, ax


def _finish_diagram(plt, fig, ax, xmax, title, out_dir, name) -> list:
    """Axes, legend and files of a phase diagram in the ``(alpha, omega)`` plane."""
    ax.set_xlim(0, xmax)
    ax.set_xlabel(r"sample complexity $\alpha = n/d$")
    ax.set_ylabel(r"positional mixing $\omega$ of the teacher")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="lower right")
    paths = _save(fig, out_dir, name)
    plt.close(fig)
    return paths


def plot_general_phase_diagram(out_dir) -> list:
    """A general model's phase diagram (:mod:`symattn.experiments.general_phase_diagram`):
    ``alpha_c`` and ``alpha_l`` over ``omega``, the regions labelled by the global minimum's
    character on each side."""
    plt, out_dir, pts, w, fig, ax = _start_diagram(out_dir)
    kinds = sorted({p.get("transition", "?") for p in pts})
    for key, lab, col in (("alpha_c", r"$\alpha_c$ (" + ", ".join(kinds) + ")", "k"),
                          ("alpha_l", r"$\alpha_l$ ($\varepsilon_g = \varepsilon_{\rm lin}$)",
                           "C2")):
        ax.errorbar(_arrays(pts, key), w, xerr=np.nan_to_num(_arrays(pts, key + "_err")),
                    color=col, marker="o", ms=3, capsize=2, label=lab)
    ac = _arrays(pts, "alpha_c")
    xmax = np.nanmax(np.concatenate([ac, _arrays(pts, "alpha_l")])) * 1.3
    ax.fill_betweenx(w, 0, ac, color="C0", alpha=0.08)
    ax.fill_betweenx(w, ac, xmax, color="C3", alpha=0.08)
    ok = np.isfinite(ac)
    y = 0.5 * (w[ok].min() + w[ok].max())           # the labels: halfway up the omega range
    a = float(np.interp(y, w[ok], ac[ok]))
    below = "/".join(sorted({p["below"] for p in pts}))
    above = "/".join(sorted({p["above"] for p in pts}))
    ax.text(0.5 * a, y, f"{below}\nglobal\nminimum", ha="center", va="center", fontsize=8,
            color="C0")
    ax.text(a + 0.3 * (xmax - a), y, f"{above}\nglobal minimum", ha="center", va="center",
            fontsize=9, color="C3")
    return _finish_diagram(plt, fig, ax, xmax, "phase diagram (general model)", out_dir,
                           "fig_phase_diagram_general")
