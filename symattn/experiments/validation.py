r"""Theory against finite-size training, side by side (model page §5 and §6).

A validation run is a grid of sample complexities ``alpha``, dimensions ``d`` and seeds.

* **Simulation.**  One *task* is ``(d, alpha, seed)``: draw the teacher and the ``n = alpha d``
  training sentences of :func:`data_seed` ``(d, seed)`` once, minimise :math:`R(Q)` from both
  warm starts (semantic, :math:`Q = Q^*`; positional, :math:`Q = (1, \dots, 1)`; see
  :mod:`symattn.simulation.instances`) on that same data set and score both minima and the linear
  baseline on the same test sentences.  Comparisons between the two starts are therefore
  *paired*.  At fixed ``d`` a seed keeps its teacher (and first sentences) across ``alpha``, so
  curves in ``alpha`` are paired too; different ``d`` have independent data.  The number of
  seeds grows like ``1/d`` (:class:`ValidationGrid`), which equalises the standard errors.
* **Theory.**  Both branches (:func:`~symattn.numerics.branches.solve_branch`) on a fine
  ``alpha`` grid containing the simulation grid, on ``rules`` independent scrambled Sobol rules
  of ``2^log2n`` points (mean and standard error over rules), each branch continued along
  ``alpha`` from the first ``alpha`` where its cold start succeeds; a branch not found at an
  ``alpha`` (on any rule) is recorded as missing, never replaced.  ``alpha_c``, ``alpha_l`` and
  ``eps_lin`` from :func:`~symattn.numerics.thresholds.compute_thresholds` at the same settings.

Files in the output directory
-----------------------------
``run.json``
    model parameters, grid, settings, software versions;
``simulations.csv``
    one row per ``(d, alpha, seed, start)`` (:data:`SIM_COLUMNS`), appended
    (and fsync'ed) as each task completes;
``theory_rules.csv``
    one row per ``(log2n, rule, alpha, branch)`` (:data:`THEORY_COLUMNS`);
``theory.csv``
    per ``(alpha, branch)``: mean and standard error over rules (empty
    fields: branch not found);
``theory_thresholds.json``
    the theory's ``alpha_c``, ``alpha_l``, ``eps_lin`` with error bars;
``summary.csv``, ``fits.csv``, ``thresholds.csv``
    the statistics below;
``summary.md``, ``validation_*.png|pdf``
    the report and figures, rendered by :mod:`symattn.outputs.report` and
    :mod:`symattn.outputs.plots` from what :func:`summarise` returns.

A rerun with the same arguments skips every completed task (resumable; an interrupted run
loses at most the tasks in flight).  A run may be extended (more ``alphas``, ``ds`` or seeds);
one with different model parameters or simulation settings is refused.  The folder is locked
while a run works in it (``DIR/.lock``, :func:`symattn.runs.lock.output_lock`): a second run
is refused.  On resuming, a partial last line of a CSV (a killed run's) is dropped and the
run says so; a line damaged otherwise, or a damaged ``run.json`` or
``theory_thresholds.json``, is refused with its path and what to do.

Statistics
----------
* Per ``(d, alpha, start)``: mean :math:`\bar x` and standard error
  :math:`s / \sqrt{K}` over the ``K`` seeds, for each order parameter and error.
* **Gap**: :math:`\bar x - x_{\rm theory}` for the matching branch (semantic start against the
  semantic branch, positional against positional), with error
  :math:`\sqrt{{\rm se}_{\rm sim}^2 + {\rm se}_{\rm theory}^2}`.
* **Power law** of the gap against ``d``: weighted non-linear least squares of the *signed* gap,
  :math:`{\rm gap}(d) = c\,(d/d_0)^{-a}` (:func:`fit_power_law`).  Fitting signed values keeps
  points whose gap is compatible with zero in the fit with their proper weight (a fit of
  :math:`\log|{\rm gap}|` would be biased by them, or would have to drop them).
* **Control variate** (reported separately, labelled ``_cv``): the teacher norm
  :math:`t = |Q^*|^2/d` fluctuates by :math:`\sqrt{2/d}` from seed to seed and the order
  parameters follow it; since :math:`\mathbb{E}\,t = 1` exactly (iid :math:`N(0,1)` teacher), the
  least-squares regression of :math:`x` on :math:`t` evaluated at :math:`t = 1`
  (:func:`regression_estimate`) estimates the same :math:`\mathbb{E}\,x` with the
  teacher-norm part of the seed-to-seed variance removed.  The data are not changed.
* **Finite-size** ``alpha_c``: per seed :math:`D(\alpha) = \varepsilon_t^{\rm sem} - \varepsilon_t^{\rm pos}`
  (paired), where its mean over seeds first changes sign from positive to negative (linear
  interpolation between grid points, :func:`first_crossing`).  ``alpha_l``: same, for
  :math:`\varepsilon_g` of the minimum with the lower :math:`\varepsilon_t` (per seed) minus that
  seed's :math:`\varepsilon_{\rm lin}`.  Error bars: bootstrap over seeds (whole seeds resampled,
  so the pairing across starts and ``alpha`` is kept; :func:`bootstrap_crossing`).
"""

