"""Argument types shared by the project's command lines: one parser per kind of value, each
an argparse ``type`` that turns bad input into a one-line usage error (exit status 2)."""

from __future__ import annotations

import argparse
from typing import Any

from dragons_egg_env.config import (
    MAX_PLAYERS,
    MIN_PLAYERS,
    ConfigError,
    RulesConfig,
    parse_bool,
)
from dragons_egg_env.config import int_range as int_range  # the one in dragons_egg_env, re-exported

#: An argparse type for a table size (R3).
table_size = int_range(MIN_PLAYERS, MAX_PLAYERS)


def positive_float(text: str) -> float:
    """An argparse type: a finite number ``> 0``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def bool_arg(text: str) -> bool:
    """An argparse type: true/false, yes/no, on/off or 1/0."""
    try:
        return parse_bool(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def rule_flag(text: str) -> tuple[str, Any]:
    """An argparse type for ``--rule NAME=VALUE``: the name must be a field of
    :class:`~dragons_egg_env.config.RulesConfig` and the value one it allows (read from the
    field's metadata, as validation and the docs read it)."""
    key, eq, value = text.partition("=")
    if not eq:
        raise argparse.ArgumentTypeError(f"a rule flag is name=value, got {text!r}")
    try:
        return key.strip(), RulesConfig.parse_value(key.strip(), value.strip())
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None



