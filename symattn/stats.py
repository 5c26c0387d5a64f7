"""Small statistics shared by every layer (numpy and scipy only; imports nothing from
symattn)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["mean_se", "t_halfwidth", "regression_estimate", "first_crossing", "bootstrap_crossing",
           "PowerLawFit", "fit_power_law"]


#: Least fraction of bootstrap resamplings that must cross inside the grid for their spread to be
#: reported as the crossing's error bar (:func:`bootstrap_crossing`).
MIN_BOOT_FRACTION = 0.9


def mean_se(x):
    """``(mean, standard error of the mean)`` of a sample.

    The standard error is ``std(ddof=1) / sqrt(n)``; it is ``nan`` for fewer than two values
    (and both are ``nan`` for an empty sample).
    """
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return math.nan, math.nan
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan
    return float(x.mean()), se


def t_halfwidth(se: float, n: int, level: float = 0.95) -> float:
    """Half-width of the Student-t confidence interval of a mean, at ``level``, from its
    standard error ``se`` over ``n`` values (``n - 1`` degrees of freedom): ``t_{(1 + level)/2,
    n - 1} * se``; 2.36 times ``se`` for 8 values at 95%.  ``nan`` for fewer than two values."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n < 2:
        return math.nan
    return float(stats.t.ppf(0.5 + level / 2, n - 1)) * se


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
    the fraction of resamplings with a crossing inside the grid.  ``(None, nan, 0)`` when there
    is no crossing.

    The error is ``nan`` (no error bar) with fewer than three seeds, or when fewer than
    :data:`MIN_BOOT_FRACTION` of the resamplings cross inside the grid: the spread of the rest
    then describes a selected few (with two seeds whose own curves do not cross, only the
    resamplings that repeat the full mean cross, and their spread is zero to rounding).
    """
    Y = np.asarray(Y, float)
    est = first_crossing(x, Y.mean(axis=0)) if Y.size else None
    K = Y.shape[0]
    if est is None or K < 3:
        return est, math.nan, 0.0
    rng = np.random.default_rng(seed)
    boots = [first_crossing(x, Y[idx].mean(axis=0)) for idx in rng.integers(0, K, (n_boot, K))]
    vals = np.array([b for b in boots if b is not None])
    fraction = vals.size / n_boot
    err = float(vals.std(ddof=1)) if fraction >= MIN_BOOT_FRACTION else math.nan
    return est, err, fraction


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