from __future__ import annotations

import math
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..model.checks import check_int, check_number
from ..model.params import ModelParams, ParameterError, check_alpha
from ..numerics.branches import BranchNotFound, solve_branch
from ..numerics.channel import OutputChannel
from ..numerics.observables import linear_baseline_error
from ..numerics.quadrature import SobolRule
from ..numerics.settings import NumericalSettings
from ..numerics.thresholds import ThresholdNotFound, compute_thresholds
from ..runs.executors import InProcess, as_completed_jobs, process_pool
from ..runs.files import DamagedFile, TidyCSV, read_json, write_json, write_rows
from ..runs.lock import output_lock
from ..runs.metadata import versions
from ..runs.progress import Progress
from ..simulation.instances import (PAIRED_STARTS, QUANTITIES, SIM_COLUMNS, SIM_TYPES, alpha_key,
                                    simulation_task)
from ..simulation.memory import MAX_D, check_memory, check_size
from ..stats import fit_power_law, first_crossing, bootstrap_crossing, mean_se, regression_estimate

__all__ = ["THEORY_COLUMNS", "ValidationGrid", "TheorySettings", "theory_alpha_grid", "theory_sweep",
           "run_validation", "summarise"]

#: Columns of ``theory_rules.csv`` (one row per ``(log2n, rule, alpha, branch)``).
THEORY_COLUMNS = ("log2n", "rule", "alpha", "branch", "found", "q", "m", "theta", "V", "eps_t",
                  "eps_g", "residual", "message")
THEORY_TYPES = {"log2n": int, "rule": int, "found": bool, "branch": str, "message": str}


# ------------------------------------------------------------------------------------------
# settings
@dataclass(frozen=True)
class ValidationGrid:
    """What to simulate: ``alphas`` x ``ds`` x seeds ``0..n_seeds(d)-1``, both starts per task.

    ``seeds`` is the number of seeds at the largest ``d``.  With ``scale_seeds`` (default), a
    smaller ``d`` gets ``round(seeds * d_max / d)`` seeds: the seed-to-seed spread of the order
    parameters is of order ``d^-1/2``, so the standard error of the seed mean,
    ``~ 1 / sqrt(K d)``, is then the same at every ``d``, and the finite-size gap (which
    shrinks faster) is resolved where it is largest.  Small ``d`` are cheap (a task costs
    ``~ alpha d^2``), so this adds little time.  ``scale_seeds=False``: ``seeds`` at every ``d``.
    """

    alphas: tuple = (1.0, 1.25, 1.5, 1.75, 2.0)
    ds: tuple = (250, 500, 1000, 2000, 4000)
    seeds: int = 8
    n_test: int = 10000     #: fresh test sentences per task (Monte Carlo eps_g, eps_lin)
    gtol: float = 1e-8      #: L-BFGS-B stop, ``max |grad R|`` (see symattn.simulation.general)
    scale_seeds: bool = True
    #: the positional warm start is ``positional_scale * (1, ..., 1)`` (``m = positional_scale``)
    positional_scale: float = 1.0

    def __post_init__(self):
        alphas = tuple(sorted({alpha_key(check_alpha(a, "alphas")) for a in self.alphas}))
        if not alphas:
            raise ParameterError("alphas", "need at least one alpha")
        ds = tuple(sorted({check_int("ds", d, 2, MAX_D) for d in self.ds}))
        if not ds:
            raise ParameterError("ds", "need at least one d")
        for d in ds:                         # every task has a training sentence and fits
            check_size(d, alphas[0], self.n_test, d_name="ds")
        check_int("seeds", self.seeds, 1)
        check_number("gtol", self.gtol, 0.0, lo_open=True)
        check_number("positional_scale", self.positional_scale, 0.0, lo_open=True)
        object.__setattr__(self, "alphas", alphas)
        object.__setattr__(self, "ds", ds)
        object.__setattr__(self, "seeds", int(self.seeds))

    def n_seeds(self, d: int) -> int:
        """Seeds at dimension ``d`` (class doc)."""
        if not self.scale_seeds:
            return self.seeds
        return max(self.seeds, int(round(self.seeds * max(self.ds) / d)))

    def tasks(self) -> list:
        """All ``(d, alpha, seed)``, cheapest first: by ``d``, then seed, then ``alpha``, so an
        interrupted run has complete ``alpha`` curves for the smaller ``d``."""
        return [(d, a, s) for d in self.ds for s in range(self.n_seeds(d)) for a in self.alphas]

    @staticmethod
    def cost(task) -> float:
        """Relative cost of a task: the data are ``alpha d^2`` numbers (plus a fixed overhead)."""
        d, a, _ = task
        return a * d * d + 2e5


