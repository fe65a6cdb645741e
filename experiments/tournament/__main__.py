"""``python -m dragons_egg.experiments.tournament``: the tournament's command line."""

from .cli import main

raise SystemExit(main())
