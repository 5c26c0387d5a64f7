r"""All fixed points of the general model at one ``alpha``, not just the pinned branches
(model page §7).

:func:`find_fixed_points` solves the saddle-point map (:func:`~symattn.numerics.general.solve_general`)
from a set of starts covering the order-parameter space (:func:`search_starts`): semantic
(``theta`` along the first axis, ``M = 0``), positional (``M`` along each leading eigenvector of
``Pi``, ``theta = 0``, also pinned at ``theta = 0``, an exact invariant; and pinned along each
token's encoding and each difference of two where those are new directions, as in a
degenerate eigenspace of ``Pi``), mixed (both; for
``r > 1`` ``theta`` and ``M`` in different columns of the rank space), and ``random`` ones.
Converged solutions are merged when their gauge-fixed order parameters agree to ``merge_tol``
(default ``2e-3``: a rule of ``2^12`` points breaks the sign symmetry ``Q -> -Q`` enough to move
the two copies of one fixed point apart by ``2e-4`` in ``theta``, measured on the appendix
matrix);
each distinct fixed point is reported with its character, ``eps_t``, ``Phi``, residual, the
number of starts that reached it and its RS-stability report
(:func:`~symattn.numerics.general_stability.general_rs_stability`, on the same rule), and the one
with the lowest ``eps_t`` is the replica-symmetric prediction for the global minimum of the
training loss.

Character of a fixed point (``tiny`` = :data:`TINY`): *semantic* if ``|theta| > tiny`` and
``|M| <= tiny``; *positional* if the reverse; *mixed* if both; *trivial* if neither.  ``TINY``
is ``5e-3``, not zero: on one rule the symmetries that make ``M = 0`` or ``theta = 0`` exact hold
only up to the rule's error, and the unpinned fixed points carry such components (measured on
``2^12`` points: ``|M|`` about ``2e-4`` at the semantic fixed point of the appendix matrix, and
``theta`` up to ``6e-3`` at the positional one of ``L = 3``, whose pinned twin has ``eps_t``
within ``2e-6``).  Whether such a component is real is a question for more points and
scrambles, not for this label.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import ModelParams
from .coordinates import InvalidOrderParameters
from .general import (GeneralChannel, GeneralFixedPoint,
                      OrderParameters, solve_general)
from .general_stability import general_rs_stability

__all__ = ["FoundFixedPoint", "search_starts", "find_fixed_points", "character"]

TINY = 5e-3


def character(x: OrderParameters, tiny: float = TINY) -> str:
    """``semantic``, ``positional``, ``mixed`` or ``trivial`` (module doc)."""
    sem = float(np.abs(x.theta).max()) > tiny
    pos = float(np.abs(x.M).max()) > tiny
    return {(True, False): "semantic", (False, True): "positional", (True, True): "mixed",
            (False, False): "trivial"}[(sem, pos)]


@dataclass
class FoundFixedPoint:
    """A distinct fixed point of :func:`find_fixed_points`."""

    fixed_point: GeneralFixedPoint
    character: str
    starts: list = field(default_factory=list)
    global_minimum: bool = False

    @property
    def eps_t(self) -> float:
        return self.fixed_point.eps_t

    def as_dict(self) -> dict:
        return {"character": self.character, "global_minimum": self.global_minimum,
                "starts": self.starts, **self.fixed_point.as_dict()}


def search_starts(params: ModelParams, n_random: int = 4, seed: int = 0,
                  V0: float = 15.0) -> list:
    """``(label, x0, pin)`` for :func:`find_fixed_points` (module doc)."""
    L, r, rt = params.L, params.r, params.r_t
    I = np.eye(r)
    out = []
    th = np.zeros((rt, r))
    th[0, 0] = 0.1
    out.append(("semantic", OrderParameters(0.1 * I, np.zeros((L, r)), th, V0 * I), ()))
    Pi = params.Pi_array
    w, U = np.linalg.eigh(Pi)
    lead = [U[:, k] for k in np.argsort(w)[::-1] if w[k] > 1e-9]
    for k, u in enumerate(_token_directions(Pi, lead[:max(1, r)])[len(lead[:max(1, r)]):]):
        # where Pi's leading eigenspace is degenerate (L = 3 simplex: two-dimensional) the
        # positional points along different directions of it differ in eps_t: one pinned
        # start along each token's encoding and each difference of two
        M = np.zeros((L, r))
        M[:, 0] = 0.25 * u
        out.append((f"positional-token-{k}-pinned",
                    OrderParameters(0.05 * I, M, np.zeros((rt, r)), V0 * I), ("theta",)))
    for k, u in enumerate(lead[:max(1, r)]):
        M = np.zeros((L, r))
        M[:, 0] = 0.25 * u
        x0 = OrderParameters(0.05 * I, M, np.zeros((rt, r)), V0 * I)
        out.append((f"positional-{k}", x0, ()))
        out.append((f"positional-{k}-pinned", x0, ("theta",)))
        Mm = np.zeros((L, r))
        Mm[:, min(1, r - 1)] = 0.2 * u
        out.append((f"mixed-{k}", OrderParameters(0.08 * I, Mm, th, V0 * I), ()))
    rng = np.random.default_rng(seed)
    for k in range(n_random):
        A = rng.normal(size=(r, r)) * 0.2
        q = A @ A.T + 0.02 * I
        M = rng.normal(size=(L, r)) * 0.15
        tht = rng.normal(size=(rt, r)) * 0.08
        c = float(np.linalg.eigvalsh(tht @ np.linalg.solve(q, tht.T)).max())
        if c > 0.5 * params.rho:          # keep rho - theta q^-1 theta^T positive definite
            tht *= np.sqrt(0.5 * params.rho / c)
        out.append((f"random-{k}", OrderParameters(q, M, tht, V0 * I), ()))
    return out


def _token_directions(Pi, first) -> list:
    """``first`` followed by the unit directions ``Pi e_l`` and ``Pi (e_l - e_m)`` (the
    positional parts of one token's encoding and of a difference of two) that are new up to
    sign."""
    L = Pi.shape[0]
    cands = [Pi[:, l] for l in range(L)] + [Pi[:, l] - Pi[:, m] for l in range(L)
                                             for m in range(l + 1, L)]
    out = list(first)
    for c in cands:
        n = np.linalg.norm(c)
        if n < 1e-9:
            continue
        c = c / n
        if all(abs(abs(float(c @ u)) - 1.0) > 1e-6 for u in out):
            out.append(c)
    return out


def _key(x: OrderParameters) -> np.ndarray:
    """The order parameters up to the model's gauge: for ``r = 1`` the sign ``Q -> -Q`` (the
    first entry of ``[theta; M]`` above ``TINY`` made positive); for ``r > 1``
    :func:`~symattn.numerics.general.solve_general` already returns its gauge."""
    if x.q.shape[0] == 1:
        s = np.concatenate([x.theta.ravel(), x.M.ravel()])
        big = np.flatnonzero(np.abs(s) > TINY)
        if big.size and s[big[0]] < 0:
            x = x.rotated(-np.eye(1))
    return x.flat()


def find_fixed_points(channel: GeneralChannel, alpha: float, starts=None, *,
                      tol: float = 1e-10, merge_tol: float = 2e-3, max_iter: int = 25,
                      progress=None, stability: bool = True) -> tuple:
    """Every distinct converged fixed point reached from ``starts`` (default
    :func:`search_starts`), lowest ``eps_t`` first (module doc).

    ``max_iter`` Newton steps per start (a start that has not converged by then is reported as
    failed: the converged solves of docs/numerics.md took 4 to 13 steps).

    ``stability``: attach the RS-stability report to each distinct fixed point
    (``fixed_point.stability``; one prox evaluation and the Hessians at each, after the
    solves).  Callers that use the search internally and report none of its points pass False.

    Returns ``(found, failed)``: the :class:`FoundFixedPoint` list, and ``(label, message)`` for
    each start that left the domain or did not converge (reported, never merged in).
    """
    params = channel.params
    starts = search_starts(params) if starts is None else starts
    found: list[FoundFixedPoint] = []
    failed = []
    for label, x0, pin in starts:
        try:
            fp = solve_general(channel, alpha, x0, tol=tol, pin=pin, max_iter=max_iter)
        except InvalidOrderParameters as exc:
            failed.append((label, str(exc)))
            continue
        if progress is not None:
            progress(label, fp)
        if not fp.converged:
            failed.append((label, fp.message))
            continue
        k = _key(fp.x)
        for f in found:
            if np.max(np.abs(_key(f.fixed_point.x) - k)) <= merge_tol:
                f.starts.append(label)
                break
        else:
            found.append(FoundFixedPoint(fp, character(fp.x), [label]))
    found.sort(key=lambda f: f.eps_t)
    if stability:
        for f in found:
            f.fixed_point.stability = general_rs_stability(channel, f.fixed_point.x, alpha)
    if found:
        found[0].global_minimum = True
    return found, failed
