"""``python -m dragons_egg.experiments.evaluation.benchmark``."""

from .cli import main

raise SystemExit(main())
