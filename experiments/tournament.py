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
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
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
from dragons_egg.agents.runner import PolicyAgent, play_match, reward_units
from dragons_egg.experiments.cli_args import int_range, rule_flag, table_size
from dragons_egg_env import engine as E
from dragons_egg_env.cards import NUM_CARDS, codes
from dragons_egg_env.config import ConfigError, RulesConfig
from dragons_egg_env.extras import explain, require, require_cli

#: Intervals from fewer deal sequences than this are reported as too few.
MIN_SEQUENCES = 10


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
        if self.workers > 1:
            for e in entrants.values():
                _check_picklable(e, self.workers)
            _worker_registrations(self)

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


def _play_task(tc: TournamentConfig, seq: int, rot: int,
               entrants: dict[str, Entrant] | None = None) -> dict[str, Any]:
    config = tc.rules_config()
    n = tc.num_players
    entrants = entrants or tc.by_label()
    deals = deal_sequence(config, _derive(tc.seed, seq))
    lineup = tc.lineup(seq)
    seats = [lineup[(j - rot) % n] for j in range(n)]  # rotation: agent j moves rot seats left
    agents = [entrants[label].make(_derive(tc.seed, seq, rot, j))
              for j, label in enumerate(seats)]
    start = time.perf_counter()
    rec = play_match(agents, config, seed=_derive(tc.seed, seq, rot),
                     deals=[[codes(h) for h in hands] for hands in deals])
    return {
        "sequence": seq,
        "rotation": rot,
        "seats": seats,
        "scores": rec.scores,
        "rounds": rec.rounds,
        "steps": rec.steps,
        "seconds": round(time.perf_counter() - start, 4),
    }


def _progress(total: int, desc: str):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is installed with the experiments extra
        return None
    return tqdm(total=total, desc=desc, unit="match", file=sys.stderr, dynamic_ncols=True)


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


def run_matches(tc: TournamentConfig, progress: bool = True,
                start_method: str | None = None) -> list[dict[str, Any]]:
    """Play every (deal sequence, rotation) match; results sorted by sequence and rotation.
    ``start_method`` (``"fork"``, ``"spawn"``, ``"forkserver"``) is how worker processes
    start when ``workers > 1`` (default: :func:`default_start_method`); it never changes the
    results."""
    tc.validate()
    tasks = [(seq, rot) for seq in range(tc.num_sequences) for rot in range(tc.num_players)]
    bar = _progress(len(tasks), "tournament") if progress else None
    results: list[dict[str, Any]] = []
    try:
        if tc.workers == 1:
            entrants = tc.by_label()
            for seq, rot in tasks:
                results.append(_play_task(tc, seq, rot, entrants))
                if bar:
                    bar.update()
        else:
            _run_parallel(tc, tasks, start_method or default_start_method(), results, bar)
    except BaseException:
        if bar:
            bar.leave = False  # an error message follows; no half-full bar above it
        raise
    finally:
        if bar:
            bar.close()
    results.sort(key=lambda r: (r["sequence"], r["rotation"]))
    return results


