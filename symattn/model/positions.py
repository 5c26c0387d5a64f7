r"""Positional encodings through their Gram matrix :math:`\Pi = P P^\top / d` (model page §7).

The theory sees the encodings ``p_1 .. p_L`` only through the ``L x L`` Gram matrix
:math:`\Pi_{lk} = p_l \cdot p_k / d`, which must be symmetric positive semi-definite.  Every
named family has unit diagonal (``|p_l|^2 = d``, as the paper's ``p_1 = (1, ..., 1)``):

==============  ==========================================  ===========  ======================
name            :math:`\Pi_{lk}`, ``l != k``                 rank         tokens
==============  ==========================================  ===========  ======================
``antipodal``   ``-1`` (``p_2 = -p_1``: the paper's)          1            ``L = 2`` only
``simplex``     ``-1/(L-1)`` (equiangular, centred)           ``L - 1``    any ``L`` (``L = 2``: antipodal)
``orthogonal``  ``0``                                         ``L``        any ``L``
``cyclic``      ``cos(2 pi (l-k) / L)``                      2            ``L >= 3``
``none``        ``Pi = 0`` (no positional encoding)           0            any ``L``
==============  ==========================================  ===========  ======================

:func:`position_gram` turns a name (or explicit entries) into the matrix;
:func:`check_gram` validates explicit entries.
"""

from __future__ import annotations

import math

import numpy as np

from .checks import ParameterError, check_number

__all__ = ["POSITION_FAMILIES", "position_gram", "check_gram", "default_positions", "PAPER_PI",
           "gram_name"]

#: The paper's encodings, ``p_2 = -p_1 = -(1, ..., 1)``.
PAPER_PI = ((1.0, -1.0), (-1.0, 1.0))

#: Relative tolerance on symmetry and on the smallest eigenvalue of an explicit ``Pi``.
GRAM_TOL = 1e-12


def _antipodal(L):
    if L != 2:
        raise ParameterError("positions", f"'antipodal' is defined for L = 2 only (got L = {L}); "
                                          "'simplex' is its equiangular generalisation")
    return PAPER_PI


def _simplex(L):
    off = -1.0 / (L - 1)
    return tuple(tuple(1.0 if i == j else off for j in range(L)) for i in range(L))


def _orthogonal(L):
    return tuple(tuple(1.0 if i == j else 0.0 for j in range(L)) for i in range(L))


def _cyclic(L):
    if L < 3:
        raise ParameterError("positions", "'cyclic' needs L >= 3 (at L = 2 it is 'antipodal')")
    return tuple(tuple(math.cos(2 * math.pi * (i - j) / L) for j in range(L)) for i in range(L))


def _none(L):
    return tuple(tuple(0.0 for _ in range(L)) for _ in range(L))


#: name -> function of ``L`` returning the Gram matrix (module doc).
POSITION_FAMILIES = {"antipodal": _antipodal, "simplex": _simplex, "orthogonal": _orthogonal,
                     "cyclic": _cyclic, "none": _none}


def default_positions(L: int) -> str:
    """``antipodal`` (the paper's) at ``L = 2``, ``simplex`` (its equiangular generalisation)
    for ``L >= 3``."""
    return "antipodal" if L == 2 else "simplex"


def check_gram(entries, L: int) -> tuple:
    """Explicit ``L x L`` Gram entries, validated: finite, symmetric and positive semi-definite
    to :data:`GRAM_TOL` (relative to the largest entry).  Returns the symmetrised tuple."""
    try:
        rows = [[check_number("positions", x) for x in row] for row in entries]
    except TypeError:
        raise ParameterError("positions", f"must be a family name {sorted(POSITION_FAMILIES)} "
                                          f"or an L x L matrix, got {entries!r}") from None
    if len(rows) != L or any(len(r) != L for r in rows):
        raise ParameterError("positions", f"must be {L} x {L} (L from A), got "
                                          f"{len(rows)} row(s) of lengths {[len(r) for r in rows]}")
    P = np.array(rows)
    scale = max(1.0, float(np.abs(P).max()))
    asym = float(np.abs(P - P.T).max())
    if asym > GRAM_TOL * scale:
        raise ParameterError("positions", f"the Gram matrix p_l.p_k/d must be symmetric; "
                                          f"largest |Pi - Pi^T| = {asym:.3g}")
    P = (P + P.T) / 2
    emin = float(np.linalg.eigvalsh(P).min())
    if emin < -GRAM_TOL * scale * L:
        raise ParameterError("positions", f"the Gram matrix p_l.p_k/d must be positive "
                                          f"semi-definite; smallest eigenvalue {emin:.6g}")
    return tuple(tuple(float(x) for x in row) for row in P)


def position_gram(spec, L: int) -> tuple:
    """The Gram matrix of ``spec``: a family name (module doc), explicit entries, or ``None``
    (:func:`default_positions`)."""
    if spec is None:
        spec = default_positions(L)
    if isinstance(spec, str):
        try:
            family = POSITION_FAMILIES[spec]
        except KeyError:
            raise ParameterError("positions", f"unknown family {spec!r}; the families are "
                                              f"{sorted(POSITION_FAMILIES)}") from None
        return family(L)
    return check_gram(spec, L)


def gram_name(Pi, L: int) -> str | None:
    """The family whose Gram matrix ``Pi`` is exactly, or ``None``."""
    for name, family in POSITION_FAMILIES.items():
        try:
            if family(L) == tuple(tuple(r) for r in Pi):
                return name
        except ParameterError:
            continue
    return None
