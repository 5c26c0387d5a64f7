r"""Theory against finite-size training, side by side (MODEL.md sections 5 and 6).

A validation run is a grid of sample complexities ``alpha``, dimensions ``d`` and seeds.

* **Simulation.**  One *task* is ``(d, alpha, seed)``: draw the teacher and the ``n = alpha d``
  training sentences of :func:`data_seed` ``(d, seed)`` once, minimise :math:`R(Q)` from both
  warm starts (semantic, :math:`Q = Q^*`; positional, :math:`Q = (1, \dots, 1)`; see
  :mod:`symattn.simulation.train`) on that same data set and score both minima and the linear
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
``summary.csv``, ``fits.csv``, ``thresholds.csv``, ``summary.md``
    the statistics below;
``validation_*.png|pdf``
    the figures (:mod:`.plots`).

A rerun with the same arguments skips every completed task (resumable; an interrupted run
loses at most the tasks in flight).  A run may be extended (more ``alphas``, ``ds`` or seeds);
one with different model parameters or simulation settings is refused.

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

import csv
import io
import json
import math
import multiprocessing
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..model.params import ModelParams, ParameterError, check_alpha
from ..stats import mean_se

__all__ = [
    "QUANTITIES", "PAIRED_STARTS", "SIM_COLUMNS", "THEORY_COLUMNS",
    "ValidationGrid", "TheorySettings", "TidyCSV",
    "data_seed", "simulation_task", "theory_sweep", "theory_alpha_grid", "simulate_seeds",
    "mean_se", "regression_estimate", "first_crossing", "bootstrap_crossing",
    "PowerLawFit", "fit_power_law", "dataset_bytes", "check_memory",
    "run_validation", "summarise", "format_pm",
]

#: Quantities compared with the theory, in the order of the tables and figure panels.
QUANTITIES = ("m", "theta", "q", "eps_t", "eps_g")
#: The two warm starts of a paired task (MODEL.md section 6).
PAIRED_STARTS = ("semantic", "positional")

#: Columns of ``simulations.csv`` (one row per ``(d, alpha, seed, start)``).
#: ``teacher_norm`` is :math:`|Q^*|^2/d`; ``wall_time`` is the L-BFGS solve of this start;
#: ``task_time`` the whole task (data, both solves, test errors).
SIM_COLUMNS = ("d", "alpha", "seed", "data_seed", "start", "m", "theta", "q", "eps_t", "eps_g", "eps_g_err",
               "eps_lin", "eps_lin_err", "teacher_norm", "converged", "iterations", "grad_norm",
               "wall_time", "task_time")
#: Columns of ``theory_rules.csv`` (one row per ``(log2n, rule, alpha, branch)``).
THEORY_COLUMNS = ("log2n", "rule", "alpha", "branch", "found", "q", "m", "theta", "V", "eps_t",
                  "eps_g", "residual", "message")

_INT = {"d", "seed", "data_seed", "iterations", "rule", "log2n"}
_BOOL = {"converged", "found"}
_STR = {"start", "branch", "message"}


def data_seed(d: int, seed: int) -> int:
    """Seed of the data set of replica ``seed`` at dimension ``d``: ``10^6 d + seed``.

    Independent data for each ``d`` (the teacher is the first ``d`` draws of the seed's stream,
    so one seed for all ``d`` would correlate the teachers, hence the gaps, across ``d``), and
    the same data for every ``alpha`` at fixed ``d`` (paired curves in ``alpha``).
    """
    return 1_000_000 * int(d) + int(seed)


def _akey(alpha) -> float:
    """Canonical form of an ``alpha`` for matching rows (CSV round trips, float grids)."""
    return round(float(alpha), 10)


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
    gtol: float = 1e-8      #: L-BFGS-B stop, ``max |grad R|`` (see symattn.simulation.train)
    scale_seeds: bool = True
    #: the positional warm start is ``positional_scale * (1, ..., 1)`` (``m = positional_scale``)
    positional_scale: float = 1.0

    def __post_init__(self):
        alphas = tuple(sorted({_akey(check_alpha(a)) for a in self.alphas}))
        if not alphas:
            raise ParameterError("alphas", "need at least one alpha")
        ds = tuple(sorted({int(d) for d in self.ds}))
        if not ds or ds[0] < 2:
            raise ParameterError("ds", f"every d must be an integer >= 2, got {list(self.ds)}")
        if int(self.seeds) < 1:
            raise ParameterError("seeds", f"must be >= 1, got {self.seeds}")
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


@dataclass(frozen=True)
class TheorySettings:
    """Theory side: ``rules`` scrambled Sobol rules of ``2^log2n`` points, residual ``tol``."""

    log2n: int = 13
    rules: int = 4
    tol: float = 1e-10


def theory_alpha_grid(alphas, step: float = 0.05, margin: float = 0.25) -> list:
    """Fine grid for the theory curves: multiples of ``step`` covering the simulation grid
    with ``margin`` on each side, plus the simulation ``alphas`` themselves."""
    lo = max(step, min(alphas) - margin)
    hi = max(alphas) + margin
    k0, k1 = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return sorted({_akey(k * step) for k in range(k0, k1 + 1)} | {_akey(a) for a in alphas})


# ------------------------------------------------------------------------------------------
# memory
def dataset_bytes(d: int, alpha: float) -> int:
    """Bytes of the stored tokens ``Z`` of one data set (float32 above 1 GiB, as ``dtype="auto"``)."""
    from ..simulation.data import AUTO_FLOAT32_BYTES, n_sentences
    b = 8 * 2 * n_sentences(d, alpha) * d
    return b if b <= AUTO_FLOAT32_BYTES else b // 2


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(d: int, alpha: float, copies: int = 1, name: str = "d") -> None:
    """Raise :class:`ParameterError` (naming ``name``) if ``copies`` data sets of size
    ``(d, alpha)`` would not fit in the available memory (with 50 % headroom)."""
    need = 1.5 * copies * dataset_bytes(d, alpha)
    avail = _available_memory()
    if avail is not None and need > avail:
        raise ParameterError(name, f"d = {d} at alpha = {alpha:g} needs about {need / 2**30:.1f} GiB "
                             f"({copies} data set(s)), only {avail / 2**30:.1f} GiB available")


# ------------------------------------------------------------------------------------------
# crash-safe tidy CSV
def _fmt_cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else repr(float(v))
    return str(v)


def _parse_cell(col: str, text: str):
    if text == "":
        return None
    if col in _STR:
        return text
    if col in _BOOL:
        if text not in ("True", "False"):
            raise ValueError(text)
        return text == "True"
    if col in _INT:
        return int(text)
    return float(text)


class TidyCSV:
    """A CSV file of rows appended as they are produced.

    :meth:`append` writes whole lines, flushes and ``fsync``\\ s, so a killed run leaves at most
    one partial last line.  :meth:`load` repairs the file: a partial last line and unparsable
    lines are dropped, and if anything was dropped the clean rows are written back atomically
    (temporary file, then ``os.replace``).
    """

    def __init__(self, path: Path, columns: tuple):
        self.path = Path(path)
        self.columns = tuple(columns)

    def _write_all(self, rows) -> None:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(self.columns)
        for r in rows:
            w.writerow([_fmt_cell(r.get(c)) for c in self.columns])
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        with open(tmp, "w", newline="") as fh:
            fh.write(buf.getvalue())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    def load(self) -> list:
        """Rows as dicts (``None`` for empty fields); creates the file if needed."""
        if not self.path.exists():
            self._write_all([])
            return []
        text = self.path.read_text()
        lines = text.split("\n")
        partial = lines.pop() != ""           # text not ending in a newline: cut mid-write
        if not lines:
            self._write_all([])
            return []
        header = next(csv.reader([lines[0]]))
        if tuple(header) != self.columns:
            raise ParameterError("out", f"{self.path} has columns {header}, expected "
                                 f"{list(self.columns)}: not a file of this version of symattn")
        rows, bad = [], int(partial)
        for line in lines[1:]:
            try:
                cells = next(csv.reader([line]))
                if len(cells) != len(self.columns):
                    raise ValueError(line)
                rows.append({c: _parse_cell(c, t) for c, t in zip(self.columns, cells)})
            except (ValueError, StopIteration):
                bad += 1
        if bad:
            self._write_all(rows)
        return rows

    def rewrite(self, rows) -> None:
        """Replace the content atomically by ``rows``."""
        self._write_all(rows)

    def append(self, rows) -> None:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for r in rows:
            w.writerow([_fmt_cell(r.get(c)) for c in self.columns])
        with open(self.path, "a", newline="") as fh:
            fh.write(buf.getvalue())
            fh.flush()
            os.fsync(fh.fileno())


# ------------------------------------------------------------------------------------------
# the pure tasks (run in worker processes)
def simulation_task(params: ModelParams, d: int, alpha: float, seed: int, n_test: int = 2000,
                    gtol: float = 1e-8, positional_scale: float = 1.0) -> list:
    """One paired task: both warm starts on the data set ``data_seed(d, seed)``; one row per
    start, with the keys :data:`SIM_COLUMNS`.
    """
    from ..simulation import make_dataset, train_starts
    t0 = time.perf_counter()
    data = make_dataset(params, d, alpha, data_seed(d, seed))
    res = train_starts(data, PAIRED_STARTS, n_test=n_test, gtol=gtol,
                       positional_scale=positional_scale)
    teacher_norm = float(np.dot(data.Q_star, data.Q_star) / d)
    task_time = time.perf_counter() - t0
    rows = []
    for start in PAIRED_STARTS:
        r = res[start].as_dict()
        row = {c: r[c] for c in SIM_COLUMNS if c in r}
        row.update(d=int(d), alpha=_akey(alpha), seed=int(seed), data_seed=data.seed, start=start,
                   teacher_norm=teacher_norm, task_time=task_time)
        rows.append(row)
    return rows


def _continue_branch(params, branch, alphas, channel, tol):
    """Solve ``branch`` on the sorted ``alphas``: cold starts upwards until one succeeds (the
    anchor), then continuation from the anchor, warm-starting each ``alpha`` from the last
    point found, upwards and downwards.  Returns ``{alpha: FixedPoint or BranchNotFound}``."""
    from ..numerics.branches import BranchNotFound, solve_branch

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


def theory_sweep(params: ModelParams, alphas, log2n: int, rule: int, tol: float = 1e-10) -> list:
    """Both branches at every ``alpha`` on the scrambled Sobol rule ``rule`` of ``2^log2n``
    points; one row (keys :data:`THEORY_COLUMNS`) per ``(alpha, branch)``."""
    from ..numerics.channel import OutputChannel
    from ..numerics.quadrature import SobolRule
    channel = OutputChannel(params, SobolRule(log2n, rule).nodes(), gtol=max(tol * 1e-3, 1e-14))
    alphas = sorted(_akey(a) for a in alphas)
    rows = []
    for branch in ("positional", "semantic"):
        for a, r in sorted(_continue_branch(params, branch, alphas, channel, tol).items()):
            row = {"log2n": log2n, "rule": rule, "alpha": a, "branch": branch}
            if isinstance(r, Exception):
                row.update(found=False, message=str(r).replace("\n", " "))
            else:
                row.update(found=True, q=r.q, m=r.m, theta=r.theta, V=r.V, eps_t=r.eps_t,
                           eps_g=r.extra["eps_g"], residual=r.residual, message="")
            rows.append(row)
    return rows


class _InProcess:
    """``executor.map`` in the calling process: ``compute_thresholds`` inside one task."""

    @staticmethod
    def map(fn, *iterables):
        return map(fn, *iterables)


def _thresholds_task(params: ModelParams, settings: TheorySettings) -> dict:
    """The theory's ``alpha_c``, ``alpha_l``, ``eps_lin``; the rules are solved in turn here."""
    from ..numerics.branches import BranchNotFound
    from ..numerics.thresholds import ThresholdNotFound, ThresholdSettings, compute_thresholds
    from ..numerics.observables import linear_baseline_error
    ts = ThresholdSettings(log2_n=settings.log2n, n_rules=settings.rules, tol=settings.tol)
    eps_lin, eps_lin_err = linear_baseline_error(params)
    out = {"settings": asdict(settings), "params": params.as_dict(), "eps_lin": eps_lin,
           "eps_lin_err": eps_lin_err}
    try:
        th = compute_thresholds(params, ts, executor=_InProcess())
    except (ThresholdNotFound, BranchNotFound) as exc:
        out["error"] = str(exc)
        return out
    out.update({k: getattr(th, k) for k in ("alpha_c", "alpha_c_err", "alpha_l", "alpha_l_err")})
    out["wall_time"] = th.wall_time
    return out


