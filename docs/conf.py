"""Sphinx configuration of the symattn documentation.

Build (from the repository root; no network needed, nothing is written into the source tree
except ``docs/_generated/``, which is gitignored)::

    python -m sphinx -W --keep-going -b html docs build/docs/html
    python -m sphinx -W --keep-going -b doctest docs build/docs/doctest

``tests/test_docs.py`` runs both.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# document (and doctest) the source tree, not whatever copy of symattn is installed
sys.path.insert(0, str(ROOT))

import symattn

project = "symattn"
author = "the symattn authors"
copyright = "2026, the symattn authors"
release = symattn.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# _generated/ holds files that are *included* (theory.rst, api/cli.rst), not documents
exclude_patterns = ["_build", "_generated", "Thumbs.db", ".DS_Store"]
templates_path: list = []
nitpicky = False

# -- autodoc / numpydoc ------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "none"          # the docstrings state types and array shapes
autodoc_inherit_docstrings = False  # no SymPy/numpy docstrings on our subclasses
numpydoc_show_class_members = False  # autodoc lists the members; no autosummary stubs needed
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- MyST (docs/numerics.md) ----------------------------------------------------------------
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

# -- HTML -------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"symattn {release}"
html_static_path: list = []
html_theme_options = {"description": "positional-to-semantic transition in a solvable model "
                                     "of dot-product attention"}

# ------------------------------------------------------------------------------------------
# docs/_generated/: theory_equations.rst (included by theory.rst) and cli_help.rst
# (included by api/cli.rst)
# ------------------------------------------------------------------------------------------
GENERATED = DOCS / "_generated"
THEORY = GENERATED / "theory_equations.rst"

def theory_equations() -> str:
    """reST for the theory page, from :func:`symattn.outputs.latex.sphinx_math_blocks` (the code
    behind ``symattn latex``); an error there fails the build."""
    from symattn.outputs.latex import sphinx_math_blocks
    text = sphinx_math_blocks()
    return text if text.endswith("\n") else text + "\n"


def cli_help(width: int = 92) -> str:
    """reST with the ``--help`` of ``symattn`` and of each of its commands, from the parser."""
    from symattn.cli import build_parser

    parser = build_parser()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)   # argparse wraps to the terminal width
    try:
        pages = [("symattn", parser.format_help())]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                pages += [(f"symattn {name}", sub.format_help())
                          for name, sub in action.choices.items()]
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    out = []
    for title, text in pages:
        title = f"``{title}``"
        out += [title, "~" * len(title), "", ".. code-block:: text", ""]
        out += [("   " + line).rstrip() for line in text.rstrip().splitlines()]
        out += [""]
    return "\n".join(out)


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:  # unchanged: keep the mtime
        path.write_text(text)


def _write_generated(app) -> None:
    GENERATED.mkdir(exist_ok=True)
    _write(THEORY, theory_equations())
    _write(GENERATED / "cli_help.rst", cli_help())


def setup(app):
    app.connect("builder-inited", _write_generated)
    return {"parallel_read_safe": True}
