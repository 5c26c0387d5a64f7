r"""The shape of the output channel: ``L`` tokens, student rank ``r``, teacher rank ``r_t``.

Everything the kernel layer generates is generated for one :class:`Shape` (model page §7):

* the student pre-activations ``h`` and their means ``w`` are ``L x r`` matrices, flattened
  row by row into vectors of length ``k = L r`` (entry ``(l, a)`` at index ``l r + a``);
* the teacher pre-activations ``h*`` are ``L x r_t``, flattened the same way (``k_t = L r_t``);
* the target ``T`` and the teacher's ``A`` are ``L x L`` matrices.

The paper's case is :data:`PAPER_SHAPE` (``L = 2``, ``r = r_t = 1``).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from ..model.checks import check_int

__all__ = ["Shape", "PAPER_SHAPE", "MAX_L", "MAX_RANK", "flat"]

#: The largest shapes the kernel layer generates: the Hessian has ``(L r)^2`` entries, and its
#: SymPy derivation and compilation grow quickly (``L = 3, r = r_t = 2``: 19 s of generation and
#: 9 s of compilation, measured).
MAX_L = 8
MAX_RANK = 4


@dataclass(frozen=True)
class Shape:
    """``L`` tokens, student rank ``r``, teacher rank ``r_t`` (validated on construction)."""

    L: int = 2
    r: int = 1
    r_t: int = 1

    def __post_init__(self):
        check_int("L", self.L, 2, MAX_L)
        check_int("r", self.r, 1, MAX_RANK)
        check_int("r_t", self.r_t, 1, MAX_RANK)

    @property
    def k(self) -> int:
        """Length of the flattened student pre-activation ``h``: ``L r``."""
        return self.L * self.r

    @property
    def k_t(self) -> int:
        """Length of the flattened teacher pre-activation ``h*``: ``L r_t``."""
        return self.L * self.r_t

    @property
    def tag(self) -> str:
        """``"L2_r1_rt1"``: a name for files and messages."""
        return f"L{self.L}_r{self.r}_rt{self.r_t}"

    def _matrix(self, name: str, cols: int) -> sp.Matrix:
        if cols == 1:
            return sp.Matrix(self.L, 1, lambda l, a: sp.Symbol(f"{name}_{l + 1}", real=True))
        return sp.Matrix(self.L, cols,
                         lambda l, a: sp.Symbol(f"{name}_{{{l + 1},{a + 1}}}", real=True))

    def student(self, name: str = "h") -> sp.Matrix:
        """``L x r`` matrix of real symbols (``h_1, h_2`` at rank one, else ``h_{l,a}``)."""
        return self._matrix(name, self.r)

    def teacher(self, name: str = "h^*") -> sp.Matrix:
        """``L x r_t`` matrix of real symbols."""
        return self._matrix(name, self.r_t)

    def square(self, name: str) -> sp.Matrix:
        """``L x L`` matrix of real symbols ``name_ij``."""
        return sp.Matrix(self.L, self.L,
                         lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", real=True))


PAPER_SHAPE = Shape()


def flat(M: sp.Matrix) -> tuple:
    """Entries of ``M`` row by row (the flattening of the module doc)."""
    return tuple(M[i, j] for i in range(M.rows) for j in range(M.cols))