#: The theory side's settings: ``rules`` scrambled Sobol rules of ``2^log2n`` points, residual
#: ``tol`` (the command line's defaults for ``validate`` are 2^13 points and 4 rules).
TheorySettings = NumericalSettings


def theory_alpha_grid(alphas, step: float = 0.05, margin: float = 0.25) -> list:
    """Fine grid for the theory curves: multiples of ``step`` covering the simulation grid
    with ``margin`` on each side, plus the simulation ``alphas`` themselves."""
    lo = max(step, min(alphas) - margin)
    hi = max(alphas) + margin
    k0, k1 = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return sorted({alpha_key(k * step) for k in range(k0, k1 + 1)} | {alpha_key(a) for a in alphas})


# ------------------------------------------------------------------------------------------
# the theory side (pure tasks, run in worker processes)
def _continue_branch(params, branch, alphas, channel, tol):
    """Solve ``branch`` on the sorted ``alphas``: cold starts upwards until one succeeds (the
    anchor), then continuation from the anchor, warm-starting each ``alpha`` from the last
    point found, upwards and downwards.  Returns ``{alpha: FixedPoint or BranchNotFound}``."""

    def solve(a, x0):
        try:
            return solve_branch(params, branch, a, channel, x0=x0, tol=tol)
        except BranchNotFound as exc:
            return exc

    out, anchor = {}, None
    for i, a in enumerate(alphas):
        out[a] = solve(a, None)
        if not isinstance(out[a], Exception):
            anchor = i
            break
    if anchor is None:
        return out
    for step in (1, -1):
        x0 = out[alphas[anchor]].x
        i = anchor + step
        while 0 <= i < len(alphas):
            r = solve(alphas[i], x0)
            if not isinstance(r, Exception) or alphas[i] not in out:
                out[alphas[i]] = r
            if not isinstance(r, Exception):
                x0 = r.x
            i += step
    return out


def theory_sweep(params: ModelParams, alphas, theory: NumericalSettings, rule: int) -> list:
    """Both branches at every ``alpha`` on the scrambled Sobol rule of seed ``rule`` with
    ``2^theory.log2n`` points; one row (keys :data:`THEORY_COLUMNS`) per ``(alpha, branch)``."""
    log2n, tol = theory.log2n, theory.tol
    channel = OutputChannel(params, SobolRule(log2n, rule).nodes(), gtol=theory.prox_tol)
    alphas = sorted(alpha_key(a) for a in alphas)
    rows = []
    for branch in ("positional", "semantic"):
        for a, r in sorted(_continue_branch(params, branch, alphas, channel, tol).items()):
            row = {"log2n": log2n, "rule": rule, "alpha": a, "branch": branch}
            if isinstance(r, Exception):
                row.update(found=False, message=str(r).replace("\n", " "))
            else:
                row.update(found=True, q=r.q, m=r.m, theta=r.theta, V=r.V, eps_t=r.eps_t,
                           eps_g=r.eps_g, residual=r.residual, message="")
            rows.append(row)
    return rows