# ------------------------------------------------------------------------------------------
# statistics
def regression_estimate(x, t, t_mean: float = 1.0):
    r"""Control-variate estimate of :math:`\mathbb{E}\,x` with a covariate of known mean.

    Least squares :math:`x_k = a + b\,(t_k - t_{\rm mean})` over the ``K`` seeds; returns
    ``(a, se_a)``, the fitted value at :math:`t = t_{\rm mean}` and its standard error
    :math:`s\,\sqrt{1/K + (\bar t - t_{\rm mean})^2 / S_{tt}}`, with :math:`s^2` the residual
    variance on ``K - 2`` degrees of freedom.  ``(nan, nan)`` for ``K < 3``.
    """
    x, t = np.asarray(x, float), np.asarray(t, float)
    K = x.size
    if K < 3:
        return math.nan, math.nan
    tc = t - t.mean()
    Stt = float(tc @ tc)
    if Stt == 0:
        return mean_se(x)
    b = float(tc @ (x - x.mean())) / Stt
    a = float(x.mean() + b * (t_mean - t.mean()))
    resid = x - x.mean() - b * tc
    s2 = float(resid @ resid) / (K - 2)
    return a, math.sqrt(s2 * (1.0 / K + (t.mean() - t_mean) ** 2 / Stt))


