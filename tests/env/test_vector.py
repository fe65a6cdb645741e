"""The batched engine (dragons_egg_env.vector): bit-identical to the scalar engine, autoreset,
seeding, from_states/to_state, state(), replays, random_replays and bad input.

The differential checker is test support (``tests/vector_check.py``); the configurations it
and this file check come from ``RulesConfig``'s field metadata, so a new rule flag is checked
with no change here."""

import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

from vector_check import Checker, Figures, check, flag_values, state_diff

from dragons_egg_env import engine as E
from dragons_egg_env.actions import NUM_ACTIONS, PASS, describe
from dragons_egg_env.config import MAX_PLAYERS, ConfigError, RulesConfig
from dragons_egg_env.observation import Encoder
from dragons_egg_env.replay import replay
from dragons_egg_env.vector import VectorEngine, random_replays

ROOT = Path(__file__).resolve().parents[2]

def generated_configs():
    """Configurations made from the field metadata (``flag_values``), as many as the longest
    list of values (one per table size): each field's column cycles through its values, then
    is shuffled (``num_players`` stays in order), so that together they take every checked
    value of every field, in mixed combinations; and a padding ``max_players`` between n and
    8."""
    values = {name: flag_values(name) for name in RulesConfig.field_names()}
    count = max(map(len, values.values()))
    rng = random.Random(0)
    columns = {}
    for name, v in values.items():
        col = [v[j % len(v)] for j in range(count)]
        if name != "num_players":
            rng.shuffle(col)
        columns[name] = col
    out = []
    for j in range(count):
        flags = {name: col[j] for name, col in columns.items()}
        n = flags["num_players"]
        out.append((flags, n + (3 * j) % (MAX_PLAYERS - n + 1)))
    return out


#: Every checked value of every field of RulesConfig, spread over a few configurations.
CONFIGS = generated_configs()


def random_actions(eng_out, rng):
    """A uniformly random legal action per match from a step's masks."""
    return np.array([rng.choice(np.flatnonzero(m)) for m in eng_out.mask], dtype=np.int64)


@pytest.mark.parametrize("name", RulesConfig.field_names())
def test_the_configs_cover_every_value_of_every_flag(name):
    """Every field's checked values come from its metadata (both bools, every choice, an int's
    low and high, every table size) and the configurations take each of them."""
    info = RulesConfig.flag_info(name)
    values = flag_values(name)
    if info["kind"] == "bool":
        assert set(values) == {False, True}
    elif info["kind"] == "str":
        assert set(values) == set(info["choices"])
    else:
        assert values[0] == info["low"] and len(values) >= 2
        assert info["high"] is None or values[-1] == info["high"]
    for v in values:
        RulesConfig.check_value(name, v)
    seen = {getattr(RulesConfig(**flags), name) for flags, _ in CONFIGS}
    assert seen == set(values)
    assert {m for _, m in CONFIGS} >= {2, MAX_PLAYERS}


def test_every_table_size_is_checked():
    assert {flags["num_players"] for flags, _ in CONFIGS} == set(range(2, MAX_PLAYERS + 1))
    assert set(flag_values("tribute_asks")) >= {0, 1, 2, 3, 5, 10, 44}


@pytest.mark.parametrize("flags,max_players", CONFIGS,
                         ids=[f"n{f['num_players']}-m{m}" for f, m in CONFIGS])
def test_same_game_as_the_scalar_engine(flags, max_players):
    """Every step: the same legal masks, observations (float32 bits), acting seats, rewards,
    round results and scores; samples: other seats' observations, state(), to_state(),
    replays. (Breaking a rule in the kernel makes this fail.)"""
    fig = Figures()
    Checker(RulesConfig(**flags), max_players, batch=24, seed=flags["num_players"],
            figures=fig, sample=0.2).run(40)
    assert fig.total == 0, f"{dict(fig.diffs)}: {fig.first}"
    assert fig.matches >= 40 and fig.steps > 1000
    assert fig.seen["play"] > 0


def test_rare_rules_are_reached_and_agree():
    """Deadlocks (R24), out-of-turn offers (R12), locks (R10), Egg gifts (R33) and long
    tributes happen in the sample, and both engines agree on them."""
    fig = Figures()
    config = RulesConfig(num_players=3, num_rounds=4, pass_locks_out=True, tribute_asks=44,
                         egg_in_tribute=True)
    Checker(config, 3, batch=64, seed=11, figures=fig, sample=0.05).run(150)
    assert fig.total == 0, fig.first
    for what in ("complete", "ask", "give", "locked", "egg given back"):
        assert fig.seen[what] > 0, what
    fig2 = Figures()
    Checker(RulesConfig(num_players=2, num_rounds=2), 2, batch=64, seed=5,
            figures=fig2).run(200)
    assert fig2.total == 0, fig2.first
    assert fig.seen["deadlock"] + fig2.seen["deadlock"] > 0


