r"""Independent instances of finite-size training at the paper's shape, tabulated in the
paper's scalar units: paired warm starts on one data set, and the mean and standard error over
seeds (model page §6).

The simulator is :mod:`symattn.simulation.general`, given ``ModelParams()`` (``L = 2``,
``r = r_t = 1``, :math:`\Pi = [[1, -1], [-1, 1]]`); this module only turns its matrices into the
paper's scalars (:func:`paper_order_parameters`: ``m = M[0, 0]``, ``theta = theta[0, 0]``,
``q = q[0, 0]``, ``teacher_norm`` :math:`= |Q^*|^2/d`) and tabulates them.

One *instance* is the data set :func:`~symattn.simulation.general.data_seed` ``(d, seed)``: a
teacher and ``n = alpha d`` training sentences.  :func:`simulation_task` minimises :math:`R(Q)`
from both warm starts on it (:data:`PAIRED_STARTS`) and scores both minima and the linear
baseline on the same test sentences, so comparisons between the starts are paired.  :func:`simulate_seeds` runs ``K``
instances and reports means and standard errors (the ``simulate`` command at the paper's
shape); the validation runs (:mod:`symattn.experiments.validation`) call
:func:`simulation_task` task by task.
"""

from __future__ import annotations

import math
import time

from ..model.params import ModelParams
from ..stats import mean_se
from .general import PAIRED_STARTS, _json_safe, data_seed, make_dataset, train_starts

__all__ = ["QUANTITIES", "PAIRED_STARTS", "SIM_COLUMNS", "SIM_TYPES", "data_seed", "alpha_key",
           "paper_order_parameters", "simulation_task", "simulate_seeds", "SimulationSummary"]

#: Quantities compared with the theory, in the order of the tables and figure panels.
QUANTITIES = ("m", "theta", "q", "eps_t", "eps_g")

#: Columns of a validation's ``simulations.csv`` (one row per ``(d, alpha, seed, start)``).
#: ``teacher_norm`` is :math:`|Q^*|^2/d`; ``wall_time`` is the L-BFGS solve of this start;
#: ``task_time`` the whole task (data, both solves, test errors).
SIM_COLUMNS = ("d", "alpha", "seed", "data_seed", "start", "m", "theta", "q", "eps_t", "eps_g", "eps_g_err",
               "eps_lin", "eps_lin_err", "teacher_norm", "converged", "iterations", "grad_norm",
               "wall_time", "task_time")
#: Column types of :data:`SIM_COLUMNS` other than float (for :class:`symattn.runs.TidyCSV`).
SIM_TYPES = {"d": int, "seed": int, "data_seed": int, "iterations": int, "converged": bool,
             "start": str}
#: The columns copied from a :class:`~symattn.simulation.general.SimulationResult` as they are.
_SCALARS = ("eps_t", "eps_g", "eps_g_err", "eps_lin", "eps_lin_err", "converged", "iterations",
            "grad_norm", "wall_time")


def alpha_key(alpha) -> float:
    """Canonical form of an ``alpha`` for matching rows (CSV round trips, float grids)."""
    return round(float(alpha), 10)


def paper_order_parameters(op) -> dict:
    r"""The paper's scalar order parameters (model page §3) from the matrices of
    :func:`~symattn.simulation.general.order_parameters` (or of a result, or its ``as_dict()``)
    at the paper's shape:

    :math:`m = p_1 \cdot Q/d` ``= M[0][0]`` (and ``M[1][0] = -m``, since :math:`p_2 = -p_1`),
    :math:`\theta = \sigma^2 Q \cdot Q^*/d` ``= theta[0][0]``, :math:`q = \sigma^2 |Q|^2/d`
    ``= q[0][0]``.  Raises ``ValueError`` for another shape (``M`` not ``2 x 1``, ``theta`` not
    ``1 x 1``).
    """
    M, theta = op["M"], op["theta"]
    if len(M) != 2 or len(M[0]) != 1 or len(theta) != 1 or len(theta[0]) != 1:
        raise ValueError("paper_order_parameters needs the paper's shape (L = 2, r = r_t = 1)")
    return {"m": float(M[0][0]), "theta": float(theta[0][0]), "q": float(op["q"][0][0])}


def _task_rows(params: ModelParams, d: int, alpha: float, seed: int, starts, n_test: int,
               gtol: float, positional_scale: float) -> list:
    """``starts`` trained on the data set ``data_seed(d, seed)``; one row per start, with the
    keys :data:`SIM_COLUMNS`, in the paper's scalars."""
    params = ModelParams.coerce(params).require_paper_shape("the paper's simulation table")
    t0 = time.perf_counter()
    data = make_dataset(params, d, alpha, data_seed(d, seed))
    res = train_starts(data, starts, n_test=n_test, gtol=gtol, positional_scale=positional_scale)
    task_time = time.perf_counter() - t0
    rows = []
    for start in starts:
        r = res[start]
        rows.append({"d": int(d), "alpha": alpha_key(alpha), "seed": int(seed),
                     "data_seed": data.seed, "start": start,
                     **paper_order_parameters(vars(r)), **{k: getattr(r, k) for k in _SCALARS},
                     "teacher_norm": float(r.teacher_norm[0, 0]), "task_time": task_time})
    return [{c: row[c] for c in SIM_COLUMNS} for row in rows]


def simulation_task(params: ModelParams, d: int, alpha: float, seed: int, n_test: int = 2000,
                    gtol: float = 1e-8, positional_scale: float = 1.0) -> list:
    """One paired task: both warm starts on the data set ``data_seed(d, seed)``; one row per
    start, with the keys :data:`SIM_COLUMNS`.
    """
    return _task_rows(params, d, alpha, seed, PAIRED_STARTS, n_test, gtol, positional_scale)


