"""``python -m dragons_egg.experiments.evaluation.tournament``: the tournament's command line."""

from .cli import main

raise SystemExit(main())