def test_the_differential_check_over_random_configurations():
    """The checker's own run (``python tests/vector_check.py --matches 100000`` by hand) on a
    few hundred matches in groups of random table sizes and flags, drawn from the metadata."""
    fig = check(600, seed=3, batch=64, progress=0)
    assert fig.total == 0, f"{dict(fig.diffs)}: {fig.first}"
    assert fig.matches >= 600 and fig.groups >= 9


def test_the_checker_runs_as_a_command():
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "vector_check.py"),
                           "--matches", "12", "--batch", "6", "--seed", "2"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^matches \d+ ", proc.stdout, re.M), proc.stdout
    assert "differences: mask 0, obs 0, seat 0, rewards 0" in proc.stdout


# -- autoreset ----------------------------------------------------------------------------
def test_autoreset_reports_the_end_and_starts_a_new_match():
    eng = VectorEngine(6, num_players=3, num_rounds=2, seed=4)
    out = eng.reset()
    rng = np.random.default_rng(0)
    enc = Encoder(3, 3, 2)
    ended = 0
    for _ in range(3000):
        prev_episodes = eng.episodes
        out = eng.step(random_actions(out, rng))
        for b in np.flatnonzero(out.done):
            ended += 1
            assert out.round_ended[b] and sorted(out.round_order[b]) == [0, 1, 2]
            assert eng.episodes[b] == prev_episodes[b] + 1
            # the finished match: its replay gives the reported final scores and last round
            env = replay(eng.finished_replay(b))
            s = env.engine_state
            assert s.phase == E.DONE
            assert tuple(out.final_scores[b]) == tuple(s.scores)
            assert tuple(out.rewards[b]) == s.results[-1].rewards
            assert tuple(out.round_order[b]) == s.results[-1].order
            # the slot holds a new match: round 1, nothing played, scores zero
            new = eng.to_state(b)
            assert new.round_idx == 0 and new.played == 0 and new.scores == [0.0] * 3
            assert out.seat[b] == new.current
            assert np.array_equal(out.obs[b], enc.encode(new, new.current))
            assert eng.to_replay(b)["actions"] == []
        not_done = ~out.done
        assert not out.final_scores[not_done].any()
        assert (out.rewards[~out.round_ended] == 0).all()
        if ended >= 8:
            break
    assert ended >= 8


def test_the_finished_match_stays_retrievable_until_the_next_one_ends():
    eng = VectorEngine(1, num_players=2, num_rounds=1, seed=9)
    out = eng.reset()
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="no finished match"):
        eng.finished_replay(0)
    first = None
    while True:
        out = eng.step(random_actions(out, rng))
        if out.done[0]:
            if first is None:
                first = eng.finished_replay(0)
                continue
            assert eng.finished_replay(0) != first
            break
        if first is not None:
            assert eng.finished_replay(0) == first


# -- seeding ------------------------------------------------------------------------------
def test_same_seed_same_matches_bit_for_bit():
    a = VectorEngine(5, num_players=4, seed=123)
    b = VectorEngine(5, num_players=4, seed=123)
    oa, ob = a.reset(), b.reset()
    assert all(np.array_equal(x, y) for x, y in zip(oa, ob, strict=True))
    sa, sb = a.random_steps(400), b.random_steps(400)
    assert sa.steps == sb.steps and np.array_equal(sa.rewards, sb.rewards)
    assert np.array_equal(a.observations, b.observations)
    assert [a.to_replay(i) for i in range(5)] == [b.to_replay(i) for i in range(5)]
    # a match depends on the seed and its slot only, not on the batch size
    c = VectorEngine(2, num_players=4, seed=123)
    c.reset()
    c.random_steps(400)
    assert [c.to_replay(i) for i in range(2)] == [a.to_replay(i) for i in range(2)]
    # another seed, other deals; reset(seed=...) re-seeds
    d = VectorEngine(5, num_players=4, seed=124)
    d.reset()
    assert d.match_deals(0) != a.match_deals(0)
    d.reset(seed=123)
    e = VectorEngine(5, num_players=4, seed=123)
    e.reset()
    assert d.match_deals(3) == e.match_deals(3)


