"""What are tribute choices worth? The same play policy with different tribute policies.

Every seat plays with one play policy (``--play``, default: the shipped learned agent,
``ppo``). What the Dragon does in the tribute (R30..R34) comes from a *tribute policy*
(:class:`~dragons_egg.agents.tribute_mix.TributeMix`): ``none`` (pass at once), ``random``,
``heuristic`` (H8/H9 of ``agents/heuristic.py``), ``learned`` (the ask and give choices of the
agent ``--tribute``, default ``ppo``, whatever the play policy is: a learned tribute is measured
under the heuristic's play as well as under its own), ``learned-ask`` and ``learned-give`` (the
learned asks with the heuristic's give-back and the other way round: where a difference between
``learned`` and ``heuristic`` comes from).

Each deal sequence (two rounds) is played once per tribute policy. Round 1 does not involve
the tribute, and every agent is deterministic given its seed, so round 1 and the Dragon are the
same in every variant; only the tribute, and what follows from it, differs. The measure is the
Dragon's reward in round 2 (R27), with 95% bootstrap intervals over deal sequences, and each
policy's paired difference to ``heuristic``. Heatmaps show which cards the learned policy asks
for and gives back.

``dragons-egg tribute-analysis [--tribute ppo] [--play SPEC ...] [--players 4] [--deals 300]
[--workers 2] [--policies heuristic,learned] [--rule FLAG=VALUE ...] [--out runs/tribute]``
plays every deal sequence under each play policy given (``--play``, again for more; by default
the learned agent's own play, then the heuristic's), and the report's head puts the learned
tribute's difference to the heuristic's under each side by side, its asks and its give-back
apart. The deal sequences are split among ``--workers`` processes; each has its own seeds, so
the results do not depend on it. ``--policies`` plays only some tribute policies,
``heuristic`` among them, with the rewards they get in the full run. Every match is played
under the analysis's rules (:class:`TributeSettings`; :data:`DEFAULT_RULES`: two rounds, two
asks), which ``--rule`` changes (the tournament's syntax; two rounds or more and a tribute).

``--engine batched`` (the default where it can play every policy: deterministic policy files
such as ``ppo`` and memoryless agents such as ``heuristic``) plays the deal sequences of a unit
of work together on the compiled engine (:class:`dragons_egg_env.vector.VectorEngine`): round
1 once, by the play policy, then each match copied at the start of round 2 (the Dragon's
first ask) and round 2 played from the copies once per tribute policy. It plays the same
matches as ``--engine scalar`` (one match at a time with agent objects, any agent; a test
checks them deal for deal and card for card), 4 times faster under ``ppo``'s play and 15 times
under the heuristic's here.

The output folder holds the analysis's settings (:data:`SETTINGS`, written before the first
deal) and every finished unit of work (:data:`DEALS_PER_TASK` deal sequences on the scalar
engine, :data:`BATCH_DEALS` on the batched one), one JSON line
each, appended whole as it finishes (:data:`PARTS`). A stop (Ctrl-C, a killed process, a full
disk, said in one line) loses at most the units being played: ``--resume DIR`` plays the rest
with the saved settings, and the results are those of an uninterrupted run. A folder that
holds an analysis is never written over. At the end: ``summary.json``, ``report.md`` and one
``tribute_heatmaps_playK.png`` per play policy.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from dragons_egg.agents import AgentSpecError, check_spec_for_table, make_agent, parse_spec
from dragons_egg.agents.base import Agent
from dragons_egg.agents.batched import batch_policy
from dragons_egg.agents.consent import CONSENT_FLAG, check_consent
from dragons_egg.agents.heuristic import HeuristicAgent
from dragons_egg.agents.runner import play_match
from dragons_egg.agents.tribute_mix import TRIBUTE_POLICIES, TributeMix, tribute_actions
from dragons_egg.experiments.common.args import int_range, rule_flag
from dragons_egg.experiments.common.files import (
    disk_error,
    disk_error_line,
    write_atomically,
    write_whole,
)
from dragons_egg.experiments.common.locks import FolderBusy, FolderLock, FolderUnwritable
from dragons_egg.experiments.common.runs import ignore_interrupts, stops_on_sigterm
from dragons_egg.experiments.evaluation.tournament import deal_sequence, derive
from dragons_egg.experiments.evaluation.tournament.output import OutputError, check_out_dir
from dragons_egg.experiments.evaluation.tournament.records import DigestChain
from dragons_egg.experiments.evaluation.tribute_records import line_digest, parse_part
from dragons_egg.experiments.evaluation.tribute_report import heatmaps, overview, report, summarize
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE
from dragons_egg_env.cards import NUM_CARDS, codes
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.extras import require_cli

#: The rules of the analysis by default: 4 players, matches of two rounds (round 2 is the
#: first with a tribute, R30), the Dragon's two asks (R31), every other flag's default.
DEFAULT_RULES = RulesConfig(num_players=4, num_rounds=2, tribute_asks=2)


@dataclass(frozen=True)
class TributeSettings:
    """What a tribute analysis plays, checked once here: the play policies, the ``learned``
    tribute policy (a spec, or for :func:`run` a factory of a seed), the deal sequences per play
    policy, the seed, the tribute policies, the engine (``auto`` resolved before) and ``rules``,
    those of every match (the table size is ``rules.num_players``; two rounds or more, as the
    measure is round 2, and a tribute, R26, R31). A ``ValueError`` names a bad setting."""

    plays: tuple[str, ...]
    tribute: str | Callable[[int], Agent]
    deals: int = 300
    seed: int = 0
    policies: tuple[str, ...] = TRIBUTE_POLICIES
    engine: str = "scalar"
    rules: RulesConfig = DEFAULT_RULES
    #: The command that started the analysis (written with the settings).
    command: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "plays", tuple(self.plays))
        object.__setattr__(self, "policies", check_policies(self.policies))
        if not self.plays:
            raise ValueError("a tribute analysis plays one play policy or more")
        for name, low in (("deals", 1), ("seed", 0)):
            if isinstance(v := getattr(self, name), bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"{name} is an integer >= {low}, got {v!r}")
        if self.engine not in ENGINES[1:]:
            raise ValueError(f"engine is one of {', '.join(ENGINES[1:])} (auto resolved), got "
                             f"{self.engine!r}")
        if not isinstance(self.rules, RulesConfig):
            raise TypeError(f"rules is a RulesConfig, got {self.rules!r}")
        if self.rules.num_rounds < 2 or not self.rules.tribute_asks:
            raise ValueError(f"the analysis measures round 2 after a tribute: its rules need "
                             f"num_rounds >= 2 and tribute_asks > 0 (R26, R31), got num_rounds="
                             f"{self.rules.num_rounds}, tribute_asks={self.rules.tribute_asks}")

    @property
    def players(self) -> int:
        """The table size (``rules.num_players``)."""
        return self.rules.num_players

    def to_dict(self) -> dict[str, Any]:
        """The settings as :data:`SETTINGS` holds them (JSON; the flags but the table size in
        ``rules``)."""
        flags = {k: v for k, v in self.rules.to_dict().items() if k != "num_players"}
        return {"format": FORMAT, "plays": list(self.plays), "tribute": self.tribute,
                "deals": self.deals, "players": self.players, "seed": self.seed,
                "policies": list(self.policies), "tribute_asks": self.rules.tribute_asks,
                "engine": self.engine, "command": self.command, "rules": flags}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TributeSettings:
        """Settings from :meth:`to_dict`'s form (saved before the rules, none: two rounds with
        its ``tribute_asks``; before the engine, none: ``scalar``)."""
        flags = data.get("rules", {"num_rounds": 2, "tribute_asks": data["tribute_asks"]})
        try:
            rules = RulesConfig.from_kwargs({**flags, "num_players": data["players"]})
        except (TypeError, ValueError) as exc:
            raise ValueError(f"rules: {exc}") from None
        return cls(plays=tuple(data["plays"]), tribute=data["tribute"], deals=data["deals"],
                   seed=data["seed"], policies=tuple(data["policies"]),
                   engine=data.get("engine", "scalar"), rules=rules,
                   command=data.get("command", ""))


def _rules_note(rules: RulesConfig) -> str:
    """The report's note of the flags other than :data:`DEFAULT_RULES`' (and the table)."""
    base = dataclasses.replace(DEFAULT_RULES, num_players=rules.num_players,
                               num_rounds=rules.num_rounds).to_dict()
    other = [f"{k}={json.dumps(v)}" for k, v in rules.to_dict().items() if base[k] != v]
    return f" under {', '.join(other)}" if other else ""


def _as_settings(s: TributeSettings | Mapping[str, Any]) -> TributeSettings:
    return s if isinstance(s, TributeSettings) else TributeSettings.from_dict(s)


class Unit(NamedTuple):
    """A unit of work: deal sequences ``lo..hi-1`` of one play policy, matches under ``rules``."""

    play: str
    tribute: str | Callable[[int], Agent]
    rules: RulesConfig
    seed: int
    lo: int
    hi: int
    policies: tuple[str, ...]
    engine: str


def _learner(tribute: str | Callable[[int], Agent], seed: int) -> Agent:
    """A seat's ``learned`` tribute agent, from a spec or a factory of a seed."""
    return make_agent(tribute, seed=seed) if isinstance(tribute, str) else tribute(seed)


