"""Sound tournaments between agents: duplicate deals, confidence intervals, ratings.

Duplicate format: a *deal sequence* fixes the cards of every round of a match (one hand per
seat and round). Each sequence is played once per rotation of the line-up through the seats,
so every agent plays every hand and the luck of the deal cancels out. With ``k`` agents at a
table of ``n`` seats and ``k <= n`` the line-up repeats the agents in order to fill the seats;
with ``k > n`` each sequence seats a window of ``n`` consecutive agents (the window moves one
agent per sequence), and pairwise differences use the sequences where both agents played.
Because the deals of later rounds are fixed in advance they follow a fixed dealer schedule
(the dealer moves one seat left each round) instead of R4's "the last Egg holder deals".

Statistics, per agent (its spec string): mean finishing place (1 = Dragon), Dragon rate, Egg
rate and mean match score, each with a 95% bootstrap interval that resamples whole deal
sequences; the mean score difference of every pair with its interval (paired over the same
sequences); a head-to-head matrix (how often the row agent finished above the column agent in
a round where both played); and a Plackett-Luce rating (openskill) over full finishing orders,
with its uncertainty.

Runs in parallel processes with a progress bar; every match's seeds derive from the
tournament seed, the deal sequence and the rotation, so the same seed gives the same results
for any number of workers.

Agents are spec strings (``"heuristic"``, ``"ppo:path=run/final.zip"``; the spec is the label)
or :class:`Entrant` objects, which give a label to a spec, an agent *factory* or a *policy*::

    TournamentConfig(agents=[
        "heuristic",
        Entrant("fresh", spec="ppo:path=runs/x/final.zip"),
        Entrant("mine", factory=MyAgent),        # MyAgent(seed) -> an dragons_egg.agents.base.Agent
        Entrant("first-legal", policy=first),    # first(observation, mask) -> action
    ])

A factory is called once per match and seat with that seat's derived seed (an int), so every
match gets a fresh, seeded agent, exactly as spec strings do; it may also be an object with a
``make(seed)`` method, such as :class:`dragons_egg.agents.AgentSpec`. A policy is wrapped in
:class:`dragons_egg.agents.runner.PolicyAgent` and gets no seed. With ``workers > 1`` matches run in
worker processes, which receive the factories and policies by pickling: they must be defined
at module level in an importable module (not lambdas or nested functions), and with the spawn
or forkserver start method (macOS's default) not in an interactive session's ``__main__``.
A factory must depend on nothing but its seed for results to be the same for any number of
workers.

Pairwise differences exist only for pairs that shared a deal sequence (with more agents than
seats some pairs may never meet); the report calls an interval from fewer than
:data:`MIN_SEQUENCES` deal sequences too few, and shows only its mean. Match scores are exact
(see :mod:`dragons_egg.agents.runner`): statistics count them in whole units of ``1/(n-1)``.

Durable runs. With an output folder, ``config.json`` is written before the first result and
every match is appended to ``results.jsonl`` (and flushed) as it comes back from the
workers, in the order matches finish; each line names its deal sequence and rotation, and
the summary sorts them, so the order never changes a statistic. When the run completes,
``results.jsonl`` is rewritten in match order. A run that stops early (Ctrl-C, an agent
failing with ``on_agent_error="stop"``, a worker that dies) keeps every match that came back,
and writes ``summary.json`` (``"partial": true``) and ``report.md`` ("partial: N of M
matches") from them. ``run_tournament(config, resume=True)`` (``--resume DIR``) plays only
the matches missing from the folder, with the settings saved in its ``config.json``: a
setting that changes the results (agents, table, matches, seed, rounds, rules, bootstrap,
move timeout) may not differ, and the summary is then the one an uninterrupted run gives.
A folder that already holds a tournament is refused unless ``resume=True`` or
``overwrite=True`` (``--overwrite``: the tournament's files are replaced, nothing else).

Agent failures. An agent that raises, returns something that is not an action index
(``None``, a float, a string) or an illegal action, or (with ``move_timeout``) runs past the
time limit of a call, is recorded against its label, with the match's seed and a replay of the
match up to the failure (``replays/seqS-rotR.json`` in the output folder). With
``on_agent_error="forfeit"`` (the default) the match counts as a forfeit of that agent (it
finishes last in the forfeit round and the match ends: the rule is in
:mod:`dragons_egg.agents.runner`), the result line carries a ``forfeit`` record, the summary
lists every forfeit and the run goes on; with ``"stop"`` the run stops
(:class:`AgentFailed`), the failing match is not recorded, and a resume plays it again.
``move_timeout`` needs ``signal.setitimer`` (Unix) and, with ``workers=1``, the main thread.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import random
import shlex
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, dataclass, field, fields
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg.agents import (
    AgentSpec,
    AgentSpecError,
    check_spec_for_table,
    make_agent,
    parse_spec,
    registrations,
    restore_registrations,
)
from dragons_egg.agents.base import Agent
from dragons_egg.agents.runner import (
    PolicyAgent,
    check_move_timeout,
    play_match,
    reward_units,
)
from dragons_egg.experiments.cli_args import int_range, positive_float, rule_flag, table_size
from dragons_egg_env import engine as E
from dragons_egg_env.cards import NUM_CARDS, codes
from dragons_egg_env.config import ConfigError, RulesConfig
from dragons_egg_env.extras import explain, require, require_cli

#: Intervals from fewer deal sequences than this are reported as too few.
MIN_SEQUENCES = 10

#: What a tournament does when an agent fails a match (``TournamentConfig.on_agent_error``).
ON_AGENT_ERROR = ("forfeit", "stop")


def _qualname(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{getattr(obj, '__module__', None) or type(obj).__module__}.{name}"


@dataclass(frozen=True)
class Entrant:
    """One agent of a tournament with its label: exactly one of ``spec`` (an agent spec
    string), ``factory`` (``factory(seed) -> Agent``, or an object with ``make(seed)``) or
    ``policy`` (``policy(observation, action_mask) -> action``). The label names it in the
    results, the summary and the report. With ``workers > 1`` factories and policies must
    be picklable (module-level functions or classes, or instances of module-level classes)."""

    label: str
    spec: str | None = None
    factory: Callable[[int], Agent] | None = None
    policy: Callable[[Any, Any], Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label.strip():
            raise ValueError(f"an entrant's label is a non-empty string, got {self.label!r}")
        given = [k for k in ("spec", "factory", "policy") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"entrant {self.label!r}: give exactly one of spec, factory or "
                             f"policy, got {', '.join(given) or 'none'}")
        if self.spec is not None and not isinstance(self.spec, str):
            raise TypeError(f"entrant {self.label!r}: spec is an agent spec string, got "
                            f"{self.spec!r}")
        if self.factory is not None and not (callable(self.factory)
                                             or callable(getattr(self.factory, "make", None))):
            raise TypeError(f"entrant {self.label!r}: factory must be callable as "
                            f"factory(seed) or have make(seed), got {self.factory!r}")
        if self.policy is not None and not callable(self.policy):
            raise TypeError(f"entrant {self.label!r}: policy must be callable as "
                            f"policy(observation, action_mask), got {self.policy!r}")

    @property
    def kind(self) -> str:
        return "spec" if self.spec is not None else (
            "factory" if self.factory is not None else "policy")

    def make(self, seed: int) -> Agent:
        """A fresh agent for one seat of one match, seeded with ``seed``."""
        if self.spec is not None:
            return make_agent(self.spec, seed=seed)
        if self.policy is not None:
            return PolicyAgent(self.policy, seed=seed, label=self.label)
        make = getattr(self.factory, "make", None)
        agent = make(seed) if callable(make) else self.factory(seed)
        missing = [m for m in ("start_match", "act", "end_round")
                   if not callable(getattr(agent, m, None))]
        if missing:
            raise TypeError(f"entrant {self.label!r}: factory {_qualname(self.factory)} "
                            f"returned {agent!r}, which lacks {', '.join(missing)}; return "
                            "an dragons_egg.agents.base.Agent (or pass the callable as policy=)")
        return agent

    def describe(self) -> dict[str, str]:
        """What ``config.json`` records of it."""
        if self.spec is not None:
            return {"label": self.label, "spec": self.spec}
        obj = self.factory if self.factory is not None else self.policy
        return {"label": self.label, self.kind: _qualname(obj)}


def _as_entrant(item: Any, index: int) -> Entrant:
    if isinstance(item, Entrant):
        return item
    if isinstance(item, str):
        return Entrant(item, spec=item)
    if isinstance(item, AgentSpec):
        return Entrant(item.spec, spec=item.spec)
    hint = (" (wrap it: Entrant('name', factory=f) for f(seed) -> Agent, or "
            "Entrant('name', policy=f) for f(observation, mask) -> action)"
            if callable(item) or hasattr(item, "make") else "")
    raise TypeError(f"agents[{index}] is an agent spec string or an Entrant, got "
                    f"{item!r}{hint}")


@dataclass
class TournamentConfig:
    """Everything a tournament needs; saved beside its results. ``agents`` holds spec strings
    (each its own label) and :class:`Entrant` objects (a label with a spec, a factory or a
    policy); an agent listed twice fills two places of the line-up."""

    agents: list[str | Entrant]
    num_players: int = 4
    #: Matches to play; rounded up to whole deal sequences (one match per rotation).
    matches: int = 200
    seed: int = 0
    num_rounds: int = 3
    #: Rule flags other than num_players / num_rounds.
    rules: dict[str, Any] = field(default_factory=dict)
    workers: int = 1
    #: Bootstrap resamples for the intervals.
    bootstrap: int = 2000
    out_dir: str | None = None
    #: ``"forfeit"``: an agent that fails a match forfeits it and the run goes on;
    #: ``"stop"``: the run stops (:class:`AgentFailed`), keeping every finished match.
    on_agent_error: str = "forfeit"
    #: Seconds each call to an agent may take (``None``: no limit); a late agent fails.
    move_timeout: float | None = None

    def rules_config(self) -> RulesConfig:
        extra = set(self.rules) & {"num_players", "num_rounds"}
        if extra:
            raise ConfigError(f"set {', '.join(sorted(extra))} directly, not in rules")
        return RulesConfig.from_kwargs({**self.rules, "num_players": self.num_players,
                                        "num_rounds": self.num_rounds})

    def entrants(self) -> list[Entrant]:
        """``agents`` as :class:`Entrant` objects (a spec string is its own label)."""
        return [_as_entrant(a, i) for i, a in enumerate(self.agents)]

    @property
    def labels(self) -> list[str]:
        """The label of every entry of ``agents``, in order (repeats kept)."""
        return [e.label for e in self.entrants()]

    def by_label(self) -> dict[str, Entrant]:
        """Each distinct label's entrant; a label naming two different agents is an error."""
        out: dict[str, Entrant] = {}
        for e in self.entrants():
            if out.setdefault(e.label, e) != e:
                raise ValueError(f"the label {e.label!r} names two different agents")
        return out

    def validate(self) -> None:
        """Check everything that can be checked before playing: agent specs (with their
        paths and options, and that each can play a table of ``num_players``), labels, the
        rules and, with ``workers > 1``, that every factory, policy and registered agent the
        specs use can be sent to worker processes."""
        if not self.agents:
            raise ValueError("a tournament needs at least one agent")
        entrants = self.by_label()
        self.rules_config()
        for e in entrants.values():
            if e.spec is not None:
                check_spec_for_table(e.spec, self.num_players)  # parses the spec fully
        if self.matches < 1:
            raise ValueError(f"matches must be >= 1, got {self.matches}")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.on_agent_error not in ON_AGENT_ERROR:
            raise ValueError(f"on_agent_error is one of {', '.join(ON_AGENT_ERROR)}, got "
                             f"{self.on_agent_error!r}")
        self._check_move_timeout()
        if self.workers > 1:
            for e in entrants.values():
                _check_picklable(e, self.workers)
            _worker_registrations(self)

    def _check_move_timeout(self) -> None:
        t = self.move_timeout
        if t is None:
            return
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) \
                or t <= 0:
            raise ValueError(f"move_timeout is a positive number of seconds, got {t!r}")
        why = check_move_timeout()
        if why is None:
            return
        if not hasattr(signal, "setitimer"):
            raise ValueError(why)
        if self.workers == 1:  # workers play in their processes' main threads
            raise ValueError(f"{why}, and with workers=1 matches play in this thread: run "
                             "the tournament from the main thread, or with workers >= 2")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TournamentConfig:
        """The config that :meth:`to_json` described (``config.json``); an entrant given by
        a factory or a policy cannot be rebuilt from its name (a ``ValueError``)."""
        agents: list[str | Entrant] = []
        for i, a in enumerate(data.get("agents") or []):
            if isinstance(a, str):
                agents.append(a)
            elif isinstance(a, dict) and set(a) == {"label", "spec"}:
                agents.append(Entrant(a["label"], spec=a["spec"]))
            else:
                raise ValueError(
                    f"agent {i + 1} of the saved config, {a!r}, is a factory or a policy: "
                    "only the program that made it can rebuild it (resume with "
                    "run_tournament(config, resume=True) there)")
        known = {f.name for f in fields(cls)} - {"agents"}
        return cls(agents=agents, **{k: v for k, v in data.items() if k in known})

    def registrations(self) -> dict[str, Callable[..., Agent]]:
        """The agents added with :func:`dragons_egg.agents.register` that this tournament's specs
        use
        (worker processes get them; see :func:`dragons_egg.agents.registrations`)."""
        names = {parse_spec(e.spec)[0] for e in self.by_label().values() if e.spec is not None}
        return {k: v for k, v in registrations().items() if k in names}

    def lineup(self, sequence: int = 0) -> list[str]:
        """The labels of the agents at the table for a deal sequence (before rotation): with
        ``k <= n`` agents they repeat in order to fill the seats; with more agents than seats
        a window of ``n`` of them, moving one agent along per sequence, so each sits out in
        turn."""
        labels = self.labels
        k, n = len(labels), self.num_players
        start = sequence % k if k > n else 0
        return [labels[(start + i) % k] for i in range(n)]

    def seats_filled(self) -> dict[str, int]:
        """How many seats of every table each label fills when the agents do not outnumber
        the seats (the line-up repeats them in order); empty when they do."""
        if len(self.agents) > self.num_players:
            return {}
        counts: dict[str, int] = {}
        for label in self.lineup(0):
            counts[label] = counts.get(label, 0) + 1
        return counts

    def to_json(self) -> dict[str, Any]:
        """The config as JSON data: spec strings as they are, other entrants described."""
        data = {f: getattr(self, f) for f in self.__dataclass_fields__}
        data["agents"] = [a if isinstance(a, str) else _as_entrant(a, i).describe()
                          for i, a in enumerate(self.agents)]
        return data

    @property
    def num_sequences(self) -> int:
        return math.ceil(self.matches / self.num_players)


