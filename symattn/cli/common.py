"""What every command shares: argument types with one-line errors, the model and numerics
options, exit codes."""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

from ..model.checks import (MAX_GRID_POINTS, ParameterError, check_int,
                            check_number, omega_grid)
from ..model.params import LAM_RANGE, MAX_RANK, MAX_TOKENS, PAPER_A, SIGMA_RANGE, ModelParams
from ..numerics.settings import LOG2N_RANGE, RULES_RANGE, TOL_RANGE
from ..results import format_estimate

EXIT_USAGE = 2
EXIT_NOT_FOUND = 3

DEFAULT_OUT = Path("symattn-results")
RESUMABLE = ("validate", "phase-diagram")
#: warm starts of ``simulate`` (= symattn.simulation.general.STARTS; not imported here, to keep
#: the command line's start-up free of scipy)
STARTS = ("semantic", "positional", "random")


class UsageError(Exception):
    """A malformed command line (reported in one line, exit status 2)."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit status 2, and no abbreviations (``--omega`` must
    not silently mean ``--omegas``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        # "argument --alpha: alpha: must be > 0" reads "alpha: must be > 0"
        raise UsageError(re.sub(r"^argument [^:]+: (?=[\w-]+: )", "", message))


#: a value that starts with a minus sign: ``-0.2,1.2,...`` or ``-1``
_NEGATIVE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


def join_negative_values(argv) -> list:
    """``--A -0.2,1.2,0.4,0.6`` as ``--A=-0.2,1.2,0.4,0.6``: argparse takes a value that starts
    with a minus sign for an option unless it is a single plain number, so a negative entry of
    a list would otherwise be refused as 'expected one argument' instead of checked."""
    out = []
    for tok in argv:
        if (out and out[-1].startswith("--") and "=" not in out[-1] and _NEGATIVE.match(tok)):
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def _range_text(lo, hi, lo_open=False):
    if hi is None:
        return f"{'>' if lo_open else '>='} {lo:g}"
    return f"in {'(' if lo_open else '['}{lo:g}, {hi:g}]"


def _parse_number(name, text) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: not a number: {text!r}") from None


def float_arg(name, lo=None, hi=None, *, lo_open=False):
    """A command-line number, checked by :func:`symattn.model.checks.check_number`."""
    def conv(text):
        try:
            return check_number(name, _parse_number(name, text), lo, hi, lo_open=lo_open)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return conv


def square_matrix_arg(name):
    """An ``L x L`` matrix as ``L^2`` comma-separated numbers, row by row (rows may also be
    separated by ``;``), ``L >= 2``."""
    def conv(text):
        parts = [p for p in text.replace(";", ",").split(",")]
        L = math.isqrt(len(parts))
        if L < 2 or L * L != len(parts):
            raise argparse.ArgumentTypeError(
                f"{name}: expected L^2 comma-separated numbers (L >= 2), row by row, e.g. "
                f"a11,a12,a21,a22; got {len(parts)} in {text!r}")
        v = [_parse_number(name, p) for p in parts]
        return tuple(tuple(v[i * L:(i + 1) * L]) for i in range(L))
    return conv


matrix_arg = square_matrix_arg("A")


def positions_arg(text):
    """A family name of :mod:`symattn.model.positions`, or the Gram matrix's entries."""
    from ..model.positions import POSITION_FAMILIES
    if text.strip() in POSITION_FAMILIES:
        return text.strip()
    if text.strip() and text.strip()[0].isalpha():
        raise argparse.ArgumentTypeError(f"positions: unknown family {text!r}; the families are "
                                         f"{', '.join(sorted(POSITION_FAMILIES))}, or give the "
                                         "L^2 entries of Pi = P P^T / d")
    return square_matrix_arg("positions")(text)


def int_arg(name, lo, hi):
    """A command-line integer in ``[lo, hi]``; ``1e4`` is read as 10000."""
    def conv(text):
        try:
            k = int(text)
        except ValueError:
            x = _parse_number(name, text)
            if not (math.isfinite(x) and x.is_integer()):
                raise argparse.ArgumentTypeError(f"{name}: not an integer: {text!r}") from None
            k = int(x)
        try:
            return check_int(name, k, lo, hi)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return conv


def list_arg(name, conv):
    def parse(text):
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{name}: expected a comma-separated list, got {text!r}")
        if len(items) > MAX_GRID_POINTS:
            raise argparse.ArgumentTypeError(f"{name}: {len(items)} values; at most "
                                             f"{MAX_GRID_POINTS}")
        try:
            return tuple(conv(t) for t in items)
        except (argparse.ArgumentTypeError, ParameterError) as exc:
            raise argparse.ArgumentTypeError(f"{name}: {exc}") from None
    return parse


def omegas_arg(text):
    try:
        return omega_grid(text)
    except ParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def second_orders_arg(text):
    if text.strip().lower() == "none":
        return ()
    orders = list_arg("second-route-orders", int_arg("order", 2, 64))(text)
    if len(orders) < 3:
        raise argparse.ArgumentTypeError("second-route-orders: give three or more orders, "
                                         f"or 'none'; got {text!r}")
    return orders


def alpha_item(text):
    return float_arg("alpha", 0.0, lo_open=True)(text)


def alpha_arg():
    return float_arg("alpha", 0.0, lo_open=True)


