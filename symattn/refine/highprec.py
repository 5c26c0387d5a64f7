r"""High-precision (mpmath) checks of the double-precision output channel.

The quadrature map averages, over the nodes, functions of the prox: the global minimiser of
the Moreau objective.  Here every node's two lowest local minima (as found in double
precision) are re-solved by Newton's method in mpmath at ``dps`` digits, from the same
compiled expressions (``prox_kernel("mpmath")``, ``teacher_kernel("mpmath")``,
``atom_integrands("mpmath")``), and the global one is chosen again by comparing the two
values at that precision.  Comparing with the double-precision averages shows what double
precision itself contributes to the result:

* the prox position and value at each node (rounding and the Newton tolerance);
* the selection: where the two minima are closer in value than double precision can
  resolve, the global one may be chosen wrongly;
* the node averages (atoms, ``E[M]``) that enter the saddle-point map.

:func:`channel_in_mpmath` does this at one point ``x = (q, m, theta, V)`` on a node set;
``studies/double_precision.py`` reports it at the fixed points.
"""

from __future__ import annotations

from dataclasses import dataclass

import mpmath
import numpy as np

from ..compile.general_equations import atom_key
from ..compile.kernels import atom_integrands, atom_list, prox_kernel, teacher_kernel
from ..numerics.channel import OutputChannel

__all__ = ["newton_mp", "ChannelPrecision", "channel_in_mpmath"]


def newton_mp(h, w, t, V, sigma, *, tol, max_iter: int = 60):
    r"""Newton's method in mpmath on :math:`\nabla_h\mathcal{G} = 0` from ``h`` (2 entries).

    All arguments are mpmath numbers (or convertible).  Returns ``(h, G, converged)`` with
    ``converged`` true when ``max|grad G| <= tol`` at a positive-definite Hessian.
    """
    kern = prox_kernel("mpmath")
    h1, h2 = (mpmath.mpf(v) for v in h)
    G = None
    for _ in range(max_iter):
        G, g1, g2, H11, H12, H22 = kern(h1, h2, w[0], w[1], t[0], t[1], V, sigma)
        if max(abs(g1), abs(g2)) <= tol:
            return (h1, h2), G, bool(H11 > 0 and H11 * H22 - H12**2 > 0)
        det = H11 * H22 - H12**2
        h1 -= (H22 * g1 - H12 * g2) / det
        h2 -= (H11 * g2 - H12 * g1) / det
    return (h1, h2), G, False


@dataclass(frozen=True)
class ChannelPrecision:
    """Double against mpmath at ``dps`` digits on the same nodes (see module doc)."""

    dps: int
    n_nodes: int
    max_prox_diff: float        #: max ``|h_double - h_mp|`` over nodes (chosen minimiser)
    max_value_diff: float       #: max ``|M_double - M_mp|``
    n_selection_flips: int      #: nodes where the two precisions pick different minima
    min_gap: float              #: smallest ``|G_2nd - G_best|`` (mp) among nodes with two minima
    atoms_double: np.ndarray    #: node averages of the atom integrands, then E[M]
    atoms_mp: np.ndarray
    n_not_converged: int        #: mpmath Newton solves that missed the tolerance

    @property
    def max_atom_diff(self) -> float:
        return float(np.max(np.abs(self.atoms_double - self.atoms_mp)))


def channel_in_mpmath(channel: OutputChannel, x, *, dps: int = 40, idx=None) -> ChannelPrecision:
    """Re-solve the channel at ``x = (q, m, theta, V)`` in mpmath on the nodes ``idx`` (all
    by default) and compare (see module doc).  The double-precision side is
    ``channel.evaluate(x)`` with the hard global choice."""
    x = np.asarray(x, float)
    state = channel.evaluate(x)
    nodes = channel.nodes
    idx = np.arange(nodes.size) if idx is None else np.asarray(idx)
    p = channel.params
    integrands = atom_integrands("mpmath")
    # the channel's rows in the order of the paper's mpmath integrands (matched by name)
    order = [channel.coordinates.atom_keys.index(atom_key(E)) for E in atom_list()]
    teacher = teacher_kernel("mpmath")
    rows_d, rows_m = [], []
    dh = dv = 0.0
    flips = not_conv = 0
    min_gap = np.inf
    with mpmath.workdps(dps):
        tol = mpmath.mpf(10) ** (-(dps - 8))
        q, m, theta, V = (mpmath.mpf(v) for v in x)
        rho, sigma = mpmath.mpf(p.rho), mpmath.mpf(p.sigma)
        s = (1, -1)
        for k in idx:
            xi = [mpmath.mpf(v) for v in nodes.xi[k]]
            eta = [mpmath.mpf(v) for v in nodes.eta[k]]
            w = [mpmath.sqrt(q) * xi[l] + s[l] * m for l in range(2)]
            hs = [theta / mpmath.sqrt(q) * xi[l] + mpmath.sqrt(rho - theta**2 / q) * eta[l]
                  for l in range(2)]
            t = teacher(hs[0], hs[1], mpmath.mpf(p.omega), mpmath.mpf(p.A[0][0]),
                        mpmath.mpf(p.A[1][1]))
            cands = [state.prox.h[k]]
            if np.isfinite(state.prox.value2[k]):
                cands.append(state.prox.h2[k])
            sols = [newton_mp(c, w, t, V, sigma, tol=tol) for c in cands]
            not_conv += sum(not ok for _, _, ok in sols)
            best = min(range(len(sols)), key=lambda j: sols[j][1])
            if best != 0:
                flips += 1
            if len(sols) == 2:
                min_gap = min(min_gap, float(abs(sols[1][1] - sols[0][1])))
            (h1, h2), G, _ = sols[best]
            dh = max(dh, float(max(abs(h1 - state.prox.h[k][0]), abs(h2 - state.prox.h[k][1]))))
            dv = max(dv, float(abs(G - state.prox.value[k])))
            vals = integrands(xi[0], xi[1], eta[0], eta[1], h1, h2, w[0], w[1], V)
            rows_m.append([float(v) for v in vals] + [float(G)])
            rows_d.append(list(state.rows_best[k, order]) + [state.prox.value[k]])
    wts = nodes.weights[idx] / nodes.weights[idx].sum()
    return ChannelPrecision(dps=dps, n_nodes=len(idx), max_prox_diff=dh, max_value_diff=dv,
                            n_selection_flips=flips, min_gap=min_gap,
                            atoms_double=wts @ np.array(rows_d), atoms_mp=wts @ np.array(rows_m),
                            n_not_converged=not_conv)