def _check_picklable(e: Entrant, workers: int) -> None:
    if e.spec is not None:
        return
    obj = e.factory if e.factory is not None else e.policy
    try:
        pickle.loads(pickle.dumps(e))
    except Exception as exc:  # noqa: BLE001 - any failure means workers cannot get it
        raise TypeError(
            f"entrant {e.label!r}: its {e.kind} {_qualname(obj)} cannot be pickled "
            f"({type(exc).__name__}: {exc}), and with workers={workers} matches run in "
            "worker processes that receive it by pickling: define it at module level "
            "(not a lambda or a nested function), or use workers=1") from None


def _worker_registrations(tc: TournamentConfig) -> dict[str, Callable[..., Agent]]:
    regs = tc.registrations()
    for name, factory in regs.items():
        try:
            pickle.loads(pickle.dumps(factory))
        except Exception as exc:  # noqa: BLE001 - any failure means workers cannot get it
            raise TypeError(
                f"agent {name!r} (registered with dragons_egg.agents.register as "
                f"{_qualname(factory)}) "
                f"cannot be pickled ({type(exc).__name__}: {exc}), and with "
                f"workers={tc.workers} matches run in worker processes that receive it by "
                "pickling: register a module-level class or function, or use "
                "workers=1") from None
    return regs


