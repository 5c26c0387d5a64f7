"""Checks at the door: every parameter and setting, for the command line and the Python API alike.

Each function takes a parameter's name (as spelled on the command line and in JSON) and a value,
and returns the value in its canonical type or raises :class:`ParameterError` naming the
parameter.  The command line's argument types call these same functions, so an input is refused
with the same words wherever it comes from, and before any work is done.

The limits of the numerics (where they were measured) are constants here, so that ``--help``,
the docstrings and the checks quote one number.
"""

from __future__ import annotations

import math
import numbers

__all__ = ["ParameterError", "check_number", "check_int", "check_alpha", "check_choice",
           "omega_grid", "MAX_GRID_POINTS"]

#: Most points a ``start:stop:step`` grid may have (the default phase diagram has 19).
MAX_GRID_POINTS = 1000


class ParameterError(ValueError):
    """An input parameter is outside the model's domain.

    ``name`` is the parameter (as spelled on the command line and in JSON).
    """

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name = name


def check_number(name: str, value, lo: float | None = None, hi: float | None = None, *,
                 lo_open: bool = False, hi_open: bool = False) -> float:
    """``value`` as a finite float in the interval ``[lo, hi]`` (ends open where asked).

    Refuses ``bool`` and strings (``float(True) == 1.0`` and ``float("0.3") == 0.3`` would
    otherwise pass), ``nan`` and infinities.
    """
    if isinstance(value, (bool, str, bytes)) or not isinstance(value, numbers.Real):
        raise ParameterError(name, f"not a number: {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ParameterError(name, f"must be finite, got {value!r}")
    if lo is not None and (x < lo or (lo_open and x == lo)):
        raise ParameterError(name, f"must be {'>' if lo_open else '>='} {lo:g}, got {x:g}")
    if hi is not None and (x > hi or (hi_open and x == hi)):
        raise ParameterError(name, f"must be {'<' if hi_open else '<='} {hi:g}, got {x:g}")
    return x


def check_int(name: str, value, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an int in ``[lo, hi]``; refuses ``bool``, floats (``2.5``, and ``2.0`` too:
    a count is written as an integer) and strings."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterError(name, f"must be an integer, got {value!r}")
    k = int(value)
    if (lo is not None and k < lo) or (hi is not None and k > hi):
        span = (f"in [{lo}, {hi}]" if lo is not None and hi is not None
                else f">= {lo}" if lo is not None else f"<= {hi}")
        raise ParameterError(name, f"must be an integer {span}, got {k}")
    return k


def check_alpha(alpha, name: str = "alpha") -> float:
    """``alpha`` (sample complexity ``n / d``) as a positive finite float."""
    return check_number(name, alpha, 0.0, lo_open=True)


def check_choice(name: str, value, choices) -> str:
    """``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ParameterError(name, f"must be one of {', '.join(map(str, choices))}; got {value!r}")
    return value


def omega_grid(spec, name: str = "omegas") -> list:
    """The values of omega of a sweep, each in ``[0, 1]``.

    ``spec`` is ``"start:stop:step"`` (stop included), a comma list ``"0.1,0.2"``, or a
    sequence of numbers.  At most :data:`MAX_GRID_POINTS` values, counted before any list is
    built, so that a tiny step is refused rather than filling memory.
    """
    if not isinstance(spec, str):
        try:
            vals = [check_number(name, v, 0.0, 1.0) for v in spec]
        except TypeError:
            raise ParameterError(name, f"expected a string or a sequence of numbers, got "
                                       f"{spec!r}") from None
    elif ":" in spec:
        parts = spec.split(":")
        if len(parts) != 3:
            raise ParameterError(name, f"expected start:stop:step, got {spec!r}")
        a, b, h = (_parse_float(name, p, spec) for p in parts)
        check_number(name, a, 0.0, 1.0)
        check_number(name, b, 0.0, 1.0)
        if not h > 0:
            raise ParameterError(name, f"the step must be > 0, got {h:g}")
        if b < a:
            raise ParameterError(name, f"stop {b:g} is below start {a:g}")
        count = math.floor((b - a) / h + 1e-9) + 1
        if count > MAX_GRID_POINTS:
            raise ParameterError(name, f"{spec!r} has {count:.3g} points; at most "
                                       f"{MAX_GRID_POINTS} (use a larger step)")
        vals = [round(a + k * h, 12) for k in range(count)]
    else:
        vals = [check_number(name, _parse_float(name, v, spec), 0.0, 1.0)
                for v in spec.split(",") if v.strip()]
    if not vals:
        raise ParameterError(name, "empty grid")
    if len(vals) > MAX_GRID_POINTS:
        raise ParameterError(name, f"{len(vals)} points; at most {MAX_GRID_POINTS}")
    return vals


def _parse_float(name, text, spec) -> float:
    try:
        return float(text)
    except ValueError:
        raise ParameterError(name, f"expected start:stop:step or a comma list of numbers, "
                                   f"got {spec!r}") from None