def test_deals_follow_r4():
    """Random deals split the 45 cards into hands that differ by at most one card, dealt from
    the seat left of the dealer (round 1: a drawn dealer; later: the last Egg holder)."""
    eng = VectorEngine(64, num_players=5, num_rounds=3, seed=2)
    eng.reset()
    for i in range(64):
        hands = eng.match_deals(i)[0]
        E.check_deal(hands, 5)
        sizes = [h.bit_count() for h in hands]
        dealer = eng.dealers[i]
        assert sizes == [9] * 5
        assert eng.to_state(i).dealer == dealer
    eng6 = VectorEngine(64, num_players=7, num_rounds=3, seed=2)
    eng6.reset()
    dealers = set()
    for i in range(64):
        hands = eng6.match_deals(i)[0]
        dealer = int(eng6.dealers[i])
        dealers.add(dealer)
        sizes = [h.bit_count() for h in hands]
        # 45 = 6 * 7 + 3: the three seats after the dealer get the extra cards
        extra = {(dealer + k) % 7 for k in (1, 2, 3)}
        assert sizes == [7 if q in extra else 6 for q in range(7)]
    assert len(dealers) > 3
    # later rounds: the previous round's Egg holder deals
    out = eng.reset()
    rng = np.random.default_rng(3)
    checked = 0
    while checked < 20:
        out = eng.step(random_actions(out, rng))
        for b in np.flatnonzero(out.round_ended & ~out.done):
            assert eng.dealers[b] == out.round_order[b][-1]
            checked += 1