def _thresholds_task(params: ModelParams, settings: TheorySettings) -> dict:
    """The theory's ``alpha_c``, ``alpha_l``, ``eps_lin``; the rules are solved in turn here."""
    eps_lin, eps_lin_err = linear_baseline_error(params)
    out = {"settings": asdict(settings), "params": params.as_dict(), "eps_lin": eps_lin,
           "eps_lin_err": eps_lin_err}
    try:
        th = compute_thresholds(params, settings, executor=InProcess())
    except (ThresholdNotFound, BranchNotFound) as exc:
        out["error"] = str(exc)
        return out
    out.update({k: getattr(th, k) for k in ("alpha_c", "alpha_c_err", "alpha_l", "alpha_l_err")})
    out["wall_time"] = th.wall_time
    return out


# ------------------------------------------------------------------------------------------
# the run
#: what to do about a damaged run.json
RUN_REMEDY = ("delete it and rerun the same command: the saved results are kept (it records "
              "the model and settings they were computed with)")
#: what to do about a damaged theory_thresholds.json
THRESHOLDS_REMEDY = "delete it to recompute the theory's thresholds (rerun the same command)"


def _read_run_json(path: Path) -> dict:
    """``run.json``, checked to be a JSON object (:class:`DamagedFile` naming it if not)."""
    old = read_json(path, "out", RUN_REMEDY)
    if not isinstance(old, dict) or not all(isinstance(old.get(k, {}), dict)
                                            for k in ("params", "simulation")):
        raise DamagedFile(path, "not the JSON object a validation writes", RUN_REMEDY)
    return old


def read_theory_thresholds(path: Path) -> dict:
    """``theory_thresholds.json``, checked: a JSON object with its ``settings``, a finite
    ``eps_lin`` and either an ``error`` message or finite ``alpha_c``, ``alpha_l`` with error
    bars (numbers, possibly infinite).  Anything else raises :class:`DamagedFile` naming the
    file and what to do."""
    th = read_json(path, "out", THRESHOLDS_REMEDY)

    def number(k):
        v = th.get(k)
        return (isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v)
                and (k.endswith("_err") or math.isfinite(v)))

    if not isinstance(th, dict) or not isinstance(th.get("settings"), dict):
        raise DamagedFile(path, "not the JSON object a validation writes", THRESHOLDS_REMEDY)
    keys = ("eps_lin",) + (() if "error" in th else
                           ("alpha_c", "alpha_c_err", "alpha_l", "alpha_l_err"))
    bad = [k for k in keys if not number(k)]
    if bad:
        raise DamagedFile(path, f"{', '.join(bad)}: missing or not a number", THRESHOLDS_REMEDY)
    return th


def _check_metadata(path: Path, meta: dict) -> None:
    """Refuse to resume into a directory whose run has other model or simulation settings."""
    if not path.exists():
        return
    old = _read_run_json(path)
    if old.get("params") != meta["params"]:
        diff = {k: (old.get("params", {}).get(k), v) for k, v in meta["params"].items()
                if old.get("params", {}).get(k) != v}
        what = ", ".join(f"{k} = {a} there, {b} here" for k, (a, b) in diff.items())
        raise ParameterError("out", f"{path.parent} holds a run with other model parameters "
                             f"({what}); use another --out")
    for k, v in meta["simulation"].items():
        was = old.get("simulation", {}).get(k, 1.0 if k == "positional_scale" else None)
        if was != v:
            raise ParameterError("out", f"{path.parent} holds a run with {k} = {was}, here {v}; "
                                 "use another --out")


