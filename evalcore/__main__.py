"""`python -m evalcore ...`, and the `evalcore` command installed with the package."""

import os
import sys


def run() -> int:
    """Set what numpy reads as it loads (before anything imports it), then run the command line."""
    command = next((word for word in sys.argv[1:] if not word.startswith("-")), None)
    if command in ("compare", "score", "score-text"):
        # Their matrix products, if any, run on one thread (a comparison's statistics; scoring makes none):
        # OpenBLAS's threads, started as numpy loads, would only spin (0.1-0.2 s of CPU per process).
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if command in ("score", "score-text"):
        # Scoring writes arrays of 80 MB once each: faulted in as huge pages they cost 1.4-1.7 s of system time
        # for a run of 10 million lines here (the kernel finds and zeroes 2 MB at a time), as 4 kB pages 0.4 s.
        os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    # A value the user set is kept. Imported after the environment, which numpy reads as it loads.
    from evalcore.cli import main

    return main()


if __name__ == "__main__":
    sys.exit(run())
