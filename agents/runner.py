"""Play one match between agents through the environment (agents see only their own view).

Scores are exact: every R27 reward is a rational with denominator ``n - 1`` (the ``rank``
scheme gives ``1 - 2p/(n-1)``, ``dragon_egg`` whole numbers), so the runner counts each seat's
rewards in whole units of ``1/(n-1)`` and divides once: a match score of -1 is ``-1.0``, not
``-0.9999999999999999``, and a zero sum is ``0.0``, not ``1.1e-16``.

Agent failures. By default (``on_agent_error="raise"``) whatever an agent raises, and the
environment's error for an action it returns that is illegal or not an action, propagates.
With ``on_agent_error="forfeit"`` an agent that raises (in ``start_match``, ``act`` or
``end_round``), returns something that is not an action index (``None``, a float, a string,
a bool) or an illegal action (by the engine's mask: an agent is handed read-only copies of
its observation and mask, so rewriting them changes nothing) ends the match as a *forfeit*
of that agent
(:class:`Forfeit`, in :attr:`MatchRecord.forfeit`, with a replay of the match up to the
failure in :attr:`MatchRecord.replay`), scored so:

- the rounds that ended before the failure stand as played;
- the round in progress (the first one when the failure is in ``start_match``) is the
  *forfeit round*: the seats that had gone out keep their places, the other seats but the
  offender follow, fewer cards first, ties in seat order from the offender's left (as R24
  orders a deadlock), and the offender finishes last (the Egg's place and reward); when the
  failure is in ``end_round``, the round that just ended is the forfeit round: its order is
  kept with the offender moved to last;
- the match ends there: later rounds are not played, so a forfeited match can have fewer
  rounds than ``num_rounds``. Rewards are R27's for those places, so scores stay exact and
  sum to zero.

``move_timeout`` (seconds) limits every call to an agent (``start_match``, each ``act``,
``end_round``): a call still running when it runs out is interrupted with
:class:`MoveTimeout` raised inside it (``signal.setitimer`` and ``SIGALRM``: Unix only, and
only in a process's main thread; :func:`check_move_timeout` says whether it can be used
here), and a call that returns after it (having swallowed the interrupt) counts as late too.
A late agent forfeits the match (``"forfeit"``) or :class:`MoveTimeoutError` is raised
(``"raise"``). Native code that never returns to the interpreter, and an agent that swallows
the interrupt and goes on, cannot be stopped from inside the process: a tournament plays its
matches in watched worker processes when it has a move timeout, and kills such a worker
(:class:`Watch` is what the runner tells a watcher; :func:`replayed_forfeit` scores the
match from what the watcher was told, kind ``"exited"`` for an agent that ended its process).
"""

from __future__ import annotations

import contextlib
import math
import operator
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NoReturn, Protocol

import numpy as np

from dragons_egg_env import engine as E
from dragons_egg_env.actions import NUM_ACTIONS, describe
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.dragons_egg_v0 import raw_env
from dragons_egg_env.observation import MaskArray, ObsArray

from .base import Agent

#: The ways an agent can fail a match (:attr:`Forfeit.kind`).
FAILURE_KINDS = ("raised", "not an action", "illegal move", "timeout", "exited")

#: The calls to an agent (:attr:`Forfeit.stage`), in the order a match makes them.
STAGES = ("start_match", "act", "end_round")