def _check_importable(tc: TournamentConfig, method: str) -> None:
    """With spawn or forkserver, workers import what they unpickle: objects of an
    interactive ``__main__`` (a notebook, the REPL) cannot be found there."""
    if method == "fork" or getattr(sys.modules.get("__main__"), "__file__", None):
        return
    for e in tc.by_label().values():
        obj = e.factory if e.factory is not None else e.policy
        if obj is not None and getattr(obj, "__module__", type(obj).__module__) == "__main__":
            raise TypeError(
                f"entrant {e.label!r}: its {e.kind} {_qualname(obj)} is defined in an "
                f"interactive session, which worker processes started by {method!r} cannot "
                "import: move it to a module, or use workers=1")


def _derive(*parts: int) -> int:
    """A 63-bit seed derived from integers (stable across runs and platforms)."""
    rng = random.Random(" ".join(map(str, parts)))
    return rng.getrandbits(63)


def deal_sequence(config: RulesConfig, seed: int) -> list[list[int]]:
    """The hands of every round of one deal sequence: round ``r`` is dealt by R4 from a
    shuffled deck, with seat ``(d + r) mod n`` as dealer (``d`` drawn from the seed)."""
    rng = random.Random(seed)
    n = config.num_players
    first = rng.randrange(n)
    deals = []
    for r in range(config.num_rounds):
        deck = list(range(NUM_CARDS))
        rng.shuffle(deck)
        deals.append(E.deal_from_deck(deck, n, (first + r) % n))
    return deals


def match_tasks(tc: TournamentConfig) -> list[tuple[int, int]]:
    """Every match of the tournament as ``(deal sequence, rotation)``, in match order."""
    return [(seq, rot) for seq in range(tc.num_sequences) for rot in range(tc.num_players)]


def _seats(tc: TournamentConfig, seq: int, rot: int) -> list[str]:
    """The label at every seat of a match: agent ``j`` of the line-up moves ``rot`` seats
    left."""
    lineup = tc.lineup(seq)
    n = tc.num_players
    return [lineup[(j - rot) % n] for j in range(n)]


def _play_task(tc: TournamentConfig, seq: int, rot: int,
               entrants: dict[str, Entrant] | None = None) -> dict[str, Any]:
    config = tc.rules_config()
    n = tc.num_players
    entrants = entrants or tc.by_label()
    deals = deal_sequence(config, _derive(tc.seed, seq))
    seats = _seats(tc, seq, rot)
    agent_seeds = [_derive(tc.seed, seq, rot, j) for j in range(n)]
    agents = [entrants[label].make(agent_seeds[j]) for j, label in enumerate(seats)]
    match_seed = _derive(tc.seed, seq, rot)
    start = time.perf_counter()
    rec = play_match(agents, config, seed=match_seed,
                     deals=[[codes(h) for h in hands] for hands in deals],
                     on_agent_error="forfeit", move_timeout=tc.move_timeout)
    out: dict[str, Any] = {
        "sequence": seq,
        "rotation": rot,
        "seats": seats,
        "scores": rec.scores,
        "rounds": rec.rounds,
        "steps": rec.steps,
        "seconds": round(time.perf_counter() - start, 4),
    }
    if rec.forfeit is not None:
        f = rec.forfeit
        out["forfeit"] = {"label": seats[f.seat], **f.to_dict(), "match_seed": match_seed,
                          "agent_seed": agent_seeds[f.seat], "replay": rec.replay}
    return out


def _progress(total: int, desc: str, initial: int = 0) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is installed with the experiments extra
        return None
    return tqdm(total=total, initial=initial, desc=desc, unit="match", file=sys.stderr,
                dynamic_ncols=True)


#: The tournament config of a worker process (set by :func:`_init_worker`).
_WORKER: tuple[TournamentConfig, dict[str, Entrant]] | None = None


def _init_worker(tc: TournamentConfig, regs: dict[str, Callable[..., Agent]]) -> None:
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the parent stops the workers
    restore_registrations(regs)  # agents registered in the parent (lost under spawn)
    _WORKER = (tc, tc.by_label())


def _play_chunk(tasks: list[tuple[int, int]]) -> list[dict[str, Any]]:
    assert _WORKER is not None, "worker not initialised"
    tc, entrants = _WORKER
    return [_play_task(tc, seq, rot, entrants) for seq, rot in tasks]


def default_start_method() -> str:
    """How worker processes start: spawn on macOS (fork is unsafe there), fork elsewhere."""
    return "spawn" if sys.platform == "darwin" else "fork"


class TournamentStopped(RuntimeError):
    """The tournament stopped before its last match: an agent failed with
    ``on_agent_error="stop"`` (:class:`AgentFailed`) or a worker process died
    (:class:`WorkerDied`). ``results`` holds the matches this call finished, in match order
    (with an output folder they are saved there too)."""

    def __init__(self, message: str, results: Sequence[dict[str, Any]] = ()) -> None:
        super().__init__(message)
        self.results = list(results)


class AgentFailed(TournamentStopped):
    """An agent failed a match with ``on_agent_error="stop"``. ``record`` is that match's
    result line with its ``forfeit`` record (which agent, how, the match's seed and its
    replay: a path in the output folder, or the replay itself without one); the match is
    not among the finished ones."""

    def __init__(self, record: dict[str, Any], results: Sequence[dict[str, Any]] = ()) -> None:
        super().__init__("", results)
        self.record = record

    def __str__(self) -> str:  # the replay's path is known once it is saved
        return failure_line(self.record)


class WorkerDied(TournamentStopped):
    """A worker process ended while it played (its exit status or signal is the message)."""


def failure_line(record: dict[str, Any], out_dir: str | os.PathLike[str] | None = None
                 ) -> str:
    """One line on a forfeited match: the agent, how it failed, the match and its replay."""
    f = record["forfeit"]
    replay = f.get("replay")
    where = (f"replay: {Path(out_dir, replay) if out_dir else replay}"
             if isinstance(replay, str) else "its replay is in the result's forfeit record")
    return (f"agent {f['label']!r} failed ({f['kind']}) in the match of deal sequence "
            f"{record['sequence']}, rotation {record['rotation']} (seat {f['seat']}, round "
            f"{f['round'] + 1}, match seed {f['match_seed']}): {f['error']}; {where}")


class _Collector:
    """Takes results as they come back: keeps them, hands each to ``on_result``, moves the
    bar, and with ``on_agent_error="stop"`` stops at a forfeit."""

    def __init__(self, tc: TournamentConfig, on_result: Callable[[dict[str, Any]], None] | None,
                 bar: Any) -> None:
        self.stop = tc.on_agent_error == "stop"
        self.on_result = on_result
        self.bar = bar
        self.results: list[dict[str, Any]] = []

    def __call__(self, rs: list[dict[str, Any]], may_stop: bool = True) -> None:
        failed = None
        for r in rs:
            if self.stop and r.get("forfeit"):
                failed = failed or r
                continue
            if self.on_result is not None:
                self.on_result(r)
            self.results.append(r)
            if self.bar:
                self.bar.update()
        if failed is not None and may_stop:
            raise AgentFailed(failed)


