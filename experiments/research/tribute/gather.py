"""Gathering the tribute fit's states (steps 1 and 2 of :mod:`.fit`): batches of tribute
decision states played on the batched engine, each state's every legal choice (or class of
choices) played out to the end of the round (:func:`run_chunk`, in a worker process), and the
driver that runs the batches on worker processes within the time budget (:func:`gather`,
:func:`fit_reserve`)."""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np

from dragons_egg.agents.heads import IntArray
from dragons_egg.experiments.common.runs import ignore_interrupts
from dragons_egg.experiments.training import counterfactual as cf
from dragons_egg.experiments.training.counterfactual import tribute_rows
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.observation import MaskArray, ObsArray

from .data import Batch, BoolArray, Float64Array
from .settings import TributeFitConfig

if TYPE_CHECKING:
    from dragons_egg.agents.netpolicy import NetPolicy
    from dragons_egg_env.engine import State


#: Actions for rows of padded observations and their masks: ``fn(obs, mask) -> actions``.
ActionRows = Callable[[ObsArray, MaskArray], IntArray]


#: A batch of states to gather (:func:`chunk_tasks`, :func:`run_chunk`): the policy file,
#: seed, table size, play policy, states, ``explore``, ``num_rounds`` and ``per_class``.
ChunkTask = tuple[str, int, int, str, int, float, int, bool]


class ProgressBar(Protocol):
    """What :func:`gather` uses of a progress bar (tqdm's)."""

    def update(self, n: int = 1) -> object: ...

    def set_postfix(self, **kwargs: object) -> None: ...

    def close(self) -> None: ...


_T = TypeVar("_T")


# ---------------------------------------------------------------------------------------
# One batch of states, in a worker.

def _heuristic(max_players: int) -> ActionRows:
    """The heuristic's actions for rows of observations padded to ``max_players`` seats
    (:func:`dragons_egg.agents.heuristic.heuristic_actions`: memoryless, no random numbers)."""
    from dragons_egg.agents.heuristic import heuristic_actions

    return functools.partial(heuristic_actions, max_players=max_players)


def gather_states(policy: NetPolicy, n: int, play: str, count: int, explore: float,
                  num_rounds: int, rng: np.random.Generator
                  ) -> tuple[list[State], list[int], ObsArray, BoolArray]:
    """``count`` tribute decision states of ``n``-seat matches played by ``play``: the
    scalar states, the deciding seats, and their observations and masks."""
    from dragons_egg_env.vector import VectorEngine

    m = policy.max_players
    heur = _heuristic(m)
    config = RulesConfig(num_players=n, num_rounds=num_rounds)
    eng = VectorEngine(min(64, 4 * count), config, max_players=m,
                       seed=int(rng.integers(2**62)), record=False)
    st = eng.reset()
    states: list[State] = []
    seats: list[int] = []
    obs: list[ObsArray] = []
    masks: list[BoolArray] = []
    while len(states) < count:
        acts = np.empty(eng.num_envs, np.int64)
        trib = tribute_rows(st.mask)
        for b in np.flatnonzero(trib):
            if len(states) < count and st.mask[b].sum() > 1:
                states.append(eng.to_state(int(b)))
                seats.append(int(st.seat[b]))
                obs.append(st.obs[b])
                masks.append(st.mask[b])
            legal = np.flatnonzero(st.mask[b])
            acts[b] = legal[rng.integers(len(legal))] if rng.random() < explore else \
                heur(st.obs[b:b + 1], st.mask[b:b + 1])[0]
        rest = ~trib
        if rest.any():
            acts[rest] = _play_actions(policy, heur, play, st.obs[rest], st.mask[rest])
        st = eng.step(acts)
    return states, seats, np.array(obs), np.array(masks)


def _play_actions(policy: NetPolicy, heur: ActionRows, play: str, obs: ObsArray,
                  mask: MaskArray) -> IntArray:
    if play == "self":
        greedy: IntArray = np.argmax(policy.logits(obs, mask), axis=-1)
        return greedy
    return heur(obs, mask)


def counterfactual_values(policy: NetPolicy, states: Sequence[State], seats: Sequence[int],
                          masks: BoolArray, play: str, seed: int,
                          per_class: bool = False) -> Float64Array:
    """``Q[i, a]``: the round reward of ``seats[i]`` after action ``a`` in ``states[i]`` and
    the rest of the round played by ``play`` (the Dragon's later tribute by the heuristic);
    NaN where ``a`` is not legal (:func:`dragons_egg.experiments.training.counterfactual.
    counterfactual_values`, with ``per_class`` one play-out per class of
    :func:`~dragons_egg.experiments.training.counterfactual.action_classes`)."""
    heur = _heuristic(policy.max_players)
    return cf.counterfactual_values(
        states, seats, masks, functools.partial(_play_actions, policy, heur, play), heur,
        policy.max_players, seed, per_class)


