"""``symattn latex``: the model's equations as LaTeX, printed from the SymPy objects."""

from __future__ import annotations

import sys
from pathlib import Path

from ..runs.files import atomic_write_text
from ..runs.paths import check_output_file


def add_parser(sub):
    x = sub.add_parser("latex", help="the model's equations as LaTeX (align, labelled), printed "
                       "from the SymPy objects the solvers are compiled from")
    x.add_argument("--out", type=Path, default=None,
                   help="write to this .tex file instead of standard output")
    x.add_argument("--standalone", action="store_true",
                   help="a complete document (pdflatex); default: a fragment to \\input "
                   "(needs amsmath, amssymb)")
    x.add_argument("--general", action="store_true",
                   help="the general model's equations (any L, positions, A, ranks; model page "
                        "§7) instead of the paper's")


def run(args) -> int:
    if args.out is not None:
        check_output_file(args.out)
    from ..outputs.latex import document
    text = document(standalone=args.standalone, general=args.general)
    if args.out is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(args.out, text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0
