"""The rule configuration: one frozen dataclass holding the table size and every rule flag.

Each field cites the rule of ``docs/rules.md`` it selects. Values are validated on construction;
a bad value or an unknown name is a ``ValueError`` that names it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

DRAGONS_PER_PLAY = ("one", "any")
REWARD_SCHEMES = ("rank", "dragon_egg")


class ConfigError(ValueError):
    """A rule flag or table setting has a bad value or an unknown name."""


@dataclass(frozen=True)
class RulesConfig:
    """Table size, match length and every rule flag of the contract, with its defaults."""

    #: R3: players at the table, 2..8.
    num_players: int = 4
    #: R26: rounds in a match, >= 1.
    num_rounds: int = 3
    #: R5: round 1 opens with the 10 of Fire alone (else any count of 10s including it).
    opening_ten_of_fire_alone: bool = True
    #: R10: a pass on a non-empty pile locks the player out until the pile clears.
    pass_locks_out: bool = False
    #: R12: a set may be completed out of turn, right after the play that makes it completable.
    completion_out_of_turn: bool = True
    #: R16: dragon cards per play, ``"one"`` or ``"any"``.
    dragons_per_play: str = "one"
    #: R31: asks the Dragon makes in the tribute, 0..44 (0: no tribute).
    tribute_asks: int = 2
    #: R33: the Dragon may give the Egg back in the tribute.
    egg_in_tribute: bool = False
    #: R27: ``"rank"`` (1 - 2p/(n-1)) or ``"dragon_egg"`` (+1 first, -1 last, 0 others).
    reward_scheme: str = "rank"

    def __post_init__(self) -> None:
        def _int(name: str, lo: int, hi: int | None) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ConfigError(f"{name} must be an int, got {v!r}")
            if v < lo or (hi is not None and v > hi):
                rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
                raise ConfigError(f"{name} must be {rng}, got {v}")

        def _bool(name: str) -> None:
            v = getattr(self, name)
            if not isinstance(v, bool):
                raise ConfigError(f"{name} must be a bool, got {v!r}")

        def _choice(name: str, choices: tuple[str, ...]) -> None:
            v = getattr(self, name)
            if v not in choices:
                raise ConfigError(f"{name} must be one of {', '.join(choices)}; got {v!r}")

        _int("num_players", 2, 8)
        _int("num_rounds", 1, None)
        _int("tribute_asks", 0, 44)
        for name in ("opening_ten_of_fire_alone", "pass_locks_out", "completion_out_of_turn",
                     "egg_in_tribute"):
            _bool(name)
        _choice("dragons_per_play", DRAGONS_PER_PLAY)
        _choice("reward_scheme", REWARD_SCHEMES)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Names of every setting, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> "RulesConfig":
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
