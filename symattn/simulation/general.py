r"""The finite-size simulator of the attention model (model page §2, §6, §7): data, the empirical
risk and its exact gradient, warm starts, L-BFGS-B training, order parameters, test errors, the
linear baseline, paired starts and seed averages.  It is the only one: any number of tokens
``L``, positional encodings given by their Gram matrix :math:`\Pi`, student rank ``r`` and
teacher rank ``r_t``.

The paper's model is data given to it: ``ModelParams()`` (its defaults) is ``L = 2``,
``r = r_t = 1``, :math:`\Pi = [[1, -1], [-1, 1]]`, and then ``P`` has the rows
:math:`p_1 = (1, \dots, 1)` and :math:`p_2 = -p_1` exactly (see Positional encodings below),
``Q*`` and ``Q`` are ``(d, 1)`` columns, ``q`` and ``theta`` are ``1 x 1`` and ``M`` is
``2 x 1``.  Its scalar order parameters (model page §3) are the entries

.. math::

    m = \frac{p_1 \cdot Q}{d} = M_{11} \;(= -M_{21}), \qquad
    \theta = \frac{\sigma^2\, Q \cdot Q^*}{d} = \theta_{11}, \qquad
    q = \frac{\sigma^2 |Q|^2}{d} = q_{11},

in the theory's units (:func:`symattn.simulation.instances.paper_order_parameters`; the
tables of ``symattn simulate`` and ``symattn validate`` report them).

Model (model page §2, §7)
-------------------------
A sentence is ``L`` tokens of dimension ``d``; the student reads the tokens plus their positions,
the teacher the tokens alone:

.. math::

    z_l \sim N(0, \sigma^2 I_d), \qquad X = Z + P / \sqrt{d}, \qquad P P^\top / d = \Pi ,

    Y = T(h^*) Z, \quad T(h^*) = (1 - \omega)\,\mathrm{softmax}(h^* h^{*\top}) + \omega A, \quad
    h^* = Z Q^* / \sqrt{d} \in \mathbb{R}^{L \times r_t},

    f_Q(X) = S(h) X, \quad S(h) = \mathrm{softmax}(h h^\top), \quad
    h = X Q / \sqrt{d} = Z Q / \sqrt{d} + M \in \mathbb{R}^{L \times r}, \quad M = P Q / d,

    R(Q) = \sum_{\mu=1}^{n} \frac{\| Y^\mu - f_Q(X^\mu) \|_F^2}{2d} + \frac{\lambda}{2} \|Q\|_F^2,
    \qquad n = \mathrm{round}(\alpha d),

with ``Q* (d x r_t)`` iid ``N(0, 1)``, ``Q (d x r)``, softmax row by row.  Reported, in the
theory's units (model page §3, §7):

.. math::

    q = \sigma^2 Q^\top Q / d \ (r \times r), \quad M = P Q / d \ (L \times r), \quad
    \theta = \sigma^2 Q^{*\top} Q / d \ (r_t \times r), \quad
    \varepsilon_t = R(Q)/d, \quad
    \varepsilon_g = \mathbb{E}\, \|Y - f_Q(X)\|_F^2 / (2d),

and the test error :math:`\varepsilon_{\rm lin}` of the linear positional baseline ``y = B X``,
``B (L x L)`` fitted by least squares on the training set (for large ``d``,
:math:`B \to \mathbb{E}[T(h^*)]`, model page §4).  Test errors are Monte Carlo averages over
``n_test`` fresh sentences, with their standard error; all minima of a paired run and the
baseline are scored on the *same* test sentences.

Positional encodings (:func:`positional_encodings`)
---------------------------------------------------
:math:`P = F E^\top` with :math:`\Pi = F F^\top` and :math:`E^\top E = d\, I_k`, ``k = rank Pi``
(eigenvalues of :math:`\Pi` below ``1e-12`` times the largest count as zero), so that
:math:`P P^\top / d = F E^\top E F^\top / d = \Pi`.

* ``F (L x k)`` is the **pivoted Cholesky** factor of :math:`\Pi` (``k`` steps, pivot on the
  largest remaining diagonal entry, first on ties): column ``j`` is
  :math:`R_{:, i} / \sqrt{R_{ii}}` of the current Schur complement ``R``.  Its entries are
  rational functions of the entries of :math:`\Pi`, so the paper's
  :math:`\Pi = [[1, -1], [-1, 1]]` gives ``F = (1, -1)^T`` **exactly** (an eigendecomposition
  gives :math:`(\pm 1/\sqrt{2}) \cdot \sqrt{2}`, exact only when the rounding happens to cancel),
  and ``orthogonal`` gives ``F = I``.
* ``E[:, 0] = (1, ..., 1)``; the other columns are a QR orthogonalisation, against the ones
  vector and each other, of a Gaussian ``d x (k - 1)`` matrix from the fixed seed
  :data:`POSITION_SEED`, scaled to norm :math:`\sqrt{d}`.

So the paper's case gives :math:`p_1 = (1, \dots, 1) = -p_2` exactly, and ``P`` depends on
``(Pi, d)`` only, never on the data seed.

Storage
-------
Only the raw tokens ``Z`` (``(n, L, d)``) and per-sentence ``L x L`` matrices are stored; ``X``
and ``Y`` are never needed in full, because everything the risk needs is ``T`` (so ``Y = T Z``),
:math:`\Gamma = Z Z^\top` and :math:`C = Z P^\top / \sqrt{d}`, all float64 computed from the
stored ``Z``.  ``Z`` is float64, or float32 (``dtype="auto"``) when it would exceed
:data:`~symattn.simulation.memory.AUTO_FLOAT32_BYTES` (the paper's ``d = 10^4, alpha = 2`` is
3.2 GB at float64, 1.6 GB at float32).  The float32 data are the rounding of exactly the same
float64 draws (same seed, same sentences to ~6e-8 relative), and *all* arithmetic (teacher, Gram
quantities, risk, gradient) is done in float64 on the stored values: the stored array **is** the
data set, so the analytic gradient stays exact for it.  Regenerating the data from the seed at
every risk evaluation was rejected: drawing ``4 * 10^8`` normals costs seconds, and L-BFGS needs
hundreds of evaluations.

Randomness
----------
``np.random.SeedSequence(seed).spawn(3)`` gives three independent streams: training data,
fresh test sentences, and the random warm start.  The training stream draws ``Q*`` first, as
``standard_normal((d, r_t))`` (for ``r_t = 1`` the numbers of ``standard_normal(d)``), then the
sentences in order, chunk by chunk, as ``standard_normal((k, L, d)) * sigma``.  Changing
``n_test``, the chunk size or the storage dtype does not change the training set, and every
start of a paired run sees the same test sentences.  Seed averages use the data set of seed
:func:`data_seed` ``(d, k)`` for instance ``k``.

Gram form of one sentence (:func:`sentence_loss_grad`)
------------------------------------------------------
With :math:`D = T - S` the residual is :math:`E = D Z - S P / \sqrt{d}` and

.. math::

    \ell = \frac{\|E\|_F^2}{2d}
         = \frac{\mathrm{tr}(D \Gamma D^\top) - 2\,\mathrm{tr}(D C S^\top)
                 + \mathrm{tr}(S \Pi S^\top)}{2d}, \qquad
    \frac{\partial \ell}{\partial S} = -\frac{E X^\top}{d}
         = -\frac{D \Gamma + D C - S C^\top - S \Pi}{d}.

So a sentence costs ``O(L^2 r)`` once ``h`` is known.  The same loss with ``S`` replaced by a
constant ``B`` is the linear baseline.  The row softmax is pulled back by
:math:`\bar a_{lk} = S_{lk} (\bar S_{lk} - \sum_j \bar S_{lj} S_{lj})`,
:math:`g = \partial \ell / \partial h = (\bar a + \bar a^\top) h` (``L x r``), and

.. math::

    \nabla_Q R = \lambda Q + \sum_\mu \Big( Z^{\mu\top} g^\mu / \sqrt{d} \Big)
                 + P^\top \Big( \sum_\mu g^\mu \Big) / d ,

chunk by chunk (memory ``O(chunk * L * d)`` beyond the data).  The ``O(d)`` products
``Z Q`` and ``Z^T g`` are BLAS matrix products on the ``(k L) x d`` view of a chunk (for
``r > 1`` one ``numpy.einsum`` over ``"kld,dr->klr"`` is about five times slower, measured at
``d = 1000``).  So the solve, the data statistics and the scoring run with one BLAS thread
(:mod:`._blas`, ``blas_threads=1``): with OpenBLAS's default two threads on a two-core machine
with one core busy, one risk evaluation at ``d = 1000``, ``alpha = 1.5`` took 47 ms instead of
6 ms (measured).  Call :func:`risk_and_grad` yourself inside
``limit_blas_threads(1)`` for the same speed.

Warm starts (:func:`warm_start`)
--------------------------------
* ``"semantic"``: :math:`Q_{:, a} = Q^*_{:, a}` for ``a < min(r, r_t)``.  The other student
  columns (``r > r_t``) get a **nudge** :math:`10^{-3} \times N(0, 1)` iid from a child of the
  random-start stream (``SeedSequence(seed).spawn(3)[2].spawn(1)[0]``, so deterministic, and
  independent of the random start): a zero column is a critical point of ``R`` in that column
  (its pre-activations vanish, and ``S`` depends on them quadratically, so its gradient
  :math:`Z^\top g / \sqrt{d} + P^\top g / d` with :math:`g_{:, a} = (\bar a + \bar a^\top) h_{:, a} = 0`
  vanishes), and L-BFGS would never move it.  For the paper's shape: :math:`Q = Q^*`, so
  :math:`\theta = \sigma^2 |Q^*|^2/d \approx \rho` and :math:`m = O(d^{-1/2})`.
* ``"positional"``: :math:`Q_{:, a} = s\, P^\top u_a / \sqrt{w_a}` for ``a < min(r, k)``, with
  :math:`(w_a, u_a)` the eigenpairs of :math:`\Pi`, largest first, ``s = positional_scale``.  Then
  :math:`Q^\top Q / d = s^2 I`, :math:`M_{:, a} = s \sqrt{w_a}\, u_a = O(1)` and
  :math:`q = \sigma^2 s^2 I`.  Within a degenerate eigenspace (the named families all have one)
  the basis is made canonical: Gram-Schmidt of the projections of ``e_1, e_2, ...`` onto it,
  which also fixes the signs (the first non-zero entry of :math:`u_a` is positive).  For the
  paper's :math:`\Pi`, :math:`u = (1, -1)/\sqrt{2}`, ``w = 2`` and ``Q = s (1, ..., 1)``, i.e.
  :math:`m = s`, :math:`\theta = O(d^{-1/2})`, :math:`q = \sigma^2 s^2` (model page §6); for
  ``orthogonal`` the columns are ``s p_1, s p_2, ...``.  Columns beyond ``k`` get the nudge (for
  :math:`\Pi = 0` the whole start is a nudge).  The paper's start
  :math:`Q = (1, \dots, 1)/\sqrt{d}` (``positional_scale=d**-0.5``) has :math:`m = d^{-1/2} \to 0`
  and :math:`q = \sigma^2/d \to 0`: it is the trivial point ``Q = 0`` (a critical point of ``R``,
  since ``S(h)`` is quadratic in ``h`` there) plus a vanishing positional nudge, not a positional
  state, although the paper's gradient descent started there and still reached the positional
  minimum.
* ``"random"``: ``Q`` iid ``N(0, 1)``, ``standard_normal((d, r))`` from the random-start stream.
* an array of shape ``(d, r)`` (or ``(d,)`` when ``r = 1``).

Gauge
-----
:math:`R(Q O) = R(Q)` for every orthogonal ``r x r`` matrix ``O`` (``h h^T`` is invariant; for
``r = 1``, :math:`R(-Q) = R(Q)`), and then :math:`q \to O^\top q O`, :math:`M \to M O`,
:math:`\theta \to \theta O`.  Minima are reported in one representative (:func:`fix_gauge`): for
``r > 1`` the **principal axes**, :math:`Q \to Q V` with ``V`` the eigenvectors of
:math:`Q^\top Q`, largest eigenvalue first (so ``q`` is diagonal with decreasing entries; the
basis is arbitrary within a degenerate eigenspace); then, column by column, the sign making the
largest raw overlap :math:`|Q^{*\top}_b Q_{:, a}|, |p_l \cdot Q_{:, a}|` positive (the first on
ties).  For the paper's shape this is: :math:`\theta \ge 0` if
:math:`|Q \cdot Q^*| \ge |Q \cdot p_1|`, else :math:`m \ge 0`.  The gauge-invariant summaries are
reported as well: ``q_eigs`` (eigenvalues of ``q``, ascending), ``Tr_q``, ``MM``
:math:`= M M^\top`, ``thth`` :math:`= \theta\theta^\top`, ``thM`` :math:`= \theta M^\top`
(``r_t x L``, invariant under the rotations, and under the signs once they are fixed as above).

Convergence
-----------
L-BFGS-B stops when :math:`\|\nabla R\|_\infty \le` ``gtol`` (default ``1e-8``); ``converged`` is
re-checked on the gradient at the point the solver returns, whatever scipy's message
(``ftol = 0``: no stop on a stalled objective).  Scale: a component
:math:`\partial R / \partial Q_{ia} = \lambda Q_{ia} + \sum_\mu (g^\mu \cdot x^\mu_i)_a/\sqrt{d}`
is :math:`O(1)` at a generic point (``O(alpha d)`` sentences, each contributing
``O(1/sqrt(d))`` with random signs; :math:`Q_{ia} = O(1)`), so ``gtol`` is relative to the
problem's natural scale, independently of ``d``.  ``grad_norm`` is this same max-norm.  The gauge
rotation keeps ``R`` and the Frobenius norm of the gradient, but the max-norm at the rotated point
can differ from it by a factor of at most :math:`\sqrt{r}` (the gradient rotates with ``Q``;
only the sign changes for ``r = 1``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np
from scipy.optimize import minimize

from ..model import ModelParams
from ..model.checks import ParameterError, check_choice, check_int
from ..stats import mean_se
from ._blas import limit_blas_threads
from .memory import AUTO_FLOAT32_BYTES, check_instance, check_memory, check_n_test, n_sentences

__all__ = [
    "STARTS", "PAIRED_STARTS", "NUDGE_SCALE", "POSITION_SEED", "RESULT_KEYS",
    # positional encodings
    "position_factor", "positional_directions", "positional_encodings", "positional_start_basis",
    # data
    "data_seed", "default_chunk_size", "SentenceBlock", "Dataset", "make_dataset",
    "dataset_from_arrays", "fresh_sentences", "attention", "teacher_attention",
    "sentence_statistics",
    # risk
    "sentence_loss", "sentence_loss_grad", "softmax_vjp", "pre_activations",
    "block_loss_and_grad_h", "risk_and_grad", "risk",
    # order parameters, gauge, training
    "order_parameters", "fix_gauge", "warm_start", "Minimum", "minimise", "linear_baseline",
    "generalisation_errors", "SimulationResult", "train_starts", "run", "run_paired",
    "simulate",
]

#: The warm starts by name (module doc); an explicit array is also accepted.
STARTS = ("semantic", "positional", "random")
#: The two starts trained on the same data by :func:`simulate` (model page §6).
PAIRED_STARTS = ("semantic", "positional")
#: Standard deviation of the nudge given to student columns that a warm start leaves at zero.
NUDGE_SCALE = 1e-3
#: Seed of the fixed Gaussian matrix behind the positional directions ``E[:, 1:]`` (the paper's
#: arXiv number): ``P`` is a function of ``(Pi, d)`` alone.
POSITION_SEED = 240203902
#: Eigenvalues of ``Pi`` below this times the largest count as zero (rank of the encodings).
RANK_TOL = 1e-12
#: Eigenvalues of ``Pi`` closer than this times the largest are one eigenspace (positional start).
DEGENERACY_TOL = 1e-9

#: Target size, in bytes of float64, of one chunk of sentences (fits in L2/L3 cache).
_CHUNK_BYTES = 1 << 23

#: Keys of :meth:`SimulationResult.as_dict`, in order.
RESULT_KEYS = ("q", "M", "theta", "q_eigs", "Tr_q", "MM", "thth", "thM", "teacher_norm",
               "eps_t", "eps_g", "eps_g_err", "eps_lin", "eps_lin_err", "converged", "iterations",
               "grad_norm", "wall_time", "d", "alpha", "L", "r", "r_t", "start", "seed")
#: The numeric keys averaged by :func:`simulate` (matrices entry by entry).
_AVERAGED = ("q", "M", "theta", "q_eigs", "Tr_q", "MM", "thth", "thM", "teacher_norm", "eps_t",
             "eps_g", "eps_lin", "iterations", "grad_norm", "wall_time")


def default_chunk_size(L: int, d: int) -> int:
    """Sentences per chunk so that one float64 chunk ``(k, L, d)`` is about 8 MiB."""
    return max(1, _CHUNK_BYTES // (8 * L * d))


def data_seed(d: int, seed: int) -> int:
    """Seed of the data set of replica ``seed`` at dimension ``d``: ``10^6 d + seed``.

    Independent data for each ``d`` (the teacher is the first ``d`` draws of the seed's stream,
    so one seed for all ``d`` would correlate the teachers, hence the gaps, across ``d``), and
    the same data for every ``alpha`` at fixed ``d`` (paired curves in ``alpha``).
    """
    return 1_000_000 * int(d) + int(seed)


def _streams(seed: int):
    """The three independent seed sequences: (training data, test sentences, random start)."""
    return np.random.SeedSequence(seed).spawn(3)


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


def _json_safe(x):
    """NaN (e.g. a standard error from one seed) as JSON null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


