"""Experiments on Dragon's Egg, above the env package and the agents: the ``dragons-egg``
command line, duplicate-deal tournaments, the tribute analysis, SB3 and RLlib training, the
main job, and tools (benchmark, docs generator, GIF export)."""