def _deal_range(task: Unit) -> dict[str, Any]:
    """Deal sequences ``lo..hi-1`` under each tribute policy of ``policies`` (a worker's unit
    of work)."""
    play_spec, tribute, config, seed, lo, hi, policies = task[:7]
    num_players = config.num_players
    rewards = {t: np.zeros(hi - lo) for t in policies}
    asked = np.zeros(NUM_CARDS, dtype=int)
    given = np.zeros(NUM_CARDS, dtype=int)
    dragons = []
    for i, d in enumerate(range(lo, hi)):
        hands = deal_sequence(config, derive(seed, d))
        deal_codes = [[codes(h) for h in r] for r in hands]
        seen = set()
        for t in policies:
            agents = [TributeMix(make_agent(play_spec, seed=derive(seed, d, q)), t,
                                 seed=derive(seed, d, q, 1),
                                 learner=_learner(tribute, derive(seed, d, q, 2)))
                      for q in range(num_players)]
            rec = play_match(agents, config, seed=derive(seed, d), deals=deal_codes)
            dragon = rec.rounds[0]["order"][0]
            seen.add(dragon)
            rewards[t][i] = rec.rounds[1]["rewards"][dragon]  # R27, as the engine scored it
            if t == "learned":
                for c in agents[dragon].asked:
                    asked[c] += 1
                for c in agents[dragon].given:
                    given[c] += 1
        if len(seen) != 1:
            raise RuntimeError(f"deal {d}: round 1 differed between tribute policies "
                               f"(Dragons {sorted(seen)}); the play policy must be "
                               "deterministic")
        dragons.append(seen.pop())
    return {"rewards": rewards, "asked": asked, "given": given, "dragons": dragons}


