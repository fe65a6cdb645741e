"""The rule configuration: one frozen dataclass holding the table size and every rule flag.

Each field cites the rule of ``docs/rules.md`` it selects and carries, as dataclass field
metadata, its meaning and allowed values: the one source that validation, the generated
``docs/flags.md`` and the command-line choices read. Values are validated on construction; a
bad value or an unknown name is a ``ValueError`` that names it.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

DRAGONS_PER_PLAY = ("one", "any")
REWARD_SCHEMES = ("rank", "dragon_egg")
#: R3: the smallest and largest table.
MIN_PLAYERS = 2
MAX_PLAYERS = 8
#: R31: the most asks a tribute may have (every card but the Egg).
MAX_ASKS = 44
#: Every table size, smallest first.
TABLE_SIZES = tuple(range(MIN_PLAYERS, MAX_PLAYERS + 1))


TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


class ConfigError(ValueError):
    """A rule flag or table setting has a bad value or an unknown name."""


def parse_bool(text: str) -> bool:
    """``"true"``/``"yes"``/``"on"``/``"1"`` or their opposites (any case), else ``ValueError``:
    the one bool parser of every command line and agent spec."""
    low = text.strip().lower()
    if low in TRUE_WORDS:
        return True
    if low in FALSE_WORDS:
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def int_range(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer ``>= lo`` (and ``<= hi`` when given); the one of every
    command line (``python -m dragons_egg_env`` and ``dragons_egg.experiments.common.settings``)."""
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


def _flag(default: Any, rule: str, meaning: str, *, low: int | None = None,
          high: int | None = None, choices: tuple[str, ...] | None = None) -> Any:
    """A field of :class:`RulesConfig` with its metadata: the rule it selects, a short
    meaning, and what values it allows (an int range, a choice of strings, or a bool by
    the default's type). Validation, ``docs/flags.md`` and command-line choices all read it."""
    meta = {"rule": rule, "meaning": meaning, "low": low, "high": high, "choices": choices}
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class RulesConfig:
    """Table size, match length and every rule flag of the contract, with its defaults.

    Each field's metadata (:meth:`flag_info`) names its rule and allowed values."""

    num_players: int = _flag(4, "R3", "players at the table", low=MIN_PLAYERS, high=MAX_PLAYERS)
    num_rounds: int = _flag(3, "R26", "rounds in a match; the episode ends after the last",
                            low=1)
    opening_ten_of_fire_alone: bool = _flag(
        True, "R5", "round 1 opens with the 10 of Fire alone (`False`: any count of 10s "
        "including it)")
    pass_locks_out: bool = _flag(
        False, "R10", "a pass on a non-empty pile locks the player out until it clears")
    completion_out_of_turn: bool = _flag(
        True, "R12", "a set may be completed out of turn, right after the play that allows it")
    dragons_per_play: str = _flag("one", "R16", "how many dragon cards one play may hold",
                                  choices=DRAGONS_PER_PLAY)
    tribute_asks: int = _flag(2, "R31", "asks the Dragon makes in the tribute (0: no tribute)",
                              low=0, high=MAX_ASKS)
    egg_in_tribute: bool = _flag(False, "R33", "the Dragon may give the Egg back in the tribute")
    reward_scheme: str = _flag(
        "rank", "R27", "`rank`: 1 - 2p/(n-1) for place p; `dragon_egg`: +1 first, -1 last, "
        "0 others", choices=REWARD_SCHEMES)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            self.check_value(f.name, getattr(self, f.name))

    @classmethod
    def flag_info(cls, name: str) -> dict[str, Any]:
        """Metadata of one setting: ``rule``, ``meaning``, ``kind`` (``"int"``, ``"bool"`` or
        ``"str"``), ``default``, ``low``/``high`` (ints) and ``choices`` (strs)."""
        for f in dataclasses.fields(cls):
            if f.name == name:
                kind = type(f.default).__name__
                return {**f.metadata, "kind": kind, "default": f.default}
        raise ConfigError(f"unknown rule flag {name!r}; known: {', '.join(cls.field_names())}")

    @classmethod
    def flag_type(cls, name: str) -> Any:
        """The type a value of setting ``name`` has, as an annotation: ``bool``, ``int``, or a
        ``Literal`` of its choices for a string setting (the keyword arguments of
        ``dragons_egg_v0.env()`` are typed with it)."""
        info = cls.flag_info(name)
        if info["kind"] == "str":
            return Literal[info["choices"]]
        return {"bool": bool, "int": int}[info["kind"]]

    @classmethod
    def parse_value(cls, name: str, text: str) -> Any:
        """The value of setting ``name`` written as text (command lines), checked: a
        :class:`ConfigError` names the flag and what it allows."""
        info = cls.flag_info(name)
        try:
            if info["kind"] == "bool":
                value: Any = parse_bool(text)
            elif info["kind"] == "int":
                value = int(text)
            else:
                value = text
        except ValueError:
            what = "true or false" if info["kind"] == "bool" else "an integer"
            raise ConfigError(f"{name} expects {what}, got {text!r}") from None
        cls.check_value(name, value)
        return value

    @classmethod
    def check_value(cls, name: str, value: Any) -> None:
        """Raise :class:`ConfigError` unless ``value`` is allowed for setting ``name``."""
        info = cls.flag_info(name)
        if info["kind"] == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{name} must be a bool, got {value!r}")
        elif info["kind"] == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{name} must be an int, got {value!r}")
            lo, hi = info["low"], info["high"]
            if (lo is not None and value < lo) or (hi is not None and value > hi):
                rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
                raise ConfigError(f"{name} must be {rng}, got {value}")
        elif value not in info["choices"]:
            raise ConfigError(f"{name} must be one of {', '.join(info['choices'])}; "
                              f"got {value!r}")

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Names of every setting, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> RulesConfig:
        """Build a config from keyword arguments; an unknown name is a ``ConfigError``."""
        known = set(cls.field_names())
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise ConfigError(
                f"unknown rule flag(s) {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(sorted(known))}"
            )
        return cls(**dict(kwargs))

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (for replays and run configs)."""
        return dataclasses.asdict(self)
