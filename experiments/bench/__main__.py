"""``python -m dragons_egg.experiments.bench``: the benchmark's command line."""

import sys

from .cli import main

sys.exit(main())
