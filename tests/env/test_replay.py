"""Replays: export as JSON, play back exactly, reject tampering with the step named."""

import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from support import random_match

from dragons_egg_env import actions as A
from dragons_egg_env import dragons_egg_v0
from dragons_egg_env.replay import (
    FIELDS,
    Move,
    ReplayCheck,
    ReplayError,
    ReplayWarning,
    build_replay,
    check_replay,
    exact_scores,
    iter_replay,
    load_replay,
    partial_replay,
    replay,
    replay_digest,
    replay_moves,
)


def finished_env(n=4, rounds=3, seed=21, **flags):
    env = dragons_egg_v0.env(num_players=n, num_rounds=rounds, **flags)
    env.reset(seed=seed)
    random_match(env, random.Random(seed))
    return env


@pytest.mark.parametrize("n,flags", [(2, {}), (4, {}), (5, {"egg_in_tribute": True}),
                                     (8, {"pass_locks_out": True, "tribute_asks": 3})])
def test_round_trip_through_a_file(tmp_path, n, flags):
    env = finished_env(n=n, **flags)
    path = tmp_path / "match.json"
    env.unwrapped.save_replay(str(path))
    data = json.loads(path.read_text())
    assert data["finished"] and len(data["deals"]) == 3
    again = replay(path)
    a, b = env.unwrapped.engine_state, again.engine_state
    assert a.results == b.results
    assert a.scores == b.scores
    assert a.hands == b.hands
    assert again.to_replay() == data
    for agent in env.possible_agents:
        assert np.array_equal(env.unwrapped._encoder.encode(a, int(agent[7:])),
                              again._encoder.encode(b, int(agent[7:])))


def test_unfinished_match_replays_to_the_same_point():
    env = dragons_egg_v0.env(num_players=3)
    env.reset(seed=4)
    rng = random.Random(0)
    for _ in range(57):
        obs = env.observe(env.agent_selection)
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(legal[rng.randrange(len(legal))]))
    data = json.loads(json.dumps(env.unwrapped.to_replay()))
    assert not data["finished"] and len(data["actions"]) == 57
    again = replay(data)
    assert again.agent_selection == env.agent_selection
    assert again.hand(again.agent_selection) == env.unwrapped.hand(env.agent_selection)
    assert again.pile() == env.unwrapped.pile()
    # and it can be played on from there
    again.step(again.legal_actions()[0])


def test_stepping_through_a_replay():
    env = finished_env(n=3, rounds=1)
    data = env.unwrapped.to_replay()
    steps = [k for k, _ in iter_replay(data)]
    assert steps == list(range(len(data["actions"]) + 1))


def test_tampered_action_is_rejected_with_its_step():
    env = finished_env()
    data = env.unwrapped.to_replay()
    # Find a step where some other action would be illegal and swap it in.
    for k, (agent, action) in enumerate(data["actions"]):  # noqa: B007 (agent is read after the loop)
        if action != 0 and k > 5:
            break
    tampered = json.loads(json.dumps(data))
    tampered["actions"][k][1] = 133  # give(EGG): never legal by default
    with pytest.raises(ReplayError, match=f"step {k}: action 133 \\(give EGG\\) by {agent} "
                                          "is not legal"):
        replay(tampered)
    wrong_agent = json.loads(json.dumps(data))
    wrong_agent["actions"][3][0] = "player_9"
    with pytest.raises(ReplayError, match="step 3: the replay says 'player_9' acts"):
        replay(wrong_agent)
    too_long = json.loads(json.dumps(data))
    too_long["actions"].append(too_long["actions"][-1])
    with pytest.raises(ReplayError, match="already over"):
        replay(too_long)


def test_replay_seed_reproduces_matches_without_a_given_seed():
    env = dragons_egg_v0.env()
    first = []
    for k in range(3):  # a first unseeded reset, then resets that continue the generator
        env.reset()
        random_match(env, random.Random(k))
        first.append(env.unwrapped.to_replay())
    for data in first:
        assert isinstance(data["seed"], int)
        other = dragons_egg_v0.env()
        other.reset(seed=data["seed"])
        random_match(other, random.Random(first.index(data)))
        assert other.unwrapped.to_replay()["deals"] == data["deals"]
    # A seeded reset followed by unseeded ones is reproducible as a whole.
    a, b = dragons_egg_v0.env(), dragons_egg_v0.env()
    for e in (a, b):
        e.reset(seed=9)
        e.reset()
    assert a.unwrapped.to_replay()["seed"] == b.unwrapped.to_replay()["seed"] != 9