def simulate_seeds(params: ModelParams, d: int, alpha: float, start: str, seeds: int,
                   n_test: int = 2000, gtol: float = 1e-8, progress=None) -> dict:
    """``seeds`` independent instances of ``start``: mean and standard error of every quantity.

    Instance ``k`` is the data set :func:`~symattn.simulation.general.data_seed` ``(d, k)``, as in
    a validation run.

    For ``start`` semantic or positional the other warm start is trained on the same data set
    (:func:`simulation_task`), and the paired difference
    ``delta_eps_t = eps_t(semantic) - eps_t(positional)`` (negative: the semantic minimum is the
    lower one) is reported with its standard error, as are the other start's statistics
    (``paired``).  ``progress(k, K, seconds)`` is called after each seed.
    """
    starts = PAIRED_STARTS if start in PAIRED_STARTS else (start,)
    rows, t0 = [], time.perf_counter()
    for s in range(seeds):
        rows.append({r["start"]: r
                     for r in _task_rows(params, d, alpha, s, starts, n_test, gtol, 1.0)})
        if progress:
            progress(s + 1, seeds, time.perf_counter() - t0)

    def stats(name):
        out = {}
        for k in QUANTITIES + ("eps_lin", "teacher_norm", "iterations", "wall_time"):
            out[k], out[k + "_err"] = mean_se([r[name][k] for r in rows])
        out["converged"] = all(bool(r[name]["converged"]) for r in rows)
        out["n_converged"] = sum(bool(r[name]["converged"]) for r in rows)
        return out

    data = SimulationSummary(d=int(d), alpha=float(alpha), start=start, seeds=int(seeds),
                             n_test=int(n_test))
    data.update(stats(start))
    if start in PAIRED_STARTS:
        other = PAIRED_STARTS[1 - PAIRED_STARTS.index(start)]
        delta = [r["semantic"]["eps_t"] - r["positional"]["eps_t"] for r in rows]
        data["delta_eps_t"], data["delta_eps_t_err"] = mean_se(delta)
        data["semantic_lower"] = sum(x < 0 for x in delta)
        data["paired"] = {other: stats(other)}
    data["instances"] = [dict(r[name]) for r in rows for name in r]
    data["params"] = params.as_dict()
    data["wall_time"] = time.perf_counter() - t0
    return data


class SimulationSummary(dict):
    """What :func:`simulate_seeds` returns: a dict (the JSON of ``symattn simulate --json``, with
    ``nan`` for undefined errors) that prints as a table in a notebook.

    Keys: ``d, alpha, start, seeds, n_test``; for each quantity ``k`` of :data:`QUANTITIES` and
    ``eps_lin, teacher_norm, iterations, wall_time``: ``k`` and ``k_err`` (mean and standard
    error over seeds); ``converged``, ``n_converged``; for a paired start also ``delta_eps_t``,
    ``delta_eps_t_err``, ``semantic_lower`` and ``paired`` (the other start's statistics);
    ``instances`` (one row per seed and start), ``params``, ``wall_time``.
    """

    def failures(self) -> str:
        """Why these numbers are not minima, or ``""``: instances whose L-BFGS-B solve stopped
        above the gradient tolerance, and quantities that are not finite (e.g. an overflowed
        risk).  ``symattn simulate`` exits with status 3 when this is not empty."""
        bad = [f"{r['start']} seed {r['seed']}" for r in self["instances"]
               if not r["converged"]]
        nonfinite = sorted({k for r in self["instances"] for k in QUANTITIES + ("eps_lin",)
                            if not math.isfinite(r[k])})
        parts = []
        if bad:
            parts.append(f"{len(bad)} of {len(self['instances'])} minimisations did not converge "
                         f"(gradient above the tolerance: {', '.join(bad[:4])}"
                         f"{', ...' if len(bad) > 4 else ''})")
        if nonfinite:
            parts.append(f"not finite: {', '.join(nonfinite)}")
        return "; ".join(parts) + ("; these numbers are not minima" if parts else "")

    def to_dict(self) -> dict:
        """A plain dict, ``nan`` as ``None`` (the command line's JSON)."""
        return _json_safe(dict(self))

    def __repr__(self) -> str:
        n = self["seeds"]
        cols = [self["start"]] + list(self.get("paired", {}))
        stats = [self] + list(self.get("paired", {}).values())
        lines = [f"SimulationSummary({self['start']} start, d = {self['d']}, alpha = "
                 f"{self['alpha']:g}; mean ± standard error over {n} seed(s))",
                 f"  {'':13s}" + "".join(f"{c + ' start':>26s}" for c in cols)]
        for k in QUANTITIES + ("eps_lin", "teacher_norm", "iterations", "wall_time"):
            lines.append(f"  {k:13s}" + "".join(f"{st[k]:>14.7g} ± {st[k + '_err']:8.1e}"
                                                for st in stats))
        lines.append(f"  {'converged':13s}" + "".join(
            f"{str(st['n_converged']) + '/' + str(n):>26s}" for st in stats))
        if "delta_eps_t" in self:
            lines.append(f"  paired eps_t(semantic) - eps_t(positional) = "
                         f"{self['delta_eps_t']:.4e} ± {self['delta_eps_t_err']:.1e} "
                         f"(semantic lower in {self['semantic_lower']}/{n} seeds)")
        return "\n".join(lines)