def first_crossing(x, y):
    """Smallest ``x`` where ``y`` goes from positive to non-positive, by linear interpolation
    between neighbouring grid points; ``None`` if ``y`` never does (e.g. it starts <= 0)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if y.size == 0 or not y[0] > 0:
        return None
    for i in range(y.size - 1):
        if y[i] > 0 >= y[i + 1]:
            return float(x[i] - y[i] * (x[i + 1] - x[i]) / (y[i + 1] - y[i]))
    return None


def bootstrap_crossing(x, Y, n_boot: int = 2000, seed: int = 0):
    """Crossing of the seed mean of ``Y`` (``(K, len(x))``, one row per seed), with a
    bootstrap error over seeds.

    Returns ``(estimate, error, fraction)``: :func:`first_crossing` of ``Y.mean(0)``, the
    standard deviation of the crossing over ``n_boot`` resamplings of whole seeds (rows), and
    the fraction of resamplings with a crossing inside the grid (if below 1, the error bar
    describes only those).  ``(None, nan, 0)`` when there is no crossing.
    """
    Y = np.asarray(Y, float)
    est = first_crossing(x, Y.mean(axis=0)) if Y.size else None
    K = Y.shape[0]
    if est is None or K < 2:
        return est, math.nan, 0.0
    rng = np.random.default_rng(seed)
    boots = [first_crossing(x, Y[idx].mean(axis=0)) for idx in rng.integers(0, K, (n_boot, K))]
    vals = np.array([b for b in boots if b is not None])
    err = float(vals.std(ddof=1)) if vals.size > 1 else math.nan
    return est, err, vals.size / n_boot


@dataclass(frozen=True)
class PowerLawFit:
    r"""Weighted least-squares fit of :math:`{\rm gap}(d) = c_g\,(d/d_0)^{-a}` (groups ``g``).

    ``exponent_err`` and ``amplitude_err`` are linearised standard errors, multiplied by
    :math:`\sqrt{\chi^2/\nu}` when that exceeds 1 (the model does not describe the data to
    within their error bars).  ``n_significant`` counts points with :math:`|{\rm gap}| > 2\,{\rm err}`.
    """

    exponent: float
    exponent_err: float
    amplitude: tuple
    amplitude_err: tuple
    d0: float
    chi2: float
    dof: int
    n_points: int
    n_significant: int

    def predict(self, d, group: int = 0):
        return self.amplitude[group] * (np.asarray(d, float) / self.d0) ** (-self.exponent)


def fit_power_law(d, gap, err, group=None, a0: float = 1.0):
    """Fit ``gap = c_g (d / d0)^(-a)`` by weighted non-linear least squares (see :class:`PowerLawFit`).

    ``d``, ``gap``, ``err``: 1-D arrays (points with non-finite values or ``err <= 0`` are
    dropped); ``group``: integer labels ``0..G-1`` sharing the exponent but not the amplitude
    (``None``: one group).  ``d0`` is the geometric mean of ``d``.  Returns ``None`` unless at
    least one degree of freedom remains (points > parameters), or if the fit fails.
    """
    from scipy.optimize import least_squares
    d, gap, err = (np.asarray(v, float) for v in (d, gap, err))
    g = np.zeros(d.size, int) if group is None else np.asarray(group, int)
    ok = np.isfinite(d) & np.isfinite(gap) & np.isfinite(err) & (err > 0) & (d > 0)
    d, gap, err, g = d[ok], gap[ok], err[ok], g[ok]
    groups = np.unique(g)
    g = np.searchsorted(groups, g)
    G = groups.size
    if d.size < G + 2:                   # at least one degree of freedom
        return None
    d0 = float(np.exp(np.mean(np.log(d))))

    def resid(p):
        return (p[1 + g] * (d / d0) ** (-p[0]) - gap) / err

    c0 = [float(np.average(gap[g == k], weights=err[g == k] ** -2)) for k in range(G)]
    best = None
    for a_start in (a0, 0.5, 2.0):       # a few starts: the exponent is weakly determined
        try:
            r = least_squares(resid, np.array([a_start] + c0), method="lm", max_nfev=2000)
        except (ValueError, RuntimeError):
            continue
        if best is None or r.cost < best.cost:
            best = r
    if best is None or not np.all(np.isfinite(best.x)):
        return None
    J = best.jac
    try:
        cov = np.linalg.inv(J.T @ J)
    except np.linalg.LinAlgError:
        cov = np.full((G + 1, G + 1), np.nan)
    chi2 = float(2 * best.cost)
    dof = int(d.size - G - 1)
    scale = math.sqrt(chi2 / dof) if dof > 0 and chi2 > dof else 1.0
    sd = np.sqrt(np.abs(np.diag(cov))) * scale
    return PowerLawFit(exponent=float(best.x[0]), exponent_err=float(sd[0]),
                       amplitude=tuple(float(c) for c in best.x[1:]),
                       amplitude_err=tuple(float(s) for s in sd[1:]), d0=d0, chi2=chi2, dof=dof,
                       n_points=int(d.size), n_significant=int(np.sum(np.abs(gap) > 2 * err)))


def format_pm(v, e, sig: int = 2) -> str:
    """``value(error)`` in the last digits, e.g. ``0.1346(12)`` for 0.13459 +- 0.0012;
    ``-`` for a missing value."""
    if v is None or not np.isfinite(v):
        return "–"
    if e is None or not np.isfinite(e) or e <= 0:
        return f"{v:.5g}"
    dec = max(0, sig - 1 - int(math.floor(math.log10(e))))
    return f"{v:.{dec}f}({round(e * 10 ** dec):d})"


# ------------------------------------------------------------------------------------------
# the simulate command (K paired instances)
def simulate_seeds(params: ModelParams, d: int, alpha: float, start: str, seeds: int,
                   n_test: int = 2000, gtol: float = 1e-8, progress=None) -> dict:
    """``seeds`` independent instances of ``start``: mean and standard error of every quantity.

    Instance ``k`` is the data set :func:`data_seed` ``(d, k)``, as in a validation run.

    For ``start`` semantic or positional the other warm start is trained on the same data set
    (:func:`simulation_task`), and the paired difference
    ``delta_eps_t = eps_t(semantic) - eps_t(positional)`` (negative: the semantic minimum is the
    lower one) is reported with its standard error, as are the other start's statistics
    (``paired``).  ``progress(k, K, seconds)`` is called after each seed.
    """
    from ..simulation import make_dataset, train_starts
    rows, t0 = [], time.perf_counter()
    for s in range(seeds):
        if start in PAIRED_STARTS:
            rows.append({r["start"]: r for r in simulation_task(params, d, alpha, s, n_test, gtol)})
        else:
            t1 = time.perf_counter()
            data = make_dataset(params, d, alpha, data_seed(d, s))
            r = train_starts(data, [start], n_test=n_test, gtol=gtol)[start].as_dict()
            r.update(seed=s, data_seed=data.seed,
                     teacher_norm=float(np.dot(data.Q_star, data.Q_star) / d),
                     task_time=time.perf_counter() - t1)
            rows.append({start: r})
        if progress:
            progress(s + 1, seeds, time.perf_counter() - t0)

    def stats(name):
        out = {}
        for k in QUANTITIES + ("eps_lin", "teacher_norm", "iterations", "wall_time"):
            out[k], out[k + "_err"] = mean_se([r[name][k] for r in rows])
        out["converged"] = all(bool(r[name]["converged"]) for r in rows)
        out["n_converged"] = sum(bool(r[name]["converged"]) for r in rows)
        return out

    data = {"d": int(d), "alpha": float(alpha), "start": start, "seeds": int(seeds),
            "n_test": int(n_test)}
    data.update(stats(start))
    if start in PAIRED_STARTS:
        other = PAIRED_STARTS[1 - PAIRED_STARTS.index(start)]
        delta = [r["semantic"]["eps_t"] - r["positional"]["eps_t"] for r in rows]
        data["delta_eps_t"], data["delta_eps_t_err"] = mean_se(delta)
        data["semantic_lower"] = sum(x < 0 for x in delta)
        data["paired"] = {other: stats(other)}
    data["instances"] = [{k: r[name][k] for k in SIM_COLUMNS if k in r[name]}
                         for r in rows for name in r]
    data["params"] = params.as_dict()
    data["wall_time"] = time.perf_counter() - t0
    return data


# ------------------------------------------------------------------------------------------
# the run
class _Progress:
    """Progress lines on a stream: task k/N, elapsed, ETA (weighted by the tasks' costs)."""

    def __init__(self, total_cost: float, n: int, stream=sys.stderr):
        self.total, self.n, self.done_cost, self.k = total_cost, n, 0.0, 0
        self.t0 = time.perf_counter()
        self.stream = stream

    @staticmethod
    def _hms(s: float) -> str:
        s = int(round(s))
        return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"

    def step(self, cost: float, what: str) -> None:
        self.k += 1
        self.done_cost += cost
        el = time.perf_counter() - self.t0
        eta = el * (self.total - self.done_cost) / self.done_cost if self.done_cost > 0 else 0.0
        print(f"  [{self.k}/{self.n}] {what}  elapsed {self._hms(el)}, ETA {self._hms(eta)}",
              file=self.stream, flush=True)


def _versions() -> dict:
    import matplotlib
    import scipy

    from .. import __version__
    return {"symattn": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "scipy": scipy.__version__, "matplotlib": matplotlib.__version__}


def _check_metadata(path: Path, meta: dict) -> None:
    """Refuse to resume into a directory whose run has other model or simulation settings."""
    if not path.exists():
        return
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        raise ParameterError("out", f"{path} exists but is not a readable run description") from None
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


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=float))
    os.replace(tmp, path)


