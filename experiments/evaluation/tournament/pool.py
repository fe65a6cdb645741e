"""Matches in watched worker processes: the pool that plays a tournament with ``workers > 1``,
and with any number of workers when it has a move timeout.

Each worker tells the parent, through a small file it shares by memory mapping (its
:class:`Slot`), which match it plays, each call to an agent as it starts and ends, and each
action played (:class:`~dragons_egg.agents.runner.Watch`: a few memory writes a call, no
messages). So the parent can stop what the worker cannot stop itself, and score it:

- a call that runs past the move timeout and does not give way to the worker's own
  interrupt (native code that never returns to the interpreter, an agent that swallows the
  interrupt) is ended by killing the worker when :func:`kill_after` seconds have passed: a
  ``"timeout"`` forfeit of that agent;
- an agent that ends its worker process inside a call (``os._exit``, a crash, a signal) is an
  ``"exited"`` forfeit of that agent;

both scored in the parent from the slot's record
(:func:`~dragons_egg.agents.runner.replayed_forfeit`: exactly the match the worker would have
recorded had the agent raised there); a fresh worker takes the dead one's place and its
other matches. A worker that dies outside any agent's call (while it starts, or in the
runner itself), or from a stop signal (SIGTERM, SIGHUP, SIGINT: the run is being stopped)
stops the run with :class:`~dragons_egg.experiments.evaluation.tournament.runner.WorkerDied`.

A match longer than :data:`MAX_ROUNDS` rounds of :data:`ROUND_STEPS` steps is played, but
not recorded past that: its worker dying inside it then stops the run too.
"""

from __future__ import annotations

import collections
import mmap
import os
import signal
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dragons_egg.agents.runner import STAGES

#: The most steps a round can take, with room to spare: a round deals at most 45 cards, and
#: each play is followed by at most one completion offer and one pass per other seat (R7-R18).
ROUND_STEPS = 4096
#: The rounds of a match a slot records (beyond, a match plays unrecorded).
MAX_ROUNDS = 4096
# The slot's header: 8 int64 fields, then the start of the call in progress (a float64,
# time.monotonic, which every process on the machine shares), then the actions (int16).
BUSY, SEQ, ROT, CALLS, IN_CALL, SEAT, STAGE, COUNT = range(8)
_TIME_AT, _ACTIONS_AT = 64, 128


class Slot:
    """A worker's record of the match it is playing, in a file both processes map: the match,
    the call in progress (index, seat, stage, since when) and the actions played so far. The
    worker writes it (:meth:`begin`, the :class:`~dragons_egg.agents.runner.Watch` methods,
    :meth:`end`); the parent reads it (:meth:`in_call`, :meth:`record`)."""

    def __init__(self, path: str | os.PathLike[str], rounds: int) -> None:
        self.capacity = min(max(rounds, 1), MAX_ROUNDS) * ROUND_STEPS
        size = _ACTIONS_AT + 2 * self.capacity
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if os.fstat(fd).st_size != size:
                os.ftruncate(fd, size)  # sparse: pages cost memory only once written
            self._map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self.head = memoryview(self._map)[:_TIME_AT].cast("q")
        self.since = memoryview(self._map)[_TIME_AT:_TIME_AT + 8].cast("d")
        self.actions = memoryview(self._map)[_ACTIONS_AT:].cast("h")

    # -- the worker's side ----------------------------------------------------------------
    def begin(self, seq: int, rot: int) -> None:
        h = self.head
        h[SEQ], h[ROT], h[CALLS], h[IN_CALL], h[COUNT] = seq, rot, 0, 0, 0
        h[BUSY] = 1

    def calling(self, index: int, seat: int, stage: str) -> None:
        h = self.head
        h[CALLS], h[SEAT], h[STAGE] = index, seat, STAGES.index(stage)
        self.since[0] = time.monotonic()
        h[IN_CALL] = 1

    def returned(self) -> None:
        self.head[IN_CALL] = 0

    def played(self, action: int) -> None:
        n = self.head[COUNT]
        if n < self.capacity:
            self.actions[n] = action
        self.head[COUNT] = n + 1

    def end(self) -> None:
        self.head[BUSY] = 0

    # -- the parent's side ----------------------------------------------------------------
    def in_call(self) -> float | None:
        """Since when (``time.monotonic``) the call in progress runs, ``None`` if none does."""
        if not (self.head[BUSY] and self.head[IN_CALL]):
            return None
        return float(self.since[0])

    def record(self) -> SlotRecord | None:
        """What the slot holds of a worker that has stopped: the call it stopped in, or
        ``None`` when it stopped outside any agent's call (or past what the slot records)."""
        h = self.head
        if not (h[BUSY] and h[IN_CALL]) or h[COUNT] > self.capacity:
            return None
        return SlotRecord(h[SEQ], h[ROT], h[CALLS], h[SEAT], STAGES[h[STAGE]],
                          list(self.actions[:h[COUNT]]), float(self.since[0]))

    def close(self) -> None:
        for view in (self.head, self.since, self.actions):
            view.release()
        self._map.close()


