"""Dragon's Egg as a reinforcement-learning environment.

The package holds the game and its environments only:

- ``cards``, ``config``, ``actions`` and ``engine``: the pure rules engine on int bitmasks
  (standard library only; importing them loads no framework);
- ``observation``: the observation layout and encoder (numpy);
- ``dragons_egg_v0``: the PettingZoo AEC environment (``env()``, ``raw_env()``);
- ``wrappers``: the single-agent Gymnasium view (``SingleAgentEnv``);
- ``replay``, ``render`` and ``render_image``: replays and text and image renders.

Modules that need numpy, Gymnasium or PettingZoo load when first used
(``dragons_egg_env.dragons_egg_v0`` or the attribute ``dragons_egg_env.dragons_egg_v0``), so
``import dragons_egg_env.engine`` stays framework-free. Agents live in the ``agents`` package and
training, tournaments and tools in ``experiments``; this package imports neither
(``docs/architecture.md``).
"""

from __future__ import annotations

import importlib
from typing import Any

from . import actions, cards, config, engine
from .config import ConfigError, RulesConfig

__version__ = "0.3.0"

#: Submodules loaded on first attribute access (they import numpy and the RL frameworks).
_LAZY = ("observation", "dragons_egg_v0", "wrappers", "replay", "render", "render_image")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["actions", "cards", "config", "engine", "RulesConfig", "ConfigError", "__version__",
           *_LAZY]
