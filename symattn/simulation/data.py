r"""Finite-size data of the attention model (model page §2, ``L = 2``).

A sentence is ``L = 2`` tokens of dimension ``d``:

.. math::

    z_l \sim N(0, \sigma^2 I_d), \qquad x_l = z_l + p_l / \sqrt{d}, \qquad
    p_1 = (1, \dots, 1) = -p_2 ,

the teacher :math:`Q^* \in \mathbb{R}^d` has iid :math:`N(0, 1)` entries and the target is

.. math::

    Y = \big[ (1 - \omega)\, \mathrm{softmax}(Z Q^* Q^{*\top} Z^\top / d) + \omega A \big] Z
      = T(h^*) Z, \qquad h^*_l = z_l \cdot Q^* / \sqrt{d}

(row softmax; the teacher acts on the tokens ``Z``, not on ``X``).

Storage
-------
Only the raw tokens ``Z`` (shape ``(n, 2, d)``) and a few numbers per sentence are stored;
``X`` and ``Y`` are never needed in full, because everything the risk needs is

* the teacher matrix ``T`` (``(n, 2, 2)``), so that ``Y = T Z``;
* the token Gram matrix ``gram`` :math:`= \Gamma = Z Z^\top` (``(n, 2, 2)``);
* the positional projections ``c_l = z_l . p_1 / sqrt(d)`` (``(n, 2)``), so that
  ``Z P^T / sqrt(d) = c s^T`` with ``s = (+1, -1)``;

and the student pre-activations ``h = X Q / sqrt(d) = Z Q / sqrt(d) + s m`` with
``m = p_1 . Q / d``.

``Z`` is stored as float64, or as float32 when it would exceed :data:`AUTO_FLOAT32_BYTES`
(``d = 10^4, alpha = 2`` is 3.2 GB at float64, 1.6 GB at float32).  The float32 data are the
rounding of exactly the same float64 draws (same seed, same sentences to ~6e-8 relative), and
*all* arithmetic (teacher, Gram quantities, risk, gradient) is done in float64 on the stored
values: the stored array **is** the data set, so the analytic gradient stays exact for it.
Regenerating the data from the seed at every risk evaluation was rejected: drawing
``4 * 10^8`` normals costs seconds, and L-BFGS needs hundreds of evaluations.

Randomness
----------
``np.random.SeedSequence(seed).spawn(3)`` gives three independent streams: training data
(first ``Q*``, then the ``n`` sentences, drawn in order), fresh test sentences, and the random
warm start.  Changing ``n_test``, the chunk size or the storage dtype does not change the
training set, and every start of a paired run sees the same test sentences.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ..model import ModelParams
from ..model.checks import ParameterError, check_alpha, check_int

__all__ = [
    "SIGNS",
    "AUTO_FLOAT32_BYTES",
    "Dataset",
    "SentenceBlock",
    "make_dataset",
    "fresh_sentences",
    "student_attention",
    "teacher_attention",
    "sentence_statistics",
    "default_chunk_size",
]

#: Signs ``s_l`` of the positional encodings, ``p_l = s_l (1, ..., 1)``.
SIGNS = np.array([1.0, -1.0])

#: ``dtype="auto"`` stores ``Z`` as float32 above this many float64 bytes (1 GiB).
AUTO_FLOAT32_BYTES = 1 << 30

#: Target size, in bytes of float64, of one chunk of sentences (fits in L2/L3 cache).
_CHUNK_BYTES = 1 << 23


def default_chunk_size(d: int) -> int:
    """Sentences per chunk so that one float64 chunk ``(k, 2, d)`` is about 8 MiB."""
    return max(1, _CHUNK_BYTES // (2 * 8 * d))


def student_attention(h: np.ndarray) -> np.ndarray:
    r"""Row softmax of the rank-one scores, :math:`S(h) = \mathrm{softmax}(h h^\top)`.

    For ``L = 2``: :math:`S_{11} = \mathrm{logistic}(h_1^2 - h_1 h_2)`, :math:`S_{12} = 1 - S_{11}`
    (model page §3).  Computed with the max subtracted, so it never overflows.

    ``h``: ``(..., L)``  ->  ``(..., L, L)``.
    """
    a = h[..., :, None] * h[..., None, :]
    a = a - a.max(axis=-1, keepdims=True)
    e = np.exp(a)
    return e / e.sum(axis=-1, keepdims=True)


def teacher_attention(h_star: np.ndarray, params: ModelParams) -> np.ndarray:
    r""":math:`T(h^*) = (1 - \omega)\, \mathrm{softmax}(h^* h^{*\top}) + \omega A` (model page §2-§3).

    ``h_star``: ``(..., L)``  ->  ``(..., L, L)``.
    """
    return (1.0 - params.omega) * student_attention(h_star) + params.omega * params.A_array


def sentence_statistics(Z: np.ndarray, Q_star: np.ndarray, params: ModelParams):
    r"""Per-sentence quantities the risk needs, from tokens ``Z`` of shape ``(k, 2, d)``.

    Returns ``(T, gram, c)``: the teacher attention ``T(h*)`` with ``h* = Z Q* / sqrt(d)``
    (``(k, 2, 2)``), the Gram matrix ``gram = Z Z^T`` (``(k, 2, 2)``) and ``c = Z p_1 / sqrt(d)``
    (``(k, 2)``).  All in float64 whatever the dtype of ``Z``.
    """
    Z = np.asarray(Z, dtype=np.float64)
    d = Z.shape[-1]
    sqd = np.sqrt(d)
    h_star = (Z @ Q_star) / sqd
    T = teacher_attention(h_star, params)
    gram = Z @ Z.transpose(0, 2, 1)
    c = Z.sum(axis=-1) / sqd
    return T, gram, c


@dataclass(frozen=True)
class SentenceBlock:
    """A chunk of sentences, everything float64.

    ``Z``: ``(k, 2, d)`` tokens; ``T``, ``gram``: ``(k, 2, 2)``; ``c``: ``(k, 2)`` (see module doc).
    """

    Z: np.ndarray
    T: np.ndarray
    gram: np.ndarray
    c: np.ndarray

    @property
    def k(self) -> int:
        return self.Z.shape[0]


def float64_chunks(Z: np.ndarray, k: int):
    """``(slice, Z[slice] as float64)`` for consecutive chunks of ``k`` sentences: views of
    float64 data; float32 data converted into ONE reused buffer (no allocation, hence no page
    faults, per chunk), valid only until the next chunk is requested."""
    n = Z.shape[0]
    buf = None if Z.dtype == np.float64 else np.empty((min(k, n), *Z.shape[1:]))
    for i in range(0, n, k):
        sl = slice(i, min(i + k, n))
        if buf is None:
            yield sl, Z[sl]
        else:
            out = buf[: sl.stop - sl.start]
            np.copyto(out, Z[sl])
            yield sl, out


def _streams(seed: int):
    """The three independent seed sequences: (training data, test sentences, random start)."""
    return np.random.SeedSequence(seed).spawn(3)


@dataclass(frozen=True, eq=False)
class Dataset:
    r"""One training set: a teacher ``Q*`` and ``n = round(alpha d)`` sentences.

    Attributes
    ----------
    params : ModelParams
    d, n : int
    alpha : float
        The requested sample complexity (``n / d`` differs from it by rounding only).
    seed : int
    Z : ndarray, ``(n, 2, d)``, float64 or float32
        Token noise; the student input is ``X = Z + s p_1 / sqrt(d)`` (:meth:`X`).
    Q_star : ndarray, ``(d,)``
        Teacher weights.
    T, gram : ndarray, ``(n, 2, 2)``
        Teacher attention ``T(h*)`` (so ``Y = T Z``) and token Gram ``Z Z^T``, float64.
    c : ndarray, ``(n, 2)``
        ``c_l = z_l . p_1 / sqrt(d)``, float64.
    """

    params: ModelParams
    d: int
    alpha: float
    seed: int
    Z: np.ndarray
    Q_star: np.ndarray
    T: np.ndarray
    gram: np.ndarray
    c: np.ndarray

    @property
    def n(self) -> int:
        return self.Z.shape[0]

    @property
    def p1(self) -> np.ndarray:
        """Positional encoding ``p_1 = (1, ..., 1)``."""
        return np.ones(self.d)

    def X(self) -> np.ndarray:
        """Student inputs ``x_l = z_l + p_l / sqrt(d)``, ``(n, 2, d)`` float64 (materialised)."""
        return np.asarray(self.Z, dtype=np.float64) + SIGNS[:, None] / np.sqrt(self.d)

    def Y(self) -> np.ndarray:
        """Targets ``Y = T(h*) Z``, ``(n, 2, d)`` float64 (materialised)."""
        return self.T @ np.asarray(self.Z, dtype=np.float64)

    def blocks(self, chunk_size: int | None = None) -> Iterator[SentenceBlock]:
        """Iterate over the training set in chunks of ``chunk_size`` sentences, as float64.

        float64 data are yielded as views; float32 data are converted into ONE reused buffer
        (no allocation, hence no page faults, per chunk), so a block's ``Z`` is valid only until
        the next block is requested.
        """
        for sl, Z in float64_chunks(self.Z, chunk_size or default_chunk_size(self.d)):
            yield SentenceBlock(Z, self.T[sl], self.gram[sl], self.c[sl])

    def init_rng(self) -> np.random.Generator:
        """Generator of the random warm start (independent of data and test streams)."""
        return np.random.default_rng(_streams(self.seed)[2])


def _resolve_dtype(dtype, n: int, d: int):
    if isinstance(dtype, str) and dtype == "auto":
        return np.float32 if 8 * 2 * n * d > AUTO_FLOAT32_BYTES else np.float64
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32, float64 or 'auto', got {dtype!r}")
    return dt.type


#: Largest dimension accepted.
MAX_D = 10**7


def check_instance(d, alpha, seed=0, *, d_name: str = "d") -> tuple:
    """``(d, alpha)`` of one data set, checked: ``d`` an integer in ``[2, MAX_D]``, ``alpha > 0``
    with at least one training sentence (``round(alpha d) >= 1``), ``seed`` a non-negative
    integer.  Raises :class:`ParameterError` naming the parameter."""
    d = check_int(d_name, d, 2, MAX_D)
    alpha = check_alpha(alpha)
    check_int("seed", seed, 0)
    if n_sentences(d, alpha) < 1:
        raise ParameterError("alpha", f"alpha d = {alpha * d:.3g} rounds to no training sentence; "
                                      f"need alpha >= {0.5 / d:.3g} at d = {d}")
    return d, alpha


def n_sentences(d: int, alpha: float) -> int:
    """``n = round(alpha d)`` (:func:`~symattn.simulation.memory.check_size` refuses 0)."""
    return int(round(alpha * d))


def make_dataset(params: ModelParams, d: int, alpha: float, seed: int = 0, *,
                 dtype="auto", chunk_size: int | None = None) -> Dataset:
    """Draw a teacher and ``n = round(alpha d)`` training sentences (model page §2).

    Memory beyond the stored data is ``O(chunk_size * d)``.

    Parameters
    ----------
    params : ModelParams
    d : int
        Token dimension (>= 2).
    alpha : float
        Sample complexity ``n / d``.
    seed : int
        Seed of :class:`numpy.random.SeedSequence`; same seed, same data (see module doc).
    dtype : "auto", float64 or float32
        Storage of ``Z``; see the module doc.  The Gram quantities are always float64.
    chunk_size : int, optional
        Sentences drawn per chunk (does not change the data).
    """
    params = ModelParams.coerce(params).require_paper_shape("make_dataset")
    d, alpha = check_instance(d, alpha, seed)
    n = n_sentences(d, alpha)
    store = _resolve_dtype(dtype, n, d)
    rng = np.random.default_rng(_streams(seed)[0])
    Q_star = rng.standard_normal(d)
    Z = np.empty((n, 2, d), dtype=store)
    T = np.empty((n, 2, 2))
    gram = np.empty((n, 2, 2))
    c = np.empty((n, 2))
    k = chunk_size or default_chunk_size(d)
    for i in range(0, n, k):
        sl = slice(i, min(i + k, n))
        Z[sl] = rng.standard_normal((sl.stop - sl.start, 2, d)) * params.sigma
        T[sl], gram[sl], c[sl] = sentence_statistics(Z[sl], Q_star, params)
    return Dataset(params=params, d=d, alpha=alpha, seed=seed, Z=Z, Q_star=Q_star, T=T, gram=gram, c=c)


def fresh_sentences(data: Dataset, n_test: int, chunk_size: int | None = None) -> Iterator[SentenceBlock]:
    """Stream ``n_test`` fresh sentences with the same teacher, chunk by chunk (float64).

    Drawn from the test stream of ``data.seed``: the same sentences on every call, whatever
    ``chunk_size``; memory ``O(chunk_size * d)``.
    """
    rng = np.random.default_rng(_streams(data.seed)[1])
    k = chunk_size or default_chunk_size(data.d)
    for i in range(0, n_test, k):
        kk = min(k, n_test - i)
        Z = rng.standard_normal((kk, 2, data.d)) * data.params.sigma
        T, gram, c = sentence_statistics(Z, data.Q_star, data.params)
        yield SentenceBlock(Z, T, gram, c)
