"""Experiments on Dragon's Egg: tournaments, analysis (and, later, training)."""