def _as_completed(pool, jobs: dict):
    """Run ``fn(*args)`` for each ``key: (fn, args)`` of ``jobs``; yield ``(key, result,
    exception)`` as each finishes.  ``pool=None``: one after the other in this process."""
    if pool is None:
        for key, (fn, args) in jobs.items():
            try:
                res = fn(*args)
            except Exception as exc:  # noqa: BLE001 - handed to the caller
                yield key, None, exc
                continue
            yield key, res, None
        return
    futures = {pool.submit(fn, *args): key for key, (fn, args) in jobs.items()}
    for f in as_completed(futures):
        exc = f.exception()
        yield futures[f], (None if exc else f.result()), exc


def run_validation(params: ModelParams, grid: ValidationGrid, theory: TheorySettings, out: Path,
                   workers: int = 2, log=sys.stderr, argv=None, make_plots: bool = True) -> dict:
    """Run (or resume) a validation into ``out`` and write the summary; see the module doc.

    Returns the dict of :func:`summarise` plus ``"failed"`` (messages of tasks that raised).
    Raises :class:`ParameterError` for an incompatible ``out``; ``KeyboardInterrupt`` leaves
    every completed task on disk.
    """
    out = Path(out)
    check_memory(max(grid.ds), max(grid.alphas), copies=max(1, workers), name="ds")
    if out.exists() and not out.is_dir():
        raise ParameterError("out", f"{out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError("out", f"cannot create {out}: {exc.strerror}") from None
    meta = {"params": params.as_dict(),
            "simulation": {"n_test": grid.n_test, "gtol": grid.gtol,
                           "positional_scale": grid.positional_scale},
            "grid": {"alphas": list(grid.alphas), "ds": list(grid.ds), "seeds": grid.seeds,
                     "seeds_per_d": {str(d): grid.n_seeds(d) for d in grid.ds}},
            "theory": asdict(theory), "workers": workers, "versions": _versions(),
            "command": argv}
    meta_path = out / "run.json"
    _check_metadata(meta_path, meta)
    old_meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta["created"] = old_meta.get("created", time.strftime("%Y-%m-%dT%H:%M:%S"))
    meta["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    _write_json(meta_path, meta)

    sims = TidyCSV(out / "simulations.csv", SIM_COLUMNS)
    rows = sims.load()
    by_task = {}
    for r in rows:
        by_task.setdefault((r["d"], _akey(r["alpha"]), r["seed"]), {})[r["start"]] = r
    complete = {k for k, v in by_task.items() if set(PAIRED_STARTS) <= set(v)}
    clean = [v[s] for k, v in by_task.items() if k in complete for s in PAIRED_STARTS]
    if len(clean) != len(rows):          # partial tasks or duplicates: drop them, rerun
        sims.rewrite(clean)
    todo = [t for t in grid.tasks() if t not in complete]

    theo = TidyCSV(out / "theory_rules.csv", THEORY_COLUMNS)
    t_alphas = theory_alpha_grid(grid.alphas)
    have = {(r["log2n"], r["rule"], _akey(r["alpha"]), r["branch"]) for r in theo.load()}
    rules_todo = [k for k in range(theory.rules)
                  if any((theory.log2n, k, a, b) not in have for a in t_alphas
                         for b in ("positional", "semantic"))]
    th_path = out / "theory_thresholds.json"
    th_old = json.loads(th_path.read_text()) if th_path.exists() else None
    need_th = th_old is None or th_old.get("settings") != asdict(theory)

    print(f"symattn validate: {len(grid.tasks())} simulation tasks ({len(todo)} to run), "
          f"theory on {theory.rules} rules of 2^{theory.log2n} points "
          f"({len(rules_todo)} to run{', plus thresholds' if need_th else ''}); "
          f"{workers} worker(s); results in {out}", file=log, flush=True)
    failed = []
    # "spawn": fresh worker processes, whatever threads this process runs (fork can deadlock)
    pool = (ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
            if workers > 1 else None)
    t_start = time.perf_counter()
    try:
        # theory first: the thresholds (one task, its rules in turn) and one sweep per rule
        jobs = {"thresholds": (_thresholds_task, (params, theory))} if need_th else {}
        jobs.update({k: (theory_sweep, (params, t_alphas, theory.log2n, k, theory.tol))
                     for k in rules_todo})
        prog = _Progress(len(jobs), len(jobs), log)
        for k, res, exc in _as_completed(pool, jobs):
            what = "theory thresholds" if k == "thresholds" else f"theory rule {k}"
            if exc is not None:
                failed.append(f"{what}: {type(exc).__name__}: {exc}")
                prog.step(1, f"{what}: FAILED")
            elif k == "thresholds":
                _write_json(th_path, res)
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
            prog = _Progress(sum(map(grid.cost, todo)), len(todo), log)
            jobs = {t: (simulation_task, (params, *t, grid.n_test, grid.gtol, grid.positional_scale))
                    for t in todo}
            for (d, a, s), new, exc in _as_completed(pool, jobs):
                if exc is not None:
                    failed.append(f"d = {d}, alpha = {a:g}, seed = {s}: {type(exc).__name__}: {exc}")
                    prog.step(grid.cost((d, a, s)), f"d = {d}, alpha = {a:g}, seed = {s}: FAILED")
                    continue
                sims.append(new)
                prog.step(grid.cost((d, a, s)), f"d = {d}, alpha = {a:g}, seed = {s} "
                          f"({new[0]['task_time']:.1f} s)")
    except BaseException:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    if pool is not None:
        pool.shutdown()
    meta["wall_time_this_run"] = time.perf_counter() - t_start
    _write_json(meta_path, meta)
    result = summarise(out, grid, theory, make_plots=make_plots)
    result["failed"] = failed
    for msg in failed:
        print(f"symattn validate: task failed: {msg}", file=log)
    return result


# ------------------------------------------------------------------------------------------
# summary
def _theory_table(rows, t_alphas, theory: TheorySettings) -> dict:
    """``{(alpha, branch): {found, n_found, <k>, <k>_err}}`` over the ``theory.rules`` rules."""
    by = {}
    for r in rows:
        if r["log2n"] == theory.log2n and r["rule"] < theory.rules:
            by.setdefault((_akey(r["alpha"]), r["branch"]), {})[r["rule"]] = r
    table = {}
    for a in t_alphas:
        for b in ("positional", "semantic"):
            rs = list(by.get((a, b), {}).values())
            n_found = sum(bool(r["found"]) for r in rs)
            entry = {"alpha": a, "branch": b, "n_rules": len(rs), "n_found": n_found,
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
        a = _akey(r["alpha"])
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


def summarise(out: Path, grid: ValidationGrid, theory: TheorySettings, make_plots: bool = True) -> dict:
    """Statistics, tables and figures from the files in ``out`` (see the module doc).

    Writes ``theory.csv``, ``summary.csv``, ``fits.csv``, ``thresholds.csv``, ``summary.md`` and
    (``make_plots``) the figures; returns ``{"summary", "theory", "fits", "thresholds",
    "theory_thresholds", "figures"}``.
    """
    out = Path(out)
    t_alphas = theory_alpha_grid(grid.alphas)
    ttab = _theory_table(TidyCSV(out / "theory_rules.csv", THEORY_COLUMNS).load(), t_alphas, theory)
    _write_rows(out / "theory.csv", list(ttab.values()),
                ["alpha", "branch", "found", "n_found", "n_rules"]
                + [c for k in QUANTITIES + ("V",) for c in (k, k + "_err")])
    th_path = out / "theory_thresholds.json"
    th = json.loads(th_path.read_text()) if th_path.exists() else {}

    groups = _sim_groups(TidyCSV(out / "simulations.csv", SIM_COLUMNS).load(), grid)
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
    _write_rows(out / "summary.csv", summary, cols)

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
    _write_rows(out / "fits.csv", fits, ["start", "quantity", "alpha", "exponent", "exponent_err",
                                         "chi2", "dof", "n_points", "n_significant", "d0",
                                         "amplitude", "amplitude_err"])

    thresholds = [c for c in (_crossings(groups, grid, d) for d in grid.ds) if c is not None]
    grid_theory = _theory_on_grid(ttab, th, grid)
    _write_rows(out / "thresholds.csv", thresholds,
                ["d", "n_seeds", "alpha_c", "alpha_c_err", "alpha_c_boot_fraction", "alpha_c_note",
                 "alpha_l", "alpha_l_err", "alpha_l_boot_fraction", "alpha_l_note"])
    result = {"summary": summary, "theory": ttab, "fits": fits, "thresholds": thresholds,
              "theory_thresholds": th, "theory_on_grid": grid_theory, "figures": []}
    (out / "summary.md").write_text(_markdown(result, grid, theory, out))
    if make_plots:
        from . import plots
        result["figures"] = plots.make_figures(result, grid, out)
    return result


def _write_rows(path: Path, rows, columns) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_fmt_cell(r.get(c)) for c in columns])
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(buf.getvalue())
    os.replace(tmp, path)


def _z(gap, err) -> str:
    if gap is None or err is None or not np.isfinite(err) or err <= 0:
        return ""
    return f"{gap / err:+.1f}"


def _markdown(res: dict, grid: ValidationGrid, theory: TheorySettings, out: Path) -> str:
    meta = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
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
