"""Agents for Dragon's Egg, found by name.

>>> from dragons_egg.agents import make_agent
>>> bot = make_agent("ismcts:iterations=400", seed=1)

An agent spec is one of

- ``NAME`` or ``NAME:key=value,key=value``: a registered agent (the built-in kinds ``random``,
  ``greedy``, ``heuristic``, ``ismcts``, ``ismcts-net``, ``ppo``, ``ppo-0.1``, ``net``,
  ``rllib``; kinds added with :func:`register`) or one an installed package declares in the
  entry-point group ``dragons_egg.agents`` (:data:`ENTRY_POINT_GROUP`, loaded when the name is
  first used);
- ``MODULE:CLASS`` or ``MODULE:CLASS:key=value,...``: a subclass of :class:`Agent` (or a
  factory function) in an importable module, such as ``my_bots:CautiousBot`` (a module in
  the current directory will do). A second part without ``=`` names the class; a
  registered name always means its agent, so ``ismcts:iterations=200`` keeps its meaning.

Option values are converted to the type of the option's default (or its annotation), and the
agent's :meth:`Agent.check_options` checks them when the spec is read, before anything heavy
loads: an unknown agent or option, a bad value or a missing checkpoint is an
:class:`AgentSpecError` naming it, and an agent that needs an extra that is not installed (an
SB3 ``.zip`` for ``ppo``, ``ppo-0.1``: ``train``; ``rllib``: ``rllib``) a
:class:`MissingExtraSpecError`, one line naming the extra and the ``pip`` command.
:func:`check_spec_for_table` says whether a spec can play a table of a given size (a learned
policy plays tables up to the size it was trained for).

:class:`AgentSpec` is a picklable factory for a spec, the form in which the env package's
single-agent view takes opponents by name. Specs resolve in any process, also under the
``spawn`` start method; names added with :func:`register` travel to worker processes with
:func:`registrations` and :func:`restore_registrations`.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from dragons_egg_env.config import parse_bool
from dragons_egg_env.extras import MissingExtraError

from .base import Agent, legal_from_mask
from .heuristic import HeuristicAgent
from .ismcts import ISMCTSAgent
from .ismcts_net import NetISMCTSAgent
from .openspiel_agents import OpenSpielISMCTSAgent
from .ppo import NetAgent, PPOAgent, PreviousPPOAgent
from .rllib_agent import RLlibAgent
from .simple import GreedyAgent, RandomAgent

#: The entry-point group in which installed packages declare agents: in ``pyproject.toml``,
#: ``[project.entry-points."dragons_egg.agents"]`` ``mybot = "my_package.bots:MyBot"``.
ENTRY_POINT_GROUP = "dragons_egg.agents"

_REGISTRY: dict[str, Callable[..., Agent]] = {}
_BUILTIN: set[str] = set()
#: Factories resolved from entry points and ``MODULE:CLASS`` specs, by name (per process).
_LOADED: dict[str, Callable[..., Agent]] = {}

_OPTION_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_PROTOCOL = ("start_match", "act", "end_round")


class AgentSpecError(ValueError):
    """An agent spec names an unknown agent or option, or a bad option value."""


class MissingExtraSpecError(AgentSpecError, MissingExtraError):
    """An agent spec whose agent needs an extra that is not installed: both an
    :class:`AgentSpecError` and a :class:`dragons_egg_env.extras.MissingExtraError` (an
    ``ImportError``), one line naming the spec, the extra and the ``pip`` command."""

    def __init__(self, what: str, extras: Any, missing: Any) -> None:
        MissingExtraError.__init__(self, what, extras, missing)


def register(name: str, factory: Callable[..., Agent]) -> None:
    """Make ``factory(seed=..., **options)`` (an :class:`Agent` subclass, or a function that
    returns an agent) available as ``name``: ``register("cautious", CautiousBot)``.

    Registration lasts for this process. Worker processes started with ``fork`` inherit it;
    under ``spawn`` (macOS, Windows) a registration made at the top level of an imported
    module happens again when the module is imported, and any other can be carried over with
    :func:`registrations` / :func:`restore_registrations` (tournaments do that)."""
    if (not isinstance(name, str) or not name or any(ch in name for ch in ":,= \t\n")):
        raise ValueError(f"bad agent name {name!r}: a name is a word without ':', ',', "
                         "'=' or spaces")
    if not callable(factory):
        raise TypeError(f"an agent factory is a class or function, got {factory!r}")
    _REGISTRY[name] = factory


def is_builtin(name: str) -> bool:
    """Whether ``name`` is one of this package's own agents (``random`` ... ``net``)."""
    return name in _BUILTIN