# -- replays that cannot lie ------------------------------------------------------------------
def copy(data):
    return json.loads(json.dumps(data))


def as_version_1(data):
    """``data`` as the writer before version 2 wrote it (no scores, digest or partial; the
    illegal move apart from the actions)."""
    old = {k: v for k, v in copy(data).items() if k not in ("partial", "scores", "digest")}
    old["version"] = 1
    if old["illegal_move"] is not None:
        old["actions"] = old["actions"][:-1]
    return old


def test_v2_records_scores_digest_and_how_it_ended():
    env = finished_env(n=4)
    data = env.unwrapped.to_replay()
    assert list(data) == list(FIELDS)
    assert data["version"] == 2 and data["finished"] and not data["partial"]
    assert data["illegal_move"] is None
    assert [Fraction(x) for x in data["scores"]] == [
        Fraction(x).limit_denominator(3) for x in env.unwrapped.engine_state.scores]
    assert sum(Fraction(x) for x in data["scores"]) == 0
    assert data["digest"] == replay_digest(data) and data["digest"].startswith("sha256:")
    check = replay(data).replay_check
    assert isinstance(check, ReplayCheck) and check.complete and check.finished
    assert not check.partial and check.version == 2 and check.steps == len(data["actions"])
    assert check_replay(data) == check


@pytest.mark.parametrize("cut", [1, 2, 7])
def test_actions_cut_inside_the_last_round_are_rejected_naming_finished(cut):
    data = finished_env(n=4).unwrapped.to_replay()
    short = dict(copy(data), actions=data["actions"][:-cut])
    with pytest.raises(ReplayError, match="field 'finished' says every round was played, but its "
                                          f"{len(data['actions']) - cut} moves stop in round 3 "
                                          "of 3") as exc:
        replay(short)
    assert exc.value.field == "finished"
    # Owning up to the cut is not enough: the scores and the digest still tell.
    honest = dict(short, finished=False, partial=True)
    with pytest.raises(ReplayError, match="field '(scores|digest)'"):
        replay(honest)
    # ... nor for an old file, whose 'finished' flag is now checked.
    with pytest.raises(ReplayError, match="field 'finished'"):
        replay(dict(as_version_1(data), actions=data["actions"][:-cut]))


def test_every_single_legal_action_swap_is_rejected():
    env = finished_env(n=3, rounds=2, seed=5)
    data = copy(env.unwrapped.to_replay())
    probe = dragons_egg_v0.raw_env(**data["config"])
    probe.reset(seed=data["seed"], options={"deals": data["deals"]})
    swaps = 0
    by_field = {}
    for k, (_agent, action) in enumerate(data["actions"]):
        for other in probe.legal_actions():
            if other == action:
                continue
            swapped = copy(data)
            swapped["actions"][k][1] = other
            with pytest.raises(ReplayError) as exc:
                replay(swapped)
            swaps += 1
            key = exc.value.field or "step"
            by_field[key] = by_field.get(key, 0) + 1
        probe.step(action)
    assert swaps > 100
    assert by_field.get("digest", 0) > 0  # swaps the play itself cannot tell from the original


@pytest.mark.parametrize("field,value,needle", [
    ("scores", ["1", "-1", "0", "0"], "field 'scores' is \\['1', '-1', '0', '0'\\], but the "
                                      "moves give"),
    ("finished", False, "field 'finished' says the match is not over"),
    ("partial", True, "field 'partial' is true, but the match is over"),
    ("digest", "sha256:" + "0" * 64, "field 'digest' does not match the play"),
    ("seed", 12345, "field 'digest'"),
    ("max_players", 8, "field 'digest'"),
])
def test_a_record_that_the_play_does_not_reproduce_names_its_field(field, value, needle):
    data = copy(finished_env(n=4).unwrapped.to_replay())
    with pytest.raises(ReplayError, match=needle) as exc:
        replay({**data, field: value})
    assert exc.value.field == ("digest" if field in ("seed", "max_players") else field)


def test_partial_replays_say_so():
    env = dragons_egg_v0.env(num_players=3, num_rounds=2)
    env.reset(seed=4)
    for _ in range(30):
        env.step(env.unwrapped.legal_actions()[-1])
    data = copy(env.unwrapped.to_replay())
    assert data["partial"] and not data["finished"]
    check = replay(data).replay_check
    assert check.partial and not check.finished and check.complete
    assert "partial (saved before its end)" in str(check)
    lying = dict(data, finished=True, partial=False)
    with pytest.raises(ReplayError, match="field 'finished' says every round was played"):
        replay(lying)
    with pytest.raises(ReplayError, match="field 'partial' is false, but the match goes on"):
        replay(dict(data, partial=False))


