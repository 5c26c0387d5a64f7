r"""The RS-stability report of a general-model fixed point (``L`` tokens, ranks ``r``, ``r_t``;
model page §7, §8; docs/stability.md, 'General model').

The same report as the paper's shape (:mod:`symattn.numerics.stability`, whose
:class:`~symattn.numerics.stability.RSStability` and verdict it returns), on a
:class:`~symattn.numerics.general.GeneralChannel`'s rule at order parameters ``x``:

* **rank one** (``r = 1``, any ``L``; ``V`` is a scalar): at every node the Hessian
  :math:`\nabla^2_h\mathcal G` of the Moreau objective
  :math:`\mathcal G(h) = \lVert h - w\rVert^2/(2V) + \ell(h, T)` at the global minimiser
  (:func:`moreau_hessian`: the compiled ``derivatives_nodes`` of the shape's kernels, derived by
  SymPy from the shape's loss, :mod:`symattn.compile.generated`), the prox's Jacobian
  :math:`J = (V\nabla^2\mathcal G)^{-1}` (``L x L``), and

  .. math::

      \lambda_{\rm cont} = \alpha\,\mathbb E\lVert J - I_L\rVert_F^2, \qquad
      s = \frac{\alpha}{12\,\delta V^2}\,\mathbb E\big[\lvert\Delta\rvert^4\,
          \mathbb 1(\mathrm{gap} < \delta)\big],

  both integrands lambdified from :func:`~symattn.symbolic.replicon.derive_replicon` ``(L)``
  (``zero_temperature`` and ``jump_per_slab``), with :math:`\Delta = h - h_2` the jump between
  the two lowest minima and ``gap`` their difference in value.
* **rank** ``r > 1``: the replicon's operator form (the Hessian of the replica action on
  ``r x r`` overlap blocks, with a matrix ``V``) is not derived, so ``replicon`` and ``growth``
  are ``nan``, the jump-set measures are reported (``two_minima``, ``near_tie``,
  ``near_tie_10``, ``jump`` the mean Frobenius norm :math:`\lVert h - h_2\rVert_F` over the
  near-tie nodes), and the verdict is ``"unstable"`` if some node lies within ``delta`` of a
  tie -- the Gibbs measure there is a two-point mixture whose covariance grows like
  :math:`\beta\,\Delta\Delta^\top` across a layer of width :math:`O(1/\beta)`, so the
  zero-temperature replicon diverges whatever its continuous part -- else ``"undecided"``.
  ``growth`` is not approximated (e.g. with ``V``'s smallest eigenvalue in place of ``V``):
  the slab width and the covariance both involve :math:`V^{-1}` as a matrix, and a scalar
  stand-in would be a number without a derivation behind it.

No fixed point is solved here: the report integrates at ``x`` (the hard choice of the global
minimiser, whatever smoothing width the fixed point was solved at).
"""

from __future__ import annotations


import numpy as np

from .general import GeneralChannel, OrderParameters
from .stability import DEFAULT_DELTA, RSStability, _replicon_kernels, stability_report

__all__ = ["general_rs_stability", "moreau_hessian", "RANK_NOTE"]

#: why the replicon is ``nan`` for ``r > 1`` (module doc)
RANK_NOTE = "the replicon is derived for rank 1 only"


def moreau_hessian(channel: GeneralChannel, x: OrderParameters, h, w, T) -> np.ndarray:
    r""":math:`\nabla^2_h\mathcal G` at ``h`` for every node, ``(n, L r, L r)``, in the eigenframe
    of ``V`` (``h -> h U``, ``V = U diag(v) U^T``; the flattening of
    :mod:`symattn.compile.shape`).  For ``r = 1`` the frame is the original one (``U = +-1``
    flips the sign of every entry of ``h``, which leaves the Hessian unchanged).

    ``h``, ``w``: ``(n, L, r)``; ``T``: ``(n, L, L)`` (as :meth:`GeneralChannel.prox` returns
    them).  The entries are the shape's compiled, SymPy-derived second derivatives."""
    n, L, r = h.shape
    vals, U = np.linalg.eigh((x.V + x.V.T) / 2)
    hr = np.ascontiguousarray((h @ U).reshape(n, L * r))
    wr = np.ascontiguousarray((w @ U).reshape(n, L * r))
    V = np.full(n, vals[0]) if r == 1 else np.ascontiguousarray(np.broadcast_to(vals, (n, r)))
    G, g = np.empty(n), np.empty((n, L * r))
    H = np.empty((n, L * r, L * r))
    channel.kernels.derivatives_nodes(hr, wr, np.ascontiguousarray(T), V, channel.params.sigma,
                                      G, g, H)
    return H


def general_rs_stability(channel: GeneralChannel, x: OrderParameters, alpha: float, *,
                         delta: float = DEFAULT_DELTA, prox=None) -> RSStability:
    """The RS-stability report at ``x`` on ``channel``'s rule (module doc).

    ``prox``: the tuple of :meth:`GeneralChannel.prox` at ``x`` if already computed (no warm
    starts: the global minimiser of the full start set).  Errors as for the paper's shape: the
    replicon's standard error from the node values (an i.i.d. bound; scrambles are tighter),
    the growth's from the near-tie count."""
    L, r = channel.params.L, channel.params.r
    w, _, T, h, G, conv, G2, h2 = prox if prox is not None else channel.prox(x)
    jump = np.sqrt(np.sum((h - h2) ** 2, axis=(1, 2)))     # Frobenius; nan without a 2nd minimum
    if r > 1:
        return stability_report(alpha, channel.weights, conv, G2 - G, jump, delta=delta,
                                note=RANK_NOTE)
    V = float(x.V[0, 0])
    J = np.linalg.inv(V * moreau_hessian(channel, x, h, w, T))
    cont = _replicon_kernels(L)[0](*(J[:, i, j] for i, j in zip(*np.triu_indices(L))), alpha)
    return stability_report(alpha, channel.weights, conv, G2 - G, jump, cont=cont, V=V,
                            delta=delta, L=L)
