"""Agents for Dragon's Egg, found by name.

>>> from agents import make_agent
>>> bot = make_agent("ismcts:iterations=400", seed=1)

Specs are ``name`` or ``name:key=value,key=value``; values are converted to the type of the
option's default. :func:`register` adds a kind. The built-in kinds are ``random``, ``greedy``,
``heuristic``, ``ismcts``, ``ppo`` (the shipped MaskablePPO agent, or ``ppo:path=...``) and
``rllib`` (``rllib:path=...``). :class:`AgentSpec` is a picklable factory for a spec, the form
in which the env package's single-agent view takes opponents by name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dragons_egg_env.config import parse_bool

from .base import Agent, legal_from_mask
from .heuristic import HeuristicAgent
from .ismcts import ISMCTSAgent
from .simple import GreedyAgent, RandomAgent

_REGISTRY: dict[str, Callable[..., Agent]] = {}


class AgentSpecError(ValueError):
    """An agent spec names an unknown agent or option, or a bad option value."""


def register(name: str, factory: Callable[..., Agent]) -> None:
    """Make ``factory(seed=..., **options)`` available as ``name``."""
    if not name or ":" in name or "," in name:
        raise ValueError(f"bad agent name {name!r}")
    _REGISTRY[name] = factory


def available() -> list[str]:
    """Registered agent names."""
    return sorted(_REGISTRY)


def _convert(name: str, key: str, text: str, default: Any) -> Any:
    if isinstance(default, bool):
        try:
            return parse_bool(text)
        except ValueError:
            raise AgentSpecError(f"{name}: option {key} expects true/false, "
                                 f"got {text!r}") from None
    for typ in (int, float):
        if isinstance(default, typ):
            try:
                return typ(text)
            except ValueError:
                raise AgentSpecError(f"{name}: option {key} expects {typ.__name__}, "
                                     f"got {text!r}") from None
    return text


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"ismcts:iterations=400"`` -> ``("ismcts", {"iterations": 400})``."""
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"an agent spec is a non-empty string, got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    if name not in _REGISTRY:
        raise AgentSpecError(f"unknown agent {name!r}; available: {', '.join(available())}")
    params = inspect.signature(_REGISTRY[name]).parameters
    options: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq:
            raise AgentSpecError(f"{name}: option {item!r} must be key=value")
        if key not in params or key == "seed" or params[key].kind not in (
                inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            opts = [p for p in params if p not in ("seed", "self")
                    and params[p].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                           inspect.Parameter.KEYWORD_ONLY)]
            raise AgentSpecError(f"{name}: unknown option {key!r}; options: "
                                 f"{', '.join(opts) or 'none'}")
        default = params[key].default
        options[key] = _convert(name, key, value.strip(), default)
    return name, options


def make_agent(spec: str, seed: int | None = None) -> Agent:
    """Build the agent a spec names, seeded with ``seed``."""
    name, options = parse_spec(spec)
    try:
        agent = _REGISTRY[name](seed=seed, **options)
    except (TypeError, ValueError) as exc:
        raise AgentSpecError(f"{spec}: {exc}") from None
    agent.spec = spec.strip()
    return agent


@dataclass(frozen=True)
class AgentSpec:
    """A picklable factory for the agent a spec names: ``AgentSpec("ismcts:iterations=50")``.

    The spec is checked when the factory is made; :meth:`make` builds a fresh agent seeded
    with ``seed`` (:class:`dragons_egg_env.wrappers.SingleAgentEnv` calls it once per
    episode and seat)."""

    spec: str

    def __post_init__(self) -> None:
        parse_spec(self.spec)

    def make(self, seed: int | None = None) -> Agent:
        return make_agent(self.spec, seed=seed)

    def __str__(self) -> str:
        return self.spec


register("random", RandomAgent)
register("greedy", GreedyAgent)
register("heuristic", HeuristicAgent)
register("ismcts", ISMCTSAgent)


def _ppo(seed: int | None = None, path: str = "", deterministic: bool = True) -> Agent:
    from .ppo import PPOAgent  # torch and SB3 load only when a ppo agent is made

    return PPOAgent(seed=seed, path=path, deterministic=deterministic)


register("ppo", _ppo)


def _rllib(seed: int | None = None, path: str = "") -> Agent:
    from .rllib_agent import RLlibAgent  # ray loads only when an rllib agent is made

    return RLlibAgent(seed=seed, path=path)


register("rllib", _rllib)

__all__ = ["Agent", "AgentSpec", "RandomAgent", "GreedyAgent", "HeuristicAgent", "ISMCTSAgent",
           "register", "make_agent", "parse_spec", "available", "AgentSpecError",
           "legal_from_mask"]