def _run_parallel(tc: TournamentConfig, tasks: list[tuple[int, int]], method: str,
                  results: list[dict[str, Any]], bar: Any) -> None:
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    _check_importable(tc, method)
    chunk = max(1, len(tasks) // (tc.workers * 20))
    chunks = [tasks[i:i + chunk] for i in range(0, len(tasks), chunk)]
    # A broken worker (one that cannot unpickle the config, or that dies) fails the run
    # instead of hanging it, as it would with multiprocessing.Pool.
    ex = ProcessPoolExecutor(tc.workers, mp_context=mp.get_context(method),
                             initializer=_init_worker,
                             initargs=(tc, _worker_registrations(tc)))
    try:
        pending = {ex.submit(_play_chunk, c) for c in chunks}
        while pending:
            # FIRST_COMPLETED: the bar moves with every chunk; a failed chunk raises in
            # fut.result() below and stops the rest at once.
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                rs = fut.result()
                results.extend(rs)
                if bar:
                    bar.update(len(rs))
    except BrokenProcessPool as exc:
        raise RuntimeError(
            f"a tournament worker process ({method}) failed or died: {exc}. With the spawn "
            "or forkserver start method every factory and policy must be importable by the "
            "workers (defined at module level of an importable module)") from None
    except BaseException:  # an agent's error, Ctrl-C: stop now, not after the queued work
        _terminate_workers(ex)
        raise
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


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
    deal sequence), head-to-head and ratings."""
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
    return {"labels": labels, "agents": agents_out, "differences": diffs,
            "head_to_head": h2h.tolist(), "ratings": ratings,
            "matches": len(results), "sequences": k}


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


def markdown_report(tc: TournamentConfig, summary: dict[str, Any], plots: list[Path]) -> str:
    labels = summary["labels"]
    lines = [
        "# Tournament report", "",
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


def run_tournament(tc: TournamentConfig, progress: bool = True,
                   start_method: str | None = None) -> dict[str, Any]:
    """Play, summarize and (with ``out_dir``) write results.jsonl, summary.json, report.md and
    the plots. Returns the summary. The output folder is checked before any match is played
    and created after the last (:class:`OutputError`); so are the ``experiments`` extra's
    modules the summary needs (openskill; matplotlib for the plots), a
    :class:`~dragons_egg_env.extras.MissingExtraError` otherwise."""
    require("run_tournament", "experiments",
            only=("openskill", "matplotlib") if tc.out_dir else ("openskill",))
    tc.validate()
    if tc.out_dir:
        check_out_dir(tc.out_dir)
    results = run_matches(tc, progress=progress, start_method=start_method)
    summary = summarize(tc, results)
    if tc.out_dir:
        out = prepare_out_dir(tc.out_dir)
        write_results(out / "results.jsonl", results)
        (out / "config.json").write_text(json.dumps(tc.to_json(), indent=1))
        (out / "summary.json").write_text(json.dumps(_jsonable(summary), indent=1))
        plots = plot_summary(summary, out)
        (out / "report.md").write_text(markdown_report(tc, summary, plots))
    return summary


# ---------------------------------------------------------------------------------------
# Command line.

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("agents", nargs="+", help="agent specs, e.g. heuristic ismcts:iterations=200")
    p.add_argument("--players", type=table_size, default=4, help="table size 2..8")
    p.add_argument("--matches", type=int_range(1), default=200,
                   help="matches to play (rounded up to whole rotations)")
    p.add_argument("--rounds", type=int_range(1), default=3, help="rounds per match")
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--workers", type=int_range(1), default=os.cpu_count() or 1)
    p.add_argument("--rule", type=rule_flag, action="append", default=[], metavar="FLAG=VALUE",
                   help="a rule flag, e.g. --rule pass_locks_out=true (repeatable)")
    p.add_argument("--bootstrap", type=int_range(100), default=2000)
    p.add_argument("--out", default="runs/tournament", help="output folder")
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


def run_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run the tournament the parsed arguments describe. Every mistake is one line (with the
    usage of the tournament command: ``parser`` should be the subcommand's parser, and a
    top-level parser is searched for it) and exit status 2, whether found before playing (agent
    specs and paths, rules, the output folder) or while building an agent. Without the
    ``experiments`` extra it prints one line naming it and exits with status 2 first."""
    parser = _command_parser(parser, args)
    require_cli(parser.prog, "experiments")  # ratings, progress bar, plots: before any match
    tc = TournamentConfig(agents=args.agents, num_players=args.players, matches=args.matches,
                          seed=args.seed, num_rounds=args.rounds, rules=dict(args.rule),
                          workers=args.workers, bootstrap=args.bootstrap, out_dir=args.out)
    try:
        tc.validate()
        check_out_dir(args.out)
    except (AgentSpecError, ConfigError, OutputError, ValueError, TypeError) as exc:
        parser.error(str(exc))
    try:
        summary = run_tournament(tc, progress=not args.no_progress)
    except (AgentSpecError, OutputError) as exc:  # an agent that fails to build in a match
        parser.error(str(exc))
    except KeyboardInterrupt:
        parser.exit(130, f"{parser.prog}: interrupted\n")
    print(markdown_report(tc, summary, []))
    print(f"wrote {args.out}/report.md, results.jsonl, summary.json and plots")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dragons_egg.experiments.tournament",
                                     description="Duplicate-deal tournament between agents.")
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv), parser)


if __name__ == "__main__":
    raise SystemExit(main())
