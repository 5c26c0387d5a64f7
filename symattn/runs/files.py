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

__all__ = ["atomic_write_text", "write_json", "read_json", "write_rows", "TidyCSV"]


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


def read_json(path, what: str = "out"):
    """The JSON content of ``path``; a damaged or unreadable file raises
    :class:`~symattn.model.ParameterError` naming ``what`` and the file."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise ParameterError(what, f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ParameterError(what, f"{path} is damaged (not valid JSON: {exc})") from None


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
    one partial last line.  :meth:`load` repairs the file: a partial last line and unparsable
    lines are dropped, and if anything was dropped the clean rows are written back atomically.
    ``types`` maps column names to ``int``, ``bool`` or ``str``; other columns are floats.
    """

    def __init__(self, path, columns: tuple, types: dict | None = None):
        self.path = Path(path)
        self.columns = tuple(columns)
        self.types = dict(types or {})

    def _parse(self, col: str, text: str):
        if text == "":
            return None
        kind = self.types.get(col, float)
        if kind is bool:
            if text not in ("True", "False"):
                raise ValueError(text)
            return text == "True"
        return kind(text)

    def load(self) -> list:
        """Rows as dicts (``None`` for empty fields); creates the file if needed."""
        if not self.path.exists():
            self.rewrite([])
            return []
        lines = self.path.read_text().split("\n")
        partial = lines.pop() != ""           # text not ending in a newline: cut mid-write
        if not lines:
            self.rewrite([])
            return []
        header = next(csv.reader([lines[0]]))
        if tuple(header) != self.columns:
            raise ParameterError("out", f"{self.path} has columns {header}, expected "
                                 f"{list(self.columns)}: not a file of this version of symattn")
        rows, bad = [], int(partial)
        for line in lines[1:]:
            try:
                cells = next(csv.reader([line]))
                if len(cells) != len(self.columns):
                    raise ValueError(line)
                rows.append({c: self._parse(c, t) for c, t in zip(self.columns, cells)})
            except (ValueError, StopIteration):
                bad += 1
        if bad:
            self.rewrite(rows)
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
