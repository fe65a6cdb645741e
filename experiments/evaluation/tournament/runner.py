"""Playing a tournament's matches: one match (:func:`play_task`), in this process or in a pool of
worker processes, with a progress bar; Ctrl-C, an agent failing with ``on_agent_error="stop"``
and a worker that dies stop the run with the matches that finished."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from dragons_egg.agents import restore_registrations
from dragons_egg.agents.base import Agent
from dragons_egg.agents.runner import MatchRecord, Watch, play_match, replayed_forfeit
from dragons_egg_env.cards import codes

from .config import Entrant, TournamentConfig, check_importable, worker_registrations
from .pool import SlotRecord, WatchedPool
from .schedule import deal_sequence, derive, match_key, match_seats, match_tasks

#: The keys of a match's result that measure time (the match's wall seconds, each seat's
#: thinking) or say when it was played (the output folder's ``sitting``: 1 for the first
#: run, one more for each ``--resume``), and the saved line's ``digest``, which covers them:
#: everything else is the same for the same seed, bit for bit.
TIMING_KEYS = ("seconds", "think", "sitting", "digest")


def play_task(tc: TournamentConfig, seq: int, rot: int,
              entrants: dict[str, Entrant] | None = None, watch: Watch | None = None
              ) -> dict[str, Any]:
    """The result line of the match of deal sequence ``seq`` and rotation ``rot``, played
    here (``watch``: told every call and action, :class:`~dragons_egg.agents.runner.Watch`)."""
    config = tc.rules_config()
    n = tc.num_players
    entrants = entrants or tc.by_label()
    seats = match_seats(tc, seq, rot)
    agent_seeds = [derive(tc.seed, seq, rot, j) for j in range(n)]
    agents = [entrants[label].make(agent_seeds[j]) for j, label in enumerate(seats)]
    start = time.perf_counter()
    rec = play_match(agents, config, seed=derive(tc.seed, seq, rot), deals=_deals(tc, seq),
                     on_agent_error="forfeit", move_timeout=tc.move_timeout, watch=watch,
                     keep_replay=tc.save_replays)
    return _result(tc, seq, rot, rec, time.perf_counter() - start)


def forfeit_task(tc: TournamentConfig, record: SlotRecord, kind: str, error: str
                 ) -> dict[str, Any]:
    """The result line of a match whose worker process was killed or ended inside an agent's
    call, as the worker's slot recorded it (:mod:`.pool`): that agent's forfeit, scored as if
    the call had raised."""
    seq, rot = record.sequence, record.rotation
    rec = replayed_forfeit(tc.rules_config(), derive(tc.seed, seq, rot), _deals(tc, seq),
                           record.actions, record.call, record.seat, record.stage, kind,
                           error)
    return _result(tc, seq, rot, rec, time.monotonic() - record.since)


def _deals(tc: TournamentConfig, seq: int) -> list[list[list[str]]]:
    return [[codes(h) for h in hands] for hands in deal_sequence(tc.rules_config(),
                                                                 derive(tc.seed, seq))]


def _result(tc: TournamentConfig, seq: int, rot: int, rec: MatchRecord, seconds: float
            ) -> dict[str, Any]:
    seats = match_seats(tc, seq, rot)
    out: dict[str, Any] = {
        "sequence": seq,
        "rotation": rot,
        "seats": seats,
        "scores": rec.scores,
        "rounds": rec.rounds,
        "steps": rec.steps,
        "seconds": round(seconds, 4),
        # per seat: seconds thinking on its decisions with a choice, and how many
        "think": [round(t, 6) for t in rec.think],
        "choices": rec.choices,
    }
    if rec.forfeit is not None:
        f = rec.forfeit
        out["forfeit"] = {"label": seats[f.seat], **f.to_dict(),
                          "match_seed": derive(tc.seed, seq, rot),
                          "agent_seed": derive(tc.seed, seq, rot, f.seat), "replay": rec.replay}
    elif tc.save_replays and rec.replay is not None:
        out["replay"] = rec.replay  # saved by the output folder (replays/seqS-rotR.json.gz)
    return out


def _progress(total: int, desc: str, initial: int = 0) -> Any:
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]
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


def _play_watched(seq: int, rot: int, watch: Watch) -> dict[str, Any]:
    assert _WORKER is not None, "worker not initialised"
    tc, entrants = _WORKER
    return play_task(tc, seq, rot, entrants, watch)


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
    start when there are any (:func:`in_workers`; default: :func:`default_start_method`); it
    never changes the results. ``done``: matches already played, as ``(sequence,
    rotation)``, which are skipped; ``on_result`` is called with each result as it comes
    back (in the order matches finish). A stop raises :class:`AgentFailed` or
    :class:`WorkerDied` with the finished matches; Ctrl-C raises ``KeyboardInterrupt`` after
    the results that had come back went to ``on_result``. The config was checked when it was
    built: it is not checked again."""
    skip = {tuple(t) for t in done}
    every = match_tasks(tc)
    tasks = [t for t in every if t not in skip]
    bar = _progress(len(every), "tournament", len(every) - len(tasks)) if progress else None
    take = _Collector(tc, on_result, bar)
    try:
        if not in_workers(tc) or not tasks:
            entrants = tc.by_label()
            for seq, rot in tasks:
                take([play_task(tc, seq, rot, entrants)])
        else:
            _run_parallel(tc, tasks, start_method or default_start_method(), take)
    except BaseException as exc:
        if bar:
            bar.leave = False  # an error message follows; no half-full bar above it
        if isinstance(exc, TournamentStopped):
            exc.results = sorted(take.results, key=match_key)
        raise
    finally:
        if bar:
            bar.close()
    return sorted(take.results, key=match_key)


#: Seconds of play a worker's batch of matches aims at: long enough that handing out matches
#: costs little next to playing them, short enough that the bar moves and a stop loses
#: little (a batch that is being played when the run stops is played again on resume).
CHUNK_SECONDS = 2.0


def in_workers(tc: TournamentConfig) -> bool:
    """Whether ``tc``'s matches play in watched worker processes (:mod:`.pool`): with more than
    one worker, and with one when there is a move timeout (a worker can be killed when an
    agent's call will not give way to the interrupt); otherwise in the calling process."""
    return tc.workers > 1 or tc.move_timeout is not None


def _run_parallel(tc: TournamentConfig, tasks: list[tuple[int, int]], method: str,
                  take: _Collector) -> None:
    """Play ``tasks`` on ``tc.workers`` watched processes (:class:`.pool.WatchedPool`), in
    batches sized as they go: the first batches are one match each, the next ones as many
    matches as fill about :data:`CHUNK_SECONDS` at the pace measured so far (at most a
    twentieth of a worker's share), about two batches a worker ahead."""
    check_importable(tc, method)
    most = max(1, len(tasks) // (tc.workers * 20))

    def size(pace: float) -> int:
        return min(most, max(1, int(CHUNK_SECONDS / max(pace, 1e-6))))

    pool = WatchedPool(tc.workers, method, _init_worker, (tc, worker_registrations(tc)),
                       _play_watched, move_timeout=tc.move_timeout,
                       forfeit=lambda rec, kind, error: forfeit_task(tc, rec, kind, error),
                       died=WorkerDied)
    pool.run(tasks, take, size)