# ============================================================================ positional encodings
def _rank(Pi: np.ndarray) -> int:
    """Number of eigenvalues of ``Pi`` above ``RANK_TOL`` times the largest (0 for ``Pi = 0``)."""
    w = np.linalg.eigvalsh(Pi)
    top = float(w.max()) if w.size else 0.0
    return int(np.sum(w > RANK_TOL * top)) if top > 0 else 0


def position_factor(Pi) -> np.ndarray:
    r"""``F (L x k)`` with :math:`F F^\top = \Pi`, ``k = rank Pi``: pivoted Cholesky (module doc).

    Step ``j`` pivots on the largest diagonal entry ``i`` of the Schur complement ``R``
    (:math:`R = \Pi` at the start; the first on ties) and sets
    :math:`F_{:, j} = R_{:, i}/\sqrt{R_{ii}}`, :math:`R \leftarrow R - F_{:, j} F_{:, j}^\top`.
    For the paper's :math:`\Pi = [[1, -1], [-1, 1]]`: ``F = [[1], [-1]]`` exactly.
    """
    Pi = np.asarray(Pi, dtype=np.float64)
    k = _rank(Pi)
    R = Pi.copy()
    cols = []
    for _ in range(k):
        i = int(np.argmax(np.diag(R)))
        if not R[i, i] > 0:                       # pragma: no cover - rank from eigvalsh says no
            break
        f = R[:, i] / math.sqrt(R[i, i])
        f[i] = math.sqrt(R[i, i])                 # the pivot entry itself, exactly
        cols.append(f)
        R = R - np.outer(f, f)
    return np.stack(cols, axis=1) if cols else np.zeros((Pi.shape[0], 0))


