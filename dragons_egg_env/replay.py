"""Replays: a match exported as JSON (config, seed, deals, actions) and played back exactly.

``env.unwrapped.to_replay()`` / ``save_replay(path)`` export a finished or unfinished match;
:func:`replay` rebuilds the environment from that data and steps through every recorded action,
checking that each is legal at its step. A tampered replay is a :class:`ReplayError` that names
the step.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import engine as E
from .actions import describe
from .config import ConfigError
from .dragons_egg_v0 import ENV_NAME, REPLAY_FORMAT, REPLAY_VERSION, raw_env


class ReplayError(ValueError):
    """A replay file that is malformed or does not replay (the message names the step)."""


def load_replay(path: str | Path) -> dict[str, Any]:
    """Read a replay file; a missing file or invalid JSON is a :class:`ReplayError`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ReplayError(f"cannot read replay {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplayError(f"replay {path} is not valid JSON: {exc}") from None
    return data


def _check_header(data: Any) -> None:
    if not isinstance(data, dict):
        raise ReplayError(f"a replay is a JSON object, got {type(data).__name__}")
    if data.get("format") != REPLAY_FORMAT:
        raise ReplayError(f"not a Dragon's Egg replay (format {data.get('format')!r})")
    if data.get("version") != REPLAY_VERSION or data.get("env") != ENV_NAME:
        raise ReplayError(f"unsupported replay version {data.get('version')!r} for env "
                          f"{data.get('env')!r} (this library reads version {REPLAY_VERSION} "
                          f"of {ENV_NAME})")
    for key in ("config", "deals", "actions"):
        if key not in data:
            raise ReplayError(f"replay has no {key!r}")
    if not isinstance(data["config"], dict) or not isinstance(data["actions"], list):
        raise ReplayError("replay 'config' must be an object and 'actions' a list")


def iter_replay(data: dict[str, Any], env_fn: Callable[..., raw_env] = raw_env
                ) -> Iterator[tuple[int, raw_env]]:
    """Yield ``(step, env)`` before each recorded action and once more at the end
    (``step == len(actions)``); the env is the same object, stepped in place."""
    _check_header(data)
    try:
        env = env_fn(max_players=data.get("max_players"), **data["config"])
    except (ConfigError, ValueError, TypeError) as exc:
        raise ReplayError(f"replay config is invalid: {exc}") from None
    try:
        env.reset(seed=data.get("seed"), options={"deals": data["deals"]})
    except ValueError as exc:
        raise ReplayError(f"replay deals are invalid: {exc}") from None
    actions = data["actions"]
    for k, item in enumerate(actions):
        yield k, env
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], int)
                and not isinstance(item[1], bool)):
            raise ReplayError(f"step {k}: malformed action entry {item!r} "
                              f"(expected [agent, action])")
        agent, action = item
        if env.phase() == "done":
            raise ReplayError(f"step {k}: the match is already over, but the replay goes on")
        if agent != env.agent_selection:
            raise ReplayError(f"step {k}: the replay says {agent!r} acts, but it is "
                              f"{env.agent_selection!r}'s turn")
        legal = E.legal_mask(env.engine_state)
        if not (0 <= action and legal >> action & 1):
            try:
                what = describe(action)
            except ValueError:
                what = "out of range"
            names = ", ".join(describe(a) for a in env.legal_actions())
            raise ReplayError(f"step {k}: action {action} ({what}) by {agent} is not legal "
                              f"(legal: {names})")
        env.step(action)
    played = len(env.deals)
    if played < len(data["deals"]):
        raise ReplayError(f"replay holds {len(data['deals'])} deals but the actions play only "
                          f"{played} rounds")
    yield len(actions), env


def replay(data: dict[str, Any] | str | Path,
           env_fn: Callable[..., raw_env] = raw_env) -> raw_env:
    """Play a replay (a dict or a path) to its end and return the environment."""
    if not isinstance(data, dict):
        data = load_replay(data)
    last = None
    for _, env in iter_replay(data, env_fn):
        last = env
    assert last is not None
    return last


__all__ = ["ReplayError", "load_replay", "iter_replay", "replay"]
