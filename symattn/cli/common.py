"""What every command shares: argument types with one-line errors, the model and numerics
options, exit codes."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..model.params import PAPER_A, ModelParams, ParameterError, check_alpha

EXIT_USAGE = 2
EXIT_NOT_FOUND = 3

DEFAULT_OUT = Path("symattn-results")
RESUMABLE = ("validate", "phase-diagram")
#: warm starts of ``simulate`` (= symattn.simulation.train.STARTS; not imported here, to keep
#: the command line's start-up free of scipy)
STARTS = ("semantic", "positional", "random")


class UsageError(Exception):
    """A malformed command line (reported in one line, exit status 2)."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit status 2."""

    def error(self, message):
        raise UsageError(message)


def float_arg(name):
    def conv(text):
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: not a number: {text!r}") from None
        if not math.isfinite(x):
            raise argparse.ArgumentTypeError(f"{name}: must be finite, got {text!r}")
        return x
    return conv


def matrix_arg(text):
    parts = text.split(",")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(
            f"A: expected 4 comma-separated numbers a11,a12,a21,a22, got {text!r}")
    try:
        v = [float(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"A: not a number in {text!r}") from None
    return ((v[0], v[1]), (v[2], v[3]))


def int_arg(name, lo, hi):
    def conv(text):
        try:
            k = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: not an integer: {text!r}") from None
        if not lo <= k <= hi:
            raise argparse.ArgumentTypeError(f"{name}: must be in [{lo}, {hi}], got {k}")
        return k
    return conv


def list_arg(name, conv):
    def parse(text):
        items = [t.strip() for t in text.split(",") if t.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"{name}: expected a comma-separated list, got {text!r}")
        try:
            return tuple(conv(t) for t in items)
        except (argparse.ArgumentTypeError, ParameterError) as exc:
            raise argparse.ArgumentTypeError(f"{name}: {exc}") from None
    return parse


def second_orders_arg(text):
    if text.strip().lower() == "none":
        return ()
    orders = list_arg("second-route-orders", int_arg("order", 2, 64))(text)
    if len(orders) < 3:
        raise argparse.ArgumentTypeError("second-route-orders: give three or more orders, "
                                         f"or 'none'; got {text!r}")
    return orders


def alpha_item(text):
    return check_alpha(float_arg("alpha")(text))


def add_model_group(p):
    g = p.add_argument_group("model (model page §2; defaults: the paper's)")
    g.add_argument("--omega", type=float_arg("omega"), default=0.3, help="mixing omega in [0, 1]")
    g.add_argument("--sigma", type=float_arg("sigma"), default=0.5, help="token noise sigma > 0")
    g.add_argument("--lam", type=float_arg("lam"), default=0.01, help="ridge penalty lambda > 0")
    g.add_argument("--A", type=matrix_arg, default=PAPER_A, metavar="a11,a12,a21,a22",
                   help="row-stochastic positional attention matrix")


def add_numerics_group(p, log2n=14, rules=8):
    n = p.add_argument_group("numerics")
    n.add_argument("--log2n", type=int_arg("log2n", 6, 20), default=log2n,
                   help=f"Sobol points per rule: 2**log2n (default {log2n})")
    n.add_argument("--rules", type=int_arg("rules", 2, 64), default=rules,
                   help=f"independent scrambles; their spread is the error bar (default {rules})")
    n.add_argument("--tol", type=float_arg("tol"), default=1e-10,
                   help="fixed-point residual tolerance (default 1e-10)")


def add_model_options(p):
    add_model_group(p)
    add_numerics_group(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def params_from(args) -> ModelParams:
    return ModelParams(sigma=args.sigma, lam=args.lam, omega=args.omega, A=args.A)


def settings_from(args):
    from ..numerics.settings import NumericalSettings
    if not 0 < args.tol < 1e-3:
        raise ParameterError("tol", f"must be in (0, 1e-3), got {args.tol:g}")
    return NumericalSettings(log2n=args.log2n, rules=args.rules, tol=args.tol)




def fmt(v, e) -> str:
    """``value +- error`` as the text output prints thresholds."""
    return f"{v:.6f} +- {e:.1e}"
