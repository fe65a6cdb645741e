"""Argument types shared by the project's command lines: one parser per kind of value, each
an argparse ``type`` that turns bad input into a one-line usage error (exit status 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from dragons_egg_env.config import MAX_PLAYERS, MIN_PLAYERS, ConfigError, RulesConfig, parse_bool


def int_range(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer ``>= lo`` (and ``<= hi`` when given)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(
                f"expected {lo}..{hi}, got {value}" if hi is not None
                else f"expected >= {lo}, got {value}")
        return value
    return parse


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


def settings_file(cls: type, path: str, build: Callable[[dict[str, Any]], Any]) -> Any:
    """Read a JSON file of settings for the dataclass ``cls`` and make one with ``build``
    (which turns lists into tuples where ``cls`` wants them). A missing or malformed file, or a
    name that is not a field of ``cls``, is a one-line error and exit status 2."""
    import dataclasses
    import json
    import sys
    from pathlib import Path

    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        print(f"error: config file {p}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known) if isinstance(data, dict) else ["(not an object)"]
    if unknown:
        print(f"error: config file {p}: unknown setting(s) {', '.join(unknown)}",
              file=sys.stderr)
        raise SystemExit(2)
    return build(data)


def config_cli(cls: type, argv: list[str] | None, build: Callable[[dict[str, Any]], Any],
               extra: str, description: str) -> tuple[Any, str | None]:
    """A command line for the settings dataclass ``cls``: ``--config FILE`` (JSON, read by
    :func:`settings_file` with ``build``) gives the defaults, every field is a flag (tyro), and
    the option ``extra`` (such as ``--resume``) is returned beside the settings. A setting that
    ``cls.validate()`` refuses is a one-line error and exit status 2."""
    import sys

    import tyro

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    pre.add_argument(extra, default=None)
    known, rest = pre.parse_known_args(argv)
    default = settings_file(cls, known.config, build) if known.config else cls()
    cfg = tyro.cli(cls, args=rest, default=default, description=description)
    try:
        cfg.validate()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return cfg, getattr(known, extra.lstrip("-").replace("-", "_"))
