"""A benchmark suite's definition (:class:`Suite`): data, read from a JSON file and checked.

A suite is a list of *cells*, each a table size and a *population* (the agents of the other
seats), with the seed of its duplicate deal set, the deal sequences each tier plays and the
digest of the dealt hands. The published suites live in ``suites/NAME.json`` inside this
package; :data:`PUBLISHED` records the digest of each (sha256 of its canonical JSON), and
:func:`load_suite` refuses a published suite whose file does not match it: a published suite
is never changed, a change is a new version. A suite file of one's own (``--suite FILE``)
is read the same way and its digest recorded on the score card, marked unpublished.

A population is a cycle of agent specs (``seats``): its reference table seats
``seats[i % len(seats)]`` at line-up place ``i``; the benchmarked agent replaces place 0.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from dragons_egg.agents.ppo import DATA_DIR, file_sha256
from dragons_egg_env.cards import codes
from dragons_egg_env.config import RulesConfig

from ..tournament.schedule import deal_sequence, derive

#: The folder of the published suites.
SUITES_DIR = Path(__file__).resolve().parent / "suites"
#: The digest of every published suite (sha256 of its canonical JSON, :func:`suite_digest`).
#: A published suite is never edited: a change is a new version with a new line here.
PUBLISHED = {
    "v1": "3b53d88954f5d068ca109d9f034b6e5f7824d1129a98ce58c73140ceec9b6527",
}
#: The tiers of a suite.
TIERS = ("quick", "full")


class SuiteError(ValueError):
    """A suite that cannot be used (one line naming why)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Population(_Strict):
    """The agents of a population, a cycle over the line-up's places (see the module)."""

    seats: list[str] = Field(min_length=1)
    about: str = ""


class Frozen(_Strict):
    """A file a suite's agents read, frozen by its sha256 (the shipped ``ppo``'s policy)."""

    file: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class Cell(_Strict):
    """One table size and population, its deal set's seed, the deal sequences of each tier
    (0: not in that tier; a tier's sequences are the first ones of the deal set) and the
    digest of every sequence's dealt hands (:func:`deal_digest`, over the most a tier
    plays)."""

    players: int = Field(ge=2, le=8)
    population: str
    seed: int = Field(ge=0)
    sequences: dict[str, int]
    deal_digest: str = Field(pattern=r"^[0-9a-f]{64}$")

    @field_validator("sequences")
    @classmethod
    def _tiers(cls, v: dict[str, int]) -> dict[str, int]:
        if set(v) != set(TIERS) or any(x < 0 for x in v.values()):
            raise ValueError(f"sequences gives each of {', '.join(TIERS)} a count >= 0")
        return v

    @property
    def key(self) -> str:
        """The cell's name: ``p4-heuristic``."""
        return f"p{self.players}-{self.population}"


class Suite(_Strict):
    """A benchmark suite's definition (see the module's docstring)."""

    suite: str
    version: str
    about: str = ""
    num_rounds: int = Field(ge=1)
    rules: dict[str, Any]
    bootstrap: int = Field(ge=100)
    populations: dict[str, Population]
    frozen: dict[str, Frozen] = {}
    cells: list[Cell] = Field(min_length=1)

    def tier_cells(self, tier: str) -> list[Cell]:
        """The cells a tier plays (in the suite's order)."""
        if tier not in TIERS:
            raise SuiteError(f"unknown tier {tier!r}: the tiers are {', '.join(TIERS)}")
        return [c for c in self.cells if c.sequences[tier] > 0]

    def reference_lineup(self, cell: Cell) -> list[str]:
        """The population's own table at the cell's size: place ``i`` holds
        ``seats[i % len(seats)]``."""
        seats = [frozen_spec(self, spec) for spec in self.populations[cell.population].seats]
        return [seats[i % len(seats)] for i in range(cell.players)]

    def rules_config(self, players: int) -> RulesConfig:
        """The rules every cell of ``players`` seats plays."""
        return RulesConfig.from_kwargs({**self.rules, "num_players": players,
                                        "num_rounds": self.num_rounds})