#: Deal sequences per unit of work of the scalar engine (one process plays a unit).
DEALS_PER_TASK = 25
#: Deal sequences per unit of work of the batched engine (played together).
BATCH_DEALS = 1000
#: ``--engine``: ``batched`` plays every deal sequence of a unit together on the compiled
#: engine, ``scalar`` one match at a time with agent objects; ``auto`` is ``batched`` when
#: every policy can be played in batches (:func:`batch_policy`).
ENGINES = ("auto", "batched", "scalar")


def _batched_range(task: Unit) -> dict[str, Any]:
    """:func:`_deal_range` on the compiled engine: round 1 of every deal sequence of the unit
    played together by the play policy, each match copied at the start of round 2 (the
    Dragon's first ask), and round 2 played from the copies once per tribute policy."""
    from dragons_egg_env.vector import VectorEngine

    play_spec, tribute, config, seed, lo, hi, policies = task[:7]
    n = config.num_players
    play = batch_policy(play_spec, config, derive(seed, lo))
    learned = batch_policy(tribute, config, derive(seed, lo, 2))
    heur = HeuristicAgent(seed=0)
    heur.start_match(0, config, n)
    if play is None or learned is None:
        raise ValueError("the batched engine plays deterministic policy files and memoryless "
                         "agents: use the scalar engine")
    deals = np.array([deal_sequence(config, derive(seed, d)) for d in range(lo, hi)], np.int64)
    D = hi - lo
    eng = VectorEngine(D, config, seed=derive(seed, lo), record=False)
    st = eng.reset(deals=deals)
    states: list[Any] = [None] * D
    while True:  # round 1: a match that ended it is copied; it plays on, unread
        for b in np.flatnonzero(st.round_ended):
            if states[b] is None:
                states[b] = eng.to_state(int(b))
        waiting = np.array([x is None for x in states])
        if not waiting.any():
            break
        acts = np.argmax(st.mask, axis=1)
        acts[waiting] = play(st.obs[waiting], st.mask[waiting])
        st = eng.step(acts)
    dragons = np.array([x.dragon for x in states])
    rewards = {t: np.zeros(D) for t in policies}
    asked = np.zeros(NUM_CARDS, dtype=int)
    given = np.zeros(NUM_CARDS, dtype=int)
    rows = np.arange(D)
    den = max(n - 1, 1)
    for k, t in enumerate(policies):
        rng = np.random.default_rng((derive(seed, lo), k))
        eng2 = VectorEngine.from_states(states, seed=derive(seed, lo, 1), record=False,
                                        trusted=True)  # the engine's own states
        obs, mask = eng2.observations.copy(), eng2.masks.copy()
        active = np.ones(D, bool)
        while active.any():
            acts = np.argmax(mask, axis=1)
            trib = active & mask[:, ASK_BASE:].any(axis=1)  # an ask or a give-back (R31..R33)
            if trib.any():
                acts[trib] = tribute_actions(t, obs[trib], mask[trib], learned,
                                              heur.act_batch, rng)
                if t == "learned":
                    seat = eng2.seats
                    for b in np.flatnonzero(trib & (seat == dragons)):
                        a = int(acts[b])
                        if ASK_BASE <= a < GIVE_BASE:
                            asked[a - ASK_BASE] += 1
                        elif a >= GIVE_BASE:
                            given[a - GIVE_BASE] += 1
            rest = active & ~trib
            if rest.any():
                acts[rest] = play(obs[rest], mask[rest])
            st = eng2.step(acts)
            ended = active & st.round_ended
            # R27, in the exact units the scalar engine's scores are taken in
            rewards[t][ended] = np.rint(st.rewards[rows[ended], dragons[ended]] * den) / den
            active &= ~ended
            obs, mask = st.obs, st.mask
    return {"rewards": rewards, "asked": asked, "given": given,
            "dragons": [int(x) for x in dragons]}


