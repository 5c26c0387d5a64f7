"""``python -m symattn``: the command line (:mod:`symattn.cli`)."""
import sys

from .cli import main

sys.exit(main())
