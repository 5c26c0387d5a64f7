r"""Empirical risk of the tied attention student and its exact gradient (model page §2).

.. math::

    R(Q) = \sum_{\mu=1}^n \frac{\| Y^\mu - f_Q(X^\mu) \|_F^2}{2d} + \frac{\lambda}{2} \|Q\|^2,
    \qquad f_Q(X) = S(h) X, \quad S(h) = \mathrm{softmax}(h h^\top), \quad h = X Q / \sqrt{d}.

Gram form of one sentence
-------------------------
With ``Y = T Z``, ``X = Z + P/sqrt(d)`` (rows ``s_l p_1``, ``s = (+1, -1)``), ``gram`` :math:`= \Gamma = Z Z^\top`,
``c = Z p_1 / sqrt(d)`` and ``D = T - S``, the residual is ``E = D Z - S P / sqrt(d)`` and

.. math::

    \ell = \frac{\|E\|_F^2}{2d}
         = \frac{\mathrm{tr}(D \Gamma D^\top) - 2 (D c) \cdot (S s) + \|S s\|^2}{2d},
    \qquad
    \frac{\partial \ell}{\partial S} = -\frac{E X^\top}{d}
         = -\frac{D \Gamma + (D c) s^\top - (S s)(c + s)^\top}{d}

(using ``P P^T / d = s s^T`` and ``Z P^T / sqrt(d) = c s^T``).  So a sentence costs ``O(1)``
once ``h`` is known; the only ``O(d)`` work per evaluation is ``h = Z Q / sqrt(d) + s m``
(``m = p_1 . Q / d``) and the pull-back of ``g = dl/dh``,

.. math::

    \nabla_Q R = \lambda Q + \sum_\mu \Big( Z^{\mu\top} g^\mu / \sqrt{d}
                 + p_1 \, (s \cdot g^\mu) / d \Big),

both done chunk by chunk with one matrix-vector product each (memory ``O(chunk * d)``).
The same loss with ``S`` replaced by a constant ``B`` is the linear positional baseline.

Threads
-------
All products here are ``numpy.einsum`` rather than BLAS (``@``): they are memory-bound, and
einsum matches a threaded ``gemv`` on them, while keeping numpy's OpenBLAS thread pool asleep so
that it does not fight scipy's L-BFGS-B for the cores (see :mod:`._blas`).
"""

from __future__ import annotations

import numpy as np

from .data import SIGNS, Dataset, SentenceBlock, student_attention

__all__ = ["sentence_loss", "sentence_loss_grad", "softmax_vjp", "pre_activations",
           "block_loss_and_grad_h", "risk_and_grad", "risk", "order_parameters"]


def _dot(u, v) -> float:
    # einsum, not BLAS: see the note on threads in the module doc.
    return float(np.einsum("i,i->", u, v))


def sentence_loss(S: np.ndarray, T: np.ndarray, gram: np.ndarray, c: np.ndarray, d: int) -> np.ndarray:
    r"""Per-sentence loss :math:`\ell = \|T Z - S X\|_F^2 / (2d)` from Gram quantities.

    ``S``, ``T``, ``gram``: ``(k, 2, 2)`` (``S`` may also be a single ``(2, 2)`` matrix);
    ``c``: ``(k, 2)``  ->  ``(k,)``.
    """
    D = T - S
    Ss = np.einsum("...ij,j->...i", S, SIGNS)
    Dc = np.einsum("...ij,...j->...i", D, c)
    quad = np.einsum("...ij,...jk,...ik->...", D, gram, D)
    return (quad - 2.0 * np.einsum("...i,...i->...", Dc, Ss) + np.einsum("...i,...i->...", Ss, Ss)) / (2.0 * d)


def sentence_loss_grad(S, T, gram, c, d: int):
    r"""``(l, dl/dS)`` for a block: :math:`\partial\ell/\partial S = -[D \Gamma + (Dc) s^\top - (Ss)(c+s)^\top]/d`.

    Shapes as in :func:`sentence_loss`; the gradient is ``(k, 2, 2)``.
    """
    D = T - S
    Ss = np.einsum("...ij,j->...i", S, SIGNS)
    Dc = np.einsum("kij,kj->ki", D, c)
    DG = np.einsum("kij,kjl->kil", D, gram)
    loss = (np.einsum("kij,kij->k", DG, D) - 2.0 * np.einsum("ki,ki->k", Dc, Ss)
            + np.einsum("ki,ki->k", Ss, Ss)) / (2.0 * d)
    grad_S = -(DG + Dc[:, :, None] * SIGNS[None, None, :] - Ss[:, :, None] * (c + SIGNS)[:, None, :]) / d
    return loss, grad_S