def _unit(task: Unit) -> dict[str, Any]:
    """A unit of work on the engine its task names."""
    return _batched_range(task) if task.engine == "batched" else _deal_range(task)


def check_policies(policies: Sequence[str]) -> tuple[str, ...]:
    """``policies`` in :data:`TRIBUTE_POLICIES` order; a ``ValueError`` naming an unknown one,
    or a set without ``heuristic`` (every difference is taken to it)."""
    unknown = [t for t in policies if t not in TRIBUTE_POLICIES]
    if unknown:
        raise ValueError(f"unknown tribute policy {unknown[0]!r}; choose from "
                         f"{', '.join(TRIBUTE_POLICIES)}")
    if "heuristic" not in policies:
        raise ValueError("the tribute policies must include heuristic: every difference is "
                         "taken to it")
    return tuple(t for t in TRIBUTE_POLICIES if t in policies)


def _tasks(play_spec: str, settings: TributeSettings, step: int) -> list[Unit]:
    """The units of work of one play policy: deal sequences ``lo..hi-1`` in steps of ``step``,
    each for the settings' engine, under their rules."""
    s = settings
    return [Unit(play_spec, s.tribute, s.rules, s.seed, lo, min(lo + step, s.deals),
                 s.policies, s.engine) for lo in range(0, s.deals, step)]


def resolve_engine(engine: str, specs: Sequence[str | Callable[[int], Agent]],
                   config: RulesConfig) -> str:
    """``engine`` (:data:`ENGINES`) for an analysis of the play and tribute ``specs``:
    ``auto`` is ``batched`` when every spec has a batched form (:func:`batch_policy`); a
    ``ValueError`` names a spec ``batched`` cannot play."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
    if engine == "scalar":
        return engine
    missing = [s for s in specs if batch_policy(s, config, 0) is None]
    if not missing:
        return "batched"
    if engine == "batched":
        label = missing[0] if isinstance(missing[0], str) else "a factory of agents"
        raise ValueError(f"the batched engine cannot play {label}: it plays deterministic "
                         "policy files and memoryless agents (--engine scalar plays any "
                         "agent)")
    return "scalar"


def _played(tasks: Sequence[Unit], workers: int) -> Iterator[dict[str, Any]]:
    """The tasks' results in task order, as each finishes (on ``workers`` processes)."""
    if workers > 1 and len(tasks) > 1:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(min(workers, len(tasks)),
                                          initializer=ignore_interrupts) as pool:
            yield from pool.imap(_unit, tasks)
    else:
        for task in tasks:
            yield _unit(task)


def _progress(total: int, enabled: bool = True) -> Any:
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type hints
    except ImportError:  # pragma: no cover
        return None
    return tqdm(total=total, desc="tribute", unit="deal", file=sys.stderr, disable=not enabled)


def _combined(parts: Sequence[dict[str, Any]], policies: Sequence[str]) -> dict[str, Any]:
    """The parts of one play policy (in deal order) as one result's rewards, cards, Dragons."""
    return {"rewards": {t: np.concatenate([np.asarray(p["rewards"][t], float) for p in parts])
                        if parts else np.zeros(0) for t in policies},
            "asked": sum((np.asarray(p["asked"]) for p in parts), np.zeros(NUM_CARDS, int)),
            "given": sum((np.asarray(p["given"]) for p in parts), np.zeros(NUM_CARDS, int)),
            "dragons": [int(d) for p in parts for d in p["dragons"]]}


def _label(tribute_spec: str | Callable[[int], Agent]) -> str:
    return tribute_spec if isinstance(tribute_spec, str) else tribute_spec(0).label