def run_validation(params: ModelParams, grid: ValidationGrid, theory: TheorySettings, out: Path,
                   workers: int = 2, log=sys.stderr, argv=None, report=None, note=None) -> dict:
    """Run (or resume) a validation into ``out`` and write the summary; see the module doc.

    Returns the dict of :func:`summarise` plus ``"failed"`` (messages of tasks that raised).
    ``report(out, result, grid, theory)``, if given, renders the report and figures and returns
    the figure paths (``result["figures"]``); the command line passes
    :func:`symattn.outputs.report.write_validation_report`.  Progress goes to the stream
    ``log``; ``note(text)`` is told how much a resumed run finds done and what it repaired
    (default: a line on ``log``).

    ``out`` is locked for the run (:func:`~symattn.runs.lock.output_lock`): a second run on it
    raises :class:`~symattn.runs.lock.OutputInUse`.  Raises :class:`ParameterError` for an
    incompatible ``out`` and :class:`~symattn.runs.files.DamagedFile` for a damaged file in
    it.  ``KeyboardInterrupt`` leaves every completed task on disk and terminates the workers
    (:func:`~symattn.runs.executors.process_pool`, spawned) without waiting for their tasks.
    """
    params = ModelParams.coerce(params)
    check_int("workers", workers, 1)
    out = Path(out)
    check_memory(max(grid.ds), max(grid.alphas), copies=max(1, workers), name="ds")
    if note is None:
        def note(text):
            print(f"symattn validate: {text}", file=log, flush=True)
    with output_lock(out):
        return _run_locked(params, grid, theory, out, workers, log, argv, report, note)