def test_partial_replay_cuts_a_replay_properly():
    data = finished_env(n=3, rounds=1).unwrapped.to_replay()
    part = partial_replay(data, 6)
    assert part["partial"] and part["actions"] == data["actions"][:6]
    assert replay(part).replay_check.partial
    assert partial_replay(data, len(data["actions"])) == data
    with pytest.raises(ValueError, match="num_moves must be an integer in 0.."):
        partial_replay(data, len(data["actions"]) + 1)


def illegal_end(n=4, seed=3, moves=9):
    env = dragons_egg_v0.env(num_players=n)
    env.reset(seed=seed)
    for _ in range(moves):
        env.step(env.unwrapped.legal_actions()[0])
    offender = env.agent_selection
    bad = next(a for a in range(A.NUM_ACTIONS) if a not in env.unwrapped.legal_actions())
    env.step(bad)
    return env, offender, bad


def test_a_match_ended_by_an_illegal_move_replays_to_that_end(tmp_path):
    env, offender, bad = illegal_end()
    assert env.phase() == "done" and env._cumulative_rewards[offender] == -1.0
    path = tmp_path / "illegal.json"
    env.unwrapped.save_replay(path)
    data = json.loads(path.read_text())
    assert data["illegal_move"] == [offender, bad] == data["actions"][-1]
    assert not data["finished"] and not data["partial"] and len(data["actions"]) == 10
    again = replay(path)
    assert again.phase() == "done" and again.illegal_move == (offender, bad)
    assert again._cumulative_rewards[offender] == -1.0
    assert all(again._cumulative_rewards[a] == 0.0 for a in again.agents if a != offender)
    assert all(again.terminations.values()) and again.legal_actions() == []
    assert again.to_replay() == data
    assert again.replay_check.illegal_move == (offender, bad)
    assert "ended by an illegal move of " + offender in str(again.replay_check)
    moves = replay_moves(data)
    assert [m.illegal for m in moves] == [False] * 9 + [True]
    assert moves[-1] == Move(offender, bad, True)
    steps = [k for k, _ in iter_replay(data)]
    assert steps == list(range(11))


def test_illegal_move_claims_are_checked():
    env, offender, bad = illegal_end()
    data = copy(env.unwrapped.to_replay())
    wrong = copy(data)
    wrong["illegal_move"] = wrong["actions"][-2]
    with pytest.raises(ReplayError, match="field 'illegal_move' .* must repeat the last action"):
        replay(wrong)
    legal = finished_env(n=4).unwrapped.to_replay()
    legal = dict(copy(legal), illegal_move=legal["actions"][-1], finished=False)
    with pytest.raises(ReplayError, match="field 'illegal_move' says action .* ended the match, "
                                          "but it is legal"):
        replay(legal)
    unflagged = dict(copy(data), illegal_move=None)
    with pytest.raises(ReplayError, match=f"step 9: action {bad} .* is not legal"):
        replay(unflagged)


def test_version_1_files_still_load_and_say_what_they_cannot_prove(tmp_path):
    data = finished_env(n=4).unwrapped.to_replay()
    old = as_version_1(data)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    with pytest.warns(ReplayWarning, match="version 1 file: its moves are legal and its "
                                           "'finished' flag holds, but it records no final "
                                           "scores and no digest"):
        env = replay(path)
    check = env.replay_check
    assert check.version == 1 and check.finished and not check.complete
    assert check.unverified == ("scores", "digest") and check.source == str(path)
    assert env.to_replay() == data  # the same match, now with everything recorded
    with pytest.warns(ReplayWarning):
        assert [k for k, _ in iter_replay(load_replay(path))][-1] == len(old["actions"])
    # an old file of a match that env() ended for an illegal move
    env_ill, offender, bad = illegal_end()
    old_ill = as_version_1(env_ill.unwrapped.to_replay())
    assert old_ill["actions"][-1] != [offender, bad]
    with pytest.warns(ReplayWarning):
        again = replay(old_ill)
    assert again.phase() == "done" and again._cumulative_rewards[offender] == -1.0
    assert replay_moves(old_ill)[-1] == Move(offender, bad, True)
    # a negative seed in an old file meant its absolute value
    with pytest.warns(ReplayWarning):
        assert replay(dict(old, seed=-old["seed"])).engine_state.scores == \
            env.engine_state.scores