def registrations() -> dict[str, Callable[..., Agent]]:
    """The agents added with :func:`register` in this process (not the built-in ones nor
    entry points, which every process finds by itself): pass them to
    :func:`restore_registrations` in a worker process, e.g. as a pool initializer's
    argument. Factories defined at a module's top level pickle by reference."""
    return {k: v for k, v in _REGISTRY.items() if k not in _BUILTIN}


def restore_registrations(regs: Mapping[str, Callable[..., Agent]]) -> None:
    """Register again, in this process, the agents :func:`registrations` returned in
    another (a worker's initializer: ``Pool(initializer=restore_registrations,
    initargs=(registrations(),))``)."""
    for name, factory in regs.items():
        register(name, factory)


_EP_CACHE: dict[tuple[str, ...], dict[str, metadata.EntryPoint]] = {}


def _entry_points() -> dict[str, metadata.EntryPoint]:
    """The agents installed packages declare, by name (scanned once per ``sys.path``)."""
    key = tuple(sys.path)
    found = _EP_CACHE.get(key)
    if found is None:
        eps: Iterable[metadata.EntryPoint]
        try:
            eps = metadata.entry_points(group=ENTRY_POINT_GROUP)
        except Exception:  # noqa: BLE001 - a broken installed distribution must not break us
            eps = ()
        found = _EP_CACHE[key] = {ep.name: ep for ep in eps}
    return found


def available() -> list[str]:
    """Agent names: registered ones and those of installed entry points (not loaded)."""
    return sorted(set(_REGISTRY) | set(_entry_points()))


def _check_factory(what: str, obj: Any) -> Callable[..., Agent]:
    if isinstance(obj, type):
        if not issubclass(obj, Agent):
            raise AgentSpecError(f"{what} is not an agent: a class used as an agent must "
                                 "subclass dragons_egg.agents.Agent")
    elif not callable(obj):
        raise AgentSpecError(f"{what} is not an agent class or factory function")
    factory: Callable[..., Agent] = obj
    return factory


def _import_module(spec: str, module: str) -> Any:
    if module.endswith(".py") or "/" in module or "\\" in module:
        raise AgentSpecError(f"{spec}: MODULE:CLASS names an importable module, not a file "
                             "(my_bots:CautiousBot for the class CautiousBot in my_bots.py)")
    for attempt in range(2):
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if not (module == missing or module.startswith(missing + ".")) or not missing:
                raise AgentSpecError(f"{spec}: importing {module} failed: {exc}") from None
            cwd = os.getcwd()
            if attempt == 0 and cwd not in sys.path:
                # Like `python -m`, find modules in the current directory (the console script
                # `dragons-egg` does not put it on sys.path). Appended, so nothing installed
                # is shadowed; worker processes inherit it.
                sys.path.append(cwd)
                importlib.invalidate_caches()
                continue
            raise AgentSpecError(
                f"{spec}: no module named {missing!r} (MODULE:CLASS needs an importable "
                "module: installed, on PYTHONPATH or in the current directory)") from None
        except Exception as exc:  # noqa: BLE001 - the user's module may raise anything
            raise AgentSpecError(f"{spec}: importing {module} failed: "
                                 f"{type(exc).__name__}: {exc}") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _load_target(spec: str, target: str) -> Callable[..., Agent]:
    """The factory a ``MODULE:CLASS`` target names (imported once per process)."""
    factory = _LOADED.get(target)
    if factory is None:
        module, _, attr = target.partition(":")
        if not module or not attr:
            raise AgentSpecError(f"{spec}: MODULE:CLASS needs both parts, got {target!r}")
        obj = _import_module(spec, module)
        for part in attr.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise AgentSpecError(f"{spec}: module {module} has no {attr!r}") from None
        factory = _LOADED[target] = _check_factory(target, obj)
    return factory


