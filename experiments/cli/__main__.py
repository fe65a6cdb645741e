"""``python -m dragons_egg.experiments.cli``: the ``dragons-egg`` command."""

from dragons_egg.experiments.cli.main import main

raise SystemExit(main())