def test_build_replay_is_what_the_env_writes():
    """The batched engine writes its replays with ``build_replay``; from the same record it
    must give the env's replay exactly."""
    env = finished_env(n=5)
    u = env.unwrapped
    s = u.engine_state
    actions = [(int(a[7:]), b) for a, b in (tuple(x) for x in u.to_replay()["actions"])]
    built = build_replay(u.config, u.max_players, u._seed, u.deals, actions, s.scores,
                         finished=True)
    assert built == u.to_replay()
    assert build_replay(u.config.to_dict(), None, np.int64(u._seed), u.deals, actions,
                        [str(Fraction(x).limit_denominator(4)) for x in s.scores],
                        finished=True) == built
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        build_replay(u.config, 5, -1, u.deals, actions, s.scores, finished=True)
    with pytest.raises(ValueError, match="not a multiple of 1/4"):
        build_replay(u.config, 5, 1, u.deals, actions, [0.1] * 5, finished=True)
    with pytest.raises(ValueError, match="scores has 4 entries; the table has 5 seats"):
        build_replay(u.config, 5, 1, u.deals, actions, s.scores[:4], finished=True)


def test_exact_scores():
    assert exact_scores([1.0, 1 / 3, -1 / 3, -1.0], 4) == ["1", "1/3", "-1/3", "-1"]
    assert exact_scores([Fraction(4, 3), "-4/3", 0], 3) == ["4/3", "-4/3", "0"]
    assert exact_scores([sum([1 / 3] * 300)] * 4, 4) == ["100"] * 4  # float sums drift


def test_save_replay_never_damages_an_existing_file(tmp_path, monkeypatch):
    env = finished_env(n=3, rounds=1)
    path = tmp_path / "match.json"
    path.write_text("precious")
    real = env.unwrapped.to_replay

    def broken():  # a value JSON cannot write, deep inside the dict
        return {**real(), "actions": [["player_0", object()]]}

    monkeypatch.setattr(env.unwrapped, "to_replay", broken)
    with pytest.raises(TypeError):
        env.unwrapped.save_replay(str(path))
    assert path.read_text() == "precious"
    monkeypatch.setattr(env.unwrapped, "to_replay", real)

    import os

    def failing_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space left"):
        env.unwrapped.save_replay(path)
    monkeypatch.undo()
    assert path.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["match.json"]  # no temporary left
    env.unwrapped.save_replay(path)
    assert replay(path).to_replay() == real()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["match.json"]


@pytest.mark.parametrize("content,needle", [
    (b"\xff\xfe{}", "is not UTF-8 text"),
    (b'{"format": "dragons-egg-replay", "version": 2, "env": "dragons_egg_v0", "seed": [1]}',
     "has no field"),
    (b"[]", "a replay is a JSON object, got a JSON list"),
    (b"[1, 2]", "a replay is a JSON object, got a JSON list"),
    (b"{not json", "is not valid JSON"),
    (b"1" * 5000, "is not valid JSON"),
    (b"[" * 100000, "is not valid JSON"),
])
def test_every_load_error_is_a_replay_error_naming_the_file(tmp_path, content, needle):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    for load in (load_replay, replay, check_replay, iter_replay, replay_moves):
        with pytest.raises(ReplayError, match=needle) as exc:
            load(path) if load is not replay_moves else load(load_replay(path))
        assert str(exc.value).startswith(f"replay {path}: ")
        assert exc.value.source == str(path)


