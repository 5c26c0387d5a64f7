r"""The phase diagram in the ``(alpha, omega)`` plane: thresholds, branch ends, branch curves.

For every ``omega`` of a grid, one *task* (warm starts along ``alpha`` stay inside it):

* ``alpha_c`` and ``alpha_l``: located on the first scrambled Sobol rule and refined on
  ``refine_rules`` folded scrambles of ``2^refine_log2n`` points, as the main job does
  (:func:`symattn.refine.precise.refine_thresholds`, shared fixed points; error bar: one
  standard error plus the route's bounds).  Where the refinement cannot run (``alpha_c``
  undefined, or a large scramble that does not converge: the reason is kept in
  ``thresholds_route``), and with ``refine_rules = 0``, the mean over the ``rules`` scrambled
  Sobol rules (one standard error plus the root-finding bound, as in
  :mod:`symattn.numerics.thresholds`);
* where the **semantic** and **positional** branches end below ``alpha_c``
  (``alpha_spinodal_semantic``, ``alpha_spinodal_positional``): where the trivial fixed point's
  ``theta`` (resp. ``m``) eigenvalue crosses one and the branch leaves it
  (:func:`symattn.numerics.bifurcation.trivial_bifurcation`, likelihood-ratio derivatives
  that keep the switching surfaces' terms), on every rule: mean, standard error plus the
  Brent tolerance; kind ``bifurcation``.  The semantic branch approaches this point from above
  (measured at omega = 0, 0.15, 0.3, 0.45: ``studies/branch_ends.py --criticality``), so it
  is the branch's end, up to a possible weak subcriticality below the resolution
  (docs/numerics.md, section 'Branches, their ends, and the phase diagram').  For a
  non-swap-symmetric ``A`` the positional end is the continuation's (fold or merge; first
  rule; error: the bracket).  Below ``alpha_c`` each branch is followed by pseudo-arclength
  continuation on the first rule (:func:`symattn.numerics.continuation.follow_branch`) down
  to that rule's bifurcation (the branch curves); with ``below_ends`` it goes on to
  ``alpha_min``, and where it ends then is kept as a diagnostic,
  ``semantic_continuation_end`` and ``positional_continuation_end``: near the end the overlap
  is small, the continuation's smoothed tangents are biased and the quadrature noise is
  large, and they lie below the bifurcation (measured: docs/numerics.md, section 'Branches,
  their ends, and the phase diagram').

  Above ``alpha_c`` each branch is followed up to ``alpha_max`` on the first rule, and an end
  found there is reported;
* the trivial fixed point (``theta = m = 0``) followed both ways from ``alpha_c`` on the first
  rule: the ``alpha`` range where it was found (``trivial_range``) and its training loss at
  ``alpha_c`` (it lies above both branches there);
* the branch curves (both branches, first rule) with ``eps_t``, ``E[M]`` and ``eps_g``, for the
  figures.

Results are written per ``omega`` as soon as a task finishes (``points/omega=W.json``, by
write-then-rename) and the tidy ``phase_diagram.csv`` is rebuilt from them; rerunning the same
command skips every ``omega`` already on disk, so a killed run resumes with no point lost or
duplicated.  Tasks run on any :class:`concurrent.futures.Executor`: local processes by default
(:func:`symattn.runs.executors.process_pool`: they die with the run), or a Dask cluster
(``--scheduler ADDRESS``, needs ``dask[distributed]``).

One run at a time: the folder is locked while a run works in it
(:func:`symattn.runs.lock.output_lock`, ``DIR/.lock``), and a second run is refused.  A
damaged file (a point file or ``metadata.json`` cut short, or without its keys) is refused
with its path and what to do.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import time
from concurrent.futures import Executor, as_completed
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from ..model.checks import check_number, omega_grid
from ..model.params import ModelParams, ParameterError
from ..numerics.settings import NumericalSettings
from ..runs.executors import default_workers, process_pool
from ..runs.files import DamagedFile, atomic_write_text, read_json
from ..runs.lock import output_lock
from ..runs.metadata import versions
from ..stats import mean_se

__all__ = ["PhaseDiagramSettings", "phase_point", "run_phase_diagram", "load_points",
           "CSV_COLUMNS", "omega_grid"]

CSV_COLUMNS = ("omega", "alpha_c", "alpha_c_err", "alpha_l", "alpha_l_err", "thresholds_route",
               "alpha_spinodal_semantic", "alpha_spinodal_semantic_err", "semantic_end",
               "alpha_spinodal_positional", "alpha_spinodal_positional_err", "positional_end",
               "semantic_continuation_end", "positional_continuation_end",
               "trivial_range", "eps_lin", "status", "wall_time")


@dataclass(frozen=True)
class PhaseDiagramSettings:
    """Numerical settings of one phase diagram (stored with the results)."""

    log2n: int = 12        #: Sobol points per rule
    rules: int = 4        #: independent scrambles (the branch ends' error bars)
    #: the thresholds' refinement: folded scrambles of 2^refine_log2n points (0: no
    #: refinement, the thresholds are the mean over ``rules``; measured: docs/numerics.md,
    #: section 'Branches, their ends, and the phase diagram')
    refine_log2n: int = 15
    refine_rules: int = 6
    tol: float = 1e-10      #: fixed-point tolerance
    alpha_max: float = 4.0  #: branches are followed up to here
    alpha_min: float = 0.02  #: and down to here
    #: below alpha_c, follow each branch only down to its bifurcation off the trivial point
    #: on the first rule (where there is one): below it the continuation follows the
    #: quadrature's imperfect-bifurcation tail, an artefact that took half of each omega's
    #: time; True follows it down to alpha_min as before (the ``*_continuation_end``
    #: diagnostics; measured: docs/numerics.md, section 'Branches, their ends, and the phase
    #: diagram')
    below_ends: bool = False
    seed: int = 0

    def __post_init__(self):
        NumericalSettings(log2n=self.log2n, rules=self.rules, tol=self.tol, seed=self.seed)
        if self.refine_rules:   # validated as the refinement's own settings
            _refine_settings(self)
        elif self.refine_rules != 0:
            raise ParameterError("refine_rules", f"must be 0 or in [2, 256], got "
                                                 f"{self.refine_rules}")
        check_number("alpha_max", self.alpha_max, 1.0, 64.0, lo_open=True)
        check_number("alpha_min", self.alpha_min, 0.0, 1.0, lo_open=True, hi_open=True)


def _refine_settings(s: PhaseDiagramSettings):
    from ..refine.precise import STANDARD
    try:
        return replace(STANDARD, log2n=s.refine_log2n, rules=s.refine_rules, seed=1000 + s.seed)
    except ValueError as exc:
        raise ParameterError("refine", str(exc)) from None


def _refined_thresholds(params, first, settings: PhaseDiagramSettings, ts):
    """The thresholds refined from the first rule's (``first``, a RuleThresholds) on the
    settings' folded scrambles, in this process: a
    :class:`~symattn.refine.precise.PreciseThresholds`."""
    from ..numerics.observables import linear_baseline_error
    from ..numerics.thresholds import Thresholds
    from ..refine.precise import refine_thresholds
    from ..runs.executors import InProcess
    eps_lin, eps_lin_err = linear_baseline_error(params)
    fast = Thresholds(alpha_c=first.alpha_c, alpha_c_err=math.inf, alpha_l=first.alpha_l,
                      alpha_l_err=math.inf, eps_lin=eps_lin, eps_lin_err=eps_lin_err,
                      params=params.as_dict(), settings={**asdict(ts), "rules": 1},
                      per_rule=[first], wall_time=0.0)
    return refine_thresholds(params, fast, _refine_settings(settings), executor=InProcess)


def _down_to(s: PhaseDiagramSettings, end) -> float:
    """Where a branch is followed down to: its bifurcation ``end`` (alpha_b, error, kind) on
    the first rule, unless ``s.below_ends`` or there is none; else ``s.alpha_min``."""
    if s.below_ends or end is None or not np.isfinite(end[0]):
        return s.alpha_min
    return max(s.alpha_min, end[0])


def _mean_err(values, extra=0.0):
    """Mean and (standard error + ``extra``) of the finite values; a single value gets
    ``extra`` alone (there is no spread to measure; ``extra`` is its own error bound)."""
    v = [x for x in values if x is not None and np.isfinite(x)]
    mean, se = mean_se(v)
    return mean, (se if len(v) > 1 else 0.0) + extra if v else math.nan


def _end_alpha(curve):
    """(alpha, half-width or error, kind) of where a branch ends, or (nan, nan, 'none')."""
    if curve.fold is not None:
        return curve.fold.alpha, curve.fold.alpha_err, "fold"
    if curve.merge is not None:
        lo, hi = curve.merge
        return 0.5 * (lo + hi), 0.5 * (hi - lo), "merge"
    return math.nan, math.nan, "none"


#: alpha grids scanned upward for the trivial point's instabilities (stop at the first crossing)
THETA_GRID = (0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0, 1.25, 1.6, 2.0, 2.5, 3.2, 4.0)
M_GRID = (0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56)
#: Brent tolerance on alpha_b (added to its error bar)
BIFURCATION_XTOL = 1e-6


def _bifurcation_end(params, channel, direction, grid, tol):
    """(alpha_b, Brent tolerance, kind) where the trivial point's ``direction`` eigenvalue
    crosses one; kind ``bifurcation``, ``unstable at alpha_min`` (already above one at the
    grid's first point), ``none`` or ``trivial point not found`` (alpha_b is nan for the last
    three)."""
    from ..numerics.bifurcation import trivial_bifurcation
    from ..numerics.branches import BranchNotFound
    try:
        end = trivial_bifurcation(params, channel, direction, grid, tol=tol,
                                  xtol=BIFURCATION_XTOL)
    except BranchNotFound:
        return math.nan, math.nan, "trivial point not found"
    if end.status.converged:
        return end.alpha, end.error, "bifurcation"
    first = getattr(end.scanned[0], "eig_" + direction) if end.scanned else math.nan
    return math.nan, math.nan, "unstable at alpha_min" if first > 1 else "none"


def _curve_rows(params, curve):
    from ..numerics.observables import generalisation_error
    rows = []
    for fp in curve.points:
        eg, _ = generalisation_error(params, fp.q, fp.m, fp.theta, order=16)
        rows.append({"alpha": fp.alpha, "q": fp.q, "m": fp.m, "theta": fp.theta, "V": fp.V,
                     "eps_t": fp.eps_t, "E_M": fp.E_M, "eps_g": eg, "converged": fp.converged})
    return rows


def phase_point(params_dict: dict, omega: float, settings_dict: dict) -> dict:
    """One task: everything at one ``omega`` (pure function of its arguments; picklable)."""
    from ..numerics.channel import OutputChannel
    from ..numerics.continuation import follow_branch
    from ..numerics.observables import linear_baseline_error
    from ..numerics.quadrature import SobolRule
    from ..numerics.thresholds import thresholds_on_nodes

    t0 = time.perf_counter()
    s = PhaseDiagramSettings(**settings_dict)
    params = ModelParams(**{**params_dict, "omega": omega})
    out = {"omega": omega, "status": "ok"}
    ts = NumericalSettings(log2n=s.log2n, rules=s.rules, tol=s.tol, seed=s.seed)
    rules, sem_ends, pos_ends, b_sem, b_pos = [], [], [], [], []
    curves = {}
    swap_symmetric = params.swap_symmetric   # the m eigenvalue decouples
    refined = None
    try:
        alpha0, warm = None, (None, None)
        for k in range(s.rules):
            nodes = SobolRule(s.log2n, s.seed + k).nodes()
            if k == 0 or not s.refine_rules:
                r = thresholds_on_nodes(params, nodes, ts, seed=s.seed + k, alpha0=alpha0,
                                        warm=warm)
                alpha0, warm = r.alpha_c, (r.positional.x, r.semantic.x)
                rules.append(r)
            ch = OutputChannel(params, nodes, gtol=ts.prox_tol)
            b_sem.append(_bifurcation_end(params, ch, "theta",
                                          [a for a in THETA_GRID if a >= s.alpha_min], s.tol))
            if swap_symmetric:
                b_pos.append(_bifurcation_end(params, ch, "m",
                                              [a for a in M_GRID if a >= s.alpha_min], s.tol))
            if k == 0:
                sem_stop, pos_stop = _down_to(s, b_sem[0]), _down_to(s, b_pos[0] if b_pos
                                                                     else None)
                sem_down = follow_branch(params, "semantic", ch, r.alpha_c, sem_stop,
                                         x0=r.semantic.x, tol=s.tol)
                pos_down = follow_branch(params, "positional", ch, r.alpha_c, pos_stop,
                                         x0=r.positional.x, tol=s.tol)
                sem_ends.append(_end_alpha(sem_down))
                pos_ends.append(_end_alpha(pos_down))
                sem_up = follow_branch(params, "semantic", ch, r.alpha_c, s.alpha_max,
                                       x0=r.semantic.x, tol=s.tol)
                pos_up = follow_branch(params, "positional", ch, r.alpha_c, s.alpha_max,
                                       x0=r.positional.x, tol=s.tol)
                curves = {
                    "semantic": _curve_rows(params, sem_down)[::-1] + _curve_rows(params, sem_up)[1:],
                    "positional": _curve_rows(params, pos_down)[::-1] + _curve_rows(params, pos_up)[1:],
                }
                out["semantic_above"] = sem_up.end
                out["positional_above"] = pos_up.end
                out["semantic_below"] = sem_down.end
                out["positional_below"] = pos_down.end
                # the trivial fixed point (theta = m = 0): followed both ways from alpha_c
                triv = [follow_branch(params, "trivial", ch, r.alpha_c, a_end, tol=s.tol,
                                      ds=0.1, ds_max=0.5)
                        for a_end in (s.alpha_min, s.alpha_max)]
                a_triv = [fp.alpha for c in triv for fp in c.points]
                out["trivial_range"] = f"{min(a_triv):.4g}-{max(a_triv):.4g}"
                out["trivial_below"], out["trivial_above"] = triv[0].end, triv[1].end
                at_c = triv[0].points[0]
                out["trivial_eps_t_at_alpha_c"] = at_c.eps_t
        refined, out["thresholds_route"] = _thresholds_route(params, rules, s, ts)
    except Exception as exc:  # one omega failing must not lose the others
        out["status"] = f"failed: {type(exc).__name__}: {exc}"
    if refined is not None:
        out["alpha_c"], out["alpha_c_err"] = refined.alpha_c, refined.alpha_c_err
        out["alpha_l"], out["alpha_l_err"] = refined.alpha_l, refined.alpha_l_err
        out["refined"] = {"error_budget": refined.budget, "settings": refined.settings,
                          "per_rule": [{k: r[k] for k in ("seed", "route", "alpha_c", "alpha_l")}
                                       for r in refined.per_rule]}
    else:
        out["alpha_c"], out["alpha_c_err"] = _mean_err(
            [r.alpha_c for r in rules], max((r.alpha_c_step for r in rules), default=0.0))
        out["alpha_l"], out["alpha_l_err"] = _mean_err(
            [r.alpha_l for r in rules], max((r.alpha_l_step for r in rules), default=0.0))
    # the branch ends: the bifurcations off the trivial point on every rule (the continuation's
    # end for the positional branch of a non-swap-symmetric A); continuation ends as diagnostics
    ends_by = {"semantic": b_sem, "positional": b_pos if swap_symmetric else pos_ends}
    for name, ends in ends_by.items():
        kinds = sorted({e[2] for e in ends})
        a, err = _mean_err([e[0] for e in ends], max((e[1] for e in ends
                                                      if np.isfinite(e[1])), default=0.0))
        out[f"alpha_spinodal_{name}"], out[f"alpha_spinodal_{name}_err"] = a, err
        out[f"{name}_end"] = "/".join(kinds) if kinds else "none"
        out[f"{name}_end_per_rule"] = [list(e) for e in ends]
    for name, ends in (("semantic", sem_ends), ("positional", pos_ends)):
        out[f"{name}_continuation_end"] = (f"{ends[0][2]} at {ends[0][0]:.4g} +- {ends[0][1]:.1g}"
                                           if ends and np.isfinite(ends[0][0]) else "none")
    out["eps_lin"] = linear_baseline_error(params)[0]
    out["rules"] = [{"seed": r.seed, "alpha_c": r.alpha_c, "alpha_l": r.alpha_l,
                     "alpha_l_branch": r.alpha_l_branch} for r in rules]
    out["curves"] = curves
    out["wall_time"] = time.perf_counter() - t0
    return out


def _thresholds_route(params, rules, s: PhaseDiagramSettings, ts):
    """``(refined or None, route)``: the refinement from the first rule, or, where it cannot
    run, the thresholds of the remaining ``rules`` scrambles added to ``rules`` (the mean over
    all of them is then the result) and the reason in ``route``."""
    from ..numerics.branches import BranchNotFound
    from ..numerics.quadrature import SobolRule
    from ..numerics.thresholds import ThresholdNotFound, thresholds_on_nodes
    fast = f"mean over {s.rules} scrambles of 2^{s.log2n}"
    if not s.refine_rules:
        return None, fast
    if math.isfinite(rules[0].alpha_c):
        try:
            return (_refined_thresholds(params, rules[0], s, ts),
                    f"refined on {s.refine_rules} folded scrambles of 2^{s.refine_log2n}")
        except (ThresholdNotFound, BranchNotFound) as exc:
            why = f"{fast} (refinement failed: {exc})"
    else:
        why = f"{fast} (alpha_c undefined: nothing to refine)"
    r = rules[0]
    for k in range(1, s.rules):
        nodes = SobolRule(s.log2n, s.seed + k).nodes()
        rules.append(thresholds_on_nodes(params, nodes, ts, seed=s.seed + k, alpha0=r.alpha_c,
                                         warm=(None if r.positional is None
                                               else r.positional.x, r.semantic.x)))
    return None, why


# ------------------------------------------------------------------------------------------
# files
# ------------------------------------------------------------------------------------------
def _point_path(out_dir: Path, omega: float) -> Path:
    return out_dir / "points" / f"omega={omega:.6f}.json"


#: keys every point file has (what resuming, the CSV and the figures rely on)
POINT_KEYS = ("omega", "status", "alpha_c", "alpha_l")
#: what to do about a damaged point file
POINT_REMEDY = "delete it to recompute that omega (rerun the same phase-diagram command)"


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def read_point(path) -> dict:
    """One point file, checked: a JSON object with :data:`POINT_KEYS`, a finite ``omega``
    that matches the file's name, numbers (or null) for ``alpha_c`` and ``alpha_l`` and
    ``curves`` (if any) holding both branches as lists of rows.  Anything else raises
    :class:`~symattn.runs.files.DamagedFile` naming the file and what to do."""
    path = Path(path)
    d = read_json(path, "out", POINT_REMEDY)

    def damaged(detail):
        return DamagedFile(path, detail, POINT_REMEDY)

    if not isinstance(d, dict):
        raise damaged(f"a point file holds a JSON object, not {type(d).__name__}")
    missing = [k for k in POINT_KEYS if k not in d]
    if missing:
        raise damaged(f"no {', '.join(missing)}")
    w = d["omega"]
    if not _number(w) or not math.isfinite(w):
        raise damaged(f"omega = {w!r} is not a number")
    if _point_path(path.parent.parent, w).name != path.name:
        raise damaged(f"it holds omega = {w!r}, not the omega of its name")
    for k in ("alpha_c", "alpha_l"):
        if d[k] is not None and not _number(d[k]):
            raise damaged(f"{k} = {d[k]!r} is not a number")
    curves = d.get("curves")
    if curves and not (isinstance(curves, dict) and all(
            isinstance(curves.get(b), list) and all(isinstance(r, dict) for r in curves[b])
            for b in ("semantic", "positional"))):
        raise damaged("its branch curves are not two lists of rows")
    return d


def load_points(out_dir) -> list:
    """All finished ``omega`` results in ``out_dir``, sorted by ``omega``, each checked by
    :func:`read_point` (a damaged file raises, naming it)."""
    pts = [read_point(p) for p in sorted((Path(out_dir) / "points").glob("*.json"))]
    return sorted(pts, key=lambda d: d["omega"])


def write_csv(out_dir) -> Path:
    """``phase_diagram.csv`` from the point files: :data:`CSV_COLUMNS`, or for a general
    model's points (they say which ``transition``)
    :data:`~symattn.experiments.general_phase_diagram.GENERAL_CSV_COLUMNS`."""
    from .general_phase_diagram import GENERAL_CSV_COLUMNS
    pts = load_points(out_dir)
    cols = GENERAL_CSV_COLUMNS if any("transition" in r for r in pts) else CSV_COLUMNS
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    for r in pts:
        w.writerow({k: r.get(k) for k in cols})
    return atomic_write_text(Path(out_dir) / "phase_diagram.csv", buf.getvalue())


def _metadata(params: ModelParams, settings: PhaseDiagramSettings, omegas) -> dict:
    return {"params": {k: v for k, v in params.as_dict().items() if k != "omega"},
            "settings": asdict(settings), "omegas": list(omegas), "versions": versions()}


#: what to do about a damaged metadata.json
META_REMEDY = ("delete it and rerun the same command: the saved points are kept (it records "
               "the model and settings they were computed with)")


def run_phase_diagram(params: ModelParams, omegas, out_dir, settings=PhaseDiagramSettings(),
                      executor: Executor | None = None, progress=None, task=phase_point,
                      note=None) -> list:
    """Compute the missing ``omega`` points into ``out_dir`` and return all of them.

    ``params.omega`` is ignored (the grid replaces it).  An existing ``out_dir`` must hold
    results for the same model and settings; otherwise :class:`ParameterError` is raised.
    ``progress(done, total, result)`` is called after each finished ``omega``; ``note(text)``
    (if given) is told how much a resumed run finds done (``resuming: 12 of 19 omegas already
    done in DIR``).

    ``out_dir`` is locked for the run (:func:`~symattn.runs.lock.output_lock`): a second run
    on it raises :class:`~symattn.runs.lock.OutputInUse`.  A damaged point file or
    ``metadata.json`` raises :class:`~symattn.runs.files.DamagedFile` naming it.
    ``executor`` defaults to :func:`~symattn.runs.executors.process_pool` (one worker per
    core, at most one per ``omega``), whose workers are terminated if the run is interrupted
    (``KeyboardInterrupt``); a caller's ``executor`` is left to the caller.
    """
    params = ModelParams.coerce(params)
    omegas = omega_grid(omegas)
    out_dir = Path(out_dir)
    with output_lock(out_dir):
        return _run_locked(params, omegas, out_dir, settings, executor, progress, task, note)


def _run_locked(params, omegas, out_dir: Path, settings, executor, progress, task, note):
    """:func:`run_phase_diagram` once the folder is locked."""
    meta = _metadata(params, settings, omegas)
    meta_path = out_dir / "metadata.json"
    if meta_path.exists():
        old = read_json(meta_path, "out", META_REMEDY)
        if not (isinstance(old, dict) and isinstance(old.get("omegas", []), list)
                and all(_number(w) for w in old.get("omegas", []))
                and _number(old.get("wall_time", 0.0))):
            raise DamagedFile(meta_path, "not the JSON object a phase diagram writes",
                              META_REMEDY)
        for key in ("params", "settings"):
            if old.get(key) != json.loads(json.dumps(meta[key])):
                raise ParameterError("out", f"{out_dir} holds a phase diagram with different "
                                            f"{key}: {old.get(key)}; use another --out")
        meta["omegas"] = sorted(set(old.get("omegas", [])) | set(meta["omegas"]))
        meta["wall_time"] = old.get("wall_time", 0.0)
    atomic_write_text(meta_path, json.dumps(meta, indent=2))
    done = {round(d["omega"], 9) for d in load_points(out_dir)}
    todo = [w for w in omegas if round(w, 9) not in done]
    if note and done:
        grid = {round(w, 9) for w in omegas}
        note(f"resuming: {len(grid & done)} of {len(grid)} omegas already done in {out_dir}")
    t0 = time.perf_counter()
    pdict = {k: v for k, v in params.as_dict().items() if k != "omega"}
    pdict["A"] = tuple(tuple(r) for r in pdict["A"])
    if todo:
        pool = (process_pool(min(len(todo), default_workers())) if executor is None
                else nullcontext(executor))
        with pool as ex:
            futures = [ex.submit(task, pdict, w, asdict(settings)) for w in todo]
            for k, fut in enumerate(as_completed(futures), start=1):
                res = fut.result()
                atomic_write_text(_point_path(out_dir, res["omega"]), json.dumps(res, default=float))
                write_csv(out_dir)
                if progress:
                    progress(len(done) + k, len(done) + len(todo), res, time.perf_counter() - t0)
    write_csv(out_dir)
    meta["wall_time"] = meta.get("wall_time", 0.0) + (time.perf_counter() - t0)
    atomic_write_text(meta_path, json.dumps(meta, indent=2))
    return load_points(out_dir)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use: symattn phase-diagram")