@dataclass(frozen=True)
class SlotRecord:
    """The call a worker stopped in: the match (deal sequence and rotation), the call's index
    in the match, its seat and stage, the actions played before it and when it started."""

    sequence: int
    rotation: int
    call: int
    seat: int
    stage: str
    actions: list[int]
    since: float


def kill_after(move_timeout: float) -> float:
    """Seconds a call may run before its worker is killed: the move timeout, then as long
    again (at least a second) for the worker's own interrupt to end the call."""
    return move_timeout + max(1.0, move_timeout)


#: A worker ended by one of these is being stopped with the run, not by an agent.
_STOP_SIGNALS = {getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n)}


def how_ended(code: int | None) -> str:
    """A process's end in words (its exit status, or the signal that killed it)."""
    if code is None:
        return "ended"
    if code >= 0:
        return f"exited with status {code}"
    try:
        name = f" ({signal.Signals(-code).name})"
    except ValueError:
        name = ""
    return f"was killed by signal {-code}{name}"


def _worker_main(conn: Any, slot_path: str, init: Callable[..., Any], init_args: tuple[Any, ...],
                 play: Callable[..., dict[str, Any]]) -> None:
    """A worker: set up (``init(*init_args)``), then play each batch of matches it is sent
    (``play(seq, rot, watch=slot)``), sending each result back as it finishes."""
    init(*init_args)
    for sig in _STOP_SIGNALS - {signal.SIGINT}:  # a stop signal ends a worker at once
        signal.signal(sig, signal.SIG_DFL)
    slot = Slot(slot_path, int(init_args[0].num_rounds))
    while True:
        try:
            batch = conn.recv()
        except EOFError:
            return
        if batch is None:
            return
        for seq, rot in batch:
            slot.begin(seq, rot)
            result = play(seq, rot, slot)
            slot.end()
            conn.send(result)


class _Worker:
    def __init__(self, ctx: Any, folder: Path, index: int, rounds: int,
                 target_args: tuple[Any, ...]) -> None:
        path = folder / f"slot-{index}"
        path.unlink(missing_ok=True)
        self.slot = Slot(path, rounds)
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, str(path), *target_args),
                                daemon=True)
        self.proc.start()
        child.close()
        self.tasks: collections.deque[tuple[int, int]] = collections.deque()
        self.killed_at: float | None = None  # when the parent killed it (a timeout)

    def stop(self, at_once: bool = False) -> None:
        """End the worker: when it has played what it was sent, or ``at_once``."""
        if at_once:
            self.proc.kill()
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()
        self.slot.close()