def run(play_spec: str, deals: int, num_players: int, seed: int, tribute_asks: int = 2,
        tribute_spec: str | Callable[[int], Agent] | None = None, workers: int = 1,
        policies: Sequence[str] = TRIBUTE_POLICIES, engine: str = "scalar",
        rules: RulesConfig | None = None) -> dict[str, Any]:
    """Play every deal sequence under each tribute policy of ``policies`` (all by default);
    per-deal Dragon round-2 rewards. ``tribute_spec`` is the ``learned`` tribute policy: an
    agent spec, or a picklable function of a seed that makes the agent (one per seat; default:
    the play policy). Every deal sequence has its own seeds, so the result does not depend on
    ``workers`` (processes), nor a policy's rewards on which other policies are played.
    ``engine`` (:data:`ENGINES`): ``batched`` is many times faster and plays the same matches
    (a test checks them deal for deal against ``scalar``) where it can play the policies.
    ``rules``: the rules of every match (default: :data:`DEFAULT_RULES` at ``num_players``
    with ``tribute_asks``); given, its table size and asks must be ``num_players`` and
    ``tribute_asks``."""
    policies = check_policies(policies)
    if rules is None:
        rules = dataclasses.replace(DEFAULT_RULES, num_players=num_players,
                                    tribute_asks=tribute_asks)
    elif (rules.num_players, rules.tribute_asks) != (num_players, tribute_asks):
        raise ValueError(f"rules has num_players={rules.num_players}, tribute_asks="
                         f"{rules.tribute_asks}; the analysis was given {num_players} and "
                         f"{tribute_asks}")
    tribute_spec = play_spec if tribute_spec is None else tribute_spec
    engine = resolve_engine(engine, [play_spec, tribute_spec], rules)
    settings = TributeSettings(plays=(play_spec,), tribute=tribute_spec, deals=deals,
                               seed=seed, policies=policies, engine=engine, rules=rules)
    step = BATCH_DEALS if engine == "batched" else \
        DEALS_PER_TASK if workers > 1 else max(deals, 1)
    tasks = _tasks(play_spec, settings, step)
    bar = _progress(deals)
    parts = []
    for part in _played(tasks, workers):
        parts.append(part)
        if bar:
            bar.update(len(part["dragons"]))
    if bar:
        bar.close()
    return {**_combined(parts, policies), "config": rules, "play": play_spec, "seed": seed,
            "tribute": _label(tribute_spec)}


#: The analysis's settings (written before any deal is played), its finished units of work
#: (one JSON line each, appended as each finishes) and its summary, in the output folder.
SETTINGS, PARTS, SUMMARY = "tribute_settings.json", "tribute_parts.jsonl", "summary.json"
#: What ``SETTINGS`` says it is.
FORMAT = "dragons-egg tribute analysis"
#: The settings a resume takes from the folder, by command-line option.
_SAVED = {"--play": "plays", "--tribute": "tribute", "--deals": "deals",
          "--players": "players", "--seed": "seed", "--policies": "policies",
          "--engine": "engine"}


class AnalysisError(ValueError):
    """A bad output folder, a settings file that is not an analysis's, or a damaged parts
    file: the message names the file and what is wrong."""