def run_matches(tc: TournamentConfig, progress: bool = True,
                start_method: str | None = None, *, done: Iterable[tuple[int, int]] = (),
                on_result: Callable[[dict[str, Any]], None] | None = None
                ) -> list[dict[str, Any]]:
    """Play every (deal sequence, rotation) match; results sorted by sequence and rotation.
    ``start_method`` (``"fork"``, ``"spawn"``, ``"forkserver"``) is how worker processes
    start when ``workers > 1`` (default: :func:`default_start_method`); it never changes the
    results. ``done``: matches already played, as ``(sequence, rotation)``, which are
    skipped; ``on_result`` is called with each result as it comes back (in the order
    matches finish). A stop raises :class:`AgentFailed` or :class:`WorkerDied` with the
    finished matches; Ctrl-C raises ``KeyboardInterrupt`` after the results that had come
    back went to ``on_result``."""
    tc.validate()
    skip = {tuple(t) for t in done}
    every = match_tasks(tc)
    tasks = [t for t in every if t not in skip]
    bar = _progress(len(every), "tournament", len(every) - len(tasks)) if progress else None
    take = _Collector(tc, on_result, bar)
    try:
        if tc.workers == 1 or not tasks:
            entrants = tc.by_label()
            for seq, rot in tasks:
                take([_play_task(tc, seq, rot, entrants)])
        else:
            _run_parallel(tc, tasks, start_method or default_start_method(), take)
    except BaseException as exc:
        if bar:
            bar.leave = False  # an error message follows; no half-full bar above it
        if isinstance(exc, TournamentStopped):
            exc.results = sorted(take.results, key=_match_key)
        raise
    finally:
        if bar:
            bar.close()
    return sorted(take.results, key=_match_key)


def _match_key(r: dict[str, Any]) -> tuple[int, int]:
    return r["sequence"], r["rotation"]