@dataclass
class Forfeit:
    """How an agent failed a match that it forfeited (see the module's docstring)."""

    #: The seat of the agent that failed.
    seat: int
    #: One of :data:`FAILURE_KINDS`.
    kind: str
    #: The call that failed: ``"start_match"``, ``"act"`` or ``"end_round"``.
    stage: str
    #: One line: what the agent raised or returned.
    error: str
    #: Moves played in the match before the failure.
    step: int
    #: The index of the forfeit round (counted from 0).
    round: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MatchRecord:
    """What a match produced, by seat."""

    #: Match score of each seat (R28): ``score_units[i] / denominator``, correctly rounded.
    scores: list[float]
    #: Per round: the finishing order (seats), the deadlock flag and every seat's R27 reward
    #: (exact, as the scores).
    rounds: list[dict[str, Any]] = field(default_factory=list)
    replay: dict[str, Any] | None = None
    steps: int = 0
    #: Match scores in whole units of ``1 / denominator`` (``None`` if a reward scheme ever
    #: gives rewards that are not multiples of it; ``scores`` are then plain float sums).
    score_units: list[int] | None = None
    #: ``n - 1``: every R27 reward is a multiple of ``1 / denominator``.
    denominator: int = 1
    #: How an agent failed the match, with ``on_agent_error="forfeit"`` (``None``: it did
    #: not); :attr:`replay` then holds the match up to the failure.
    forfeit: Forfeit | None = None
    #: Per seat: the seconds its ``act`` took on the decisions where it had a choice (more
    #: than one legal action), and how many such decisions it had: its time per move.
    think: list[float] = field(default_factory=list)
    choices: list[int] = field(default_factory=list)


def reward_units(rewards: Sequence[float], denominator: int) -> list[int] | None:
    """Rewards as whole multiples of ``1 / denominator``, or ``None`` if one is not."""
    units = [round(r * denominator) for r in rewards]
    if any(abs(r * denominator - u) > 1e-6 for r, u in zip(rewards, units, strict=True)):
        return None
    return units


class PolicyAgent(Agent):
    """An agent around a callable ``policy(observation, action_mask) -> action`` (stateless
    from the runner's point of view: it gets no seed and no round results)."""

    name = "policy"

    def __init__(self, policy: Callable[[Any, Any], Any], seed: int | None = None,
                 label: str | None = None) -> None:
        super().__init__(seed)
        if not callable(policy):
            raise TypeError(f"a policy is a callable (observation, mask) -> action, "
                            f"got {policy!r}")
        self.policy = policy
        if label is not None:
            self.spec = label

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        action = self.policy(observation, action_mask)
        index = as_action(action)
        if index is None:
            raise NotAnActionError(f"policy {self.label!r} returned {_short(action)} "
                                   f"({type(action).__name__}), not an action index (an "
                                   "integer)")
        return index


class NotAnActionError(TypeError):
    """An agent (or a policy) returned something that is not an action index."""


class MoveTimeout(BaseException):
    """Raised inside an agent's call when ``move_timeout`` runs out: a ``BaseException``, so
    that an agent's ``except Exception`` does not swallow it."""


class MoveTimeoutError(TimeoutError):
    """An agent's call took longer than ``move_timeout`` (with ``on_agent_error="raise"``)."""


def as_action(action: Any) -> int | None:
    """``action`` as a Python int when it is an integer (``int``, numpy integers, anything
    with ``__index__``), bools excepted; ``None`` otherwise (``None``, floats, strings). The
    range is not checked."""
    if isinstance(action, bool) or type(action).__name__ == "bool_":
        return None
    try:
        return operator.index(action)
    except TypeError:
        return None


def check_move_timeout() -> str | None:
    """Why a move timeout cannot be used here (one line), or ``None`` when it can: it needs
    ``signal.setitimer`` and ``SIGALRM`` (Unix) and a process's main thread."""
    if not hasattr(signal, "setitimer") or not hasattr(signal, "SIGALRM"):
        return ("a move timeout needs signal.setitimer and SIGALRM, which this platform "
                "lacks (Unix only)")
    if threading.current_thread() is not threading.main_thread():
        return "a move timeout works only in a process's main thread"
    return None


def _short(x: Any, limit: int = 80) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _alarm(signum: int, frame: Any) -> NoReturn:
    raise MoveTimeout()


class Watch(Protocol):
    """What :func:`play_match` tells a watcher as a match plays (``watch=``), enough for
    :func:`replayed_forfeit` to score the match from outside the process if the process ends
    inside a call to an agent: each call before it is made (its index in the match, counted
    from 0, the seat and the stage, one of :data:`STAGES`), its return, and each action played.
    Called on the match's hot path: keep it cheap."""

    def calling(self, index: int, seat: int, stage: str) -> None: ...

    def returned(self) -> None: ...

    def played(self, action: int) -> None: ...


