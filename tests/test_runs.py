"""Resumable-run plumbing (symattn.runs): the atomic writer, readable errors for damaged files."""

import json
import os

import pytest

from symattn import ParameterError
from symattn.runs import atomic_write_text, read_json, write_json


def test_atomic_write_replaces_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "sub" / "x.json"
    write_json(path, {"a": 1})
    write_json(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.json"]
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask       # as a plain open() would make it


def test_atomic_write_refuses_a_directory_and_writes_nothing(tmp_path):
    with pytest.raises(IsADirectoryError):
        atomic_write_text(tmp_path, "text")
    assert list(tmp_path.iterdir()) == []
    assert not (tmp_path.parent / (tmp_path.name + ".tmp")).exists()


def test_a_damaged_file_is_named_in_the_error(tmp_path):
    path = tmp_path / "metadata.json"
    path.write_text('{"params": {"sigma": 0.5')            # cut short by a kill
    with pytest.raises(ParameterError, match="metadata.json is damaged") as exc:
        read_json(path, "out")
    assert exc.value.name == "out"
