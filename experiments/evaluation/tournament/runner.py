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
from dragons_egg.agents.runner import play_match
from dragons_egg_env.cards import codes

from .config import Entrant, TournamentConfig, check_importable, worker_registrations
from .schedule import deal_sequence, derive, match_key, match_seats, match_tasks

#: The keys of a match's result that measure time (the match's wall seconds, each seat's
#: thinking) or say when it was played (the output folder's ``sitting``: 1 for the first
#: run, one more for each ``--resume``), and the saved line's ``digest``, which covers them:
#: everything else is the same for the same seed, bit for bit.
TIMING_KEYS = ("seconds", "think", "sitting", "digest")


def play_task(tc: TournamentConfig, seq: int, rot: int,
              entrants: dict[str, Entrant] | None = None) -> dict[str, Any]:
    config = tc.rules_config()
    n = tc.num_players
    entrants = entrants or tc.by_label()
    deals = deal_sequence(config, derive(tc.seed, seq))
    seats = match_seats(tc, seq, rot)
    agent_seeds = [derive(tc.seed, seq, rot, j) for j in range(n)]
    agents = [entrants[label].make(agent_seeds[j]) for j, label in enumerate(seats)]
    match_seed = derive(tc.seed, seq, rot)
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
        # per seat: seconds thinking on its decisions with a choice, and how many
        "think": [round(t, 6) for t in rec.think],
        "choices": rec.choices,
    }
    if rec.forfeit is not None:
        f = rec.forfeit
        out["forfeit"] = {"label": seats[f.seat], **f.to_dict(), "match_seed": match_seed,
                          "agent_seed": agent_seeds[f.seat], "replay": rec.replay}
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


def _play_chunk(tasks: list[tuple[int, int]]) -> list[dict[str, Any]]:
    assert _WORKER is not None, "worker not initialised"
    tc, entrants = _WORKER
    return [play_task(tc, seq, rot, entrants) for seq, rot in tasks]


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
    back went to ``on_result``. The config was checked when it was built: it is not checked
    again."""
    skip = {tuple(t) for t in done}
    every = match_tasks(tc)
    tasks = [t for t in every if t not in skip]
    bar = _progress(len(every), "tournament", len(every) - len(tasks)) if progress else None
    take = _Collector(tc, on_result, bar)
    try:
        if tc.workers == 1 or not tasks:
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


def _run_parallel(tc: TournamentConfig, tasks: list[tuple[int, int]], method: str,
                  take: _Collector) -> None:
    """Play ``tasks`` on ``tc.workers`` processes, in batches sized as they go: the first
    batches are one match each, the next ones as many matches as fill about
    :data:`CHUNK_SECONDS` at the pace measured so far (at most a twentieth of a worker's
    share), with two batches a worker in flight."""
    import collections
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    check_importable(tc, method)
    most = max(1, len(tasks) // (tc.workers * 20))
    queue = collections.deque(tasks)
    size = 1  # matches a batch, from the pace measured so far
    # A broken worker (one that cannot unpickle the config, or that dies) fails the run
    # instead of hanging it, as it would with multiprocessing.Pool.
    ex = ProcessPoolExecutor(tc.workers, mp_context=mp.get_context(method),
                             initializer=_init_worker,
                             initargs=(tc, worker_registrations(tc)))
    procs: dict[int, Any] = {}  # every worker started, for the cause of a death
    futures: list[Future[list[dict[str, Any]]]] = []
    pending: set[Future[list[dict[str, Any]]]] = set()
    taken: set[int] = set()
    broken = False

    def fill() -> None:
        while queue and len(pending) < 2 * tc.workers:
            chunk = [queue.popleft() for _ in range(min(size, len(queue)))]
            futures.append(ex.submit(_play_chunk, chunk))
            pending.add(futures[-1])

    try:
        fill()
        while pending:
            procs.update(getattr(ex, "_processes", None) or {})
            # FIRST_COMPLETED: the bar moves with every batch; a failed batch raises in
            # fut.result() below and stops the rest at once.
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                taken.add(id(fut))
                results = fut.result()
                take(results)
                pace = sum(r["seconds"] for r in results) / max(len(results), 1)
                size = min(most, max(1, int(CHUNK_SECONDS / max(pace, 1e-6))))
            fill()
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
