"""``symattn latex``: the model's equations as LaTeX, printed from the SymPy objects."""

from __future__ import annotations

import sys
from pathlib import Path

from .common import UsageError


def add_parser(sub):
    x = sub.add_parser("latex", help="the model's equations as LaTeX (align, labelled), printed "
                       "from the SymPy objects the solvers are compiled from")
    x.add_argument("--out", type=Path, default=None,
                   help="write to this .tex file instead of standard output")
    x.add_argument("--standalone", action="store_true",
                   help="a complete document (pdflatex); default: a fragment to \\input "
                   "(needs amsmath, amssymb)")


def run(args) -> int:
    from ..outputs.latex import document
    if args.out is not None and args.out.is_dir():
        raise UsageError(f"--out: {args.out} is a directory; give a .tex file name")
    text = document(standalone=args.standalone)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0
