"""Differential check of the batched engine (``dragons_egg_env.vector``) against the scalar
rules engine (``dragons_egg_env.engine``): test support, and a command for long runs.

``python tests/vector_check.py --matches 100000 --seed 0 --batch 512`` (from the checkout, with
the ``vector`` extra) plays matches over every table size 2..8 and random rule flags, one random
configuration per group of ``--batch`` matches. The configurations come from ``RulesConfig``'s
field metadata (:func:`flag_values`): a new rule flag is drawn with the others, with no change
here. The scalar engine is fed the batched engine's deals and the same random actions, and every
step compares the legal mask, the observation of the seat to act (float32 bits), the acting
seat, the rewards, the round results and the final scores; samples of steps also compare the
observations of other seats, the full state encoding, ``to_state`` field by field, and replay
exports played back by ``replay.replay``. It prints progress lines and the figures, and exits 1
on any difference.

``tests/env/test_vector.py`` imports :class:`Checker`, :class:`Figures`, :func:`state_diff`,
:func:`flag_values` and :func:`check`, and runs :func:`check` on a few hundred matches in the
suite. (``dragons-egg bench --vector`` measures the batched engine's speed.)
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from dragons_egg_env import engine as E
from dragons_egg_env.actions import GIVE_BASE, NUM_ACTIONS
from dragons_egg_env.cards import EGG
from dragons_egg_env.config import MAX_PLAYERS, RulesConfig
from dragons_egg_env.extras import require_cli
from dragons_egg_env.observation import Encoder
from dragons_egg_env.replay import ReplayError, replay

#: What a difference can be in; the counters of the report.
KINDS = ("mask", "obs", "seat", "rewards", "round_result", "scores", "other_seat_obs",
         "state_obs", "to_state", "replay")
#: Steps from ``low`` of the values an int flag with a wide range is checked with (plus
#: ``high``): short and long tributes alike.
INT_STEPS = (0, 1, 2, 3, 5, 10)
#: Values an int flag without an upper bound (``num_rounds``) is checked with: ``low`` and the
#: next ones.
UNBOUNDED_VALUES = 4
_MASK_BYTES = (NUM_ACTIONS + 7) // 8


def flag_values(name: str) -> tuple[Any, ...]:
    """The values of ``RulesConfig`` field ``name`` that checks use, from its metadata: both
    values of a bool, every choice of a string, every value of an int with at most 8 (the table
    size), else ``low`` plus :data:`INT_STEPS` and ``high`` (``low`` and the next few when it has
    no upper bound)."""
    info = RulesConfig.flag_info(name)
    if info["kind"] == "bool":
        return (False, True)
    if info["kind"] == "str":
        return tuple(info["choices"])
    low, high = info["low"], info["high"]
    if high is None:
        return tuple(range(low, low + UNBOUNDED_VALUES))
    if high - low < 8:
        return tuple(range(low, high + 1))
    return tuple(low + d for d in INT_STEPS if low + d < high) + (high,)


def random_config(rng: random.Random, num_players: int | None = None) -> tuple[RulesConfig, int]:
    """A random configuration: every field of ``RulesConfig`` drawn from :func:`flag_values`
    (a bool with ``rng.random() < 0.5``), ``num_players`` fixed if given; and ``max_players``
    (n..8)."""
    values: dict[str, Any] = {}
    for name in RulesConfig.field_names():
        if name == "num_players" and num_players is not None:
            values[name] = num_players
        elif RulesConfig.flag_info(name)["kind"] == "bool":
            values[name] = rng.random() < 0.5
        else:
            values[name] = rng.choice(flag_values(name))
    config = RulesConfig(**values)
    return config, rng.randint(config.num_players, MAX_PLAYERS)


def state_diff(a: E.State, b: E.State) -> list[str]:
    """The fields in which two scalar states differ (legal-mask caches filled first)."""
    E.legal_mask(a)
    E.legal_mask(b)
    return [name for name in E.State.__slots__ if getattr(a, name) != getattr(b, name)]


@dataclasses.dataclass
class Figures:
    """What a check counted."""

    matches: int = 0
    steps: int = 0
    rounds: int = 0
    groups: int = 0
    diffs: Counter = dataclasses.field(default_factory=Counter)
    seen: Counter = dataclasses.field(default_factory=Counter)
    first: list[str] = dataclasses.field(default_factory=list)

    def add(self, kind: str, what: str) -> None:
        self.diffs[kind] += 1
        if len(self.first) < 10:
            self.first.append(f"{kind}: {what}")

    @property
    def total(self) -> int:
        return sum(self.diffs.values())


class Checker:
    """One configuration: a batched engine and one scalar state per match, kept in step."""

    def __init__(self, config: RulesConfig, max_players: int, batch: int, seed: int,
                 figures: Figures, sample: float = 0.02) -> None:
        self.config = config
        self.n = config.num_players
        self.batch = batch
        self.fig = figures
        self.rng = np.random.default_rng(seed)
        self.sample = sample
        from dragons_egg_env.vector import VectorEngine  # numba: the vector extra

        self.eng = VectorEngine(batch, config, max_players=max_players, seed=seed,
                                copy=False)
        self.enc = Encoder(self.n, max_players, config.num_rounds)
        self.senc = Encoder(self.n, max_players, config.num_rounds, state=True)
        self.out = self.eng.reset()
        self.scalar = [self._new_scalar(b) for b in range(batch)]

    def _new_scalar(self, b: int) -> E.State:
        s = E.new_match(self.config)
        self._deal(s, b)
        return s

    def _deal(self, s: E.State, b: int) -> None:
        """Deal the scalar match the batched engine's deal of this round (and its dealer)."""
        E.deal(s, self.eng.match_deals(b)[s.round_idx])
        s.dealer = int(self.eng.dealers[b])

    def run(self, matches: int) -> int:
        """Step until ``matches`` matches have finished; returns the steps taken."""
        done = steps = 0
        while done < matches:
            self.compare_now(steps)
            actions = self.random_actions()
            self.out = self.eng.step(actions)
            done += self.advance_scalar(actions)
            steps += 1
        return steps

    def random_actions(self) -> np.ndarray:
        """A uniformly random legal action per match, from the batched engine's masks."""
        mask = self.out.mask
        cum = np.cumsum(mask, axis=1)
        pick = np.floor(self.rng.random(self.batch) * cum[:, -1]).astype(np.int64)
        return np.argmax(cum > pick[:, None], axis=1).astype(np.int64)

    def compare_now(self, step: int) -> None:
        """Compare masks, acting seats and observations of every match, and samples of the
        rest (other seats, the state encoding, ``to_state``)."""
        fig, out, scal = self.fig, self.out, self.scalar
        packed = np.zeros((self.batch, _MASK_BYTES), dtype=np.uint8)
        obs = np.empty_like(out.obs)
        for b, s in enumerate(scal):
            m = E.legal_mask(s)
            packed[b] = np.frombuffer(m.to_bytes(_MASK_BYTES, "little"), np.uint8)
            obs[b] = self.enc.encode(s, s.current)
            fig.seen[E.PHASE_NAMES[s.phase]] += 1
            if s.locked:
                fig.seen["locked"] += 1
        masks = np.unpackbits(packed, axis=1, count=NUM_ACTIONS, bitorder="little")
        self._count_rows("mask", masks != out.mask)
        self._count_rows("obs", obs.view(np.uint32) != out.obs.view(np.uint32))
        seats = np.array([s.current for s in scal])
        self._count_rows("seat", (seats != out.seat)[:, None])
        if step % 8 == 0:
            self.compare_other_seats()
        for b in np.flatnonzero(self.rng.random(self.batch) < self.sample):
            self.compare_to_state(int(b))

    def _count_rows(self, kind: str, bad: np.ndarray) -> None:
        for b in np.flatnonzero(bad.any(axis=1)):
            self.fig.add(kind, f"match {b} ({self.config}): {np.flatnonzero(bad[b])[:8]}")
            self.resync(int(b))

    def compare_other_seats(self) -> None:
        seats = self.rng.integers(0, self.n, self.batch)
        mine = self.eng.observe(seats)
        state = self.eng.state()
        ref = np.stack([self.enc.encode(s, int(q))
                        for s, q in zip(self.scalar, seats, strict=True)])
        sref = np.stack([self.senc.encode(s, 0) for s in self.scalar])
        self.fig.seen["checks: other seats and state()"] += self.batch
        self._count_rows("other_seat_obs", ref.view(np.uint32) != mine.view(np.uint32))
        self._count_rows("state_obs", sref.view(np.uint32) != state.view(np.uint32))

    def compare_to_state(self, b: int) -> None:
        self.fig.seen["checks: to_state"] += 1
        diff = state_diff(self.eng.to_state(b), self.scalar[b])
        if diff:
            self.fig.add("to_state", f"match {b} fields {diff}")
            self.resync(b)

    def resync(self, b: int) -> None:
        """After a difference, carry on from the batched engine's state."""
        self.scalar[b] = self.eng.to_state(b)

    def advance_scalar(self, actions: np.ndarray) -> int:
        """Step every scalar match; compare rewards, round results and final scores; deal or
        restart as the batched engine did. Returns the matches that finished."""
        out, fig = self.out, self.fig
        finished = 0
        for b, s in enumerate(self.scalar):
            a = int(actions[b])
            if a == GIVE_BASE + EGG:
                fig.seen["egg given back"] += 1
            nres = len(s.results)
            E.step(s, a)
            fig.steps += 1
            if not self.compare_step(b, s, len(s.results) != nres):
                self.resync(b)  # the batched engine's state (a new match if it finished)
                finished += int(out.done[b])
                fig.matches += int(out.done[b])
            elif s.phase == E.DEAL:
                self._deal(s, b)
            elif s.phase == E.DONE:
                finished += 1
                self.finish(b, s)
        return finished

    def compare_step(self, b: int, s: E.State, ended: bool) -> bool:
        """The step's rewards, round result and match end agree (counted when not)."""
        out, fig = self.out, self.fig
        rewards = s.results[-1].rewards if ended else (0.0,) * self.n
        ok = True
        if tuple(out.rewards[b].tolist()) != rewards:
            fig.add("rewards", f"match {b}: {out.rewards[b]} != {rewards}")
            ok = False
        if bool(out.round_ended[b]) != ended:
            fig.add("round_result", f"match {b}: round_ended {out.round_ended[b]} != {ended}")
            return False
        if ended:
            fig.rounds += 1
            res = s.results[-1]
            if res.deadlock:
                fig.seen["deadlock"] += 1
            if tuple(out.round_order[b].tolist()) != res.order \
                    or bool(out.round_deadlock[b]) != res.deadlock:
                fig.add("round_result", f"match {b}: {out.round_order[b]} "
                                        f"{out.round_deadlock[b]} != {res.order} {res.deadlock}")
                ok = False
        if bool(out.done[b]) != (s.phase == E.DONE):
            fig.add("scores", f"match {b}: done {out.done[b]}, scalar phase {s.phase_name}")
            return False
        return ok

    def finish(self, b: int, s: E.State) -> None:
        out, fig = self.out, self.fig
        fig.matches += 1
        if tuple(out.final_scores[b].tolist()) != tuple(s.scores):
            fig.add("scores", f"match {b}: done {out.done[b]} {out.final_scores[b]} != "
                              f"{s.scores}")
        if self.rng.random() < self.sample:
            self.compare_replay(b, s)
        self.scalar[b] = self._new_scalar(b)

    def compare_replay(self, b: int, s: E.State) -> None:
        self.fig.seen["checks: replay"] += 1
        data = self.eng.finished_replay(b)
        try:
            env = replay(data)
        except ReplayError as exc:
            self.fig.add("replay", f"match {b}: {exc}")
            return
        t = env.engine_state
        if t.scores != s.scores or t.results != s.results or env.to_replay() != data:
            self.fig.add("replay", f"match {b}: replay gives {t.scores} / {s.scores}")