def add_model_group(p, omega=True):
    """The model's options; ``omega=False`` for a sweep over omega (its own ``--omegas``)."""
    g = p.add_argument_group("model (model page §2; defaults: the paper's)")
    if omega:
        g.add_argument("--omega", type=float_arg("omega", 0.0, 1.0), default=0.3,
                       help="mixing omega in [0, 1]")
    g.add_argument("--sigma", type=float_arg("sigma", *SIGMA_RANGE, lo_open=True), default=0.5,
                   help=f"token noise sigma {_range_text(*SIGMA_RANGE, lo_open=True)}")
    g.add_argument("--lam", type=float_arg("lam", *LAM_RANGE, lo_open=True), default=0.01,
                   help=f"ridge penalty lambda {_range_text(*LAM_RANGE, lo_open=True)}")
    g.add_argument("--A", type=matrix_arg, default=None, metavar="a11,a12,...",
                   help="row-stochastic L x L positional attention matrix, row by row "
                        "(default: the paper's 0.6,0.4,0.4,0.6 at L = 2)")
    g.add_argument("--L", type=int_arg("L", 2, MAX_TOKENS), default=None,
                   help="tokens per sentence (default: from --A, else 2); L > 2 needs --A")
    g.add_argument("--positions", type=positions_arg, default=None, metavar="NAME|entries",
                   help="positional encodings' Gram matrix Pi = P P^T / d: antipodal (the "
                        "paper's, L = 2), simplex (default for L > 2), orthogonal, cyclic, none, "
                        "or its L^2 entries")
    g.add_argument("--rank", type=int_arg("rank", 1, MAX_RANK), default=1,
                   help="student rank r (default 1)")
    g.add_argument("--teacher-rank", dest="teacher_rank", type=int_arg("teacher-rank", 1, MAX_RANK),
                   default=1, help="teacher rank r_t (default 1)")


def add_numerics_group(p, log2n=14, rules=8, log2n_default=None, rules_default=None):
    """``--log2n``, ``--rules``, ``--tol``; ``*_default``: the help's words for a default that
    depends on other options (the option's own default is then ``None``)."""
    n = p.add_argument_group("numerics")
    n.add_argument("--log2n", type=int_arg("log2n", *LOG2N_RANGE), default=log2n,
                   help=f"Sobol points per rule: 2**log2n, log2n in [{LOG2N_RANGE[0]}, "
                        f"{LOG2N_RANGE[1]}] (default {log2n_default or log2n})")
    n.add_argument("--rules", type=int_arg("rules", *RULES_RANGE), default=rules,
                   help=f"independent scrambles, their spread is the error bar; in "
                        f"[{RULES_RANGE[0]}, {RULES_RANGE[1]}] (default "
                        f"{rules_default or rules})")
    n.add_argument("--tol", type=float_arg("tol", *TOL_RANGE), default=1e-10,
                   help=f"fixed-point residual tolerance in [{TOL_RANGE[0]:g}, {TOL_RANGE[1]:g}] "
                        "(default 1e-10)")


def add_model_options(p, **numerics):
    """The model's and the numerics' options (``numerics``: see :func:`add_numerics_group`)."""
    add_model_group(p)
    add_numerics_group(p, **numerics)
    p.add_argument("--json", action="store_true",
                   help="print JSON on standard output (progress stays on standard error)")


def model_A(A, L):
    """``A`` for ``--A``/``--L``: the paper's when neither is given (or ``L = 2``); sizes must
    agree; ``L > 2`` without ``A`` is refused (there is no default ``A`` beyond the paper's)."""
    if A is None:
        if L not in (None, 2):
            raise ParameterError("A", f"L = {L}: give the L x L matrix with --A (row by row)")
        return PAPER_A
    if L is not None and len(A) != L:
        raise ParameterError("A", f"is {len(A)} x {len(A)} but --L is {L}")
    return A


def bracket_arg(text):
    """``LO:HI`` of ``--bracket`` (the general model's alpha_c search), ``0 < LO < HI <= 64``."""
    from argparse import ArgumentTypeError
    try:
        lo, hi = (float(v) for v in text.split(":"))
    except ValueError:
        raise ArgumentTypeError(f"expected LO:HI, e.g. 0.1:2, got {text!r}") from None
    if not 0 < lo < hi <= 64:
        raise ArgumentTypeError(f"need 0 < LO < HI <= 64, got {text!r}")
    return lo, hi


#: the general model's default bracket of alpha_c (``--bracket``)
GENERAL_BRACKET = (0.1, 2.0)


def params_from(args, general: bool = False) -> ModelParams:
    """The model of the command line; ``general=False`` (a command whose solvers are the
    paper's) refuses any other shape at once, naming the command."""
    omega = getattr(args, "omega", ModelParams.omega)
    params = ModelParams(sigma=args.sigma, lam=args.lam, omega=omega,
                         A=model_A(args.A, getattr(args, "L", None)),
                         Pi=getattr(args, "positions", None), r=getattr(args, "rank", 1),
                         r_t=getattr(args, "teacher_rank", 1))
    if not general:
        params.require_paper_shape(f"symattn {getattr(args, 'command', '')}".strip())
    return params


def settings_from(args):
    from ..numerics.settings import NumericalSettings
    return NumericalSettings(log2n=args.log2n, rules=args.rules, tol=args.tol)


def fmt(v, e) -> str:
    """``value +- error`` as the text output prints estimates (to the digits the error supports:
    :func:`symattn.results.format_estimate`)."""
    return format_estimate(v, e, pm="+-")