def positional_directions(d: int, k: int) -> np.ndarray:
    r"""``E (d x k)`` with :math:`E^\top E = d\, I_k` and ``E[:, 0] = (1, ..., 1)`` (module doc).

    Columns ``1..k-1``: ``Q`` factor of the QR decomposition of
    ``[1/sqrt(d), G]`` with ``G`` a ``d x (k - 1)`` standard Gaussian matrix from
    :data:`POSITION_SEED`, times :math:`\sqrt{d}` (columns orthogonal to the ones vector).
    """
    if k > d:
        raise ParameterError("d", f"d = {d} is smaller than the rank {k} of the positional Gram "
                                  "matrix Pi: the encodings do not fit")
    E = np.empty((d, k))
    if k == 0:
        return E
    E[:, 0] = 1.0
    if k > 1:
        G = np.random.default_rng(POSITION_SEED).standard_normal((d, k - 1))
        Qr, _ = np.linalg.qr(np.column_stack([np.full(d, 1.0 / math.sqrt(d)), G]))
        # QR may flip the sign of a column: fix it by the diagonal of R being positive
        signs = np.sign(np.einsum("ij,ij->j", Qr[:, 1:], G))
        E[:, 1:] = Qr[:, 1:] * signs * math.sqrt(d)
    return E


def positional_encodings(Pi, d: int) -> np.ndarray:
    r"""The encodings ``P (L x d)``, rows :math:`p_l`, with :math:`P P^\top / d = \Pi`:
    :math:`P = F E^\top` (:func:`position_factor`, :func:`positional_directions`)."""
    F = position_factor(Pi)
    return F @ positional_directions(d, F.shape[1]).T


