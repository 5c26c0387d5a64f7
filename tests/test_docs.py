"""The documentation (docs/, Sphinx) builds without warnings, and its examples run.

Both builds share one doctree folder, so the doctest build reuses the environment the HTML
build read.  Nothing may be written into the source tree except ``docs/_generated/``.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _docs_files() -> dict:
    """Every file under docs/ except the generated ones, with its modification time."""
    return {p.relative_to(DOCS): p.stat().st_mtime_ns for p in DOCS.rglob("*")
            if p.is_file() and "_generated" not in p.relative_to(DOCS).parts}


def _sphinx(builder: str, tmp_path: Path) -> str:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", builder,
           "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / builder)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{output}"
    return output


@pytest.mark.slow
def test_docs_build_without_warnings_and_examples_run(tmp_path):
    before = _docs_files()

    html = _sphinx("html", tmp_path)
    assert "build succeeded" in html, html     # -W: any warning would have failed the build
    for page in ("index", "installation", "tutorial", "notation", "theory", "numerics",
                 "stability", "api/index", "api/numerics", "api/cli"):
        assert (tmp_path / "html" / f"{page}.html").is_file(), page

    doctest = _sphinx("doctest", tmp_path)
    report = (tmp_path / "doctest" / "output.txt").read_text()
    assert "0 failures in tests" in report, report
    assert "tutorial" in report, report       # the tutorial's examples were collected and run
    assert "build succeeded" in doctest, doctest

    assert (DOCS / "_generated" / "theory_equations.rst").is_file()
    assert _docs_files() == before, "the docs build wrote into docs/ outside docs/_generated/"


def _conf():
    import runpy
    return runpy.run_path(str(DOCS / "conf.py"))


def test_cli_reference_lists_every_command():
    text = _conf()["cli_help"]()
    for cmd in ("thresholds", "fixed-point", "simulate", "validate", "latex", "phase-diagram", "plot"):
        assert f"``symattn {cmd}``" in text and f"usage: symattn {cmd}" in text, cmd