def _load_entry_point(name: str) -> Callable[..., Agent]:
    factory = _LOADED.get(name)
    if factory is None:
        ep = _entry_points()[name]
        dist = getattr(getattr(ep, "dist", None), "name", None)
        where = f"entry point {ep.value!r}" + (f" of {dist}" if dist else "")
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - the package's module may raise anything
            raise AgentSpecError(f"agent {name!r} ({where}) cannot be loaded: "
                                 f"{type(exc).__name__}: {exc}") from None
        factory = _LOADED[name] = _check_factory(f"agent {name!r} ({where})", obj)
    return factory


def _split(spec: str) -> tuple[str, str, Callable[..., Agent]]:
    """``(name, options text, factory)`` of a spec; ``name`` is the registry or entry-point
    name, or ``MODULE:CLASS``."""
    name, _, rest = spec.partition(":")
    name = name.strip()
    if name in _REGISTRY:
        return name, rest, _REGISTRY[name]
    if name in _LOADED:
        return name, rest, _LOADED[name]
    cls, _, options = rest.partition(":")
    target = f"{name}:{cls.strip()}"
    if target in _LOADED:
        return target, options, _LOADED[target]
    if name in _entry_points():
        return name, rest, _load_entry_point(name)
    if rest and "=" not in cls and name:
        return target, options, _load_target(spec, target)
    raise AgentSpecError(f"unknown agent {name!r}; available: {', '.join(available())} "
                         "(or MODULE:CLASS for an agent class of your own)")


def _option_params(factory: Callable[..., Any]) -> tuple[dict[str, inspect.Parameter], bool]:
    """The options a factory takes (every keyword parameter but ``seed``) and whether it
    takes ``**kwargs``."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}, True
    opts = {k: p for k, p in params.items() if k not in ("seed", "self")
            and p.kind in _OPTION_KINDS}
    var = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return opts, var


def _takes_seed(factory: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return True
    return "seed" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD
                                   for p in params.values())


_ANNOTATION_TYPES = {"bool": bool, "int": int, "float": float, "str": str}


def _option_type(param: inspect.Parameter | None) -> type | None:
    if param is None:
        return None
    default = param.default
    if default is not inspect.Parameter.empty and default is not None:
        return type(default)
    ann = param.annotation
    if isinstance(ann, type):
        return ann if ann in (bool, int, float, str) else None
    if isinstance(ann, str):
        parts = [p.strip() for p in ann.replace("Optional[", "").rstrip("]").split("|")]
        parts = [p for p in parts if p != "None"]
        if len(parts) == 1:
            return _ANNOTATION_TYPES.get(parts[0])
    return None


def _convert(name: str, key: str, text: str, typ: type | None) -> Any:
    if typ is bool:
        try:
            return parse_bool(text)
        except ValueError:
            raise AgentSpecError(f"{name}: option {key} expects true/false, "
                                 f"got {text!r}") from None
    if typ in (int, float):
        try:
            return typ(text)
        except ValueError:
            raise AgentSpecError(f"{name}: option {key} expects {typ.__name__}, "
                                 f"got {text!r}") from None
    return text


def _full_options(name: str, factory: Callable[..., Any], options: dict[str, Any]
                  ) -> dict[str, Any]:
    """The spec's options over the factory's defaults (what the check hooks receive)."""
    params, _ = _option_params(factory)
    full: dict[str, Any] = {}
    for key, p in params.items():
        if key in options:
            full[key] = options[key]
        elif p.default is inspect.Parameter.empty:
            raise AgentSpecError(f"{name}: option {key!r} is required ({name}:{key}=...)")
        else:
            full[key] = p.default
    full.update(options)
    return full


def _run_hook(label: str, factory: Callable[..., Any], hook: str, full: dict[str, Any],
              spec: str = "") -> Any:
    fn = getattr(factory, hook, None)
    if not callable(fn):
        return None
    try:
        return fn(**full)
    except MissingExtraError as exc:  # the agent's framework is not installed
        raise MissingExtraSpecError(f"agent {spec.strip() or label}", exc.extras,
                                    exc.missing) from None
    except (ValueError, TypeError) as exc:
        raise AgentSpecError(f"{label}: {exc}") from None


def _parse(spec: str) -> tuple[str, dict[str, Any], Callable[..., Agent]]:
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"an agent spec is a non-empty string, got {spec!r}")
    name, rest, factory = _split(spec.strip())
    if not _takes_seed(factory):
        raise AgentSpecError(f"{name} takes no seed argument: an agent is built as "
                             "factory(seed=..., **options)")
    params, var = _option_params(factory)
    options: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq:
            raise AgentSpecError(f"{name}: option {item!r} must be key=value")
        if key not in params and (not var or key == "seed" or not key.isidentifier()):
            raise AgentSpecError(f"{name}: unknown option {key!r}; options: "
                                 f"{', '.join(params) or 'none'}")
        options[key] = _convert(name, key, value.strip(), _option_type(params.get(key)))
    _run_hook(name, factory, "check_options", _full_options(name, factory, options), spec)
    return name, options, factory


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"ismcts:iterations=400"`` -> ``("ismcts", {"iterations": 400})``;
    ``"my_bots:CautiousBot:margin=2"`` -> ``("my_bots:CautiousBot", {"margin": 2})``.

    Checks everything that can be checked without building the agent: the name (importing a
    ``MODULE:CLASS`` module or an entry point's), the options and their types, and the
    agent's own :meth:`Agent.check_options` (a checkpoint file exists and is one, ISMCTS
    iterations are >= 1, ...); no torch or ray is loaded. An :class:`AgentSpecError` (one
    line) otherwise."""
    name, options, _ = _parse(spec)
    return name, options