def positional_start_basis(Pi) -> tuple:
    r"""``(w, U)``: the eigenvalues of :math:`\Pi` above the rank tolerance, largest first, and
    their eigenvectors ``U (L x k)``, with a canonical basis in each degenerate eigenspace.

    Eigenvalues within :data:`DEGENERACY_TOL` (relative to the largest) form one eigenspace, with
    orthonormal basis ``W``; its canonical basis is Gram-Schmidt of :math:`W W^\top e_1,
    W W^\top e_2, \dots` (projections of norm below ``1e-8`` skipped), so that it does not depend
    on the LAPACK build, and the first non-zero entry of each vector is positive.
    """
    Pi = np.asarray(Pi, dtype=np.float64)
    L = Pi.shape[0]
    w, U = np.linalg.eigh(Pi)
    w, U = w[::-1], U[:, ::-1]
    k = _rank(Pi)
    w, U = w[:k], U[:, :k]
    out = []
    a = 0
    while a < k:
        b = a + 1
        while b < k and abs(w[b] - w[a]) <= DEGENERACY_TOL * w[0]:
            b += 1
        W = U[:, a:b]
        basis = []
        for l in range(L):
            v = W @ W[l]                           # projection of e_l onto span(W)
            for u in basis:
                v = v - (u @ v) * u
            nv = float(np.linalg.norm(v))
            if nv > 1e-8:
                basis.append(v / nv)
            if len(basis) == b - a:
                break
        out.extend(basis)
        a = b
    U = np.stack(out, axis=1) if out else np.zeros((L, 0))
    return w.copy(), U


# ============================================================================ data
def attention(h: np.ndarray) -> np.ndarray:
    r"""Row softmax of the scores, :math:`S(h) = \mathrm{softmax}(h h^\top)`, max subtracted.

    ``h``: ``(..., L, r)``  ->  ``(..., L, L)``.
    """
    a = h @ np.swapaxes(h, -1, -2)
    a = a - a.max(axis=-1, keepdims=True)
    e = np.exp(a)
    return e / e.sum(axis=-1, keepdims=True)


def teacher_attention(h_star: np.ndarray, params: ModelParams) -> np.ndarray:
    r""":math:`T(h^*) = (1 - \omega)\, \mathrm{softmax}(h^* h^{*\top}) + \omega A` (model page §7).

    ``h_star``: ``(..., L, r_t)``  ->  ``(..., L, L)``.
    """
    return (1.0 - params.omega) * attention(h_star) + params.omega * params.A_array


def _flat(Z: np.ndarray) -> np.ndarray:
    """The ``(k L) x d`` view of a chunk ``(k, L, d)`` (BLAS products; module doc)."""
    return Z.reshape(-1, Z.shape[-1])


def sentence_statistics(Z: np.ndarray, Q_star: np.ndarray, P: np.ndarray, params: ModelParams):
    r"""``(T, gram, C)`` of tokens ``Z (k, L, d)``: :math:`T(h^*)` with :math:`h^* = Z Q^*/\sqrt{d}`,
    :math:`\Gamma = Z Z^\top` and :math:`C = Z P^\top/\sqrt{d}`, each ``(k, L, L)``, float64."""
    Z = np.asarray(Z, dtype=np.float64)
    k, L, d = Z.shape
    sqd = math.sqrt(d)
    h_star = (_flat(Z) @ Q_star).reshape(k, L, -1) / sqd
    T = teacher_attention(h_star, params)
    gram = Z @ Z.transpose(0, 2, 1)
    C = (_flat(Z) @ P.T).reshape(k, L, L) / sqd
    return T, gram, C


@dataclass(frozen=True)
class SentenceBlock:
    """A chunk of sentences, float64: ``Z (k, L, d)``; ``T``, ``gram``, ``C`` ``(k, L, L)``."""

    Z: np.ndarray
    T: np.ndarray
    gram: np.ndarray
    C: np.ndarray

    @property
    def k(self) -> int:
        return self.Z.shape[0]


@dataclass(frozen=True, eq=False)
class Dataset:
    r"""One training set: teacher ``Q*``, encodings ``P``, ``n = round(alpha d)`` sentences.

    Attributes
    ----------
    params : ModelParams
    d : int
    alpha : float
        Requested sample complexity (``n / d`` differs by rounding only).
    seed : int
    Z : ndarray ``(n, L, d)``, float64 or float32
        Token noise; the student reads ``X = Z + P / sqrt(d)``.
    Q_star : ndarray ``(d, r_t)``
    P : ndarray ``(L, d)``
        Positional encodings, :math:`P P^\top / d = \Pi`.
    T, gram, C : ndarray ``(n, L, L)``
        :math:`T(h^*)`, :math:`Z Z^\top`, :math:`Z P^\top / \sqrt{d}` (float64).
    """

    params: ModelParams
    d: int
    alpha: float
    seed: int
    Z: np.ndarray
    Q_star: np.ndarray
    P: np.ndarray
    T: np.ndarray
    gram: np.ndarray
    C: np.ndarray

    @property
    def n(self) -> int:
        return self.Z.shape[0]

    @property
    def L(self) -> int:
        return self.Z.shape[1]

    @property
    def r(self) -> int:
        """Student rank (from the parameters)."""
        return self.params.r

    @property
    def r_t(self) -> int:
        return self.Q_star.shape[1]

    @property
    def Pi(self) -> np.ndarray:
        r""":math:`\Pi = P P^\top / d` of the stored encodings."""
        return self.P @ self.P.T / self.d

    def X(self) -> np.ndarray:
        """Student inputs ``Z + P / sqrt(d)``, ``(n, L, d)`` float64 (materialised)."""
        return np.asarray(self.Z, dtype=np.float64) + self.P / math.sqrt(self.d)

    def Y(self) -> np.ndarray:
        """Targets ``Y = T Z``, ``(n, L, d)`` float64 (materialised)."""
        return self.T @ np.asarray(self.Z, dtype=np.float64)

    def blocks(self, chunk_size: int | None = None) -> Iterator[SentenceBlock]:
        """The training set in chunks of ``chunk_size`` sentences, as float64.

        float64 data are yielded as views; float32 data are converted into ONE reused buffer
        (no allocation, hence no page faults, per chunk), so a block's ``Z`` is valid only until
        the next block is requested.
        """
        for sl, Z in float64_chunks(self.Z, chunk_size or default_chunk_size(self.L, self.d)):
            yield SentenceBlock(Z, self.T[sl], self.gram[sl], self.C[sl])

    def init_rng(self) -> np.random.Generator:
        """Generator of the random warm start."""
        return np.random.default_rng(_streams(self.seed)[2])

    def nudge_rng(self) -> np.random.Generator:
        """Generator of the nudge of zero columns (a child of the random-start stream)."""
        return np.random.default_rng(_streams(self.seed)[2].spawn(1)[0])


def _resolve_dtype(dtype, n: int, L: int, d: int):
    if isinstance(dtype, str) and dtype == "auto":
        return np.float32 if 8 * L * n * d > AUTO_FLOAT32_BYTES else np.float64
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ParameterError("dtype", f"must be float32, float64 or 'auto', got {dtype!r}")
    return dt.type


