"""The runner as a referee, and agent specs that would hang it (issue 47, 3 and 5): an agent
cannot fool the referee through the arrays it is handed, and a search budget has a bound. Before the fix, an agent that set every entry of its ``action_mask`` to 1 and then
played an illegal move got past the runner's check (made against that same array, which the
env hands out on every call) and crashed the match with ``IllegalMoveError`` even under
``on_agent_error="forfeit"``."""

from __future__ import annotations

import numpy as np
import pytest

from dragons_egg.agents import AgentSpecError, parse_spec
from dragons_egg.agents.base import Agent
from dragons_egg.agents.heuristic import HeuristicAgent
from dragons_egg.agents.runner import play_match
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.dragons_egg_v0 import IllegalMoveError
from dragons_egg_env.replay import check_replay

RULES = RulesConfig(num_players=2, num_rounds=1)


class MaskRewriter(Agent):
    """Writes 1 over every entry of the mask it is handed, then plays the first action the
    rewritten mask allows that the real one did not (an illegal move)."""

    name = "mask-rewriter"

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed)
        self.write_errors = 0

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = action_mask.copy()
        try:
            action_mask[:] = 1
            observation[:] = 0
        except ValueError:  # read-only: the referee's copies
            self.write_errors += 1
        return int(np.flatnonzero(legal == 0)[0])


class Scribbler(Agent):
    """Scribbles over its arrays when it can and plays a legal move."""

    name = "scribbler"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        move = int(np.flatnonzero(action_mask)[0])
        if action_mask.flags.writeable:
            action_mask[:] = 1
        return move


def test_a_mask_rewriting_agent_forfeits_for_its_illegal_move() -> None:
    bad = MaskRewriter()
    rec = play_match([bad, HeuristicAgent(1)], RULES, seed=3, on_agent_error="forfeit")
    assert rec.forfeit is not None and rec.forfeit.kind == "illegal move"
    assert rec.forfeit.seat == 0 and "illegal action" in rec.forfeit.error
    assert bad.write_errors == 1  # it was handed read-only arrays
    assert sum(rec.scores) == 0 and rec.scores[0] < 0


def test_the_agent_gets_read_only_copies_and_legality_is_the_engines() -> None:
    """The arrays an agent gets are read-only copies; every move played is legal by the
    engine's own mask, and the match is what it is with agents that leave them alone."""
    seen: list[np.ndarray] = []

    class Keeper(Agent):
        name = "keeper"

        def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
            assert not action_mask.flags.writeable and not observation.flags.writeable
            seen.append(action_mask)
            return int(np.flatnonzero(action_mask)[0])

    rec = play_match([Keeper(), Keeper()], RULES, seed=5, keep_replay=True)
    assert len({id(m) for m in seen}) == len(seen)  # a copy per call
    ref = play_match([Scribbler(), Scribbler()], RULES, seed=5, keep_replay=True)
    assert rec.replay["actions"] == ref.replay["actions"]
    # played back on a fresh env, every action is legal where it was played
    check_replay(rec.replay)


def test_the_raise_mode_still_raises_the_envs_error_for_an_illegal_move() -> None:
    with pytest.raises(IllegalMoveError, match="illegal move"):
        play_match([MaskRewriter(), HeuristicAgent(1)], RULES, seed=3)


@pytest.mark.parametrize("spec,needle", [
    ("ismcts:iterations=99999999999999999999999", "iterations must be an integer in 1..100_000"),
    ("ismcts:time=1e9", "time must be in 0..3600 seconds"),
    ("ismcts-net:iterations=1000001", "iterations must be an integer in 1..100_000"),
    ("ismcts-net:depth=5000", "depth must be an integer in 0..1_000"),
])
def test_search_budgets_have_an_upper_bound(spec: str, needle: str) -> None:
    """A search budget past its bound is refused when the spec is read (issue 47: before,
    ``ismcts:iterations=99999999999999999999999`` was accepted and the match hung)."""
    with pytest.raises(AgentSpecError, match=needle):
        parse_spec(spec)


class Recorder:
    """A :class:`~dragons_egg.agents.runner.Watch` that keeps what it is told."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str]] = []
        self.actions: list[int] = []

    def calling(self, index: int, seat: int, stage: str) -> None:
        self.calls.append((index, seat, stage))

    def returned(self) -> None:
        pass

    def played(self, action: int) -> None:
        self.actions.append(action)


class RaisesAtCall(HeuristicAgent):
    """The heuristic, raising in the match's call of index ``at`` when that call is its."""

    count = 0

    def __init__(self, seed: int | None = None, at: int = -1) -> None:
        super().__init__(seed)
        self.at = at

    def _tick(self) -> None:
        RaisesAtCall.count += 1
        if RaisesAtCall.count - 1 == self.at:
            raise RuntimeError("gone")

    def start_match(self, seat, config, max_players=None):  # type: ignore[no-untyped-def]
        self._tick()
        super().start_match(seat, config, max_players)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self._tick()
        return super().act(observation, action_mask)

    def end_round(self, result):  # type: ignore[no-untyped-def]
        self._tick()
        super().end_round(result)


RULES3 = RulesConfig(num_players=3, num_rounds=2)


def test_a_match_is_scored_from_its_watch_record_as_if_the_agent_had_raised() -> None:
    """What a watched worker's parent scores when the worker died inside a call (issue 47, 5):
    the record a watcher keeps is enough to score the match exactly as the runner does when
    the agent raises in that call, in every stage."""
    from dragons_egg.agents.runner import replayed_forfeit

    watch = Recorder()
    RaisesAtCall.count = 0
    full = play_match([RaisesAtCall(s) for s in range(3)], RULES3, seed=5, watch=watch)
    stages = {stage for _, _, stage in watch.calls}
    assert stages == {"start_match", "act", "end_round"} and full.forfeit is None
    picks = [next(i for i, _, st in watch.calls if st == stage)
             for stage in ("start_match", "act", "end_round")] + [len(watch.calls) // 2]
    for at in picks:
        _, seat, stage = watch.calls[at]
        RaisesAtCall.count = 0
        raised = play_match([RaisesAtCall(s, at=at) for s in range(3)], RULES3, seed=5,
                            on_agent_error="forfeit")
        assert raised.forfeit is not None
        before = sum(st == "act" for _, _, st in watch.calls[:at])
        rebuilt = replayed_forfeit(RULES3, 5, None, watch.actions[:before], at, seat, stage,
                                   "raised", raised.forfeit.error)
        assert rebuilt.forfeit == raised.forfeit
        assert (rebuilt.scores, rebuilt.rounds, rebuilt.steps, rebuilt.replay) == \
            (raised.scores, raised.rounds, raised.steps, raised.replay)
        assert rebuilt.choices == raised.choices and rebuilt.think == [0.0] * 3
    with pytest.raises(ValueError, match="not seat"):  # a record of another match
        _, seat, stage = watch.calls[picks[1]]
        replayed_forfeit(RULES3, 5, None, [], picks[1], (seat + 1) % 3, stage, "raised", "x")
