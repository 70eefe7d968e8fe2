"""`python -m evalcore ...`."""

import os
import sys

# Commands whose matrix products, if any, run on one thread (a comparison's statistics; scoring makes none):
# OpenBLAS's threads, started as numpy loads, would only spin (0.1-0.2 s of CPU per process). Read as the library
# loads, so set before anything imports numpy; a value the user set is kept.
if next((word for word in sys.argv[1:] if not word.startswith("-")), None) in ("compare", "score", "score-text"):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from evalcore.cli import main  # after the thread count, which numpy reads as it loads

sys.exit(main())