def _run_parallel(tc: TournamentConfig, tasks: list[tuple[int, int]], method: str,
                  take: _Collector) -> None:
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    _check_importable(tc, method)
    chunk = max(1, len(tasks) // (tc.workers * 20))
    chunks = [tasks[i:i + chunk] for i in range(0, len(tasks), chunk)]
    # A broken worker (one that cannot unpickle the config, or that dies) fails the run
    # instead of hanging it, as it would with multiprocessing.Pool.
    ex = ProcessPoolExecutor(tc.workers, mp_context=mp.get_context(method),
                             initializer=_init_worker,
                             initargs=(tc, _worker_registrations(tc)))
    procs: dict[int, Any] = {}  # every worker started, for the cause of a death
    futures: list[Future[list[dict[str, Any]]]] = []
    taken: set[int] = set()
    broken = False
    try:
        futures = [ex.submit(_play_chunk, c) for c in chunks]
        pending = set(futures)
        while pending:
            procs.update(getattr(ex, "_processes", None) or {})
            # FIRST_COMPLETED: the bar moves with every chunk; a failed chunk raises in
            # fut.result() below and stops the rest at once.
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                taken.add(id(fut))
                take(fut.result())
    except BrokenProcessPool:
        broken = True
    except BaseException:  # an agent's error, Ctrl-C: stop now, not after the queued work
        _drain(futures, taken, take)
        _terminate_workers(ex)
        raise
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
    if broken:
        _drain(futures, taken, take)
        raise WorkerDied(_worker_death(procs, method))


def _drain(futures: Sequence[Any], taken: set[int], take: _Collector) -> None:
    """Keep the results of every chunk that finished but was not taken yet."""
    for fut in futures:
        if id(fut) in taken or not fut.done() or fut.cancelled() or fut.exception():
            continue
        taken.add(id(fut))
        take(fut.result(), may_stop=False)


def _worker_death(procs: dict[int, Any], method: str) -> str:
    """Which worker died and how: its exit status or the signal that killed it (the others
    are then ended with SIGTERM by the pool)."""
    exits = [(pid, p.exitcode) for pid, p in procs.items()]
    dead = [(pid, c) for pid, c in exits if c is not None and c != -signal.SIGTERM] or \
        [(pid, c) for pid, c in exits if c is not None]
    if not dead:
        return f"a tournament worker process ({method} start method) ended unexpectedly"
    pid, code = dead[0]
    if code < 0:
        try:
            name = f" ({signal.Signals(-code).name})"
        except ValueError:
            name = ""
        how = f"was killed by signal {-code}{name}"
    else:
        how = f"exited with status {code}"
    line = f"tournament worker process {pid} ({method} start method) {how} while playing"
    if code == 0:
        line += " (an error in its set-up is printed above, or an agent ended the process)"
    elif code == 1 and method != "fork":
        line += (f" (a worker started by {method} exits so when it cannot import what it was "
                 "sent: every factory, policy and registered agent must be defined at module "
                 "level of an importable module; any error is printed above)")
    return line


def _terminate_workers(ex: Any) -> None:
    terminate = getattr(ex, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        proc.terminate()


# ---------------------------------------------------------------------------------------
# Statistics.

@dataclass
class Estimate:
    """A mean with its 95% interval; ``sequences`` is how many deal sequences it rests on
    (``None``: not known). ``summary.json`` holds ``{mean, low, high}``."""

    mean: float
    low: float
    high: float
    sequences: int | None = None

    @property
    def enough(self) -> bool:
        """Whether the interval rests on at least :data:`MIN_SEQUENCES` deal sequences."""
        return self.sequences is None or self.sequences >= MIN_SEQUENCES

    def fmt(self, digits: int = 3) -> str:
        if not self.enough:
            return f"{_num(self.mean, digits)} [too few sequences: {self.sequences}]"
        return f"{_num(self.mean, digits)} [{_num(self.low, digits)}, {_num(self.high, digits)}]"


def _num(x: float, digits: int) -> str:
    """``x`` with ``digits`` decimals, never ``-0.000``."""
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _bootstrap(sums: np.ndarray, counts: np.ndarray, reps: int, rng: np.random.Generator,
               den: int = 1, mean: float | None = None) -> Estimate:
    """The mean ``sum(sums) / (sum(counts) * den)`` over deal sequences with a percentile
    bootstrap that resamples sequences (``sums`` and ``counts`` per sequence; ``mean``
    overrides the point estimate, e.g. with an exact one)."""
    used = counts > 0
    if not used.any():
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    if mean is None:
        mean = float(sums.sum()) / (float(counts.sum()) * den)
    k = len(sums)
    idx = rng.integers(0, k, size=(reps, k))
    tot = counts[idx].sum(axis=1)
    ok = tot > 0
    boots = sums[idx].sum(axis=1)[ok] / (tot[ok] * den)
    lo, hi = np.percentile(boots, [2.5, 97.5]) if len(boots) else (mean, mean)
    return Estimate(mean, float(lo), float(hi), int(used.sum()))


def _score_units(results: Sequence[dict[str, Any]], n: int) -> tuple[list[list[int]] | None, int]:
    """Every result's scores in whole units of ``1/(n-1)`` and that denominator (R27), or
    ``(None, 1)`` when some score is not such a multiple (results from elsewhere)."""
    den = max(n - 1, 1)
    units = [reward_units(r["scores"], den) for r in results]
    if any(u is None for u in units):
        return None, 1
    return units, den  # type: ignore[return-value]


def summarize(tc: TournamentConfig, results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-agent metrics with intervals, pairwise differences (only of pairs that shared a
    deal sequence), head-to-head and ratings; ``matches`` played of the ``planned`` ones
    (``partial`` when fewer) and every ``forfeit``. Results count in match order whatever
    order they come in, so the same matches give the same summary."""
    results = sorted(results, key=_match_key)
    n = tc.num_players
    labels = list(dict.fromkeys(tc.labels))
    seqs = sorted({r["sequence"] for r in results})
    sidx = {s: i for i, s in enumerate(seqs)}
    k = len(seqs)
    L = len(labels)
    lidx = {a: i for i, a in enumerate(labels)}
    units, den = _score_units(results, n)
    # Per sequence and agent: sums and counts (scores in units of 1/den: whole numbers).
    place_sum = np.zeros((k, L))
    dragon_sum = np.zeros((k, L))
    egg_sum = np.zeros((k, L))
    round_cnt = np.zeros((k, L))
    score_sum = np.zeros((k, L))
    match_cnt = np.zeros((k, L))
    place_hist = np.zeros((L, n), dtype=int)
    wins = np.zeros((L, L))
    meets = np.zeros((L, L))
    for ri, r in enumerate(results):
        si = sidx[r["sequence"]]
        seat_label = [lidx[a] for a in r["seats"]]
        for seat, a in enumerate(seat_label):
            score_sum[si, a] += units[ri][seat] if units is not None else r["scores"][seat]
            match_cnt[si, a] += 1
        for rd in r["rounds"]:
            order = rd["order"]
            for place, seat in enumerate(order):
                a = seat_label[seat]
                place_sum[si, a] += place + 1
                dragon_sum[si, a] += place == 0
                egg_sum[si, a] += place == n - 1
                round_cnt[si, a] += 1
                place_hist[a, place] += 1
            for x in range(n):
                for y in range(x + 1, n):
                    a, b = seat_label[order[x]], seat_label[order[y]]
                    if a != b:
                        wins[a, b] += 1
                        meets[a, b] += 1
                        meets[b, a] += 1
    rng = np.random.default_rng(_derive(tc.seed, 999) % (2**63))
    reps = tc.bootstrap
    agents_out = {}
    for a, label in enumerate(labels):
        rc, mc = round_cnt[:, a], match_cnt[:, a]
        agents_out[label] = {
            "mean_place": _bootstrap(place_sum[:, a], rc, reps, rng),
            "dragon_rate": _bootstrap(dragon_sum[:, a], rc, reps, rng),
            "egg_rate": _bootstrap(egg_sum[:, a], rc, reps, rng),
            "mean_score": _bootstrap(score_sum[:, a], mc, reps, rng, den=den),
            "matches": int(mc.sum()),
            "rounds": int(rc.sum()),
            "place_hist": place_hist[a].tolist(),
            "forfeits": sum(1 for r in results if (r.get("forfeit") or {}).get("label") == label),
        }
    # Paired differences of mean match score over the deal sequences both agents played.
    diffs = {}
    per_seq_score = _safe_div(score_sum, match_cnt * den)
    for a in range(L):
        for b in range(L):
            if a == b:
                continue
            both = (match_cnt[:, a] > 0) & (match_cnt[:, b] > 0)
            if not both.any():
                continue  # never met: no paired difference
            d = per_seq_score[:, a] - per_seq_score[:, b]
            exact = None
            if units is not None:
                total = sum((Fraction(int(score_sum[s, a]), int(match_cnt[s, a]))
                             - Fraction(int(score_sum[s, b]), int(match_cnt[s, b]))
                             for s in np.flatnonzero(both)), Fraction(0))
                exact = float(total / (int(both.sum()) * den))
            w = both.astype(float)
            diffs[f"{labels[a]} - {labels[b]}"] = _bootstrap(d * w, w, reps, rng, mean=exact)
    h2h = np.where(meets > 0, wins / np.maximum(meets, 1), np.nan)
    ratings = _ratings(tc, results, labels)
    planned = tc.num_sequences * n
    return {"labels": labels, "agents": agents_out, "differences": diffs,
            "head_to_head": h2h.tolist(), "ratings": ratings,
            "matches": len(results), "sequences": k, "planned": planned,
            "partial": len(results) < planned, "forfeits": _forfeits(results)}


def _forfeits(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every forfeited match, in match order: who failed, how, the seeds and the replay."""
    out = []
    for r in results:
        f = r.get("forfeit")
        if f:
            out.append({"sequence": r["sequence"], "rotation": r["rotation"],
                        **{k: f.get(k) for k in ("label", "seat", "kind", "stage", "error",
                                                 "round", "step", "match_seed",
                                                 "agent_seed")},
                        "replay": f["replay"] if isinstance(f.get("replay"), str) else None})
    return out


def _safe_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.divide(x, y, out=np.zeros_like(x, dtype=float), where=y > 0)


def _ratings(tc: TournamentConfig, results: Sequence[dict[str, Any]], labels: list[str]
             ) -> dict[str, dict[str, float]]:
    """Plackett-Luce ratings (openskill) over every round's full finishing order. An agent
    that fills several seats of a table moves by the mean of its seats' updates."""
    try:
        from openskill.models import PlackettLuce
    except ModuleNotFoundError as exc:  # a MissingExtraError naming the experiments extra
        raise explain(exc, "the tournament's ratings", "experiments") from None

    model = PlackettLuce()
    mu = {a: model.mu for a in labels}
    sigma = {a: model.sigma for a in labels}
    for r in results:
        seats = r["seats"]
        for rd in r["rounds"]:
            place = {seat: p for p, seat in enumerate(rd["order"])}
            teams = [[model.rating(mu=mu[a], sigma=sigma[a])] for a in seats]
            new = model.rate(teams, ranks=[place[j] + 1 for j in range(len(seats))])
            upd: dict[str, list[tuple[float, float]]] = {}
            for j, a in enumerate(seats):
                upd.setdefault(a, []).append((new[j][0].mu, new[j][0].sigma))
            for a, vals in upd.items():
                mu[a] = sum(v[0] for v in vals) / len(vals)
                sigma[a] = sum(v[1] for v in vals) / len(vals)
    return {a: {"mu": mu[a], "sigma": sigma[a], "low": mu[a] - 1.96 * sigma[a],
                "high": mu[a] + 1.96 * sigma[a], "ordinal": mu[a] - 3 * sigma[a]}
            for a in labels}


# ---------------------------------------------------------------------------------------
# Output.

def write_results(path: Path, results: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")


def _jsonable(x: Any) -> Any:
    if isinstance(x, Estimate):
        return {"mean": _jsonable(x.mean), "low": _jsonable(x.low), "high": _jsonable(x.high)}
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def plot_summary(summary: dict[str, Any], out_dir: Path) -> list[Path]:
    """Ratings with intervals, the head-to-head heatmap and the finishing places."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = summary["labels"]
    paths = []
    fig, ax = plt.subplots(figsize=(6, 0.6 * len(labels) + 1.5))
    rt = summary["ratings"]
    ys = np.arange(len(labels))
    mus = [rt[a]["mu"] for a in labels]
    errs = [1.96 * rt[a]["sigma"] for a in labels]
    ax.errorbar(mus, ys, xerr=errs, fmt="o", capsize=4)
    ax.set_yticks(ys, labels)
    ax.set_xlabel("Plackett-Luce rating (mu, 95% interval)")
    ax.set_title("Ratings over full finishing orders")
    fig.tight_layout()
    paths.append(out_dir / "ratings.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(1.2 * len(labels) + 2.5, 1.0 * len(labels) + 1.5))
    h = np.array(summary["head_to_head"], dtype=float)
    im = ax.imshow(h, vmin=0, vmax=1, cmap="RdBu")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            if not np.isnan(h[i, j]):
                ax.text(j, i, f"{h[i, j]:.2f}", ha="center", va="center", fontsize=9)
    ax.set_title("Head to head: row finished above column")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    paths.append(out_dir / "head_to_head.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    n = len(summary["agents"][labels[0]]["place_hist"])
    width = 0.8 / len(labels)
    for i, a in enumerate(labels):
        hist = np.array(summary["agents"][a]["place_hist"], dtype=float)
        ax.bar(np.arange(1, n + 1) + (i - (len(labels) - 1) / 2) * width,
               hist / max(hist.sum(), 1), width=width, label=a)
    ax.set_xlabel("finishing place (1 = Dragon, last = Egg)")
    ax.set_ylabel("share of rounds")
    ax.set_xticks(range(1, n + 1))
    ax.legend(fontsize=8)
    ax.set_title("Distribution of finishing places")
    fig.tight_layout()
    paths.append(out_dir / "places.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def _seats_line(tc: TournamentConfig) -> list[str]:
    """With fewer agents than seats, how many seats of each table every agent fills."""
    counts = tc.seats_filled()
    if not counts or all(c == 1 for c in counts.values()):
        return []
    parts = ", ".join(f"`{a}` {c}" for a, c in counts.items())
    return [f"- seats: {len(counts)} agents for {tc.num_players} seats, so the line-up repeats "
            f"them in order; seats each fills at every table: {parts}"]


def _too_few(summary: dict[str, Any]) -> bool:
    ests = [e for m in summary["agents"].values() for e in m.values()
            if isinstance(e, Estimate)] + list(summary["differences"].values())
    return any(isinstance(e, Estimate) and not e.enough for e in ests)


def _difference_rows(summary: dict[str, Any]) -> list[str]:
    labels = summary["labels"]
    rows = []
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            est = summary["differences"].get(f"{a} - {b}")
            if est is None:
                rows.append(f"| `{a}` - `{b}` | never met (no shared deal sequence) | - |")
                continue
            if not isinstance(est, Estimate):  # a summary read back from summary.json
                est = Estimate(est["mean"], est["low"], est["high"])
            if est.enough:
                sig = "yes" if est.low > 0 or est.high < 0 else "no"
            else:
                sig = f"too few sequences ({est.sequences} < {MIN_SEQUENCES})"
            rows.append(f"| `{a}` - `{b}` | {est.fmt()} | {sig} |")
    return rows


def _partial_lines(summary: dict[str, Any]) -> list[str]:
    if not summary.get("partial"):
        return []
    return [f"**partial: {summary['matches']} of {summary['planned']} matches** (the run "
            "stopped before its end; `--resume` plays the rest, and the report then covers "
            "every match)", ""]


def _forfeit_lines(summary: dict[str, Any]) -> list[str]:
    forfeits = summary.get("forfeits") or []
    if not forfeits:
        return []
    lines = ["", "## Forfeits", "",
             "An agent that raised, returned something other than a legal action or ran past "
             "the move timeout forfeited the match: it finishes last in the round in "
             "progress, and the match ends there.", "",
             "| agent | match (sequence, rotation) | seat | what | error | match seed | replay |",
             "|---|---|---|---|---|---|---|"]
    for f in forfeits:
        error = str(f["error"]).replace("|", "\\|")
        lines.append(f"| `{f['label']}` | {f['sequence']}, {f['rotation']} | {f['seat']} | "
                     f"{f['kind']} | {error} | {f['match_seed']} | {f['replay'] or '-'} |")
    return lines


def _empty_report(tc: TournamentConfig, summary: dict[str, Any]) -> str:
    return "\n".join(["# Tournament report", "", *_partial_lines(summary),
                      f"- agents: {', '.join(f'`{a}`' for a in tc.labels)}",
                      "- no match finished yet: no statistics"]) + "\n"


def markdown_report(tc: TournamentConfig, summary: dict[str, Any], plots: list[Path]) -> str:
    if not summary.get("matches") and "agents" not in summary:
        return _empty_report(tc, summary)
    labels = summary["labels"]
    lines = [
        "# Tournament report", "",
        *_partial_lines(summary),
        f"- agents: {', '.join(f'`{a}`' for a in labels)}",
        f"- table: {tc.num_players} players, {tc.num_rounds} rounds a match, rules "
        f"{tc.rules or 'default'}",
        *_seats_line(tc),
        f"- {summary['matches']} matches = {summary['sequences']} duplicate deal sequences x "
        f"{tc.num_players} rotations, seed {tc.seed}",
        "- intervals: 95% percentile bootstrap over deal sequences "
        f"({tc.bootstrap} resamples)" + (
            f"; `[too few sequences: k]`: a mean from k < {MIN_SEQUENCES} deal sequences, too "
            "few for an interval" if _too_few(summary) else ""), "",
        "| agent | mean place | Dragon rate | Egg rate | mean match score | rating (mu ± 1.96σ) |",
        "|---|---|---|---|---|---|",
    ]
    for a in labels:
        m = summary["agents"][a]
        rt = summary["ratings"][a]
        lines.append(f"| `{a}` | {m['mean_place'].fmt(2)} | {m['dragon_rate'].fmt()} | "
                     f"{m['egg_rate'].fmt()} | {m['mean_score'].fmt()} | "
                     f"{rt['mu']:.2f} ± {1.96 * rt['sigma']:.2f} |")
    lines += ["", "## Differences in mean match score (row - column, paired by deals)", "",
              "| pair | difference | excludes zero |", "|---|---|---|"]
    lines += _difference_rows(summary)
    lines += ["", "## Head to head", "",
              "Share of rounds in which the row agent finished above the column agent.", "",
              "| | " + " | ".join(f"`{a}`" for a in labels) + " |",
              "|---" * (len(labels) + 1) + "|"]
    h = summary["head_to_head"]
    for i, a in enumerate(labels):
        cells = ["-" if (h[i][j] is None or (isinstance(h[i][j], float) and math.isnan(h[i][j])))
                 else f"{h[i][j]:.3f}" for j in range(len(labels))]
        lines.append(f"| `{a}` | " + " | ".join(cells) + " |")
    lines += _forfeit_lines(summary)
    lines += [""] + [f"![{p.stem}]({p.name})" for p in plots]
    return "\n".join(lines) + "\n"


class OutputError(ValueError):
    """An output folder that cannot be created or written."""


def check_out_dir(path: str | os.PathLike[str]) -> Path:
    """Check, without creating anything, that ``path`` is or can become a folder we may write
    in; an :class:`OutputError` with a one-line reason otherwise."""
    out = Path(path)
    probe = out
    while not probe.exists() and probe.parent != probe:  # the nearest existing ancestor
        probe = probe.parent
    if probe == out and probe.exists() and not probe.is_dir():
        raise OutputError(f"output folder {str(out)!r} is an existing file, not a folder")
    if not probe.is_dir():
        raise OutputError(f"cannot create output folder {str(out)!r}: {str(probe)!r} is not "
                          "a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write to output folder {str(out)!r}: {str(probe)!r} is "
                          "not writable")
    return out


def prepare_out_dir(path: str | os.PathLike[str]) -> Path:
    """Create the output folder (and its parents) and check that files can be written in it;
    an :class:`OutputError` with a one-line reason otherwise."""
    out = check_out_dir(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise OutputError(f"cannot write to output folder {str(out)!r}: "
                          f"{exc.strerror or exc}") from None
    return out


#: The files a tournament writes in its output folder (``--overwrite`` replaces exactly
#: these, and the replays of forfeited matches in :data:`REPLAYS`).
OUTPUT_FILES = ("config.json", "results.jsonl", "summary.json", "report.md", "ratings.png",
                "head_to_head.png", "places.png")
#: The subfolder of the replays of forfeited matches (``seqS-rotR.json``).
REPLAYS = "replays"
#: The settings a resume must keep: they change the results or the summary (``workers``,
#: ``out_dir`` and ``on_agent_error`` may change).
RESUME_SETTINGS = ("agents", "num_players", "matches", "seed", "num_rounds", "rules",
                   "bootstrap", "move_timeout")


def holds_tournament(path: str | os.PathLike[str]) -> bool:
    """Whether the folder holds a tournament's files (``config.json`` or ``results.jsonl``)."""
    out = Path(path)
    return (out / "config.json").exists() or (out / "results.jsonl").exists()


def _refuse_foreign(out: Path) -> None:
    """An :class:`OutputError` when the folder's ``config.json`` is not a tournament's (a
    training run's, say): a tournament there would replace it."""
    cfg = out / "config.json"
    if not cfg.is_file():
        return
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        data = None
    if not (isinstance(data, dict) and isinstance(data.get("agents"), list)
            and "num_players" in data):
        raise OutputError(f"output folder {str(out)!r} holds a config.json that is not a "
                          "tournament's: choose another folder")


def _atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to a new file beside ``path``, then rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_saved_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``config.json`` of the tournament in a folder, as saved; an :class:`OutputError`
    when there is none or it cannot be read."""
    out = Path(path)
    cfg = out / "config.json"
    if not cfg.is_file():
        raise OutputError(f"nothing to resume in {str(out)!r}: it holds no tournament "
                          "(no config.json)")
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise OutputError(f"cannot resume {str(out)!r}: {cfg} cannot be read "
                          f"({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list):
        raise OutputError(f"cannot resume {str(out)!r}: {cfg} is not a tournament's config "
                          "(no list of agents)")
    return data


def _plain(x: Any) -> Any:
    return json.loads(json.dumps(x))


def settings_differences(saved: dict[str, Any], tc: TournamentConfig
                         ) -> dict[str, tuple[Any, Any]]:
    """The settings of :data:`RESUME_SETTINGS` in which ``tc`` differs from a saved
    ``config.json``: name -> (saved, asked). A setting missing from an older file counts as
    its default."""
    defaults = {f.name: f.default if f.default is not MISSING else f.default_factory()
                for f in fields(TournamentConfig) if f.name != "agents"}
    now = tc.to_json()
    out = {}
    for key in RESUME_SETTINGS:
        old = _plain(saved.get(key, defaults.get(key)))
        new = _plain(now[key])
        if old != new:
            out[key] = (old, new)
    return out


def load_results(tc: TournamentConfig, path: str | os.PathLike[str]
                 ) -> tuple[list[dict[str, Any]], int | None]:
    """The finished matches in a folder's ``results.jsonl``, checked against ``tc`` (every
    line a match of this tournament, once), and, when the file ends in an unfinished line (a
    run killed while it wrote), the length of its whole lines (else ``None``)."""
    file = Path(path) / "results.jsonl"
    if not file.exists():
        return [], None
    data = file.read_bytes()
    cut = None
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        data = data[:cut]
    planned = set(match_tasks(tc))
    seen: dict[tuple[int, int], int] = {}
    results = []
    for i, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        where = f"cannot resume: {file} line {i}"
        try:
            r = json.loads(line)
            key = (r["sequence"], r["rotation"])
        except (ValueError, TypeError, KeyError):
            raise OutputError(f"{where} is not a match result") from None
        if key not in planned:
            raise OutputError(f"{where} is a match (sequence, rotation) {key} that this "
                              "tournament does not plan")
        if key in seen:
            raise OutputError(f"{where} repeats the match of line {seen[key]} {key}")
        if r.get("seats") != _seats(tc, *key) or not isinstance(r.get("rounds"), list):
            raise OutputError(f"{where} does not match the tournament's line-up (seats "
                              f"{r.get('seats')!r}, expected {_seats(tc, *key)!r})")
        seen[key] = i
        results.append(r)
    return results, cut


class _Log:
    """An output folder's results: ``results.jsonl`` appended and flushed as matches finish,
    the replays of forfeits, and the summary and report, partial or not. Nothing is written
    before :meth:`open` (the first result, or a stop that keeps a report)."""

    def __init__(self, tc: TournamentConfig, out: Path, resume: bool, overwrite: bool) -> None:
        self.tc, self.out, self.resume, self.overwrite = tc, out, resume, overwrite
        self.results: list[dict[str, Any]] = []
        self.cut: int | None = None
        self.file: Any = None
        if resume:
            saved = read_saved_config(out)
            diff = settings_differences(saved, tc)
            if diff:
                what = "; ".join(f"{k} {json.dumps(v[1])} (saved: {json.dumps(v[0])})"
                                 for k, v in diff.items())
                raise OutputError(f"cannot resume {str(out)!r} with other settings: {what}; "
                                  "resume with the saved settings, or start a new tournament "
                                  "in another folder")
            self.results, self.cut = load_results(tc, out)
            return
        _refuse_foreign(out)
        if holds_tournament(out) and not overwrite:
            raise OutputError(f"output folder {str(out)!r} already holds a tournament: resume "
                              "it (resume=True) or replace it (overwrite=True), or choose "
                              "another folder")

    @property
    def planned(self) -> int:
        return len(match_tasks(self.tc))

    def done(self) -> list[tuple[int, int]]:
        return [_match_key(r) for r in self.results]

    def open(self) -> None:
        if self.file is not None:
            return
        prepare_out_dir(self.out)
        path = self.out / "results.jsonl"
        if self.resume:
            if self.cut is not None:  # drop an unfinished last line before appending
                os.truncate(path, self.cut)
                self.cut = None
            self.file = open(path, "a", encoding="utf-8")
            return
        if self.overwrite:
            for name in OUTPUT_FILES:
                (self.out / name).unlink(missing_ok=True)
            for old in (self.out / REPLAYS).glob("seq*-rot*.json"):
                old.unlink()
        _atomic_write(self.out / "config.json", json.dumps(self.tc.to_json(), indent=1))
        self.file = open(path, "w", encoding="utf-8")

    def keep_replay(self, r: dict[str, Any]) -> dict[str, Any]:
        """A forfeit's replay saved in :data:`REPLAYS`, its path in the record."""
        f = r.get("forfeit")
        if not f or not isinstance(f.get("replay"), dict):
            return r
        self.open()
        rel = f"{REPLAYS}/seq{r['sequence']}-rot{r['rotation']}.json"
        (self.out / REPLAYS).mkdir(exist_ok=True)
        _atomic_write(self.out / rel, json.dumps(f["replay"], indent=1))
        return {**r, "forfeit": {**f, "replay": rel}}

    def add(self, r: dict[str, Any]) -> None:
        self.open()
        r = self.keep_replay(r)
        self.file.write(json.dumps(r) + "\n")
        self.file.flush()
        self.results.append(r)

    def close(self) -> None:
        if self.file is not None:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            self.file = None

    def finish(self) -> dict[str, Any]:
        """Close ``results.jsonl`` and write ``summary.json``, ``report.md`` and the plots
        from every finished match (partial when some are missing); a complete run's results
        are rewritten in match order."""
        self.open()
        self.close()
        self.results, _ = load_results(self.tc, self.out)  # what the file holds, exactly
        results = sorted(self.results, key=_match_key)
        if len(results) == self.planned:  # in match order, replacing the file in one step
            _atomic_write(self.out / "results.jsonl",
                          "".join(json.dumps(r) + "\n" for r in results))
        if results:
            summary = summarize(self.tc, results)
            plots = plot_summary(summary, self.out)
        else:
            summary = {"matches": 0, "planned": self.planned, "partial": True, "forfeits": []}
            plots = []
        _atomic_write(self.out / "summary.json", json.dumps(_jsonable(summary), indent=1))
        _atomic_write(self.out / "report.md", markdown_report(self.tc, summary, plots))
        return summary

    def stopped(self, exc: BaseException) -> None:
        """The run stopped early: keep the failing match's replay, write the partial report
        (when anything was written) and note on ``exc`` where the finished matches are."""
        if isinstance(exc, AgentFailed):
            exc.record = self.keep_replay(exc.record)
            exc.record["forfeit"]["replay"] = str(self.out / exc.record["forfeit"]["replay"])
        if self.file is None and not self.resume and not isinstance(
                exc, (KeyboardInterrupt, TournamentStopped)):
            return  # a mistake before any match finished: nothing to keep
        try:
            self.finish()
        finally:
            exc.tournament_saved = SavedRun(str(self.out), len(self.results), self.planned)


@dataclass(frozen=True)
class SavedRun:
    """Where a tournament that stopped early keeps its finished matches (set as
    ``tournament_saved`` on the exception that stopped it)."""

    out_dir: str
    finished: int
    planned: int


def run_tournament(tc: TournamentConfig, progress: bool = True,
                   start_method: str | None = None, *, resume: bool = False,
                   overwrite: bool = False) -> dict[str, Any]:
    """Play, summarize and (with ``out_dir``) write results.jsonl (as matches finish),
    config.json, summary.json, report.md and the plots. Returns the summary. The output
    folder is checked before any match is played: one that holds a tournament is refused
    unless ``resume`` (play only its missing matches, with its saved settings) or
    ``overwrite`` (:class:`OutputError`); so are the ``experiments`` extra's modules the
    summary needs (openskill; matplotlib for the plots), a
    :class:`~dragons_egg_env.extras.MissingExtraError` otherwise. A run that stops early
    (Ctrl-C, :class:`TournamentStopped`, an agent that fails to build) writes a partial
    summary and report of the matches that finished, and its exception carries a
    :class:`SavedRun` as ``tournament_saved``."""
    require("run_tournament", "experiments",
            only=("openskill", "matplotlib") if tc.out_dir else ("openskill",))
    tc.validate()
    if not tc.out_dir:
        if resume or overwrite:
            raise ValueError("resume and overwrite need an output folder (out_dir)")
        return summarize(tc, run_matches(tc, progress=progress, start_method=start_method))
    if resume and overwrite:
        raise ValueError("resume and overwrite exclude each other")
    log = _Log(tc, check_out_dir(tc.out_dir), resume, overwrite)
    try:
        run_matches(tc, progress=progress, start_method=start_method, done=log.done(),
                    on_result=log.add)
    except BaseException as exc:
        log.stopped(exc)
        raise
    try:
        return log.finish()
    except BaseException as exc:  # Ctrl-C while the report is written: the matches are kept
        exc.tournament_saved = SavedRun(str(log.out), len(log.results), log.planned)
        raise


# ---------------------------------------------------------------------------------------
# Command line.

#: The options of the settings saved in config.json: attribute, option, default.
_CLI_SETTINGS = (("num_players", "players", "--players", 4),
                 ("matches", "matches", "--matches", 200),
                 ("num_rounds", "rounds", "--rounds", 3),
                 ("seed", "seed", "--seed", 0),
                 ("bootstrap", "bootstrap", "--bootstrap", 2000),
                 ("move_timeout", "move_timeout", "--move-timeout", None))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("agents", nargs="*",
                   help="agent specs, e.g. heuristic ismcts:iterations=200 (none with --resume: "
                   "the saved ones)")
    p.add_argument("--players", type=table_size, default=None, help="table size 2..8 (default 4)")
    p.add_argument("--matches", type=int_range(1), default=None,
                   help="matches to play (rounded up to whole rotations; default 200)")
    p.add_argument("--rounds", type=int_range(1), default=None, help="rounds per match (default 3)")
    p.add_argument("--seed", type=int_range(0), default=None,
                   help="tournament seed: every deal and agent seed derives from it (default 0)")
    p.add_argument("--workers", type=int_range(1), default=os.cpu_count() or 1)
    p.add_argument("--rule", type=rule_flag, action="append", default=None, metavar="FLAG=VALUE",
                   help="a rule flag, e.g. --rule pass_locks_out=true (repeatable)")
    p.add_argument("--bootstrap", type=int_range(100), default=None,
                   help="bootstrap resamples for the intervals (default 2000)")
    p.add_argument("--out", default=None, help="output folder (default runs/tournament)")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="play the missing matches of the tournament in DIR, with its saved "
                   "settings")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the tournament already in the output folder")
    p.add_argument("--on-agent-error", choices=ON_AGENT_ERROR, default=None,
                   help="an agent that raises, returns a non-action or an illegal action, or "
                   "runs past --move-timeout: 'forfeit' (default) scores the match as its "
                   "forfeit and goes on, 'stop' stops the run (finished matches are kept)")
    p.add_argument("--move-timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="the time each call to an agent may take; a late agent forfeits the "
                   "match (Unix only; default none)")
    p.add_argument("--no-progress", action="store_true")
def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace
                    ) -> argparse.ArgumentParser:
    """The parser whose usage an error should print: the subcommand's parser when ``parser``
    is a top-level parser with subcommands (``dragons-egg tournament ...``), else itself."""
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                return _command_parser(chosen, args)
    return parser


def _new_config(args: argparse.Namespace, parser: argparse.ArgumentParser) -> TournamentConfig:
    if not args.agents:
        parser.error("give the agents to play (agent specs), or --resume DIR")
    given = {attr: getattr(args, name) for attr, name, _, _ in _CLI_SETTINGS
             if getattr(args, name) is not None}
    return TournamentConfig(agents=args.agents, rules=dict(args.rule or []),
                            workers=args.workers, out_dir=args.out or "runs/tournament",
                            on_agent_error=args.on_agent_error or "forfeit", **given)


def _resumed_config(args: argparse.Namespace, parser: argparse.ArgumentParser
                    ) -> TournamentConfig:
    """The saved config of ``--resume DIR``; an option given with a value other than the
    saved one is an error that names it."""
    if args.overwrite:
        parser.error("--resume and --overwrite exclude each other: resume the tournament, or "
                     "replace it")
    if args.out is not None and Path(args.out) != Path(args.resume):
        parser.error(f"--resume {args.resume} continues the tournament in that folder: drop "
                     f"--out {args.out}")
    tc = TournamentConfig.from_json(read_saved_config(args.resume))
    diffs = []
    saved_agents = tc.to_json()["agents"]
    if args.agents and _plain(TournamentConfig(agents=args.agents).to_json()["agents"]) \
            != _plain(saved_agents):
        diffs.append(f"agents {' '.join(args.agents)} (saved: {json.dumps(saved_agents)})")
    for attr, name, option, _ in _CLI_SETTINGS:
        value = getattr(args, name)
        if value is not None and _plain(value) != _plain(getattr(tc, attr)):
            diffs.append(f"{option} {value} (saved: {getattr(tc, attr)})")
    if args.rule is not None and _plain(dict(args.rule)) != _plain(tc.rules):
        diffs.append(f"--rule {json.dumps(dict(args.rule))} (saved: {json.dumps(tc.rules)})")
    if diffs:
        parser.error(f"cannot resume {args.resume!r} with other settings: {'; '.join(diffs)}; "
                     "omit them to resume with the saved settings, or start a new tournament "
                     "with another --out")
    tc.workers, tc.out_dir = args.workers, args.resume
    tc.on_agent_error = args.on_agent_error or tc.on_agent_error
    return tc


def _saved_line(exc: BaseException, prog: str) -> str:
    saved = getattr(exc, "tournament_saved", None)
    if not isinstance(saved, SavedRun):
        return ""
    return (f"{saved.finished} of {saved.planned} matches are saved in {saved.out_dir} with a "
            f"partial report; resume with: {prog} --resume {shlex.quote(saved.out_dir)}")


def run_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run the tournament the parsed arguments describe. Every mistake is one line (with the
    usage of the tournament command: ``parser`` should be the subcommand's parser, and a
    top-level parser is searched for it) and exit status 2, whether found before playing (agent
    specs and paths, rules, the output folder, a resume's settings) or while building an
    agent. Without the ``experiments`` extra it prints one line naming it and exits with
    status 2 first. A run that stops early keeps its finished matches and a partial report and
    says, in one line, where they are and how to resume: Ctrl-C exits with status 130, an agent
    failing with ``--on-agent-error stop`` or a worker that dies with status 1."""
    parser = _command_parser(parser, args)
    require_cli(parser.prog, "experiments")  # ratings, progress bar, plots: before any match
    resume = args.resume is not None
    try:
        tc = _resumed_config(args, parser) if resume else _new_config(args, parser)
        tc.validate()
        out = check_out_dir(tc.out_dir or "")
        if not resume:
            _refuse_foreign(out)
        if not resume and not args.overwrite and holds_tournament(out):
            raise OutputError(f"output folder {str(out)!r} already holds a tournament: resume "
                              f"it with --resume {shlex.quote(str(out))}, or replace it with "
                              "--overwrite (or choose another --out)")
    except (AgentSpecError, ConfigError, OutputError, ValueError, TypeError) as exc:
        parser.error(str(exc))
    try:
        summary = run_tournament(tc, progress=not args.no_progress, resume=resume,
                                 overwrite=args.overwrite)
    except KeyboardInterrupt as exc:
        parser.exit(130, f"{parser.prog}: interrupted; {_saved_line(exc, parser.prog)}\n")
    except TournamentStopped as exc:
        hint = " (--on-agent-error forfeit plays past it)" if isinstance(exc, AgentFailed) else ""
        parser.exit(1, f"{parser.prog}: error: {exc}; {_saved_line(exc, parser.prog)}{hint}\n")
    except (AgentSpecError, OutputError) as exc:  # an agent that fails to build in a match
        saved = _saved_line(exc, parser.prog)
        parser.error(f"{exc}; {saved}" if saved else str(exc))
    print(markdown_report(tc, summary, []))
    if summary["forfeits"]:
        print(f"{len(summary['forfeits'])} matches were forfeited by an agent that failed: "
              "see the report's Forfeits section", file=sys.stderr)
    print(f"wrote {tc.out_dir}/report.md, results.jsonl, summary.json and plots")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dragons_egg.experiments.tournament",
                                     description="Duplicate-deal tournament between agents.")
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv), parser)


if __name__ == "__main__":
    raise SystemExit(main())