def read_settings(out: Path) -> dict[str, Any]:
    """The settings of the analysis in ``out`` (an :class:`AnalysisError` naming the file when
    it is missing or not an analysis's)."""
    path = out / SETTINGS
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnalysisError(f"{out} holds no tribute analysis to resume (no {SETTINGS})"
                            ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise AnalysisError(f"{path} is damaged: {exc}") from None
    keys = {"format", "plays", "tribute", "deals", "players", "seed", "policies",
            "tribute_asks", "command"}
    if not (isinstance(data, dict) and data.get("format") == FORMAT and keys <= set(data)):
        raise AnalysisError(f"{path} is not the settings of a tribute analysis")
    return data


def read_parts(out: Path, settings: TributeSettings | Mapping[str, Any]
               ) -> dict[tuple[int, int], dict[str, Any]]:
    """The finished units of work in ``out`` by (play index, first deal). A last line cut off
    by a stop in the middle of its write is dropped from the file (and said), to be played
    again; any other bad line is an :class:`AnalysisError` that names the file and line."""
    settings = _as_settings(settings)
    path = out / PARTS
    if not path.exists():
        return {}
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    if lines[-1]:  # no newline at the end: the last write was cut off
        print(f"{path}: dropping a last line cut off in its write ({len(lines[-1])} bytes); "
              "its deal sequences are played again", file=sys.stderr)
        os.truncate(path, len(raw) - len(lines[-1]))  # needs no space, unlike a copy
    starts = {(k, lo) for k in range(len(settings.plays))
              for lo in range(0, settings.deals, _unit_size(settings))}
    done: dict[tuple[int, int], dict[str, Any]] = {}
    chain = DigestChain()
    for i, line in enumerate(lines[:-1], 1):
        try:  # the schema and the line's digest first (tribute_records)
            part = parse_part(line, f"{path}, line {i},")
            chain.check(part, i, f"{path}, line {i},")
        except ValueError as exc:
            raise AnalysisError(str(exc)) from None
        try:
            key = (part["play"], part["lo"])
            hi = min(part["lo"] + _unit_size(settings), settings.deals)
            ok = (key in starts and key not in done and part["hi"] == hi
                  and sorted(part["rewards"]) == sorted(settings.policies)
                  and all(len(r) == hi - part["lo"] for r in part["rewards"].values())
                  and len(part["dragons"]) == hi - part["lo"]
                  and len(part["asked"]) == len(part["given"]) == NUM_CARDS)
        except (ValueError, KeyError, TypeError) as exc:
            raise AnalysisError(f"{path}, line {i}, is damaged: {exc}") from None
        if not ok:
            raise AnalysisError(f"{path}, line {i}, is not a unit of work of this analysis "
                                f"({SETTINGS}): a duplicate or another analysis's")
        done[key] = part
    return done


def _unit_size(settings: TributeSettings) -> int:
    """Deal sequences per unit of work of the analysis's engine."""
    return BATCH_DEALS if settings.engine == "batched" else DEALS_PER_TASK


def _cli_rules(args: argparse.Namespace, parser: argparse.ArgumentParser, players: int
               ) -> RulesConfig:
    """The rules of a new analysis: :data:`DEFAULT_RULES` at ``--players``, ``--rule`` flags
    over them (a bad flag or value, or one the analysis cannot measure, is a parser error)."""
    flags = dict(args.rule or [])
    if "num_players" in flags:
        parser.error("--rule: give the table size with --players, not --rule num_players")
    try:
        rules = dataclasses.replace(DEFAULT_RULES, num_players=players, **flags)
        TributeSettings(plays=("heuristic",), tribute="heuristic", rules=rules)
    except (TypeError, ValueError) as exc:
        parser.error(f"--rule: {exc}")
    return rules


def _settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> TributeSettings:
    """A new analysis's settings from the command line, or a resumed one's from its folder (an
    option given with another value than the saved one is an error that names it)."""
    policies = None  # --policies, checked, in TRIBUTE_POLICIES order
    if args.policies:  # an empty value: as if not given
        try:
            policies = list(check_policies([t.strip() for t in args.policies.split(",")
                                            if t.strip()]))
        except ValueError as exc:
            parser.error(f"--policies: {exc}")
    if args.resume is None:
        tribute = args.tribute or "ppo"
        plays = args.play or list(dict.fromkeys([tribute, "heuristic"]))
        rules = _cli_rules(args, parser, args.players or 4)
        _check_specs([tribute, *plays], rules.num_players, parser)
        try:
            engine = resolve_engine(args.engine or "auto", [*plays, tribute], rules)
        except ValueError as exc:
            parser.error(f"--engine: {exc}")
        return TributeSettings(plays=tuple(plays), tribute=tribute,
                               deals=300 if args.deals is None else args.deals,
                               seed=args.seed or 0,
                               policies=tuple(policies or TRIBUTE_POLICIES), engine=engine,
                               rules=rules, command=f"{parser.prog} " + " ".join(args.argv))
    if args.out is not None and Path(args.out) != Path(args.resume):
        parser.error(f"--resume {args.resume} continues the analysis in that folder: drop "
                     f"--out {args.out}")
    try:
        data = read_settings(Path(args.resume))
        # before the specs are parsed (a MODULE:CLASS spec's module is imported then)
        named = [*data.get("plays", []), data.get("tribute")]
        typed = [*args.allow_code, *(args.play or []), *([args.tribute] if args.tribute else [])]
        check_consent([s for s in named if isinstance(s, str)],
                      f"the {SETTINGS} of {args.resume}", typed)
        settings = TributeSettings.from_dict(data)
    except (AnalysisError, ValueError) as exc:
        parser.error(str(exc))
    saved = settings.to_dict()
    given = {"--play": args.play, "--tribute": args.tribute, "--deals": args.deals,
             "--players": args.players, "--seed": args.seed, "--policies": policies,
             "--engine": args.engine}
    diffs = [f"{opt} {value} (saved: {saved[_SAVED[opt]]})" for opt, value in given.items()
             if value is not None and value != saved[_SAVED[opt]]]
    diffs += [f"--rule {k}={json.dumps(v)} (saved: {json.dumps(saved['rules'].get(k))})"
              for k, v in (args.rule or []) if saved["rules"].get(k) != v]
    if diffs:
        parser.error(f"cannot resume {args.resume} with other settings: {'; '.join(diffs)}; "
                     "omit them to resume with the saved ones, or start another analysis "
                     "with another --out")
    _check_specs([saved["tribute"], *saved["plays"]], settings.players, parser)
    return settings


def _check_specs(specs: list[str], players: int, parser: argparse.ArgumentParser) -> None:
    """The tribute spec, then the play specs: each must make an agent for the table."""
    for k, spec in enumerate(specs):
        try:
            parse_spec(spec)
            check_spec_for_table(spec, players)
            make_agent(spec, seed=0)
        except (AgentSpecError, ValueError) as exc:
            parser.error(f"{'--tribute' if k == 0 else '--play'}: {exc}")


def _jsonable(part: dict[str, Any]) -> dict[str, Any]:
    return {"rewards": {t: r.tolist() for t, r in part["rewards"].items()},
            "asked": part["asked"].tolist(), "given": part["given"].tolist(),
            "dragons": [int(d) for d in part["dragons"]]}


def play_all(settings: TributeSettings | Mapping[str, Any], out: Path, workers: int = 1,
             progress: bool = True) -> dict[tuple[int, int], dict[str, Any]]:
    """Play the units of work of ``settings`` that ``out`` does not hold yet, appending each
    to :data:`PARTS` as it finishes (so a stop loses at most the units being played); every
    unit's result, by (play index, first deal)."""
    settings = _as_settings(settings)
    done = read_parts(out, settings)
    todo = [(k, task) for k, play in enumerate(settings.plays)
            for task in _tasks(play, settings, _unit_size(settings))
            if (k, task.lo) not in done]
    bar = _progress(sum(t.hi - t.lo for _, t in todo), progress)
    try:
        with (out / PARTS).open("ab", buffering=0) as f:
            for (k, task), part in zip(todo, _played([t for _, t in todo], workers), strict=True):
                line = {"play": k, "lo": task.lo, "hi": task.hi, **_jsonable(part)}
                line["digest"] = line_digest(line)  # damage is refused by line on resume
                write_whole(f, (json.dumps(line) + "\n").encode())  # whole, or not at all
                done[(k, task.lo)] = part
                if bar:
                    bar.update(task.hi - task.lo)
    finally:
        if bar:
            bar.close()
    return done


def finish(settings: TributeSettings | Mapping[str, Any], out: Path,
           done: dict[tuple[int, int], dict[str, Any]]) -> str:
    """Write the summary, the report and the heatmaps of every play policy from the finished
    units of work; the report's text."""
    settings = _as_settings(settings)
    sections, summaries, plays = [], [], []
    for k, play in enumerate(settings.plays):
        parts = [done[key] for key in sorted(key for key in done if key[0] == k)]
        res = {**_combined(parts, settings.policies), "config": settings.rules, "play": play,
               "seed": settings.seed, "tribute": settings.tribute}
        summ = summarize(res)
        heatmap = f"tribute_heatmaps_play{k + 1}.png"
        if "learned" in settings.policies:
            heatmaps(res, out / heatmap)
        sections.append(report(res, summ, heatmap, _rules_note(settings.rules)))
        summaries.append(summ)
        plays.append({"play": play,
                      "policies": {t: vars(v) for t, v in summ["policies"].items()},
                      "vs_heuristic": {t: vars(v) for t, v in summ["vs_heuristic"].items()},
                      "asked": res["asked"].tolist(), "given": res["given"].tolist(),
                      "heatmaps": heatmap})
    text = (overview(settings, summaries, _rules_note(settings.rules)) + "\n"
            + "\n".join(sections))
    write_atomically(out / "report.md", text)
    saved = settings.to_dict()
    write_atomically(out / SUMMARY, json.dumps({  # last: it says the analysis is finished
        "tribute": settings.tribute, "deals": settings.deals, "players": settings.players,
        "seed": settings.seed, "tribute_policies": saved["policies"],
        "command": settings.command, "engine": settings.engine, "rules": saved["rules"],
        "plays": plays}, indent=1))
    return text


@stops_on_sigterm
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(
        prog=prog or "python -m dragons_egg.experiments.evaluation.tribute",
        description="Compare tribute policies under one play policy or more.")
    p.add_argument("--play", action="append", default=None, metavar="SPEC",
                   help="play policy spec at every seat (deterministic); give it again for "
                   "more (default: the --tribute agent's own play, then heuristic)")
    p.add_argument("--tribute", default=None,
                   help="the learned tribute policy: an agent spec whose ask and give choices "
                   "the 'learned' variant uses (default ppo)")
    p.add_argument("--deals", type=int_range(1), default=None,
                   help="duplicate deal sequences per play policy (default 300)")
    p.add_argument("--players", type=int_range(2, 8), default=None, help="default 4")
    p.add_argument("--rule", type=rule_flag, action="append", default=None, metavar="FLAG=VALUE",
                   help="a rule flag of every match, e.g. --rule pass_locks_out=true "
                   "(repeatable; default: the default rules, two rounds)")
    p.add_argument("--seed", type=int_range(0), default=None, help="default 0")
    p.add_argument("--workers", type=int_range(1), default=1,
                   help="processes; the results do not depend on it (default 1)")
    p.add_argument("--policies", default=None,
                   help="comma-separated tribute policies to play, heuristic among them "
                   f"(default all: {','.join(TRIBUTE_POLICIES)})")
    p.add_argument("--out", default=None, help="output folder (default runs/tribute)")
    p.add_argument("--engine", choices=ENGINES, default=None,
                   help="batched: every unit's deal sequences played together on the compiled "
                   "engine (many times faster; deterministic policy files and memoryless "
                   "agents); scalar: one match at a time, any agent; auto (default): batched "
                   "where it can play every policy")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="finish the analysis in DIR with its saved settings (after a stop)")
    p.add_argument(CONSENT_FLAG, metavar="SPEC", action="append", default=[],
                   help="with --resume: allow this agent spec of the saved settings to run "
                   "code (trust=1, rllib:path=, MODULE:CLASS): a folder cannot give that "
                   "consent (again for more)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    require_cli(p.prog, "experiments")  # progress bar and heatmaps
    settings = _settings(args, p)
    out = Path(args.resume or args.out or "runs/tribute")
    try:
        check_out_dir(out)
    except OutputError as exc:
        p.error(str(exc))
    lock = FolderLock(out, "analysis folder")
    try:  # one writer per folder, for the whole analysis
        lock.acquire()
    except (FolderBusy, FolderUnwritable) as exc:
        p.error(str(exc))
    try:
        return _play_and_report(args, p, settings, out)
    finally:
        lock.release()


def _play_and_report(args: argparse.Namespace, p: argparse.ArgumentParser,
                     settings: TributeSettings, out: Path) -> int:
    """:func:`main`'s work in the folder it holds: the settings written (a new analysis),
    the units played, the report written."""
    if args.resume is None:
        if (out / SETTINGS).exists() or (out / SUMMARY).exists():
            p.error(f"output folder {str(out)!r} already holds a tribute analysis: finish it "
                    f"with --resume {shlex.quote(str(out))}, or choose another --out")
        out.mkdir(parents=True, exist_ok=True)
    elif (out / SUMMARY).exists():
        p.error(f"the analysis in {str(out)!r} is finished ({SUMMARY}); nothing to resume")
    total = settings.deals * len(settings.plays)
    resume = f"{p.prog} --resume {shlex.quote(str(out))}"
    try:
        if args.resume is None:
            write_atomically(out / SETTINGS, json.dumps(settings.to_dict(), indent=1))
        done = play_all(settings, out, args.workers, not args.no_progress)
        text = finish(settings, out, done)
    except AnalysisError as exc:
        p.error(str(exc))
    except KeyboardInterrupt:
        saved = sum(len(part["dragons"]) for part in read_parts(out, settings).values())
        p.exit(130, f"{p.prog}: interrupted; {saved} of {total} deal sequences are saved in "
                    f"{out}; resume with: {resume}\n")
    except OSError as exc:  # a full disk: one line, the units saved, the resume
        err = disk_error(exc)
        if err is None:
            raise
        if not (out / SETTINGS).is_file():
            line = disk_error_line(err, "nothing is saved: free space and run the same "
                                        "command again")
        else:
            saved = sum(len(part["dragons"]) for part in read_parts(out, settings).values())
            line = disk_error_line(err, f"{saved} of {total} deal sequences are saved in "
                                        f"{out / PARTS}", resume)
        p.exit(1, f"{p.prog}: error: {line}\n")
    print(text)
    return 0


__all__ = ["TributeMix", "TRIBUTE_POLICIES", "check_policies", "run", "summarize", "heatmaps",
           "report", "overview", "read_settings", "read_parts", "play_all", "finish",
           "AnalysisError", "SETTINGS", "PARTS", "SUMMARY", "ENGINES", "batch_policy",
           "resolve_engine", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