def canonical(data: Any) -> bytes:
    """The canonical JSON of ``data``: sorted keys, no spaces, UTF-8."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def suite_digest(data: Any) -> str:
    """A suite's digest: sha256 of its definition's canonical JSON (:func:`canonical`)."""
    return hashlib.sha256(canonical(data)).hexdigest()


def deal_digest(rules: RulesConfig, seed: int, sequences: int) -> str:
    """sha256 of the dealt hands (card codes) of deal sequences ``0..sequences-1`` of a
    tournament seeded ``seed``, as the tournament deals them
    (:func:`~..tournament.schedule.deal_sequence`)."""
    h = hashlib.sha256()
    for s in range(sequences):
        hands = [[codes(hand) for hand in deal]
                 for deal in deal_sequence(rules, derive(seed, s))]
        h.update(canonical(hands) + b"\n")
    return h.hexdigest()


def suite_file(name: str) -> Path:
    """The file of a published suite, or of a suite of one's own given by path."""
    if name in PUBLISHED:
        return SUITES_DIR / f"{name}.json"
    if name.endswith(".json") or os.sep in name:
        return Path(name)
    raise SuiteError(f"unknown suite {name!r}: the published suites are "
                     f"{', '.join(PUBLISHED)} (or give a suite file, NAME.json)")


def load_suite(name: str, check_frozen: bool = True) -> tuple[Suite, str]:
    """The suite ``name`` (a published one, :data:`PUBLISHED`, or a suite file's path) and its
    digest, checked: the schema, a published suite's digest against the one recorded, every
    population a cell names, every cell's deal digest, and (``check_frozen``) every frozen
    file's sha256. A :class:`SuiteError` names what is wrong."""
    path = suite_file(name)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SuiteError(f"cannot read suite {name!r} ({path}): {exc}") from None
    digest = suite_digest(data)
    if name in PUBLISHED and digest != PUBLISHED[name]:
        raise SuiteError(f"suite {name!r} ({path}) has been changed: its digest is {digest}, "
                         f"the published {name} is {PUBLISHED[name]}; a published suite is "
                         "never edited (a change is a new version)")
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise SuiteError(f"suite {name!r} ({path}) is not a suite definition: {where}: "
                         f"{err['msg']}") from None
    keys = set()
    for c in suite.cells:
        if c.population not in suite.populations:
            raise SuiteError(f"suite {name!r}: cell {c.key} names the population "
                             f"{c.population!r}, which it does not define")
        if c.key in keys:
            raise SuiteError(f"suite {name!r}: the cell {c.key} is given twice")
        keys.add(c.key)
        want = deal_digest(suite.rules_config(c.players), c.seed, max(c.sequences.values()))
        if want != c.deal_digest:
            raise SuiteError(f"suite {name!r}: cell {c.key}'s deals (seed {c.seed}) have the "
                             f"digest {want}, not the {c.deal_digest} the suite records: the "
                             "dealing has changed, and this suite's deals cannot be dealt")
    if check_frozen:
        check_frozen_files(suite, name)
    return suite, digest


def frozen_spec(suite: Suite, spec: str, name: str | None = None) -> str:
    """The spec that plays ``spec`` as the suite froze it: ``spec`` itself when it is not
    frozen or its file (``agents/data/FILE``) has the frozen sha256; else the same agent on the
    package data file that has it (a release that ships a new ``ppo`` keeps the old file
    under a versioned name), as ``spec:path=FILE``. A :class:`SuiteError` names the digest
    expected when no installed file has it."""
    f = suite.frozen.get(spec)
    if f is None:
        return spec
    path = DATA_DIR / f.file
    got = file_sha256(path) if path.is_file() else "missing"
    if got == f.sha256:
        return spec
    for other in sorted(DATA_DIR.glob("*" + path.suffix)):
        if other != path and file_sha256(other) == f.sha256:
            return f"{spec}:path={other}"
    raise SuiteError(f"suite {name or suite.version!r} froze {spec!r} as {f.file} with "
                     f"sha256 {f.sha256}, but the installed {path} has {got} and no file "
                     f"of {DATA_DIR} has it: a later shipped {spec} cannot stand in for it "
                     "(keep the frozen file under a versioned name, see "
                     "docs/benchmark-suite.md)")


def check_frozen_files(suite: Suite, name: str) -> None:
    """A :class:`SuiteError` when a file the suite froze (the shipped ``ppo``'s policy) is
    installed under neither its name nor another (:func:`frozen_spec`)."""
    for spec in suite.frozen:
        frozen_spec(suite, spec, name)
