"""Files that survive a killed run: one atomic writer, readable errors, an append-only CSV.

Every result file of symattn is written by :func:`atomic_write_text`: the text goes to a
temporary file in the same directory (a unique name, so two runs never share it), is flushed
and ``fsync``'ed, and replaces the target with :func:`os.replace`.  A reader therefore sees the
old content or the new one, never a mixture.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from ..model.params import ParameterError

__all__ = ["atomic_write_text", "write_json", "read_json", "write_rows", "TidyCSV", "DamagedFile"]


def atomic_write_text(path, text: str, *, fsync: bool = True) -> Path:
    """Write ``text`` to ``path`` atomically (module doc); create the parent directories.

    Raises :class:`IsADirectoryError` if ``path`` is a directory (nothing is written).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            fh.write(text)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())      # mkstemp makes it private; a result file is not
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path, data, *, indent: int | None = 2) -> Path:
    """``data`` as JSON (NumPy scalars as floats) to ``path``, atomically."""
    return atomic_write_text(path, json.dumps(data, indent=indent, default=float))


class DamagedFile(ParameterError):
    """A result file that cannot be used as it is: ``path``, what is wrong (``detail``) and what
    to do (``remedy``, e.g. "delete it to recompute that omega"), named after the parameter
    ``what`` that pointed at it (``out`` for a run's folder)."""

    def __init__(self, path, detail: str, remedy: str = "", what: str = "out"):
        super().__init__(what, f"{path} is damaged ({detail})" + (f"; {remedy}" if remedy else ""))
        self.path = Path(path)


def read_json(path, what: str = "out", remedy: str = ""):
    """The JSON content of ``path``.  An unreadable file raises
    :class:`~symattn.model.ParameterError` naming ``what`` and the file; text that is not JSON
    (e.g. cut short by a kill) raises :class:`DamagedFile`, with ``remedy`` appended."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise ParameterError(what, f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise DamagedFile(path, f"not valid JSON: {exc}", remedy, what) from None


def fmt_cell(v) -> str:
    """One CSV cell: empty for ``None`` and NaN, ``repr`` for floats (round-trips exactly)."""
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else repr(float(v))
    return str(v)


def _csv_text(columns, rows, header: bool = True) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if header:
        w.writerow(columns)
    for r in rows:
        w.writerow([fmt_cell(r.get(c)) for c in columns])
    return buf.getvalue()


def write_rows(path, rows, columns) -> Path:
    """A whole CSV (header ``columns``, one line per dict in ``rows``), atomically."""
    return atomic_write_text(path, _csv_text(columns, rows))


class TidyCSV:
    """A CSV file of rows appended as they are produced.

    :meth:`append` writes whole lines, flushes and ``fsync``\\ s, so a killed run leaves at most
    one partial last line.  :meth:`load` repairs that: a partial last line (and blank lines) are
    dropped, the clean rows are written back atomically and ``note`` is told.  Any other line
    that does not parse was damaged or edited by hand: it is refused (:class:`DamagedFile`
    naming the file and line), never dropped or used unchecked.

    ``types`` maps column names to ``int``, ``bool`` or ``str``; other columns are floats.  A
    float cell must be a number; ``nan`` is refused (the writer writes NaN as an empty cell)
    and so is an infinity other than the writer's own ``inf`` / ``-inf`` (e.g. ``1e999``).
    """

    def __init__(self, path, columns: tuple, types: dict | None = None):
        self.path = Path(path)
        self.columns = tuple(columns)
        self.types = dict(types or {})

    #: what to do about a damaged line (rows are recomputed when missing)
    REMEDY = "correct or delete that line (a deleted row's task is recomputed)"

    def _parse(self, col: str, text: str):
        """The cell ``text`` of column ``col`` as its type; ``ValueError`` saying why not."""
        if text == "":
            return None
        kind = self.types.get(col, float)
        if kind is bool:
            if text not in ("True", "False"):
                raise ValueError(f"{col} = {text!r} is not True or False")
            return text == "True"
        if kind is str:
            return text
        try:
            value = kind(text)
        except ValueError:
            raise ValueError(f"{col} = {text!r} is not "
                             + ("an integer" if kind is int else "a number")) from None
        if kind is float and (math.isnan(value) or (math.isinf(value)
                                                    and text not in ("inf", "-inf"))):
            raise ValueError(f"{col} = {text!r} is not a finite number")
        return value

    def load(self, note=None) -> list:
        """Rows as dicts (``None`` for empty fields); creates the file if needed.

        A partial last line (a killed run's) and blank lines are dropped, the file rewritten
        and ``note(text)`` told (if given).  A damaged line elsewhere raises
        :class:`DamagedFile` naming the file and the line.
        """
        if not self.path.exists():
            self.rewrite([])
            return []
        try:
            lines = self.path.read_text().split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise ParameterError("out", f"cannot read {self.path}: {exc}") from None
        partial = lines.pop() != ""           # text not ending in a newline: cut mid-write
        if not lines:
            self.rewrite([])
            return []
        header = next(csv.reader([lines[0]]), [])
        if tuple(header) != self.columns:
            raise ParameterError("out", f"{self.path} has columns {header}, expected "
                                 f"{list(self.columns)}: not a file of this version of symattn")
        rows, blank = [], 0
        for number, line in enumerate(lines[1:], start=2):
            if not line.strip():
                blank += 1
                continue
            try:
                cells = next(csv.reader([line]))
                if len(cells) != len(self.columns):
                    raise ValueError(f"{len(cells)} fields, expected {len(self.columns)}")
                rows.append({c: self._parse(c, t) for c, t in zip(self.columns, cells)})
            except (ValueError, csv.Error) as exc:
                raise DamagedFile(self.path, f"line {number}: {exc}", self.REMEDY) from None
        if partial or blank:
            self.rewrite(rows)
            if note:
                what = (["a partial last line (cut by a killed run)"] if partial else []) \
                    + ([f"{blank} blank line(s)"] if blank else [])
                note(f"repaired {self.path}: dropped {' and '.join(what)}")
        return rows

    def rewrite(self, rows) -> None:
        """Replace the content atomically by ``rows``."""
        write_rows(self.path, rows, self.columns)

    def append(self, rows) -> None:
        """Append ``rows`` as whole lines, flushed and ``fsync``'ed."""
        with open(self.path, "a", newline="") as fh:
            fh.write(_csv_text(self.columns, rows, header=False))
            fh.flush()
            os.fsync(fh.fileno())