# -- from_states / to_state / state() -------------------------------------------------------
def scalar_states(config, count, seed):
    """States reached by random scalar play: decision states of every phase, one right after
    a later round's deal (the tribute not begun) and one waiting for a deal."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        s = E.new_match(config)
        E.deal(s, E.random_deal(s, rng))
        stop = rng.randrange(400)
        k = 0
        while s.phase != E.DONE and k < stop:
            acts = E.legal_actions(s)
            E.step(s, acts[rng.randrange(len(acts))])
            if s.phase == E.DEAL:
                if rng.random() < 0.3:
                    break  # waiting for the next deal
                E.deal(s, E.random_deal(s, rng))
            k += 1
        if s.phase != E.DONE:
            out.append(s)
    return out


@pytest.mark.parametrize("n", [2, 4, 8])
def test_from_states_and_back(n):
    config = RulesConfig(num_players=n, num_rounds=3, pass_locks_out=n == 4,
                         egg_in_tribute=n == 8, tribute_asks=3)
    states = scalar_states(config, 40, seed=n)
    # a later round right after its deal, before the tribute
    s = E.new_match(config)
    rng = random.Random(0)
    E.deal(s, E.random_deal(s, rng))
    while s.round_idx == 0:
        acts = E.legal_actions(s)
        E.step(s, acts[rng.randrange(len(acts))])
    E.deal(s, E.random_deal(s, rng))
    assert s.phase == E.ASK
    states.append(s)
    assert any(x.phase == E.DEAL for x in states)
    eng = VectorEngine.from_states(states, seed=1)
    enc = Encoder(n, n, 3)
    senc = Encoder(n, n, 3, state=True)
    full = eng.state()
    for b, s in enumerate(states):
        if s.phase == E.DEAL:
            E.deal(s, eng.match_deals(b)[s.round_idx])  # the engine dealt it
            s.dealer = int(eng.dealers[b])
        assert state_diff(eng.to_state(b), s) == []
        assert eng.seats[b] == s.current
        assert np.flatnonzero(eng.masks[b]).tolist() == E.legal_actions(s)
        assert np.array_equal(eng.observations[b].view(np.uint32),
                              enc.encode(s, s.current).view(np.uint32))
        assert np.array_equal(full[b], senc.encode(s, 0))
        with pytest.raises(ValueError, match="from_states"):
            eng.to_replay(b)
    # and they play on alike
    rng = np.random.default_rng(2)
    out = None
    for _ in range(30):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in eng.masks])
        out = eng.step(acts)
        for b, s in enumerate(states):
            E.step(s, int(acts[b]))
            if out.done[b]:
                states[b] = eng.to_state(b)
            elif s.phase == E.DEAL:
                E.deal(s, eng.match_deals(b)[s.round_idx])
                s.dealer = int(eng.dealers[b])
            assert state_diff(eng.to_state(b), states[b]) == []


def test_to_state_round_trips_through_from_states():
    eng = VectorEngine(16, num_players=5, seed=8, tribute_asks=2)
    eng.reset()
    eng.random_steps(137)
    states = [eng.to_state(i) for i in range(16)]
    for s in states:
        E.check_state(s)
    again = VectorEngine.from_states(states)
    for i, s in enumerate(states):
        assert state_diff(again.to_state(i), s) == []
    assert np.array_equal(again.observations, eng.observations)
    assert np.array_equal(again.masks, eng.masks)
    assert np.array_equal(again.state(), eng.state())


def test_observe_any_seat_and_max_players_padding():
    eng = VectorEngine(8, num_players=3, max_players=6, seed=3)
    eng.reset()
    eng.random_steps(25)
    enc = Encoder(3, 6, 3)
    assert eng.obs_size == enc.size
    for seat in range(3):
        obs = eng.observe(np.full(8, seat))
        for b in range(8):
            assert np.array_equal(obs[b], enc.encode(eng.to_state(b), seat))
    assert eng.state().shape == (8, Encoder(3, 6, 3, state=True).size)


# -- replays ------------------------------------------------------------------------------
def test_replay_export_is_accepted_and_reproduced():
    eng = VectorEngine(4, num_players=4, seed=6)
    out = eng.reset()
    rng = np.random.default_rng(4)
    for _ in range(50):
        out = eng.step(random_actions(out, rng))
    for i in range(4):
        data = eng.to_replay(i)
        assert data["partial"] and not data["finished"]
        env = replay(data)
        assert state_diff(env.engine_state, _with_dealer(eng.to_state(i), env)) == []
        assert env.to_replay() == data
    # a finished one, with its scores
    done = 0
    while done < 4:
        out = eng.step(random_actions(out, rng))
        for b in np.flatnonzero(out.done):
            data = eng.finished_replay(b)
            assert data["finished"]
            env = replay(data)
            assert env.engine_state.scores == out.final_scores[b].tolist()
            done += 1


def _with_dealer(s, env):
    """The replayed env deals from recorded deals, which leaves ``dealer`` as it was."""
    s.dealer = env.engine_state.dealer
    return s


def test_random_replays():
    reps = random_replays(30, num_players=5, num_rounds=2, seed=7, tribute_asks=3,
                          pass_locks_out=True)
    assert len(reps) == 30
    assert reps == random_replays(30, num_players=5, num_rounds=2, seed=7, tribute_asks=3,
                                  pass_locks_out=True)
    assert reps != random_replays(30, num_players=5, num_rounds=2, seed=8, tribute_asks=3,
                                  pass_locks_out=True)
    for data in reps[::3]:
        assert data["finished"] and len(data["deals"]) == 2
        assert data["config"]["pass_locks_out"] is True
        env = replay(data)
        assert env.engine_state.phase == E.DONE
        assert env.to_replay() == data
    assert random_replays(0) == []
    assert len(random_replays(3, num_players=2, max_players=4)) == 3
    with pytest.raises(ConfigError):
        random_replays(2, bogus=True)


def test_random_steps_counts_and_long_logs():
    eng = VectorEngine(32, num_players=8, num_rounds=4, seed=5, tribute_asks=44)
    eng.reset()
    stats = eng.random_steps(2000)
    assert stats.steps == 32 * 2000
    assert stats.rounds > 0 and stats.matches > 0
    assert stats.rewards.shape == (32, 8)
    # the logs grew past their first size and the replays still play back
    for i in range(0, 32, 8):
        data = eng.finished_replay(i)
        assert replay(data).engine_state.phase == E.DONE


def test_supplied_deals():
    rng = random.Random(3)
    config = RulesConfig(num_players=4, num_rounds=2)
    deals = []
    for _ in range(3):
        s = E.new_match(config)
        deals.append([E.random_deal(s, rng), E.random_deal(s, rng)])
    eng = VectorEngine(3, config, seed=0)
    eng.reset(deals=np.array(deals, dtype=np.int64))
    for b in range(3):
        assert eng.match_deals(b) == [deals[b][0]]
        s = E.new_match(config)
        E.deal(s, deals[b][0])
        assert state_diff(eng.to_state(b), s) == []
    out = eng.reset(deals=np.array([d[0] for d in deals], dtype=np.int64))  # (B, n): round 1
    assert [eng.match_deals(b) for b in range(3)] == [[d[0]] for d in deals]
    assert out.obs.shape == (3, eng.obs_size)


# -- bad input ----------------------------------------------------------------------------
def test_bad_input():
    with pytest.raises(ConfigError, match="bogus"):
        VectorEngine(4, bogus=1)
    for bad in (0, -3, True, 2.5, "4"):
        with pytest.raises(ValueError, match="num_envs"):
            VectorEngine(bad)
    with pytest.raises(ValueError, match="max_players"):
        VectorEngine(2, num_players=5, max_players=4)
    with pytest.raises(ValueError, match="either a config or rule flags"):
        VectorEngine(2, RulesConfig(), num_players=3)
    eng = VectorEngine(4, num_players=3, seed=1)
    with pytest.raises(RuntimeError, match="reset"):
        eng.step(np.zeros(4, np.int64))
    out = eng.reset()
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        eng.step(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        eng.step(np.zeros((4, 1), np.int64))
    with pytest.raises(ValueError, match="integers"):
        eng.step(np.zeros(4, np.float64))
    with pytest.raises(ValueError, match=r"match 2: action 134 is outside"):
        eng.step(np.array([0, 0, NUM_ACTIONS, 0]))
    with pytest.raises(ValueError, match=r"match 0: action -1"):
        eng.step(np.array([-1, 0, 0, 0]))
    # an illegal action in one match: an error naming the match and the action, nothing moves
    acts = np.array([np.flatnonzero(m)[0] for m in out.mask])
    wrong = next(a for a in range(NUM_ACTIONS) if not out.mask[2, a])
    acts[2] = wrong
    before = eng.to_state(0)
    with pytest.raises(E.IllegalActionError,
                       match=rf"match 2: illegal action {wrong} \({re.escape(describe(wrong))}\)"):
        eng.step(acts)
    assert state_diff(eng.to_state(0), before) == []
    assert np.array_equal(eng.observations, out.obs)
    acts[2] = np.flatnonzero(out.mask[2])[0]
    eng.step(acts)  # fine after that
    with pytest.raises(ValueError, match="deals must have shape"):
        eng.reset(deals=np.zeros((4, 2), np.int64))
    with pytest.raises(E.DealError, match="match 1"):
        deals = np.array([[2**45 - 1 - 3, 1, 2]] * 4, dtype=np.int64)
        deals[1] = [2**45 - 1, 0, 0]
        eng.reset(deals=deals)
    with pytest.raises(ValueError, match="match index"):
        eng.to_state(4)
    with pytest.raises(ValueError, match="seats"):
        eng.observe(np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="at least one"):
        VectorEngine.from_states([])
    with pytest.raises(ValueError, match="another config"):
        VectorEngine.from_states([E.new_match(RulesConfig()),
                                  E.new_match(RulesConfig(num_rounds=2))])
    done = E.new_match(RulesConfig(num_players=2, num_rounds=1))
    E.random_playout(done, random.Random(0))
    with pytest.raises(ValueError, match="finished"):
        VectorEngine.from_states([done])
    with pytest.raises(ValueError, match="k must be"):
        eng.random_steps(-1)
    assert PASS == 0


def test_memory_per_match_is_under_4_kb():
    eng = VectorEngine(1024, num_players=4, record=False)
    mem = eng.memory_per_match()
    assert mem["engine"] + mem["observation"] < 4096
    assert mem["engine"] + mem["observation"] + mem["outputs"] < 4096


def test_only_the_vector_modules_import_numba():
    """Only vector.py and its kernels import numba, and no module of the package but the
    batched family (vector, _vector_kernels, vector_env) imports them
    (docs/architecture.md)."""
    for path in sorted((ROOT / "dragons_egg_env").glob("*.py")):
        text = path.read_text()
        if path.name in ("vector.py", "_vector_kernels.py"):
            continue
        assert not re.search(r"^\s*(import|from)\s+numba", text, re.M), path.name
        if path.name != "vector_env.py":
            assert not re.search(r"(import|from)\s+\.?_?vector", text), path.name


def test_step_rows_moves_only_the_given_matches():
    eng = VectorEngine(6, num_players=3, seed=11)
    eng.reset()
    twin = VectorEngine(6, num_players=3, seed=11)
    twin.reset()
    rows = np.array([1, 4])
    acts = np.array([eng.legal_actions(1)[0], eng.legal_actions(4)[-1]])
    before = eng.observations.copy()
    eng.step_rows(rows, acts)
    for b in range(6):
        if b in rows:
            continue
        assert np.array_equal(eng.observations[b], before[b])
        assert eng.to_state(b).__repr__() == twin.to_state(b).__repr__()
    # the moved matches equal a full step of the twin in those rows
    full = np.array([twin.legal_actions(b)[0] for b in range(6)])
    full[rows] = acts
    twin.step(full)
    for b in rows:
        assert np.array_equal(eng.observations[b], twin.observations[b])
        assert np.array_equal(eng.masks[b], twin.masks[b])
    illegal = int(np.flatnonzero(~eng.masks[4])[0])
    with pytest.raises(E.IllegalActionError, match="match 4"):
        eng.step_rows(np.array([4]), np.array([illegal]))
    with pytest.raises(ValueError, match="distinct match indices"):
        eng.step_rows(np.array([1, 1]), np.array([0, 0]))
