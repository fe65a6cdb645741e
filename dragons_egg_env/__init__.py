"""Dragon's Egg as a reinforcement-learning environment.

``dragons_egg_env.engine`` is the pure rules engine; ``dragons_egg_env.dragons_egg_v0`` is the
PettingZoo AEC environment (``env()`` and ``raw_env()``).
"""

from . import actions, cards, engine
from .config import ConfigError, RulesConfig

__version__ = "0.1.0"

__all__ = ["actions", "cards", "engine", "RulesConfig", "ConfigError", "__version__"]
