"""A user's file that inspects ``env.unwrapped`` and saves a replay, then plays it back: it
must pass ``mypy --strict --disallow-any-expr`` (no ``Any`` anywhere) and run
(``tests/install/test_typed_user.py``). The replay goes to the path given as the first
argument."""

from __future__ import annotations

import sys

import numpy as np

from dragons_egg_env import dragons_egg_v0
from dragons_egg_env.dragons_egg_v0 import ObsDict, StepInfo, raw_env
from dragons_egg_env.replay import ReplayCheck, check_replay, replay


def play(env: raw_env) -> int:
    """Play the lowest legal action until the match ends; returns the moves made."""
    moves = 0
    for _agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        step_info: StepInfo = info
        if termination or truncation:
            env.step(None)
            continue
        seen: ObsDict = obs
        assert np.array_equal(seen["action_mask"], step_info["action_mask"])
        legal = env.legal_actions()
        assert legal[0] == int(seen["action_mask"].argmax())
        env.step(legal[0])
        moves += 1
    return moves


def main(path: str) -> None:
    env = dragons_egg_v0.env(num_players=3, num_rounds=2)
    env.reset(seed=1)
    table: raw_env = env.unwrapped  # the env itself, typed as the project's class
    hand: list[str] = table.hand("player_0")
    assert hand and table.phase() == "play"
    moves = play(env)
    scores: dict[str, float] = table.scores
    assert sorted(scores) == table.possible_agents
    assert abs(sum(scores.values())) < 1e-9  # every round is zero-sum (R27)
    assert table.num_agents == 0 and table.max_num_agents == 3
    order: list[str] = table.finish_order()
    table.save_replay(path)

    check: ReplayCheck = check_replay(path)
    assert check.finished and check.complete and check.steps == moves, check
    again = replay(path)
    assert again.scores == scores and again.replay_check is not None
    _, _, _, _, final = again.last(observe=False)
    assert "action_mask" in final
    print(f"{moves} moves; finish order {', '.join(order)}; scores {scores}")


if __name__ == "__main__":
    main(sys.argv[1])