def make_dataset(params, d: int, alpha: float, seed: int = 0, *, dtype="auto",
                 chunk_size: int | None = None, blas_threads: int | None = 1) -> Dataset:
    r"""Draw a teacher and ``n = round(alpha d)`` training sentences (model page §2, §7).

    Parameters
    ----------
    params : ModelParams
        ``ModelParams()`` is the paper's model (module doc).
    d : int
        Token dimension (>= 2, and at least the rank of :math:`\Pi`).
    alpha : float
        Sample complexity ``n / d``.
    seed : int
        Seed of :class:`numpy.random.SeedSequence`; same seed, same data (module doc,
        Randomness).
    dtype : "auto", float64 or float32
        Storage of ``Z`` (module doc, Storage).  The Gram quantities are always float64.
    chunk_size : int, optional
        Sentences drawn per chunk (does not change the data); memory beyond the stored data is
        ``O(chunk_size * L * d)``.
    blas_threads : int or None
        OpenBLAS threads while computing the statistics (module doc).
    """
    params = ModelParams.coerce(params)
    d, alpha = check_instance(d, alpha, seed)
    L = params.L
    check_memory(d, alpha, L=L)
    P = positional_encodings(params.Pi_array, d)
    n = n_sentences(d, alpha)
    store = _resolve_dtype(dtype, n, L, d)
    rng = np.random.default_rng(_streams(seed)[0])
    Q_star = rng.standard_normal((d, params.r_t))
    Z = np.empty((n, L, d), dtype=store)
    T, gram, C = (np.empty((n, L, L)) for _ in range(3))
    k = chunk_size or default_chunk_size(L, d)
    with limit_blas_threads(blas_threads):
        for i in range(0, n, k):
            sl = slice(i, min(i + k, n))
            Z[sl] = rng.standard_normal((sl.stop - sl.start, L, d)) * params.sigma
            T[sl], gram[sl], C[sl] = sentence_statistics(Z[sl], Q_star, P, params)
    return Dataset(params=params, d=d, alpha=alpha, seed=seed, Z=Z, Q_star=Q_star, P=P,
                   T=T, gram=gram, C=C)


def dataset_from_arrays(params, Z, Q_star, P=None, *, seed: int = 0) -> Dataset:
    """A data set from given tokens ``Z (n, L, d)``, teacher ``Q* (d, r_t)`` and encodings
    ``P (L, d)`` (default :func:`positional_encodings` of ``params.Pi``).  ``seed`` still names
    the test and random-start streams.  ``P`` is used as given: its Gram matrix is not checked
    against ``params.Pi``."""
    params = ModelParams.coerce(params)
    Z = np.asarray(Z)
    if Z.dtype not in (np.float32, np.float64):
        Z = Z.astype(np.float64)
    n, L, d = Z.shape
    Q_star = np.asarray(Q_star, dtype=np.float64).reshape(d, -1)
    if L != params.L or Q_star.shape[1] != params.r_t:
        raise ParameterError("params", f"Z has L = {L} tokens and Q* rank {Q_star.shape[1]}; the "
                                       f"parameters say L = {params.L}, r_t = {params.r_t}")
    P = positional_encodings(params.Pi_array, d) if P is None else np.asarray(P, dtype=np.float64)
    T, gram, C = sentence_statistics(Z, Q_star, P, params)
    return Dataset(params=params, d=d, alpha=n / d, seed=seed, Z=Z, Q_star=Q_star, P=P,
                   T=T, gram=gram, C=C)


def fresh_sentences(data: Dataset, n_test: int,
                    chunk_size: int | None = None) -> Iterator[SentenceBlock]:
    """Stream ``n_test`` fresh sentences with the same teacher and encodings, chunk by chunk
    (float64), from the test stream of ``data.seed``: the same sentences on every call and for
    every chunk size; memory ``O(chunk_size * L * d)``."""
    rng = np.random.default_rng(_streams(data.seed)[1])
    k = chunk_size or default_chunk_size(data.L, data.d)
    for i in range(0, n_test, k):
        kk = min(k, n_test - i)
        Z = rng.standard_normal((kk, data.L, data.d)) * data.params.sigma
        yield SentenceBlock(Z, *sentence_statistics(Z, data.Q_star, data.P, data.params))


# ============================================================================ risk
def sentence_loss(S, T, gram, C, Pi, d: int) -> np.ndarray:
    r"""Per-sentence loss
    :math:`\ell = [\mathrm{tr}(D\Gamma D^\top) - 2\,\mathrm{tr}(D C S^\top) + \mathrm{tr}(S\Pi S^\top)]/(2d)`,
    :math:`D = T - S` (module doc).

    ``S``: ``(k, L, L)`` or one ``(L, L)`` matrix (the baseline ``B``); ``T``, ``gram``, ``C``:
    ``(k, L, L)``; ``Pi``: ``(L, L)``  ->  ``(k,)``.
    """
    D = T - S
    quad = np.einsum("...ij,...jk,...ik->...", D, gram, D)
    cross = np.einsum("...ij,...jk,...ik->...", D, C, S)
    pos = np.einsum("...ij,jk,...ik->...", S, Pi, S)
    return (quad - 2.0 * cross + pos) / (2.0 * d)


def sentence_loss_grad(S, T, gram, C, Pi, d: int):
    r"""``(l, dl/dS)`` of a block: :math:`\partial\ell/\partial S = -(D\Gamma + DC - SC^\top - S\Pi)/d`.

    Shapes as :func:`sentence_loss` (``S`` a stack); the gradient is ``(k, L, L)``.
    """
    D = T - S
    DG = D @ gram
    DC = D @ C
    SC = S @ C.transpose(0, 2, 1)
    SP = S @ Pi
    loss = (np.einsum("kij,kij->k", DG, D) - 2.0 * np.einsum("kij,kij->k", DC, S)
            + np.einsum("kij,kij->k", SP, S)) / (2.0 * d)
    return loss, -(DG + DC - SC - SP) / d


def softmax_vjp(h: np.ndarray, S: np.ndarray, grad_S: np.ndarray) -> np.ndarray:
    r"""Pull back :math:`\partial\ell/\partial S` through :math:`S = \mathrm{softmax}(h h^\top)`:
    :math:`\bar a = S \odot (\bar S - \mathrm{rowsum}(\bar S \odot S))`,
    :math:`\partial\ell/\partial h = (\bar a + \bar a^\top) h`.

    ``h``: ``(k, L, r)``; ``S``, ``grad_S``: ``(k, L, L)``  ->  ``(k, L, r)``.
    """
    ga = S * (grad_S - np.sum(grad_S * S, axis=-1, keepdims=True))
    return (ga + ga.transpose(0, 2, 1)) @ h


def pre_activations(Z: np.ndarray, Q: np.ndarray, M: np.ndarray) -> np.ndarray:
    r""":math:`h = Z Q / \sqrt{d} + M`, ``Z (k, L, d)``, ``Q (d, r)``, ``M = P Q / d (L, r)``
    ->  ``(k, L, r)``."""
    k, L, d = Z.shape
    return (_flat(Z) @ Q).reshape(k, L, -1) / math.sqrt(d) + M


def block_loss_and_grad_h(block: SentenceBlock, h: np.ndarray, Pi: np.ndarray, d: int):
    """Per-sentence losses ``(k,)`` and ``dl/dh`` ``(k, L, r)`` of a block at pre-activations
    ``h (k, L, r)`` (:func:`sentence_loss_grad`, then :func:`softmax_vjp`)."""
    S = attention(h)
    loss, grad_S = sentence_loss_grad(S, block.T, block.gram, block.C, Pi, d)
    return loss, softmax_vjp(h, S, grad_S)


def _as_Q(Q, data: Dataset) -> np.ndarray:
    Q = np.asarray(Q, dtype=np.float64)
    return Q.reshape(data.d, -1) if Q.ndim == 1 else Q


