"""The semantic 1RSB shift at alpha_l against the size of the outer rule (issue 21;
docs/stability.md, 'The outer rule's size at alpha_l').

``fixed-point --rsb 1`` at the RS alpha_l with the converged width (band 2^24, split 16,
recentred, ``--rsb-eps 1e-4,1e-5,1e-7``) on outer rules of 2^10 points gave three of five rules
stationary with the state's generalisation error shifted *up* (alpha_l up by 2.6e-4), and two
rules whose solutions fold over in x.  The same search on rules of 2^12 and 2^14 points (the
band's dense rule and its seeds unchanged: only the outer rule grows) tests whether that is the
limit.  Per rule of each run file (``RUNS``), this collects the status, x*, the band's size and,
along the profile (the converged fixed-x solves at the finest width), the paired shifts from
the rule's own reference point: q1 and the generalisation error of one state, and Sigma/e; and
per size the mean and standard error over the stationary rules of Delta eps_g at x* and the
alpha_l shift it gives, -Delta eps_g / (d eps_g^sem / d alpha) (the slope from the thresholds
run file); and the same over all rules, those without a stationary x counted at points of their
profile (``X_COUNT``).

Reads only run files (their commands: studies/data/one_step_rsb_cli/README.md).  Writes
studies/data/one_step_rsb_outer_size.md and docs/figures/one_step_rsb_outer_size.png.
Rerun: ``python studies/one_step_rsb_outer_size.py`` (seconds).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

if __package__ in (None, ""):     # run as a file, python studies/NAME.py: the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studies.one_step_rsb_alpha_l_profile import profile_shifts  # noqa: E402

from symattn.model.params import ModelParams  # noqa: E402
from symattn.stats import mean_se  # noqa: E402

ROOT = Path(__file__).resolve().parent
DATA = ROOT / "data" / "one_step_rsb_cli"
THRESHOLDS = DATA / "thresholds-rsb1-omega0.3.json"
TABLE = ROOT / "data" / "one_step_rsb_outer_size.md"
FIGURE = ROOT.parent / "docs" / "figures" / "one_step_rsb_outer_size.png"
STEM = "fixed-point-rsb1-semantic-alpha1.4922707-omega0.3-band24-split16-eps1e-7"
#: outer points (log2) -> run file at alpha_l
RUNS = {10: f"{STEM}-rules5.json", 12: f"{STEM}-log2n12-rules6.json", 14: f"{STEM}-log2n14.json"}
#: the common profile x at which every rule's shift is compared
X_COMMON = 10000.0
#: profile x at which a rule without a stationary x is counted with the stationary ones
#: (``counted``): where the stationary rules of 2^12 points have theirs, and (``None``) the
#: rule's last profile point.  Leaving such rules out is the selection that misled on 2^10.
X_COUNT = (140000.0, 180000.0, None)


def rules(log2n: int, name: str, params, slope) -> list[dict]:
    """Per rule of the run file: seed, status, x*, band points, the shifts at x* (or at the
    last point of a rule without a stationary x) and along the profile."""
    path = DATA / name
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    finest = min(data["header"]["rsb"]["eps_stages"])
    res = data.get("result") or {}
    seeds = sorted({r["seed"] for r in data["rows"]})
    by_seed = {r["seed"]: r for r in res.get("per_rule", [])}
    out = []
    for seed in seeds:
        rows = [r for r in data["rows"] if r["seed"] == seed and r["eps"] == finest]
        if not any(r["converged"] and r["key"][0] == "ref" for r in rows):
            continue
        along = profile_shifts(rows, params, slope)
        rule = by_seed.get(seed, {})
        band = re.search(r"\((\d+) points", ((rule.get("rs") or {}).get("band") or {})
                         .get("rule", ""))
        sh = rule.get("shifts") or {}
        at = [a for a in along if a["x"] == X_COMMON]
        out.append({"log2n": log2n, "seed": seed, "status": rule.get("status", "unfinished"),
                    "x_star": rule.get("x_star"), "band": int(band[1]) if band else None,
                    "d_q1": sh.get("d_q1"), "d_eps_g": sh.get("d_eps_g"),
                    "d_q1_common": at[0]["d_q1"] if at else None, "along": along})
    return out


def summary(got: list[dict], slope: float) -> dict:
    """Mean and standard error over the stationary rules of x*, Delta eps_g and d alpha_l
    (one rule: its values, the error ``nan``)."""
    st = [r for r in got if r["status"] == "stationary"]
    if not st:
        return {"stationary": 0}
    if len(st) == 1:        # one rule: its value, no error bar
        x, g = (st[0]["x_star"], math.nan), (st[0]["d_eps_g"], math.nan)
    else:
        x, g = mean_se([r["x_star"] for r in st]), mean_se([r["d_eps_g"] for r in st])
    return {"stationary": len(st), "x_star": x, "d_eps_g": g,
            "d_alpha_l": (-g[0] / slope, g[1] / abs(slope))}


def counted(got: list[dict], slope: float) -> list[dict]:
    """Per x of ``X_COUNT``: the mean and standard error of Delta eps_g and d alpha_l over all
    rules, the stationary ones at x* and each other one at its profile point x (skipped where
    a rule's profile has no point there)."""
    st = [r["d_eps_g"] for r in got if r["status"] == "stationary"]
    others = [r for r in got if r["status"] != "stationary"]
    out = []
    for x in X_COUNT if others else ():
        at = [[a for a in r["along"] if a["x"] == x] if x is not None else r["along"][-1:]
              for r in others]
        if not all(at) or len(st) + len(at) < 2:
            continue
        g = mean_se(st + [a[0]["d_eps_g"] for a in at])
        out.append({"x": [a[0]["x"] for a in at], "d_eps_g": g,
                    "d_alpha_l": (-g[0] / slope, g[1] / abs(slope))})
    return out


def pm(v, scale, fmt, wrap="({})") -> str:
    """``(mean ± se)`` scaled, or the mean alone where the error is ``nan`` (one rule)."""
    m, se = v[0] * scale, v[1] * scale
    return wrap.format(f"{m:{fmt}} ± {abs(se):{fmt.lstrip('+')}}" if math.isfinite(se)
                       else f"{m:{fmt}}")


def e(v, digits=2) -> str:
    return "" if v is None else f"{v:+.{digits}e}"


def table(per_size: dict, sums: dict, slope: float, with_others: dict) -> str:
    lines = [f"Semantic 1RSB at the RS alpha_l = 1.4922707 (omega = 0.3), band 2^24, split 16, "
             f"recentred, widths 1e-4, 1e-5, 1e-7; d eps_g^sem / d alpha = {slope:.4g}.", "",
             "| outer rule | seed | status | band points | x* | d q1 at x = 1e4 | d q1 at x* "
             "(last point) | d eps_g at x* (last point) |", "|---|---|---|---|---|---|---|---|"]
    for log2n, got in per_size.items():
        for r in got:
            xs = f"{r['x_star']:.0f}" if r["x_star"] else ""
            lines.append(f"| 2^{log2n} | {r['seed']} | {r['status']} | {r['band'] or ''} | "
                         f"{xs} | {e(r['d_q1_common'])} | {e(r['d_q1'])} | "
                         f"{e(r['d_eps_g'])} |")
    lines += ["", "| outer rule | stationary rules | x* | d eps_g | d alpha_l |",
              "|---|---|---|---|---|"]
    for log2n, s in sums.items():
        if "d_eps_g" not in s:
            lines.append(f"| 2^{log2n} | {s['stationary']} | | | |")
            continue
        lines.append(f"| 2^{log2n} | {s['stationary']} | {pm(s['x_star'], 1, '.0f', '{}')} | "
                     f"{pm(s['d_eps_g'], 1e7, '+.2f')}e-7 | "
                     f"{pm(s['d_alpha_l'], 1e4, '+.2f')}e-4 |")
    lines += ["", "All rules, those without a stationary x counted at a point of their profile:",
              "", "| outer rule | counted at x | d eps_g | d alpha_l |", "|---|---|---|---|"]
    for log2n, rows in with_others.items():
        for c in rows:
            xs = ", ".join(f"{x:.0f}" for x in c["x"])
            lines.append(f"| 2^{log2n} | {xs} | {pm(c['d_eps_g'], 1e7, '+.2f')}e-7 | "
                         f"{pm(c['d_alpha_l'], 1e4, '+.2f')}e-4 |")
    return "\n".join(lines) + "\n"


def plot(per_size: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.4))
    colours = {10: "C0", 12: "C3", 14: "k"}
    for log2n, got in per_size.items():
        for i, r in enumerate(got):
            pts = [a for a in r["along"] if a["x"] >= 100]
            xs = [a["x"] for a in pts]
            label = f"$2^{{{log2n}}}$ outer points" if i == 0 else None
            style = "-" if r["status"] == "stationary" else ":"
            ax[0].plot(xs, [a["d_q1"] for a in pts], style, marker=".",
                       color=colours[log2n], label=label)
            ax[1].plot(xs, [a["sigma_over_e"] for a in pts], style, marker=".",
                       color=colours[log2n], label=label)
            if r["status"] == "stationary":
                ax[0].plot([r["x_star"]], [r["d_q1"]], "o", mfc="none", ms=9,
                           color=colours[log2n])
    for a, what in zip(ax, (r"paired shift $q_1 - q_1(x_{\rm ref})$",
                            r"$\Sigma/e$ (zero at the stationary $x$)")):
        a.set_xscale("log")
        a.set_yscale("symlog", linthresh=1e-7 if a is ax[0] else 1e-8)
        a.axhline(0, color="grey", lw=0.6)
        a.set_xlabel("Parisi $x$")
        a.set_ylabel(what)
    ax[0].legend(fontsize=8)
    ax[0].set_title("solid: rules with a stationary $x$ (circle); dotted: without", fontsize=9)
    fig.suptitle(r"Semantic 1RSB at $\alpha_l$ ($\omega = 0.3$): the same search on outer rules "
                 r"of $2^{10}$, $2^{12}$, $2^{14}$ points", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)


def main():
    params = ModelParams()
    slope = json.loads(THRESHOLDS.read_text())["result"]["slopes"]["eps_g_sem"][0]
    per_size = {k: rules(k, name, params, slope) for k, name in RUNS.items()}
    per_size = {k: v for k, v in per_size.items() if v}
    sums = {k: summary(v, slope) for k, v in per_size.items()}
    with_others = {k: counted(v, slope) for k, v in per_size.items()}
    text = table(per_size, sums, slope, with_others)
    TABLE.write_text(text)
    print(text)
    plot(per_size, FIGURE)
    print(f"written: {TABLE.relative_to(ROOT.parent)}, {FIGURE.relative_to(ROOT.parent)}")


if __name__ == "__main__":
    main()
