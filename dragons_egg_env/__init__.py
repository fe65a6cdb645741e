"""Dragon's Egg as a reinforcement-learning environment.

``dragons_egg_env.engine`` is the pure rules engine; ``dragons_egg_env.dragons_egg_v0`` is the
PettingZoo AEC environment (``env()`` and ``raw_env()``).
"""

from . import actions, cards, engine
from .config import ConfigError, RulesConfig

__version__ = "0.1.0"


def _register() -> None:
    """Register ``dragons_egg_v0`` with PettingZoo's registry where the version has one, and
    the single-agent view (``dragons_egg_env.wrappers``) with Gymnasium's."""
    try:
        from pettingzoo import register as _pz_register  # PettingZoo >= 1.27
    except ImportError:  # older PettingZoo: no registry
        return
    from pettingzoo import aec_registry

    if "dragons_egg_v0" not in aec_registry:
        _pz_register("aec", "dragons_egg_v0", entry_point="dragons_egg_env.dragons_egg_v0:env")
    import gymnasium

    if "dragons_egg/SingleAgent-v0" not in gymnasium.registry:
        gymnasium.register(id="dragons_egg/SingleAgent-v0",
                           entry_point="dragons_egg_env.wrappers:SingleAgentEnv")


_register()

__all__ = ["actions", "cards", "engine", "RulesConfig", "ConfigError", "__version__"]
