"""One-step RSB along both branches over alpha in [0.8, 2] at omega = 0.3 (issue 21, 'What to
build' 3; docs/stability.md, 'Along the branches').

Collects, for each (branch, alpha), the result of one run file of ``symattn fixed-point --rsb 1``
(studies/data/one_step_rsb_cli/, the commands in its README; ``POINTS`` names the file used
for each point: the one at the finest settings that resolved it) and tabulates and plots the
stationary Parisi parameter x*, the gap 1 - q0/q1, the 1RSB training-loss shift from RS by
both routes (integrated x equation; difference of fixed points) and the shift of one state's
generalisation error, each the mean +- standard error over the rules with a stationary x, next
to the RS-stability report of the same run's RS fixed point (8 scrambles of 2^14 points).

Reads only run files; rerunning a point's command (README) replays or finishes its file.
Writes studies/data/one_step_rsb_sweep.md and docs/figures/one_step_rsb_sweep.png.
Rerun: ``python studies/one_step_rsb_sweep.py`` (seconds).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parent
RUNS = ROOT / "data" / "one_step_rsb_cli"
TABLE = ROOT / "data" / "one_step_rsb_sweep.md"
FIGURE = ROOT.parent / "docs" / "figures" / "one_step_rsb_sweep.png"

#: (branch, alpha) -> (run file, settings in words); a thresholds file's search is named
#: ``file#branch``
POINTS = {
    ("positional", 0.8): ("fixed-point-rsb1-positional-alpha0.8-omega0.3.json", "defaults"),
    ("positional", 1.0): ("fixed-point-rsb1-positional-alpha1-omega0.3.json", "defaults"),
    ("positional", 1.2515356): ("fixed-point-rsb1-positional-alpha1.2515356-omega0.3-log2n12"
                                "-rules4.json", "2^12 outer points"),
    ("positional", 1.5): ("fixed-point-rsb1-positional-alpha1.5-omega0.3.json", "defaults"),
    ("positional", 1.75): ("fixed-point-rsb1-positional-alpha1.75-omega0.3.json", "defaults"),
    ("positional", 2.0): ("fixed-point-rsb1-positional-alpha2-omega0.3.json", "defaults"),
    ("semantic", 0.8): ("fixed-point-rsb1-semantic-alpha0.8-omega0.3-split16.json",
                        "split 16, recentred"),
    ("semantic", 1.0): ("fixed-point-rsb1-semantic-alpha1-omega0.3-split16.json",
                        "split 16, recentred"),
    ("semantic", 1.2515356): ("fixed-point-rsb1-semantic-alpha1.2515356-omega0.3-band20-split16"
                              ".json", "band 2^20, split 16, recentred"),
    ("semantic", 1.4922707): ("fixed-point-rsb1-semantic-alpha1.4922707-omega0.3-band24-split16"
                              "-eps1e-7-log2n12-rules6.json",
                              "2^12 outer points, band 2^24, split 16, recentred, eps 1e-7"),
    ("semantic", 1.5): ("fixed-point-rsb1-semantic-alpha1.5-omega0.3-band24-split16-eps1e-7"
                        "-log2n12.json",
                        "2^12 outer points, band 2^24, split 16, recentred, eps 1e-7"),
    ("semantic", 1.75): ("fixed-point-rsb1-semantic-alpha1.75-omega0.3.json", "defaults"),
    ("semantic", 2.0): ("fixed-point-rsb1-semantic-alpha2-omega0.3.json", "defaults"),
}


def load(name: str) -> tuple[dict | None, str]:
    """The result a run file holds, or ``None`` and why (no such file; not finished)."""
    name, _, search = name.partition("#")
    path = RUNS / name
    if not path.exists():
        return None, "not run"
    result = json.loads(path.read_text()).get("result")
    if result and search:
        result = result["estimates"].get(search)
    return result, "" if result else "unfinished"


def row(branch: str, alpha: float) -> dict:
    """One point's numbers: status, rules, x*, 1 - q0/q1, the shifts of eps_t by both routes
    and of eps_g, RS's eps_t (for the relative shift), and the RS-stability verdict with
    beta*."""
    name, how = POINTS[branch, alpha]
    res, why = load(name)
    out = {"branch": branch, "alpha": alpha, "file": name, "settings": how}
    if res is None:
        out["status"] = why
        return out
    rs = res["rs"]
    stab = rs.get("rs_stability", {})
    out.update(status=res["status"], note=res.get("note", ""), eps_t_rs=rs["eps_t"],
               verdict=stab.get("verdict"), beta_star=stab.get("beta_star"))
    sh = res.get("shifts") or {}
    if "x_star" in sh:            # converged or interpolated
        gap = sh["q0_over_q1"]
        out.update(x_star=sh["x_star"], gap=[1 - gap[0], gap[1]],
                   d_eps_t=sh["d_eps_t"], d_eps_t_envelope=sh["d_eps_t_envelope"],
                   d_eps_g=sh["d_eps_g"])
    elif res["status"] == "reduces to RS":
        out.update(gap=[0.0, 0.0], d_eps_t=[0.0, 0.0], d_eps_t_envelope=[0.0, 0.0],
                   d_eps_g=[0.0, 0.0])
    return out


def sci(v) -> str:
    """``mean ± se`` in a compact scientific form."""
    if v is None:
        return ""
    m, e = v
    if m == 0 and e == 0:
        return "0"
    exp = math.floor(math.log10(abs(m))) if m else math.floor(math.log10(e))
    return f"({m / 10**exp:.2f} ± {e / 10**exp:.2f})e{exp}"


def table(rows) -> str:
    head = ("| branch | alpha | settings | status | rules | RS stability (beta*) | x* | "
            "1 - q0/q1 | d eps_t (x equation) | d eps_t (difference) | d eps_g |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        bs = r.get("beta_star")
        stab = (f"{r.get('verdict')} ({bs:.3g})" if bs and math.isfinite(bs)
                else str(r.get("verdict") or ""))
        xs = r.get("x_star")
        lines.append(
            f"| {r['branch']} | {r['alpha']:g} | {r['settings']} | {r['status']} | "
            f"{r.get('note', '').split(';')[0].removeprefix('rules: ')} | {stab} | "
            f"{f'{xs[0]:.4g} ± {xs[1]:.2g}' if xs else ''} | {sci(r.get('gap'))} | "
            f"{sci(r.get('d_eps_t_envelope'))} | {sci(r.get('d_eps_t'))} | "
            f"{sci(r.get('d_eps_g'))} |")
    return head + "\n".join(lines) + "\n"


def plot(rows, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 3, figsize=(14, 4.2))
    panels = (("x_star", "stationary Parisi parameter $x^*$"),
              ("gap", "$1 - q_0/q_1$ at $x^*$"),
              ("rel", r"$(\varepsilon_t^{\rm 1RSB} - \varepsilon_t^{\rm RS})/"
                      r"\varepsilon_t^{\rm RS}$ ($x$ equation)"))
    for branch, colour, mark in (("positional", "C0", "o"), ("semantic", "C3", "s")):
        got = [r for r in rows if r["branch"] == branch and "d_eps_t_envelope" in r]
        for (key, _), a in zip(panels, ax):
            pts = []
            for r in got:
                if key == "rel":
                    m, e = r["d_eps_t_envelope"]
                    v = (m / r["eps_t_rs"], e / r["eps_t_rs"])
                else:
                    v = r.get(key)
                if v and v[0] > 0:
                    pts.append((r["alpha"], *v))
            if pts:
                xs_, ys, es = zip(*pts)
                a.errorbar(xs_, ys, es, marker=mark, color=colour, capsize=3, label=branch)
        # the points where 1RSB reduces to RS (RS-stable): drawn on the axis
        for r in rows:
            if r["branch"] == branch and r.get("status") == "reduces to RS":
                for a in ax[1:]:
                    a.plot([r["alpha"]], [0.02], marker=mark, mfc="none", color=colour,
                           transform=a.get_xaxis_transform(), clip_on=False)
    for (_, title), a in zip(panels, ax):
        a.set_yscale("log")
        a.set_xlabel(r"$\alpha$")
        a.set_title(title, fontsize=10)
        for xc, lab in ((1.2515356, r"$\alpha_c$"), (1.4922707, r"$\alpha_l$")):
            a.axvline(xc, color="0.6", lw=0.8, ls=":")
            a.text(xc + 0.01, 0.5, lab, transform=a.get_xaxis_transform(), fontsize=8,
                   rotation=90, va="center", color="0.4")
        a.legend(fontsize=8)
    fig.suptitle("Zero-temperature 1RSB along both branches, omega = 0.3 (mean ± s.e. over the "
                 "rules with a stationary x; open marks on the axis: reduces to RS)",
                 fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main() -> None:
    rows = [row(b, a) for (b, a) in POINTS]
    text = table(rows)
    TABLE.write_text("# One-step RSB along the branches (studies/one_step_rsb_sweep.py)\n\n"
                     + text)
    print(text)
    plot(rows, FIGURE)


if __name__ == "__main__":
    main()