def risk_and_grad(Q: np.ndarray, data: Dataset, chunk_size: int | None = None):
    r"""Empirical risk :math:`R(Q)` and its exact gradient :math:`\nabla_Q R` (module doc).

    ``Q``: ``(d, r)`` (a ``(d,)`` vector is read as ``r = 1``)  ->  ``(R, grad)``, ``grad``
    ``(d, r)`` (also for a ``(d,)`` input).  One pass over the data (each chunk is read for ``h``
    and again, from cache, for ``Z^T g``); memory ``O(chunk_size * L * d)``.
    """
    Q = _as_Q(Q, data)
    d = data.d
    sqd = math.sqrt(d)
    Pi = data.Pi
    M = data.P @ Q / d
    lam = data.params.lam
    total = 0.5 * lam * float(np.einsum("ia,ia->", Q, Q))
    grad = lam * Q
    g_sum = np.zeros((data.L, Q.shape[1]))
    for block in data.blocks(chunk_size):
        h = pre_activations(block.Z, Q, M)
        loss, g = block_loss_and_grad_h(block, h, Pi, d)
        total += float(loss.sum())
        grad += _flat(block.Z).T @ g.reshape(-1, g.shape[-1]) / sqd
        g_sum += g.sum(axis=0)
    grad += data.P.T @ g_sum / d
    return float(total), grad


def risk(Q: np.ndarray, data: Dataset, chunk_size: int | None = None) -> float:
    """Empirical risk :math:`R(Q)` (penalty included), without the gradient."""
    Q = _as_Q(Q, data)
    d = data.d
    Pi = data.Pi
    M = data.P @ Q / d
    total = 0.5 * data.params.lam * float(np.einsum("ia,ia->", Q, Q))
    for block in data.blocks(chunk_size):
        S = attention(pre_activations(block.Z, Q, M))
        total += float(sentence_loss(S, block.T, block.gram, block.C, Pi, d).sum())
    return total


# ============================================================================ order parameters
def order_parameters(Q: np.ndarray, data: Dataset) -> dict:
    r"""Order parameters in the theory's units (model page §7) and their gauge invariants.

    :math:`q = \sigma^2 Q^\top Q/d`, :math:`M = P Q/d`, :math:`\theta = \sigma^2 Q^{*\top} Q/d`;
    ``q_eigs`` (ascending), ``Tr_q``, ``MM`` :math:`= M M^\top`, ``thth`` :math:`= \theta\theta^\top`,
    ``thM`` :math:`= \theta M^\top`.  Arrays (``Tr_q`` a float).
    """
    Q = _as_Q(Q, data)
    d, s2 = data.d, data.params.sigma ** 2
    q = s2 * (Q.T @ Q) / d
    q = (q + q.T) / 2
    M = data.P @ Q / d
    theta = s2 * (data.Q_star.T @ Q) / d
    return {"q": q, "M": M, "theta": theta, "q_eigs": np.linalg.eigvalsh(q),
            "Tr_q": float(np.trace(q)), "MM": M @ M.T, "thth": theta @ theta.T, "thM": theta @ M.T}


def fix_gauge(Q: np.ndarray, data: Dataset) -> np.ndarray:
    """The representative of ``{Q O : O orthogonal}`` reported (module doc, Gauge): principal
    axes of ``Q^T Q`` (largest first) for ``r > 1``, then per column the sign making the largest
    raw overlap with a teacher column or an encoding positive (first on ties)."""
    Q = _as_Q(Q, data)
    if Q.shape[1] > 1:
        _, V = np.linalg.eigh(Q.T @ Q)
        Q = Q @ V[:, ::-1]
    overlaps = np.concatenate([data.Q_star.T @ Q, data.P @ Q], axis=0)   # (r_t + L, r)
    lead = overlaps[np.argmax(np.abs(overlaps), axis=0), np.arange(Q.shape[1])]
    return Q * np.where(lead < 0, -1.0, 1.0)


# ============================================================================ training
def warm_start(data: Dataset, start, positional_scale: float = 1.0) -> np.ndarray:
    """Initial ``Q (d, r)`` for ``start`` in :data:`STARTS` or an explicit array (copied); see the
    module doc for each start and for the nudge of zero columns."""
    d, r = data.d, data.r
    if not isinstance(start, str):
        Q0 = np.array(start, dtype=np.float64)
        if Q0.shape == (d,) and r == 1:
            Q0 = Q0.reshape(d, 1)
        if Q0.shape != (d, r):
            raise ParameterError("start", f"an array start must have shape ({d}, {r}), "
                                          f"got {Q0.shape}")
        if not np.all(np.isfinite(Q0)):
            raise ParameterError("start", "an array start must be finite")
        return Q0
    check_choice("start", start, STARTS)
    if start == "random":
        return data.init_rng().standard_normal((d, r))
    Q0 = np.zeros((d, r))
    if start == "semantic":
        j = min(r, data.r_t)
        Q0[:, :j] = data.Q_star[:, :j]
    else:
        w, U = positional_start_basis(data.params.Pi_array)
        j = min(r, w.size)
        Q0[:, :j] = float(positional_scale) * (data.P.T @ U[:, :j]) / np.sqrt(w[:j])
    if j < r:
        Q0[:, j:] = NUDGE_SCALE * data.nudge_rng().standard_normal((d, r - j))
    return Q0


@dataclass(frozen=True)
class Minimum:
    """One L-BFGS-B solve: the point (gauge fixed), its risk and the solver's status.

    ``grad_norm``: :math:`\\|\\nabla R\\|_\\infty` at the point the solver returned (module doc).
    """

    Q: np.ndarray = field(repr=False)
    R: float
    grad_norm: float
    converged: bool
    iterations: int
    n_evaluations: int
    message: str
    wall_time: float


def minimise(data: Dataset, Q0: np.ndarray, *, gtol: float = 1e-8, maxiter: int = 10000,
             maxcor: int = 20, chunk_size: int | None = None,
             blas_threads: int | None = 1) -> Minimum:
    r"""Minimise :math:`R(Q)` with L-BFGS-B (no bounds) from ``Q0 (d, r)`` (or ``(d,)`` for
    ``r = 1``): stop at :math:`\|\nabla R\|_\infty \le` ``gtol``, ``ftol = 0``, ``converged``
    re-checked on the returned gradient (module doc, Convergence); the point is returned as
    ``(d, r)`` in the gauge of :func:`fix_gauge`.  ``blas_threads`` caps OpenBLAS during the
    solve (``None``: leave it; :mod:`._blas`)."""
    Q0 = _as_Q(Q0, data)
    shape = Q0.shape
    n_eval = 0

    def fun(x):
        nonlocal n_eval
        n_eval += 1
        R, G = risk_and_grad(x.reshape(shape), data, chunk_size)
        return R, G.ravel()

    t0 = time.perf_counter()
    with limit_blas_threads(blas_threads):
        res = minimize(fun, Q0.ravel(), jac=True, method="L-BFGS-B",
                       options={"maxiter": int(maxiter), "maxfun": 10 * int(maxiter), "gtol": gtol,
                                "ftol": 0.0, "maxcor": int(maxcor), "maxls": 50})
    wall = time.perf_counter() - t0
    gnorm = float(np.max(np.abs(res.jac)))
    msg = res.message if isinstance(res.message, str) else res.message.decode()
    return Minimum(Q=fix_gauge(res.x.reshape(shape), data), R=float(res.fun), grad_norm=gnorm,
                   converged=bool(gnorm <= gtol), iterations=int(res.nit), n_evaluations=n_eval,
                   message=msg, wall_time=wall)