def table_limit(spec: str) -> int | None:
    """The largest table the agent a spec names can play (``None``: any size), from the
    agent's :meth:`Agent.table_limit`, e.g. the table size a ``ppo`` checkpoint was trained
    for, read from the file without loading torch."""
    name, options, factory = _parse(spec)
    limit = _run_hook(spec.strip(), factory, "table_limit",
                      _full_options(name, factory, options), spec)
    return None if limit is None else int(limit)


def check_spec_for_table(spec: str, num_players: int) -> None:
    """Raise :class:`AgentSpecError` when the agent a spec names cannot play a table of
    ``num_players`` (also when the spec itself is bad): a learned policy plays tables up to
    the size it was trained for; the shipped ``ppo`` agent, up to 4 players."""
    limit = table_limit(spec)
    if limit is not None and num_players > limit:
        raise AgentSpecError(f"{spec.strip()} plays tables of up to {limit} players (the size "
                             f"its policy was trained for), not {num_players}")


def make_agent(spec: str, seed: int | None = None) -> Agent:
    """Build the agent a spec names, seeded with ``seed``."""
    name, options, factory = _parse(spec)
    try:
        agent = factory(seed=seed, **options)
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        raise AgentSpecError(msg if msg.startswith(spec.strip()) else f"{spec.strip()}: {msg}"
                             ) from None
    missing = [m for m in _PROTOCOL if not callable(getattr(agent, m, None))]
    if missing:
        raise AgentSpecError(f"{spec.strip()}: {name} made {type(agent).__name__!r}, which is "
                             f"not an agent (it lacks {', '.join(missing)})")
    try:
        agent.spec = spec.strip()
    except AttributeError:  # pragma: no cover - an agent with __slots__
        pass
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


for _name, _factory in (("random", RandomAgent), ("greedy", GreedyAgent),
                        ("heuristic", HeuristicAgent), ("ismcts", ISMCTSAgent),
                        ("ismcts-net", NetISMCTSAgent),
                        # torch/SB3 and ray load only when a ppo or rllib agent is made
                        ("ppo", PPOAgent), ("ppo-0.1", PreviousPPOAgent),
                        ("rllib", RLlibAgent), ("net", NetAgent),
                        # pyspiel loads only when one is made (the openspiel extra)
                        ("openspiel-ismcts", OpenSpielISMCTSAgent)):
    register(_name, _factory)
    _BUILTIN.add(_name)

__all__ = ["Agent", "AgentSpec", "RandomAgent", "GreedyAgent", "HeuristicAgent", "ISMCTSAgent",
           "NetISMCTSAgent", "NetAgent",
           "register", "registrations", "restore_registrations", "make_agent", "parse_spec",
           "available", "is_builtin", "table_limit", "check_spec_for_table", "AgentSpecError",
           "MissingExtraSpecError", "PreviousPPOAgent",
           "ENTRY_POINT_GROUP", "legal_from_mask"]
