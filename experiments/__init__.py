"""Experiments on Dragon's Egg, above the env package and the agents, in rooms of one job
each (``docs/architecture.md``, "Rooms of experiments/"): :mod:`.cli` (the ``dragons-egg``
command), :mod:`.research` (the tribute studies), :mod:`.training` (the self-play, SB3 and
RLlib trainers), :mod:`.evaluation` (tournaments, the shared evaluation, the tribute
analysis), :mod:`.bench` (the speed benchmark), :mod:`.tools` (docs and README-table
generators) and :mod:`.common` (argument types, settings, run folders)."""