def run_chunk(task: ChunkTask) -> Batch:
    """One batch of states (a worker's unit of work): gathered, valued, with features."""
    from dragons_egg.agents.netpolicy import cached_policy

    path, seed, n, play, count, explore, num_rounds, per_class = task
    t0 = time.perf_counter()
    policy = cached_policy(path)
    rng = np.random.default_rng(seed)
    states, seats, obs, masks = gather_states(policy, n, play, count, explore, num_rounds, rng)
    q = counterfactual_values(policy, states, seats, masks, play, int(rng.integers(2**62)),
                              per_class)
    heur = _heuristic(policy.max_players)
    return {"obs": obs.astype(np.float32), "mask": masks, "q": q, "n": n, "play": play,
            "heuristic": heur(obs, masks),
            "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------
# The batches, on worker processes, within the budget.

def chunk_tasks(cfg: TributeFitConfig) -> Iterator[ChunkTask]:
    """The batches of states, in order: (policy, seed, table size, play policy, ...)."""
    ss = np.random.SeedSequence(cfg.seed)
    weights = np.asarray(cfg.size_weights, float) / sum(cfg.size_weights)
    k = 0
    while cfg.chunks == 0 or k < cfg.chunks:
        rng = np.random.default_rng(ss.spawn(1)[0])
        n = int(rng.choice(cfg.table_sizes, p=weights))
        play = "heuristic" if rng.random() < cfg.heuristic_share else "self"
        yield (str(cfg.policy), int(rng.integers(2**62)), n, play, cfg.states_per_chunk,
               cfg.explore, cfg.num_rounds, cfg.per_class)
        k += 1


def gather(cfg: TributeFitConfig, allowed: float, done: list[Batch] | None = None,
           seconds: float = 0.0, keep: Callable[[int, Batch, float], object] | None = None
           ) -> tuple[list[Batch], float]:
    """Run batches on ``cfg.workers`` processes until ``cfg.chunks`` are done or the next
    batch would end too late to fit every state within ``allowed`` seconds
    (:func:`fit_reserve`). ``done``: the first batches, gathered before (``seconds`` of
    gathering, counted in the budget), which are not gathered again. ``keep(k, batch,
    seconds)`` is called as each batch finishes, in task order (:func:`save_batch` keeps it
    on disk). Returns the batches in task order and the gathering seconds in all."""
    import multiprocessing as mp

    t0 = time.perf_counter()
    tasks = chunk_tasks(cfg)
    out: list[Batch] = list(done or ())
    _take(tasks, len(out))  # those were gathered before
    bar = _bar(cfg, len(out))

    def elapsed() -> float:
        return seconds + time.perf_counter() - t0

    def more(queued: int) -> bool:  # may one more batch start after ``queued`` others?
        if cfg.chunks and len(out) + queued >= cfg.chunks:
            return False
        if not out:
            return queued < 2 * cfg.workers
        pace = elapsed() / len(out) * cfg.workers  # seconds per batch per worker
        # a new batch starts after the ones queued before it: stop when it would end too
        # late to fit every state gathered by then
        states = sum(len(c["q"]) for c in out) + (queued + 1) * cfg.states_per_chunk
        return elapsed() + pace * (queued / cfg.workers + 1) + fit_reserve(states) < allowed

    with mp.get_context("spawn").Pool(cfg.workers, initializer=ignore_interrupts) as pool:
        n0 = 2 * cfg.workers if not out else sum(more(q) for q in range(2 * cfg.workers))
        pending = [pool.apply_async(run_chunk, (t,)) for t in _take(tasks, n0)]
        while pending:
            r = pending.pop(0).get()
            out.append(r)
            if keep is not None:
                keep(len(out) - 1, r, elapsed())
            if bar is not None:
                bar.update(1)
                bar.set_postfix(states=sum(len(c["q"]) for c in out))
            if more(len(pending)):
                pending += [pool.apply_async(run_chunk, (t,)) for t in _take(tasks, 1)]
    if bar is not None:
        bar.close()
    return out, elapsed()


def _take(it: Iterator[_T], k: int) -> list[_T]:
    out: list[_T] = []
    for _ in range(k):
        try:
            out.append(next(it))
        except StopIteration:
            break
    return out


def _bar(cfg: TributeFitConfig, initial: int = 0) -> ProgressBar | None:
    if not cfg.progress:
        return None
    from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type hints

    bar: ProgressBar = tqdm(total=cfg.chunks or None, initial=initial, desc="tribute-fit",
                            unit="batch", file=sys.stderr)
    return bar


#: Seconds kept back from the budget for the fit itself: a fixed part and a part per state
#: gathered (the fit of 139,392 states took 16.7 s on the 2-core machine, 0.12 ms a state;
#: twice that is kept back).
FIT_RESERVE = 15.0
FIT_SECONDS_PER_STATE = 2.4e-4


def fit_reserve(states: int) -> float:
    """Seconds of the budget kept back for fitting ``states`` gathered states."""
    return FIT_RESERVE + FIT_SECONDS_PER_STATE * states