class _Failed(Exception):
    """An agent failed the match (``on_agent_error="forfeit"``)."""

    def __init__(self, forfeit: Forfeit) -> None:
        super().__init__(forfeit.error)
        self.forfeit = forfeit


class _Guard:
    """Calls the agents: times them and, in forfeit mode, turns their failures into a
    :class:`_Failed`."""

    def __init__(self, timeout: float | None, forfeit: bool, watch: Watch | None = None
                 ) -> None:
        self.timeout = timeout
        self.forfeit = forfeit
        self.watch = watch
        self.step = 0
        self.calls = 0

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        """The SIGALRM handler in place while the match plays (with a timeout)."""
        if not self.timeout:
            yield
            return
        why = check_move_timeout()
        if why:
            raise RuntimeError(why)
        old = signal.signal(signal.SIGALRM, _alarm)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)

    def fail(self, seat: int, kind: str, stage: str, error: str) -> NoReturn:
        if not self.forfeit:  # only timeouts get here in raise mode
            raise MoveTimeoutError(f"seat {seat}: {error}")
        raise _Failed(Forfeit(seat, kind, stage, error, self.step, -1))

    def call(self, seat: int, stage: str, fn: Callable[..., Any], *args: Any) -> Any:
        if self.watch is not None:
            self.watch.calling(self.calls, seat, stage)
            self.calls += 1
            try:
                return self._call(seat, stage, fn, *args)
            finally:
                self.watch.returned()
        return self._call(seat, stage, fn, *args)

    def _call(self, seat: int, stage: str, fn: Callable[..., Any], *args: Any) -> Any:
        if not self.timeout and not self.forfeit:
            return fn(*args)
        start = time.perf_counter()
        try:
            try:
                if self.timeout:
                    signal.setitimer(signal.ITIMER_REAL, self.timeout)
                out = fn(*args)
            finally:
                if self.timeout:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        except MoveTimeout:
            self.fail(seat, "timeout", stage, f"{stage} ran past the move timeout of "
                      f"{self.timeout:g} s and was interrupted")
        except (Exception, SystemExit) as exc:  # an agent's own error, whatever it is
            if not self.forfeit:
                raise
            kind = "not an action" if isinstance(exc, NotAnActionError) else "raised"
            self.fail(seat, kind, stage, f"{stage} raised {_one_line(exc)}")
        took = time.perf_counter() - start
        if self.timeout and took > self.timeout:
            self.fail(seat, "timeout", stage, f"{stage} took {took:.3g} s, over the move "
                      f"timeout of {self.timeout:g} s")
        return out

    def checked_action(self, seat: int, action: Any, env: raw_env) -> int:
        """``action`` as a legal action index, or a forfeit saying why it is not one (legal:
        by the engine's own mask of the state, never by an array an agent was handed)."""
        a = as_action(action)
        if a is None:
            self.fail(seat, "not an action", "act", f"act returned {_short(action)} "
                      f"({type(action).__name__}), not an action index (an integer)")
        if not (0 <= a < NUM_ACTIONS and (E.legal_mask(env.engine_state) >> a) & 1):
            what = f"{a} ({describe(a)})" if 0 <= a < NUM_ACTIONS else \
                f"{a} (outside 0..{NUM_ACTIONS - 1})"
            self.fail(seat, "illegal move", "act", f"act returned the illegal action {what} "
                      f"in phase {env.phase()!r}")
        return a


def play_match(agents: Sequence[Agent], config: RulesConfig, seed: int,
               deals: Sequence[Sequence[Sequence[str | int]]] | None = None,
               max_players: int | None = None,
               keep_replay: bool = False, *, on_agent_error: str = "raise",
               move_timeout: float | None = None, watch: Watch | None = None) -> MatchRecord:
    """Seat ``agents[i]`` at seat ``i`` and play a match with the given seed (and deals).

    ``on_agent_error``: ``"raise"`` (an agent's error propagates) or ``"forfeit"`` (the match
    ends as that agent's forfeit: :attr:`MatchRecord.forfeit`, scored as the module's
    docstring says, with the replay up to the failure); ``move_timeout``: the seconds each
    call to an agent may take (Unix, main thread: :func:`check_move_timeout`); ``watch``: told
    every call and action (:class:`Watch`)."""
    if len(agents) != config.num_players:
        raise ValueError(f"{len(agents)} agents for a table of {config.num_players}")
    if on_agent_error not in ("raise", "forfeit"):
        raise ValueError(f"on_agent_error is 'raise' or 'forfeit', got {on_agent_error!r}")
    if move_timeout is not None and not (
            isinstance(move_timeout, (int, float)) and not isinstance(move_timeout, bool)
            and math.isfinite(move_timeout) and move_timeout > 0):
        raise ValueError(f"move_timeout is a positive number of seconds, got {move_timeout!r}")
    return _run(agents, config, seed, deals, max_players, keep_replay,
                _Guard(move_timeout, on_agent_error == "forfeit", watch))