@pytest.mark.parametrize("change,needle", [
    ({"seed": [1, 2]}, "field 'seed' must be a non-negative integer, got \\[1, 2\\] \\(list\\)"),
    ({"seed": -4}, "field 'seed' must be a non-negative integer"),
    ({"seed": 4.0}, "field 'seed' must be a non-negative integer"),
    ({"version": 1.0}, "unsupported replay version 1.0 \\(number\\)"),
    ({"version": True}, "unsupported replay version True \\(boolean\\)"),
    ({"version": 2.0}, "unsupported replay version 2.0 \\(number\\)"),
    ({"version": "2"}, "unsupported replay version '2' \\(string\\)"),
    ({"version": 3}, "unsupported replay version 3 \\(integer\\): this library reads versions "
                     "1 and 2"),
    ({"env": "other_v0"}, "a replay of env 'other_v0'"),
    ({"extra": 1}, "unknown field\\(s\\) 'extra'"),
    ({"config": [1]}, "field 'config' must be an object"),
    ({"config": {"num_players": 4, "render_mode": "human"}}, "config is invalid: unknown rule "
                                                               "flag"),
    ({"max_players": True}, "field 'max_players' must be an integer"),
    ({"max_players": 3}, "config is invalid: max_players"),
    ({"deals": "1E"}, "field 'deals' must be a list"),
    ({"deals": [[["1E"]] * 4]}, "deals are invalid"),
    ({"deals": [[[["1E"]]] * 4]}, "deals are invalid"),
    ({"actions": {"a": 1}}, "field 'actions' must be a list"),
    ({"actions": [["player_0", 1.0]]}, "step 0: malformed action entry"),
    ({"actions": [["player_0", True]]}, "step 0: malformed action entry"),
    ({"illegal_move": 3}, "field 'illegal_move' must be null or \\[agent, action\\]"),
    ({"finished": "yes"}, "field 'finished' must be true or false"),
    ({"scores": [1, 0]}, "field 'scores' must be a list of exact scores in strings"),
    ({"digest": "md5:00"}, "field 'digest' must be a string 'sha256:<hex>'"),
])
def test_malformed_fields_are_named(tmp_path, change, needle):
    data = copy(finished_env(n=4, rounds=1).unwrapped.to_replay())
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**data, **change}))
    with pytest.raises(ReplayError, match=needle) as exc:
        replay(path)
    assert str(exc.value).startswith(f"replay {path}: ")
    with pytest.raises(ReplayError, match=needle):
        replay({**data, **change})


def test_missing_fields_are_named():
    data = copy(finished_env(n=3, rounds=1).unwrapped.to_replay())
    for key in FIELDS[3:]:
        broken = {k: v for k, v in data.items() if k != key}
        with pytest.raises(ReplayError, match=f"has no field '{key}'") as exc:
            replay(broken)
        assert exc.value.field == key


def test_a_replay_is_a_dict_or_a_path():
    with pytest.raises(ReplayError, match="a replay is a dict or a path to a JSON file, got list"):
        replay([1, 2])


def test_iter_replay_checks_everything_before_the_first_step():
    data = copy(finished_env(n=3, rounds=1).unwrapped.to_replay())
    data["scores"] = ["0", "0", "0"]
    with pytest.raises(ReplayError, match="field 'scores'"):
        iter_replay(data)  # raised by the call itself: a viewer shows nothing of it


def test_random_corruptions_are_replay_errors():
    """Whatever is changed in a replay, loading it raises a ReplayError or replays (and then
    reproduces the same record)."""
    data = copy(finished_env(n=3, rounds=2, seed=8).unwrapped.to_replay())
    rng = random.Random(0)
    values = [None, True, -1, 0, 1, 2, 3.5, 2**70, "x", "player_1", [], [1], {}, {"a": 1},
              ["player_0", 0], [[]], "7F"]

    def paths(x, prefix=()):
        yield prefix
        if isinstance(x, dict):
            for k, v in x.items():
                yield from paths(v, prefix + (k,))
        elif isinstance(x, list) and x:
            for i in rng.sample(range(len(x)), min(3, len(x))):
                yield from paths(x[i], prefix + (i,))

    targets = list(paths(data))[1:]
    for _ in range(400):
        bad = copy(data)
        where = rng.choice(targets)
        node = bad
        for key in where[:-1]:
            node = node[key]
        node[where[-1]] = copy(rng.choice(values)) if rng.random() < 0.9 else None
        try:
            env = replay(bad)
        except ReplayError:
            continue
        assert env.to_replay() == bad


V1_FILES = Path(__file__).parent / "replays_v1"  # written by the version 1 writer (0.2.0)


def test_files_of_the_version_1_writer_load():
    with pytest.warns(ReplayWarning, match="version 1 file"):
        done = replay(V1_FILES / "finished.json")
    assert done.phase() == "done" and done.scores == {"player_0": 2.0, "player_1": -2.0}
    assert done.replay_check.finished and done.replay_check.unverified == ("scores", "digest")
    with pytest.warns(ReplayWarning):
        part = replay(V1_FILES / "unfinished.json")
    assert part.replay_check.partial and len(part.to_replay()["actions"]) == 6
    with pytest.warns(ReplayWarning):
        ill = replay(V1_FILES / "illegal.json")
    assert ill.phase() == "done" and ill.illegal_move == ("player_0", 1)
    assert ill._cumulative_rewards["player_0"] == -1.0
    assert replay_moves(load_replay(V1_FILES / "illegal.json"))[-1] == Move("player_0", 1, True)
    cut = json.loads((V1_FILES / "finished.json").read_text())
    cut["actions"] = cut["actions"][:-1]
    with pytest.raises(ReplayError, match="field 'finished' says every round was played"):
        replay(cut)