class WatchedPool:
    """``workers`` watched worker processes (started by ``method``) that play matches: each
    worker runs ``init(*init_args)`` once (``init_args[0]`` is the tournament config), then
    ``play(seq, rot, watch)`` per match. :meth:`run` hands out the tasks in batches of
    ``size(pace)`` matches and gives every result to ``take`` as it comes back;
    ``forfeit(record, kind, error)`` scores a match whose worker was killed or ended inside
    an agent's call; ``died(message)`` makes the exception that stops the run otherwise."""

    def __init__(self, workers: int, method: str, init: Callable[..., Any],
                 init_args: tuple[Any, ...], play: Callable[..., dict[str, Any]], *,
                 move_timeout: float | None,
                 forfeit: Callable[[SlotRecord, str, str], dict[str, Any]],
                 died: Callable[[str], BaseException]) -> None:
        import multiprocessing as mp

        self.ctx = mp.get_context(method)
        self.method = method
        self.n = workers
        self.rounds = int(init_args[0].num_rounds)
        self.target_args = (init, init_args, play)
        self.move_timeout = move_timeout
        self.forfeit, self.died = forfeit, died
        self.folder = Path(tempfile.mkdtemp(prefix="dragons-egg-workers-"))
        self.workers: list[_Worker] = []
        self.started = 0

    def _start(self) -> _Worker:
        self.started += 1
        return _Worker(self.ctx, self.folder, self.started, self.rounds, self.target_args)

    def run(self, tasks: Sequence[tuple[int, int]], take: Callable[[list[dict[str, Any]]], None],
            size: Callable[[float], int]) -> None:
        from multiprocessing.connection import wait

        queue = collections.deque(tasks)
        batch, paces = 1, collections.deque[float](maxlen=64)
        clean = False
        try:
            self.workers = [self._start() for _ in range(min(self.n, len(queue)))]
            while queue or any(w.tasks for w in self.workers):
                ended: list[_Worker] = []
                for w in self.workers:  # about two batches ahead per worker
                    while queue and len(w.tasks) < 2 * batch and w not in ended:
                        chunk = [queue.popleft() for _ in range(min(batch, len(queue)))]
                        w.tasks.extend(chunk)
                        if not self.send(w, chunk):
                            ended.append(w)
                waits: dict[Any, _Worker] = {w.conn: w for w in self.workers if w.tasks}
                waits.update({w.proc.sentinel: w for w in self.workers})
                ready = wait(list(waits), timeout=0 if ended else self._next_check())
                for key in ready:
                    w = waits[key]
                    if w in ended:
                        continue
                    if not self._receive(w, take, paces):
                        ended.append(w)
                if paces:
                    batch = size(sum(paces) / len(paces))
                ended += [w for w in self._overdue() if w not in ended]
                for w in ended:
                    queue.extendleft(reversed(self._replace(w, take)))
            clean = True
        finally:
            for w in self.workers:
                w.stop(at_once=not clean)
            for path in self.folder.iterdir():
                path.unlink(missing_ok=True)
            self.folder.rmdir()

    def send(self, w: _Worker, batch: list[tuple[int, int]]) -> bool:
        """Hand ``batch`` to ``w``; ``False`` when it has ended (its matches are still its
        own, to be given back or scored)."""
        try:
            w.conn.send(batch)
        except OSError:
            return False
        return True

    def _receive(self, w: _Worker, take: Callable[[list[dict[str, Any]]], None],
                 paces: collections.deque[float]) -> bool:
        """Take every result ``w`` sent; ``False`` once it has ended."""
        try:
            while w.conn.poll():
                result = w.conn.recv()
                w.tasks.popleft()
                paces.append(float(result["seconds"]))
                take([result])
        except (EOFError, OSError):
            return False
        return w.proc.is_alive() or bool(w.conn.poll())

    def _next_check(self) -> float | None:
        if self.move_timeout is None:
            return None
        starts = [s for w in self.workers if w.tasks and (s := w.slot.in_call()) is not None]
        if not starts:
            return kill_after(self.move_timeout)
        due = min(starts) + kill_after(self.move_timeout)
        return max(0.0, due - time.monotonic()) + 0.01

    def _overdue(self) -> list[_Worker]:
        """Kill every worker whose agent's call has run past :func:`kill_after`."""
        if self.move_timeout is None:
            return []
        now, out = time.monotonic(), []
        for w in self.workers:
            since = w.slot.in_call() if w.tasks else None
            if since is not None and now - since > kill_after(self.move_timeout):
                w.killed_at = now
                w.proc.kill()
                w.proc.join()
                out.append(w)
        return out

    def _replace(self, w: _Worker, take: Callable[[list[dict[str, Any]]], None]
                 ) -> list[tuple[int, int]]:
        """Score the match ``w`` ended in as its agent's forfeit, put a fresh worker in its
        place and give back the matches it had not played; or stop the run (``died``)."""
        w.proc.join(timeout=5)
        code = w.proc.exitcode
        rec = w.slot.record()
        stopped = code is not None and code < 0 and -code in _STOP_SIGNALS
        if rec is None or (stopped and w.killed_at is None) or not w.tasks or \
                w.tasks[0] != (rec.sequence, rec.rotation):
            if stopped:
                time.sleep(0.5)  # the signal may be on its way to this process too
            raise self.died(self._death_line(w, code, rec is not None))
        if w.killed_at is not None:
            kind = "timeout"
            assert self.move_timeout is not None
            error = (f"{rec.stage} ran past the move timeout of {self.move_timeout:g} s and "
                     f"did not give way to the interrupt; its worker process was killed "
                     f"after {w.killed_at - rec.since:.3g} s")
        else:
            kind = "exited"
            error = f"{rec.stage} ended its worker process, which {how_ended(code)}"
        take([self.forfeit(rec, kind, error)])
        w.tasks.popleft()
        rest = list(w.tasks)
        w.tasks.clear()
        w.stop()
        self.workers[self.workers.index(w)] = self._start()
        return rest

    def _death_line(self, w: _Worker, code: int | None, in_call: bool) -> str:
        line = (f"tournament worker process {w.proc.pid} ({self.method} start method) "
                f"{how_ended(code)} while playing")
        if code is not None and code < 0 and -code in _STOP_SIGNALS:
            return line + " (stopped from outside)"
        if not in_call:
            line += ", outside any agent's call"
        if code == 1 and self.method != "fork":
            line += (f" (a worker started by {self.method} exits so when it cannot import "
                     "what it was sent: every factory, policy and registered agent must be "
                     "defined at module level of an importable module; any error is printed "
                     "above)")
        return line


__all__ = ["MAX_ROUNDS", "ROUND_STEPS", "Slot", "SlotRecord", "WatchedPool", "how_ended",
           "kill_after"]