def _run_locked(params, grid, theory, out: Path, workers, log, argv, report, note) -> dict:
    """:func:`run_validation` once ``out`` is locked."""
    meta = {"params": params.as_dict(),
            "simulation": {"n_test": grid.n_test, "gtol": grid.gtol,
                           "positional_scale": grid.positional_scale},
            "grid": {"alphas": list(grid.alphas), "ds": list(grid.ds), "seeds": grid.seeds,
                     "seeds_per_d": {str(d): grid.n_seeds(d) for d in grid.ds}},
            "theory": asdict(theory), "workers": workers, "versions": versions(),
            "command": argv}
    meta_path = out / "run.json"
    _check_metadata(meta_path, meta)
    old_meta = _read_run_json(meta_path) if meta_path.exists() else {}
    meta["created"] = old_meta.get("created", time.strftime("%Y-%m-%dT%H:%M:%S"))
    meta["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    write_json(meta_path, meta)

    sims = TidyCSV(out / "simulations.csv", SIM_COLUMNS, SIM_TYPES)
    rows = sims.load(note)
    by_task = {}
    for r in rows:
        by_task.setdefault((r["d"], alpha_key(r["alpha"]), r["seed"]), {})[r["start"]] = r
    complete = {k for k, v in by_task.items() if set(PAIRED_STARTS) <= set(v)}
    clean = [v[s] for k, v in by_task.items() if k in complete for s in PAIRED_STARTS]
    if len(clean) != len(rows):          # partial tasks or duplicates: drop them, rerun
        sims.rewrite(clean)
        note(f"repaired {sims.path}: dropped {len(rows) - len(clean)} row(s) of incomplete or "
             "repeated tasks (they are recomputed)")
    todo = [t for t in grid.tasks() if t not in complete]

    theo = TidyCSV(out / "theory_rules.csv", THEORY_COLUMNS, THEORY_TYPES)
    t_alphas = theory_alpha_grid(grid.alphas)
    have = {(r["log2n"], r["rule"], alpha_key(r["alpha"]), r["branch"]) for r in theo.load(note)}
    rules_todo = [k for k in range(theory.rules)
                  if any((theory.log2n, k, a, b) not in have for a in t_alphas
                         for b in ("positional", "semantic"))]
    th_path = out / "theory_thresholds.json"
    th_old = read_theory_thresholds(th_path) if th_path.exists() else None
    need_th = th_old is None or th_old.get("settings") != asdict(theory)
    n_tasks = len(grid.tasks())
    if rows or have or th_old is not None:
        note(f"resuming: {n_tasks - len(todo)} of {n_tasks} simulation tasks and "
             f"{theory.rules - len(rules_todo)} of {theory.rules} theory rules already done"
             f"{'' if need_th else ', thresholds too'} in {out}")

    print(f"symattn validate: {len(grid.tasks())} simulation tasks ({len(todo)} to run), "
          f"theory on {theory.rules} rules of 2^{theory.log2n} points "
          f"({len(rules_todo)} to run{', plus thresholds' if need_th else ''}); "
          f"{workers} worker(s); results in {out}", file=log, flush=True)
    failed = []
    # "spawn": fresh worker processes, whatever threads this process runs (fork can deadlock);
    # on an exception or interrupt the pool terminates its workers at once (WorkerPool)
    t_start = time.perf_counter()
    with process_pool(workers, spawn=True) if workers > 1 else nullcontext() as pool:
        # theory first: the thresholds (one task, its rules in turn) and one sweep per rule
        jobs = {"thresholds": (_thresholds_task, (params, theory))} if need_th else {}
        jobs.update({k: (theory_sweep, (params, t_alphas, theory, k))
                     for k in rules_todo})
        prog = Progress(len(jobs), len(jobs), log)
        for k, res, exc in as_completed_jobs(pool, jobs):
            what = "theory thresholds" if k == "thresholds" else f"theory rule {k}"
            if exc is not None:
                failed.append(f"{what}: {type(exc).__name__}: {exc}")
                prog.step(1, f"{what}: FAILED")
            elif k == "thresholds":
                write_json(th_path, res)
                prog.step(1, what + ": " + (
                    f"alpha_c = {res['alpha_c']:.4f} +- {res['alpha_c_err']:.1e}, alpha_l = "
                    f"{res['alpha_l']:.4f} +- {res['alpha_l_err']:.1e}" if "error" not in res
                    else res["error"]))
            else:
                theo.append([r for r in res
                             if (r["log2n"], r["rule"], r["alpha"], r["branch"]) not in have])
                prog.step(1, f"{what}: both branches at {len(t_alphas)} alphas")
        # simulations, cheapest first; each task's rows are on disk as soon as it completes
        if todo:
            prog = Progress(sum(map(grid.cost, todo)), len(todo), log)
            jobs = {t: (simulation_task, (params, *t, grid.n_test, grid.gtol, grid.positional_scale))
                    for t in todo}
            for (d, a, s), new, exc in as_completed_jobs(pool, jobs):
                if exc is not None:
                    failed.append(f"d = {d}, alpha = {a:g}, seed = {s}: {type(exc).__name__}: {exc}")
                    prog.step(grid.cost((d, a, s)), f"d = {d}, alpha = {a:g}, seed = {s}: FAILED")
                    continue
                sims.append(new)
                prog.step(grid.cost((d, a, s)), f"d = {d}, alpha = {a:g}, seed = {s} "
                          f"({new[0]['task_time']:.1f} s)")
    meta["wall_time_this_run"] = time.perf_counter() - t_start
    write_json(meta_path, meta)
    result = summarise(out, grid, theory)
    if report is not None:
        result["figures"] = report(out, result, grid, theory)
    result["failed"] = failed
    for msg in failed:
        print(f"symattn validate: task failed: {msg}", file=log)
    return result


# ------------------------------------------------------------------------------------------
# summary: the statistics of the module doc, as tables (CSV) and a dict for the renderers
def _theory_table(rows, t_alphas, theory: TheorySettings) -> dict:
    """``{(alpha, branch): {found, n_found, <k>, <k>_err}}`` over the ``theory.rules`` rules."""
    by = {}
    for r in rows:
        if r["log2n"] == theory.log2n and r["rule"] < theory.rules:
            by.setdefault((alpha_key(r["alpha"]), r["branch"]), {})[r["rule"]] = r
    table = {}
    for a in t_alphas:
        for b in ("positional", "semantic"):
            rs = list(by.get((a, b), {}).values())
            n_found = sum(bool(r["found"]) for r in rs)
            entry = {"alpha": a, "branch": b, "rules": len(rs), "n_found": n_found,
                     "found": len(rs) == theory.rules and n_found == len(rs)}
            for k in QUANTITIES + ("V",):
                entry[k], entry[k + "_err"] = (mean_se([r[k] for r in rs]) if entry["found"]
                                               else (None, None))
            table[(a, b)] = entry
    return table


def _sim_groups(rows, grid: ValidationGrid):
    """``{(d, alpha): {seed: {start: row}}}`` restricted to the grid and to complete tasks."""
    groups = {}
    alphas, ds = set(grid.alphas), set(grid.ds)
    for r in rows:
        a = alpha_key(r["alpha"])
        if r["d"] in ds and a in alphas and r["seed"] < grid.n_seeds(r["d"]):
            groups.setdefault((r["d"], a), {}).setdefault(r["seed"], {})[r["start"]] = r
    for g in groups.values():
        for s in [s for s, v in g.items() if not set(PAIRED_STARTS) <= set(v)]:
            del g[s]
    return groups


def _crossings(groups, grid: ValidationGrid, d: int):
    """Finite-size alpha_c and alpha_l at ``d`` (module doc) from seeds complete on all alphas."""
    per_alpha = [groups.get((d, a), {}) for a in grid.alphas]
    seeds = sorted(set.intersection(*(set(g) for g in per_alpha))) if per_alpha else []
    if len(seeds) < 2 or len(grid.alphas) < 2:
        return None
    D = np.array([[g[s]["semantic"]["eps_t"] - g[s]["positional"]["eps_t"] for g in per_alpha]
                  for s in seeds])
    L = np.array([[min(g[s].values(), key=lambda r: r["eps_t"])["eps_g"] - g[s]["semantic"]["eps_lin"]
                   for g in per_alpha] for s in seeds])
    ac, ac_err, ac_frac = bootstrap_crossing(grid.alphas, D)
    al, al_err, al_frac = bootstrap_crossing(grid.alphas, L)

    def where(Y):
        return "below the grid" if not Y.mean(axis=0)[0] > 0 else "above the grid"

    return {"d": d, "n_seeds": len(seeds), "alpha_c": ac, "alpha_c_err": ac_err,
            "alpha_c_boot_fraction": ac_frac, "alpha_l": al, "alpha_l_err": al_err,
            "alpha_l_boot_fraction": al_frac,
            "alpha_c_note": "" if ac is not None else where(D),
            "alpha_l_note": "" if al is not None else where(L),
            "delta_eps_t": [mean_se(col) for col in D.T],
            "global_eps_g_minus_eps_lin": [mean_se(col) for col in L.T]}


def _theory_on_grid(ttab, th, grid: ValidationGrid) -> dict:
    """The finite-size estimators applied to the theory's curves on the simulation grid: their
    difference from the theory's ``alpha_c``, ``alpha_l`` is the interpolation bias of the grid."""
    out = {"alpha_c": None, "alpha_l": None}
    sem = [ttab.get((a, "semantic"), {}) for a in grid.alphas]
    pos = [ttab.get((a, "positional"), {}) for a in grid.alphas]
    if len(grid.alphas) < 2 or not all(x.get("found") for x in sem + pos):
        return out
    out["alpha_c"] = first_crossing(grid.alphas, [s["eps_t"] - p["eps_t"] for s, p in zip(sem, pos)])
    if "eps_lin" in th:
        out["alpha_l"] = first_crossing(grid.alphas, [min((s, p), key=lambda r: r["eps_t"])["eps_g"]
                                                      - th["eps_lin"] for s, p in zip(sem, pos)])
    return out


def summarise(out: Path, grid: ValidationGrid, theory: TheorySettings) -> dict:
    """Statistics and tables from the files in ``out`` (see the module doc).

    Writes ``theory.csv``, ``summary.csv``, ``fits.csv`` and ``thresholds.csv``; returns
    ``{"summary", "theory", "fits", "thresholds", "theory_thresholds", "theory_on_grid",
    "figures"}`` (``figures`` empty: rendering is :mod:`symattn.outputs`' job).
    """
    out = Path(out)
    t_alphas = theory_alpha_grid(grid.alphas)
    ttab = _theory_table(TidyCSV(out / "theory_rules.csv", THEORY_COLUMNS, THEORY_TYPES).load(), t_alphas, theory)
    write_rows(out / "theory.csv", list(ttab.values()),
                ["alpha", "branch", "found", "n_found", "rules"]
                + [c for k in QUANTITIES + ("V",) for c in (k, k + "_err")])
    th_path = out / "theory_thresholds.json"
    th = read_theory_thresholds(th_path) if th_path.exists() else {}

    groups = _sim_groups(TidyCSV(out / "simulations.csv", SIM_COLUMNS, SIM_TYPES).load(), grid)
    summary = []
    for d in grid.ds:
        for a in grid.alphas:
            g = groups.get((d, a), {})
            if not g:
                continue
            for start in PAIRED_STARTS:
                rs = [v[start] for _, v in sorted(g.items())]
                t = [r["teacher_norm"] for r in rs]
                row = {"d": d, "alpha": a, "start": start, "n_seeds": len(rs),
                       "n_converged": sum(bool(r["converged"]) for r in rs)}
                for k in QUANTITIES + ("eps_lin", "teacher_norm", "iterations", "wall_time"):
                    row[k], row[k + "_err"] = mean_se([r[k] for r in rs])
                tv = ttab.get((a, start), {})
                for k in QUANTITIES:
                    x = [r[k] for r in rs]
                    row[k + "_cv"], row[k + "_cv_err"] = regression_estimate(x, t)
                    row["theory_" + k] = tv.get(k)
                    row["theory_" + k + "_err"] = tv.get(k + "_err")
                    for sfx in ("", "_cv"):
                        if tv.get("found") and row[k + sfx] is not None and np.isfinite(row[k + sfx]):
                            row["gap_" + k + sfx] = row[k + sfx] - tv[k]
                            row["gap_" + k + sfx + "_err"] = math.hypot(row[k + sfx + "_err"],
                                                                        tv[k + "_err"])
                        else:
                            row["gap_" + k + sfx] = row["gap_" + k + sfx + "_err"] = None
                summary.append(row)
    cols = ["d", "alpha", "start", "n_seeds", "n_converged"]
    for k in QUANTITIES:
        cols += [k, k + "_err", "theory_" + k, "theory_" + k + "_err", "gap_" + k, "gap_" + k + "_err",
                 k + "_cv", k + "_cv_err", "gap_" + k + "_cv", "gap_" + k + "_cv_err"]
    cols += ["eps_lin", "eps_lin_err", "teacher_norm", "teacher_norm_err", "iterations",
             "iterations_err", "wall_time", "wall_time_err"]
    write_rows(out / "summary.csv", summary, cols)

    fits = []
    for start in PAIRED_STARTS:
        for k in QUANTITIES:
            for sfx in ("", "_cv"):
                pts = [(r["d"], r["alpha"], r["gap_" + k + sfx], r["gap_" + k + sfx + "_err"])
                       for r in summary if r["start"] == start and r["gap_" + k + sfx] is not None]
                # one fit per alpha: the points at different d are independent (data_seed), while
                # those at one d share their teachers across alpha, so no fit pools the alphas
                for a in grid.alphas:
                    sel = [p for p in pts if p[1] == a]
                    f = fit_power_law([p[0] for p in sel], [p[2] for p in sel],
                                      [p[3] for p in sel])
                    if f is None:
                        continue
                    fits.append({"start": start, "quantity": k + sfx, "alpha": a,
                                 "exponent": f.exponent, "exponent_err": f.exponent_err,
                                 "chi2": f.chi2, "dof": f.dof, "n_points": f.n_points,
                                 "n_significant": f.n_significant, "d0": f.d0,
                                 "amplitude": f.amplitude[0], "amplitude_err": f.amplitude_err[0],
                                 "_fit": f})
    write_rows(out / "fits.csv", fits, ["start", "quantity", "alpha", "exponent", "exponent_err",
                                         "chi2", "dof", "n_points", "n_significant", "d0",
                                         "amplitude", "amplitude_err"])

    thresholds = [c for c in (_crossings(groups, grid, d) for d in grid.ds) if c is not None]
    grid_theory = _theory_on_grid(ttab, th, grid)
    write_rows(out / "thresholds.csv", thresholds,
                ["d", "n_seeds", "alpha_c", "alpha_c_err", "alpha_c_boot_fraction", "alpha_c_note",
                 "alpha_l", "alpha_l_err", "alpha_l_boot_fraction", "alpha_l_note"])
    result = {"summary": summary, "theory": ttab, "fits": fits, "thresholds": thresholds,
              "theory_thresholds": th, "theory_on_grid": grid_theory, "figures": []}
    return result