def check(matches: int, seed: int, batch: int, progress: float = 10.0,
          num_players: int | None = None, out=sys.stdout) -> Figures:
    """Play at least ``matches`` matches in groups of ``batch`` (one random configuration
    each) through both engines; ``progress`` seconds between progress lines (0: none)."""
    fig = Figures()
    rng = random.Random(seed)
    start = last = time.perf_counter()
    while fig.matches < matches:
        config, m = random_config(rng, num_players)
        size = min(batch, max(1, matches - fig.matches))
        checker = Checker(config, m, size, rng.getrandbits(32), fig)
        checker.run(size)
        fig.groups += 1
        now = time.perf_counter()
        if progress and now - last >= progress:
            last = now
            print(f"[{now - start:7.0f}s] {fig.matches:,} matches, {fig.steps:,} steps, "
                  f"{fig.groups} configs, {fig.total} differences", file=out, flush=True)
    return fig


def report(fig: Figures, seconds: float, out=sys.stdout) -> None:
    print(f"matches {fig.matches:,}  steps {fig.steps:,}  rounds {fig.rounds:,}  "
          f"configurations {fig.groups:,}  time {seconds:.0f} s", file=out)
    print("seen: " + ", ".join(f"{k} {v:,}" for k, v in sorted(fig.seen.items())), file=out)
    print("differences: " + ", ".join(f"{k} {fig.diffs[k]}" for k in KINDS), file=out)
    for line in fig.first:
        print("  " + line, file=out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python tests/vector_check.py",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--matches", type=int, default=2000, help="matches to check (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="seed of configurations, deals, actions")
    p.add_argument("--batch", type=int, default=256, help="matches per configuration")
    p.add_argument("--players", type=int, default=None, help="one table size (default: 2..8)")
    p.add_argument("--progress", type=float, default=30.0, help="seconds between progress lines")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    require_cli(parser.prog, "vector")  # the batched engine: before any match
    start = time.perf_counter()
    fig = check(args.matches, args.seed, args.batch, args.progress, args.players)
    report(fig, time.perf_counter() - start)
    return 1 if fig.total else 0


if __name__ == "__main__":
    raise SystemExit(main())
