"""Maintenance tools (room ``tools``): the generator of the docs' tables (:mod:`.docs`) and of
the README's result tables (:mod:`.readme_tables`). They run as modules
(``python -m dragons_egg.experiments.tools.docs``), not as ``dragons-egg`` subcommands."""