def linear_baseline(data: Dataset) -> np.ndarray:
    r"""Least-squares positional baseline :math:`B = \arg\min_B \sum_\mu \|Y^\mu - B X^\mu\|_F^2`.

    Normal equations :math:`B \sum_\mu X X^\top = \sum_\mu Y X^\top`, per sentence
    :math:`X X^\top = \Gamma + C + C^\top + \Pi` and :math:`Y X^\top = T(\Gamma + C)`.
    For large ``d``, :math:`B \to \mathbb{E}[T(h^*)]` (model page §4).  Returns ``(L, L)``.
    """
    XX = (data.gram + data.C + data.C.transpose(0, 2, 1)).sum(axis=0) + data.n * data.Pi
    YX = np.einsum("kij,kjl->il", data.T, data.gram + data.C)
    return np.linalg.solve(XX.T, YX.T).T


def generalisation_errors(data: Dataset, Qs: Sequence[np.ndarray], B: np.ndarray | None = None,
                          n_test: int = 2000, chunk_size: int | None = None):
    r"""Monte Carlo test errors on ``n_test`` fresh sentences (the same for every argument):
    :math:`\varepsilon_g(Q) = \mathbb{E}\|Y - S(h) X\|_F^2/(2d)` per ``Q`` in ``Qs`` and, if ``B``
    is given, :math:`\varepsilon_{\rm lin} = \mathbb{E}\|Y - B X\|_F^2/(2d)`.

    Returns ``(eps_g, eps_lin)``: a list of ``(mean, standard error)``, one per ``Q``, and a pair
    (or ``None``).  Memory ``O(chunk_size * L * d)``.
    """
    d = data.d
    Qs = [_as_Q(Q, data) for Q in Qs]
    widths = [Q.shape[1] for Q in Qs]
    cuts = np.cumsum([0] + widths)
    Qall = np.concatenate(Qs, axis=1) if Qs else np.zeros((d, 0))
    Mall = data.P @ Qall / d
    Pi = data.Pi
    losses = [[] for _ in Qs]
    lin = []
    for block in fresh_sentences(data, n_test, chunk_size):
        H = pre_activations(block.Z, Qall, Mall)
        for j in range(len(Qs)):
            S = attention(H[:, :, cuts[j]:cuts[j + 1]])
            losses[j].append(sentence_loss(S, block.T, block.gram, block.C, Pi, d))
        if B is not None:
            lin.append(sentence_loss(B, block.T, block.gram, block.C, Pi, d))
    eps_g = [mean_se(np.concatenate(x)) for x in losses]
    eps_lin = mean_se(np.concatenate(lin)) if B is not None else None
    return eps_g, eps_lin


@dataclass(frozen=True)
class SimulationResult:
    """One finite-size minimum, in the theory's units (module doc); :meth:`as_dict` for JSON.

    Matrices ``q (r, r)``, ``M (L, r)``, ``theta (r_t, r)`` in the reported gauge; invariants
    ``q_eigs``, ``Tr_q``, ``MM``, ``thth``, ``thM``; ``teacher_norm`` :math:`= Q^{*\\top} Q^*/d`
    (``r_t x r_t``, the instance's :math:`\\rho/\\sigma^2`).  ``eps_g_err``, ``eps_lin_err``:
    Monte Carlo standard errors over ``n_test`` sentences.  ``wall_time``: the L-BFGS-B solve.
    ``Q``, ``message``, ``n_evaluations``, ``n_test`` are attributes, not in :meth:`as_dict`.
    At the paper's shape ``m = M[0, 0]``, ``theta = theta[0, 0]``, ``q = q[0, 0]``
    (:func:`symattn.simulation.instances.paper_order_parameters`).
    """

    q: np.ndarray
    M: np.ndarray
    theta: np.ndarray
    q_eigs: np.ndarray
    Tr_q: float
    MM: np.ndarray
    thth: np.ndarray
    thM: np.ndarray
    teacher_norm: np.ndarray
    eps_t: float
    eps_g: float
    eps_g_err: float
    eps_lin: float
    eps_lin_err: float
    converged: bool
    iterations: int
    grad_norm: float
    wall_time: float
    d: int
    alpha: float
    L: int
    r: int
    r_t: int
    start: str
    seed: int
    Q: np.ndarray = field(default=None, repr=False, compare=False)
    message: str = ""
    n_evaluations: int = 0
    n_test: int = 0

    def as_dict(self) -> dict:
        """The keys :data:`RESULT_KEYS`, JSON-ready (matrices as nested lists)."""
        out = {}
        for k in RESULT_KEYS:
            v = getattr(self, k)
            out[k] = v.tolist() if isinstance(v, np.ndarray) else v
        return out


def train_starts(data: Dataset, starts: Iterable = PAIRED_STARTS, *, n_test: int = 2000,
                 gtol: float = 1e-8, maxiter: int = 10000, positional_scale: float = 1.0,
                 chunk_size: int | None = None, blas_threads: int | None = 1) -> dict:
    """Train from each start on ONE data set; score all minima and the baseline on the same
    test sentences.  Returns ``{start: SimulationResult}`` (array starts: ``"custom"``,
    ``"custom1"``, ...).  Differences between starts (e.g. of ``eps_t``) are paired: same
    teacher, same training set, same test sentences.  ``blas_threads`` caps OpenBLAS in the
    solves and the scoring."""
    n_test = check_n_test(n_test, data.d)
    minima = {}
    for start in starts:
        name = start if isinstance(start, str) else "custom"
        if name in minima:
            name = f"{name}{len(minima)}"
        Q0 = warm_start(data, start, positional_scale)
        minima[name] = minimise(data, Q0, gtol=gtol, maxiter=maxiter, chunk_size=chunk_size,
                                blas_threads=blas_threads)
    with limit_blas_threads(blas_threads):
        B = linear_baseline(data)
        eps_g, (eps_lin, eps_lin_err) = generalisation_errors(
            data, [mn.Q for mn in minima.values()], B, n_test, chunk_size)
    teacher_norm = data.Q_star.T @ data.Q_star / data.d
    out = {}
    for (name, mn), (eg, eg_err) in zip(minima.items(), eps_g):
        op = order_parameters(mn.Q, data)
        out[name] = SimulationResult(
            **op, teacher_norm=teacher_norm, eps_t=mn.R / data.d, eps_g=eg, eps_g_err=eg_err,
            eps_lin=eps_lin, eps_lin_err=eps_lin_err, converged=mn.converged,
            iterations=mn.iterations, grad_norm=mn.grad_norm, wall_time=mn.wall_time, d=data.d,
            alpha=data.alpha, L=data.L, r=data.r, r_t=data.r_t, start=name, seed=data.seed,
            Q=mn.Q, message=mn.message, n_evaluations=mn.n_evaluations, n_test=n_test)
    return out


def _check_start(start):
    if isinstance(start, str):
        check_choice("start", start, STARTS)
    return start


