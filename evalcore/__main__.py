"""`python -m evalcore ...`."""

import sys

from evalcore.cli import main

sys.exit(main())