def _run(agents: Sequence[Agent], config: RulesConfig, seed: int,
         deals: Sequence[Sequence[Sequence[str | int]]] | None, max_players: int | None,
         keep_replay: bool, guard: _Guard) -> MatchRecord:
    env = raw_env(max_players=max_players, **config.to_dict())
    env.reset(seed=seed, options={"deals": deals} if deals else None)
    rec = MatchRecord(scores=[0.0] * config.num_players, think=[0.0] * config.num_players,
                      choices=[0] * config.num_players)
    try:
        with guard.armed():
            _play(env, agents, config, rec, guard)
    except _Failed as failed:
        rec.forfeit = failed.forfeit
        _score(env, config, rec)
        rec.replay = env.to_replay()
        return rec
    _score(env, config, rec)
    if keep_replay:
        rec.replay = env.to_replay()
    return rec


def _play(env: raw_env, agents: Sequence[Agent], config: RulesConfig, rec: MatchRecord,
          guard: _Guard) -> None:
    for i, agent in enumerate(agents):
        guard.call(i, "start_match", agent.start_match, i, config, env.max_players)
    index = env.agent_name_mapping
    for name in env.agent_iter():
        if env.terminations[name]:
            env.step(None)
            continue
        seat = index[name]
        obs = env.observe(name)
        # the agent gets read-only copies: what it does to them cannot change the env's mask
        # (the same array on every call) or what the move is checked against
        observation, mask = obs["observation"].copy(), obs["action_mask"].copy()
        observation.setflags(write=False)
        mask.setflags(write=False)
        start = time.perf_counter()
        action = guard.call(seat, "act", agents[seat].act, observation, mask)
        if np.count_nonzero(obs["action_mask"]) > 1:
            rec.think[seat] += time.perf_counter() - start
            rec.choices[seat] += 1
        if guard.forfeit:
            action = guard.checked_action(seat, action, env)
        env.step(action)
        if guard.watch is not None:
            guard.watch.played(action)
        rec.steps += 1
        guard.step = rec.steps
        info = env.infos[name]
        if "round_result" in info:
            res = info["round_result"]
            order = [index[a] for a in res["finish_order"]]
            rec.rounds.append({"order": order, "deadlock": res["deadlock"]})
            for j, agent in enumerate(agents):
                guard.call(j, "end_round", agent.end_round, res)


class _Script(_Guard):
    """Plays back the calls a watcher was told of: each ``act`` returns the next recorded
    action, and the call of index ``fail_at`` fails as ``kind``."""

    def __init__(self, actions: Sequence[int], fail_at: int, seat: int, stage: str,
                 kind: str, error: str) -> None:
        super().__init__(None, True)
        self.actions = iter(actions)
        self.fail_at, self.fail_seat, self.fail_stage = fail_at, seat, stage
        self.kind, self.error = kind, error

    def call(self, seat: int, stage: str, fn: Callable[..., Any], *args: Any) -> Any:
        index, self.calls = self.calls, self.calls + 1
        if index == self.fail_at:
            if (seat, stage) != (self.fail_seat, self.fail_stage):
                raise ValueError(f"call {index} of the match is seat {seat}'s {stage}, not "
                                 f"seat {self.fail_seat}'s {self.fail_stage}: the record "
                                 "does not belong to this match")
            self.fail(seat, self.kind, stage, self.error)
        if stage != "act":
            return None
        action = next(self.actions, None)
        if action is None:
            raise ValueError(f"the record ends before call {self.fail_at} of the match")
        return action


