"""Measuring agents (room ``evaluation``): duplicate-deal tournaments with their statistics
and reports (:mod:`.tournament`), the evaluation of one agent against opponents that the
trainers, the main job and run evaluation share (:mod:`.versus`), and the tribute analysis
(:mod:`.tribute`). It imports ``common`` only."""