def run(params, d: int, alpha: float, start="semantic", seed: int = 0, *, n_test: int = 2000,
        gtol: float = 1e-8, maxiter: int = 10000, positional_scale: float = 1.0, dtype="auto",
        chunk_size: int | None = None, blas_threads: int | None = 1) -> SimulationResult:
    """One instance: draw the data of ``seed`` (used as given), train from ``start``, score.
    See :func:`train_starts`."""
    _check_start(start)
    d, alpha = check_instance(d, alpha, seed)
    check_n_test(n_test, d)
    data = make_dataset(params, d, alpha, seed, dtype=dtype, chunk_size=chunk_size,
                        blas_threads=blas_threads)
    res = train_starts(data, [start], n_test=n_test, gtol=gtol, maxiter=maxiter,
                       positional_scale=positional_scale, chunk_size=chunk_size,
                       blas_threads=blas_threads)
    return next(iter(res.values()))


def run_paired(params, d: int, alpha: float, seed: int = 0, starts: Iterable = PAIRED_STARTS,
               *, dtype="auto", **kwargs) -> dict:
    """Several starts (default both warm starts) on ONE data set (same teacher, training and test
    sentences): ``{start: SimulationResult}``; the lower ``eps_t`` is the better minimum found
    (model page §6).  ``kwargs`` as :func:`train_starts`."""
    starts = [_check_start(s) for s in starts]
    d, alpha = check_instance(d, alpha, seed)
    check_n_test(kwargs.get("n_test", 2000), d)
    data = make_dataset(params, d, alpha, seed, dtype=dtype, chunk_size=kwargs.get("chunk_size"),
                        blas_threads=kwargs.get("blas_threads", 1))
    return train_starts(data, starts, **kwargs)


def _stats(rows: list) -> dict:
    """Mean and standard error over instances of every key of :data:`_AVERAGED` (matrices entry
    by entry, as nested lists), ``converged`` (all) and ``n_converged``."""
    out = {}
    for k in _AVERAGED:
        vals = np.array([np.asarray(r[k], dtype=float) for r in rows])
        if vals.ndim == 1:
            out[k], out[k + "_err"] = mean_se(vals)
        else:
            mean = vals.mean(axis=0)
            err = (vals.std(axis=0, ddof=1) / math.sqrt(len(vals)) if len(vals) > 1
                   else np.full(mean.shape, math.nan))
            out[k], out[k + "_err"] = mean.tolist(), err.tolist()
    out["converged"] = all(bool(r["converged"]) for r in rows)
    out["n_converged"] = sum(bool(r["converged"]) for r in rows)
    return out


def _failures(instances: list) -> list:
    """One line per instance whose solve stopped above ``gtol``, or whose risk or test errors are
    not finite: these numbers are not minima."""
    out = []
    for r in instances:
        where = f"{r['start']} start, seed {r['seed']} (data seed {r['data_seed']})"
        if not r["converged"]:
            out.append(f"{where}: not converged, max|grad R| = {r['grad_norm']:.3g} "
                       f"after {r['iterations']} iterations")
        bad = [k for k in ("eps_t", "eps_g", "eps_lin", "Tr_q")
               if r[k] is None or not math.isfinite(r[k])]
        if bad:
            out.append(f"{where}: not finite: {', '.join(bad)}")
    return out


def simulate(params, d: int, alpha: float, start="semantic", seeds=1, n_test: int = 2000,
             progress=None, *, paired: bool = True, **kwargs) -> dict:
    """Independent instances (new teacher and data each): mean and standard error of every
    quantity, as matrices (``symattn simulate`` for a shape other than the paper's; the paper's
    table is :func:`.instances.simulate_seeds`).

    Instance ``k`` is the data set of seed :func:`data_seed` ``(d, k)`` (as
    :func:`.instances.simulate_seeds`); ``seeds`` is a count ``K`` (instances ``0..K-1``) or a
    list of instance indices.  For ``start`` semantic or positional with ``paired`` (default), the
    other start is trained on the same data, and the paired difference
    ``delta_eps_t = eps_t(semantic) - eps_t(positional)`` is reported with its standard error, with
    the other start's statistics under ``paired``.  ``progress(k, K, seconds)`` after each instance.
    ``kwargs``: ``gtol, maxiter, positional_scale, dtype, chunk_size, blas_threads``.

    Returns a JSON-ready dict (``nan`` as ``None``): ``d, alpha, start, L, r, r_t, seeds,
    n_test``; for each quantity ``k`` (matrices entry by entry) ``k`` and ``k_err`` (mean and
    standard error over instances; for ``eps_g`` the spread across instances, which includes the
    Monte Carlo noise); ``converged``, ``n_converged``; ``failures`` (list of strings, empty if
    every instance is a converged, finite minimum); ``delta_eps_t``, ``delta_eps_t_err``,
    ``semantic_lower`` and ``paired`` when paired; ``instances`` (one
    :meth:`SimulationResult.as_dict` per instance and start, with ``data_seed``), ``params``,
    ``wall_time``.
    """
    params = ModelParams.coerce(params)
    _check_start(start)
    if not isinstance(start, str):
        raise ParameterError("start", "simulate needs a named start (one of "
                                      f"{', '.join(STARTS)}); use run for an array")
    d, alpha = check_instance(d, alpha)
    n_test = check_n_test(n_test, d)
    if isinstance(seeds, (list, tuple, range, np.ndarray)):
        seed_list = [check_int("seeds", s, 0) for s in seeds]
        if not seed_list:
            raise ParameterError("seeds", "need at least one seed")
    else:
        seed_list = list(range(check_int("seeds", seeds, 1)))
    check_memory(d, alpha, L=params.L)
    starts = (list(PAIRED_STARTS) if paired and start in PAIRED_STARTS else [start])
    dtype = kwargs.pop("dtype", "auto")
    rows, t0 = [], time.perf_counter()
    for i, s in enumerate(seed_list):
        data = make_dataset(params, d, alpha, data_seed(d, s), dtype=dtype,
                            chunk_size=kwargs.get("chunk_size"),
                            blas_threads=kwargs.get("blas_threads", 1))
        res = train_starts(data, starts, n_test=n_test, **kwargs)
        rows.append({name: {**r.as_dict(), "seed": s, "data_seed": data.seed}
                     for name, r in res.items()})
        if progress:
            progress(i + 1, len(seed_list), time.perf_counter() - t0)
    out = {"d": d, "alpha": alpha, "start": start, "L": params.L, "r": params.r,
           "r_t": params.r_t, "seeds": seed_list, "n_test": n_test}
    out.update(_stats([row[start] for row in rows]))
    if len(starts) > 1:
        other = starts[1 - starts.index(start)]
        delta = [row["semantic"]["eps_t"] - row["positional"]["eps_t"] for row in rows]
        out["delta_eps_t"], out["delta_eps_t_err"] = mean_se(delta)
        out["semantic_lower"] = int(sum(x < 0 for x in delta))
        out["paired"] = {other: _stats([row[other] for row in rows])}
    out["instances"] = [row[name] for row in rows for name in row]
    out["failures"] = _failures(out["instances"])
    out["params"] = params.as_dict()
    out["wall_time"] = time.perf_counter() - t0
    return _json_safe(out)