class _Absent(Agent):
    """A seat whose calls a :class:`_Script` answers."""

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        raise AssertionError("never called")  # pragma: no cover


def replayed_forfeit(config: RulesConfig, seed: int,
                     deals: Sequence[Sequence[Sequence[str | int]]] | None,
                     actions: Sequence[int], fail_at: int, seat: int, stage: str, kind: str,
                     error: str, max_players: int | None = None) -> MatchRecord:
    """The match that :func:`play_match` (``on_agent_error="forfeit"``) would have recorded
    had the call of index ``fail_at`` (seat ``seat``'s ``stage``) failed as ``kind`` with
    ``error``: played back from the actions before it, as a :class:`Watch` was told them (from
    a process that ended inside that call). The seats' thinking times are not known (0).
    A record that does not fit the match (an illegal action, too few actions, another seat's
    call at ``fail_at``) is a ``ValueError``."""
    if kind not in FAILURE_KINDS or stage not in STAGES:
        raise ValueError(f"kind is one of {FAILURE_KINDS} and stage one of {STAGES}, got "
                         f"{kind!r} and {stage!r}")
    script = _Script(actions, fail_at, seat, stage, kind, error)
    rec = _run([_Absent() for _ in range(config.num_players)], config, seed, deals,
               max_players, False, script)
    if rec.forfeit is None:
        raise ValueError(f"the match ended before call {fail_at}: the record does not belong "
                         "to this match")
    if rec.forfeit.kind == "illegal move" and kind != "illegal move":
        raise ValueError(f"the record's actions are not legal in this match: "
                         f"{rec.forfeit.error}")
    rec.think = [0.0] * config.num_players
    return rec


def _forfeit_round(env: raw_env, config: RulesConfig, rec: MatchRecord, f: Forfeit
                   ) -> list[float]:
    """Put the forfeit round into ``rec.rounds`` (appended, or in place of the round that
    just ended when the failure was in ``end_round``); returns its rewards."""
    s = env.engine_state
    n, seat = config.num_players, f.seat
    if f.stage == "end_round" and rec.rounds:
        order = [q for q in rec.rounds[-1]["order"] if q != seat] + [seat]
        rec.rounds.pop()
    else:
        out = [q for q in s.finish if q != seat]
        rest = [(seat + d) % n for d in range(1, n)]
        rest = [q for q in rest if q not in out]
        rest.sort(key=lambda q: s.hands[q].bit_count())
        order = out + rest + [seat]
    f.round = len(rec.rounds)
    rec.rounds.append({"order": order, "deadlock": False, "forfeit": True})
    place = E.place_rewards(config)
    rewards = [0.0] * n
    for p, q in enumerate(order):
        rewards[q] = place[p]
    return rewards


def _score(env: raw_env, config: RulesConfig, rec: MatchRecord) -> None:
    """Every round's rewards and the match scores, exact (with a forfeit round in place)."""
    s = env.engine_state
    rewards = [list(result.rewards) for result in s.results]
    if rec.forfeit is not None:
        if rec.forfeit.stage == "end_round" and rec.rounds:
            rewards.pop()
        rewards.append(_forfeit_round(env, config, rec, rec.forfeit))
    den = max(config.num_players - 1, 1)
    units = [reward_units(r, den) for r in rewards]
    exact = [u for u in units if u is not None]
    if len(exact) == len(units):
        totals = [sum(col) for col in zip(*exact, strict=True)] if exact else \
            [0] * config.num_players
        rec.score_units, rec.denominator = totals, den
        rec.scores = [u / den for u in totals]
        for rnd, u in zip(rec.rounds, exact, strict=True):
            rnd["rewards"] = [x / den for x in u]
    else:  # pragma: no cover - every R27 scheme gives multiples of 1/(n-1)
        rec.scores = [float(sum(col)) for col in zip(*rewards, strict=True)] if rewards \
            else list(s.scores)
        for rnd, r in zip(rec.rounds, rewards, strict=True):
            rnd["rewards"] = r