def softmax_vjp(h: np.ndarray, S: np.ndarray, grad_S: np.ndarray) -> np.ndarray:
    r"""Pull back :math:`\partial\ell/\partial S` through :math:`S = \mathrm{softmax}(h h^\top)`.

    Row softmax: :math:`\partial\ell/\partial a_{lk} = S_{lk} (\bar S_{lk} - \sum_j \bar S_{lj} S_{lj})`;
    then :math:`\partial\ell/\partial h = (\bar a + \bar a^\top) h`.  ``h``: ``(k, 2)``, ``S``, ``grad_S``:
    ``(k, 2, 2)``  ->  ``(k, 2)``.
    """
    ga = S * (grad_S - np.sum(grad_S * S, axis=-1, keepdims=True))
    return np.einsum("kij,kj->ki", ga + ga.transpose(0, 2, 1), h)


def pre_activations(Z: np.ndarray, Q: np.ndarray, m: float) -> np.ndarray:
    r"""Student pre-activations :math:`h_l = x_l \cdot Q/\sqrt{d} = z_l \cdot Q/\sqrt{d} + s_l m`.

    ``Z``: ``(k, 2, d)`` float64, ``Q``: ``(d,)``  ->  ``(k, 2)``.
    """
    return np.einsum("kld,d->kl", Z, Q) / np.sqrt(Z.shape[-1]) + SIGNS * m


def block_loss_and_grad_h(block: SentenceBlock, h: np.ndarray, d: int):
    """Per-sentence losses ``(k,)`` and ``dl/dh`` ``(k, 2)`` of a block at pre-activations ``h``."""
    S = student_attention(h)
    loss, grad_S = sentence_loss_grad(S, block.T, block.gram, block.c, d)
    return loss, softmax_vjp(h, S, grad_S)


def risk_and_grad(Q: np.ndarray, data: Dataset, chunk_size: int | None = None):
    r"""Empirical risk :math:`R(Q)` and its exact gradient (see module doc).

    ``Q``: ``(d,)``  ->  ``(R, grad)`` with ``grad`` ``(d,)``.  Memory ``O(chunk_size * d)``
    beyond the data; one pass over ``Z`` (each chunk is read for ``h`` and again, from cache,
    for ``Z^T g``).
    """
    Q = np.asarray(Q, dtype=np.float64)
    d = data.d
    sqd = np.sqrt(d)
    m = Q.sum() / d
    lam = data.params.lam
    total = 0.5 * lam * _dot(Q, Q)
    grad = lam * Q
    grad_m = 0.0
    for block in data.blocks(chunk_size):
        h = pre_activations(block.Z, Q, m)
        loss, g = block_loss_and_grad_h(block, h, d)
        total += loss.sum()
        grad += np.einsum("kl,kld->d", g, block.Z) / sqd
        grad_m += float(np.einsum("kl,l->", g, SIGNS))
    grad += grad_m / d
    return float(total), grad


def risk(Q: np.ndarray, data: Dataset, chunk_size: int | None = None) -> float:
    """Empirical risk :math:`R(Q)` (model page §2), penalty included."""
    Q = np.asarray(Q, dtype=np.float64)
    d = data.d
    m = Q.sum() / d
    total = 0.5 * data.params.lam * _dot(Q, Q)
    for block in data.blocks(chunk_size):
        h = pre_activations(block.Z, Q, m)
        total += sentence_loss(student_attention(h), block.T, block.gram, block.c, d).sum()
    return float(total)


def order_parameters(Q: np.ndarray, data: Dataset) -> dict:
    r"""Order parameters in the theory's units (model page §3).

    :math:`m = p_1 \cdot Q / d`, :math:`\theta = \sigma^2 Q \cdot Q^* / d`, :math:`q = \sigma^2 |Q|^2 / d`.
    """
    d = data.d
    s2 = data.params.sigma ** 2
    return {"m": float(np.sum(Q) / d), "theta": float(s2 * _dot(Q, data.Q_star) / d),
            "q": float(s2 * _dot(Q, Q) / d)}
