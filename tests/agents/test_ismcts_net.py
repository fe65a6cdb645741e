"""``ismcts-net``: ISMCTS with PUCT guided by the policy network (legal play, seeding, budgets,
options), and ``NetPolicy.logits_and_value``."""

import math
import random
import shutil
import time

import numpy as np
import pytest
from support import SHIPPED_V4

from dragons_egg.agents import (
    AgentSpecError,
    NetISMCTSAgent,
    available,
    check_spec_for_table,
    make_agent,
    parse_spec,
    table_limit,
)
from dragons_egg.agents.netpolicy import NetPolicy, cached_policy
from dragons_egg.agents.ppo import PREVIOUS, SHIPPED, CheckpointError
from dragons_egg.agents.runner import play_match
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.config import TABLE_SIZES, RulesConfig
from dragons_egg_env.observation import layout


def _recording(agent, log):
    """``agent`` with its ``act`` wrapped to append ``(legal count, action, iterations done,
    seconds)`` to ``log``."""
    act = agent.act

    def wrapped(obs, mask):
        t = time.perf_counter()
        a = act(obs, mask)
        log.append((int(np.count_nonzero(mask)), a, agent.iterations_done,
                    time.perf_counter() - t))
        return a

    agent.act = wrapped
    return agent


def test_registered_as_a_built_in_with_its_defaults():
    assert "ismcts-net" in available()
    assert parse_spec("ismcts-net") == ("ismcts-net", {})
    assert parse_spec("ismcts-net:iterations=50,c=2.5,depth=3,time=0.5") == (
        "ismcts-net", {"iterations": 50, "c": 2.5, "depth": 3, "time": 0.5})
    bot = make_agent("ismcts-net", seed=0)
    assert isinstance(bot, NetISMCTSAgent)
    assert (bot.path, bot.iterations, bot.time, bot.c, bot.depth) == (SHIPPED, 200, 0.0, 1.5, 0)
    assert bot.policy_players == 8 and table_limit("ismcts-net") == 8


@pytest.mark.parametrize("n,flags,iterations,depth,matches", [
    (2, {}, 20, 0, 2),
    (4, {"pass_locks_out": True}, 20, 0, 2),
    (4, {"tribute_asks": 3}, 20, 3, 2),
    # (one match: with 6 rows OpenBLAS may thread the head's matmul, slow on a busy machine)
    (6, {"tribute_asks": 3, "egg_in_tribute": True}, 10, 0, 1),
])
def test_plays_only_legal_moves_in_full_matches(n, flags, iterations, depth, matches):
    # raw_env raises on an illegal move, so finishing the matches is the check
    config = RulesConfig(num_players=n, num_rounds=2, **flags)
    spec = f"ismcts-net:iterations={iterations},depth={depth}"
    others = ["heuristic", "ismcts:iterations=20"]
    for m in range(matches):
        log = []
        agents = [_recording(make_agent(spec, seed=10 * m + k), log) if k % 2 == m % 2
                  else make_agent(others[(k // 2 + m) % 2], seed=k) for k in range(n)]
        rec = play_match(agents, config, seed=100 * n + m)
        assert len(rec.rounds) == 2 and abs(sum(rec.scores)) < 1e-9
        searched = [entry for entry in log if entry[0] > 1]
        assert searched, "no move of the search agent had a choice"
        assert all(done == iterations for _, _, done, _ in searched)


def _actions(seed_of, spec="ismcts-net:iterations=15", n=4, seed=7):
    """The actions of the search agents (seats 0 and 2, seeded by ``seed_of(seat)``) in one
    4-seat match against heuristics, and the root of the last search of seat 0."""
    config = RulesConfig(num_players=n, num_rounds=2)
    log = []
    agents = [_recording(make_agent(spec, seed=seed_of(k)), log) if k % 2 == 0
              else make_agent("heuristic", seed=k) for k in range(n)]
    rec = play_match(agents, config, seed=seed)
    return [a for _, a, _, _ in log], rec.scores, agents[0].last_root


def _fingerprint(node):
    """Every statistic of a search tree, in a canonical order."""
    out = [(sorted(node.visits.items()), sorted(node.avail.items()),
            sorted((a, round(w, 9)) for a, w in node.total.items()))]
    for a in sorted(node.children):
        out.append((a, _fingerprint(node.children[a])))
    return out


def test_same_seed_same_moves():
    first, scores, root = _actions(lambda k: 3 + k)
    again, scores2, root2 = _actions(lambda k: 3 + k)
    assert first == again and scores == scores2
    assert root is not None and _fingerprint(root) == _fingerprint(root2)
    # another seed samples other worlds: the trees differ (the moves may or may not)
    _, _, other = _actions(lambda k: 1000 + k)
    assert _fingerprint(other) != _fingerprint(root)


def test_iteration_budget_and_the_tree():
    """With ``iterations=N`` every move with a choice runs exactly N iterations, each of
    which visits one root action; a forced move is played without search."""
    config = RulesConfig(num_players=4, num_rounds=1)
    log = []
    bot = _recording(make_agent("ismcts-net:iterations=12", seed=5), log)
    roots = []
    act = bot.act

    def keep_root(obs, mask):
        a = act(obs, mask)
        if np.count_nonzero(mask) > 1:
            root = bot.last_root
            legal = set(np.flatnonzero(mask).tolist())
            assert sum(root.visits.values()) == 12
            assert set(root.visits) <= legal and a in root.visits
            assert all(root.avail[x] == 12 for x in legal)  # each legal at every iteration
            assert root.visits[a] == max(root.visits.values())
            assert math.isclose(sum(root.prior.values()), 1.0, rel_tol=1e-6)
            assert set(root.prior) == legal
            roots.append(root)
        return a

    bot.act = keep_root
    agents = [bot] + [make_agent("heuristic", seed=k) for k in range(1, 4)]
    play_match(agents, config, seed=11)
    assert roots
    assert all(done == 12 for legal, _, done, _ in log if legal > 1)
    assert all(done == 0 for legal, _, done, _ in log if legal == 1)


def test_time_budget():
    """``time=T`` replaces the iteration budget: a move takes about T (a generous margin on
    a loaded machine) and runs at least one iteration, even when T is tiny."""
    config = RulesConfig(num_players=3, num_rounds=1)
    for budget, cap in ((0.03, 0.03 + 1.0), (1e-6, 1.0)):
        log = []
        bot = _recording(make_agent(f"ismcts-net:time={budget},iterations=1", seed=2), log)
        agents = [bot] + [make_agent("heuristic", seed=k) for k in range(1, 3)]
        play_match(agents, config, seed=4)
        searched = [entry for entry in log if entry[0] > 1]
        assert searched
        assert all(done >= 1 and seconds <= cap for _, _, done, seconds in searched)
        if budget < 1e-3:  # the deadline has passed after the first iteration
            assert all(done == 1 for _, _, done, _ in searched)
        else:  # more than the iterations option asks for: the time budget decides
            assert max(done for _, _, done, _ in searched) > 1


@pytest.mark.parametrize("options,needle", [
    ("iterations=0", "ismcts-net: iterations must be an integer >= 1, got 0"),
    ("iterations=-3", "iterations must be an integer >= 1, got -3"),
    ("c=-1", "ismcts-net: c must be a number >= 0, got -1"),
    ("c=nan", "c must be a number >= 0, got nan"),
    ("depth=-1", "ismcts-net: depth must be an integer >= 0, got -1"),
    ("temperature=0", "ismcts-net: temperature must be a number > 0, got 0"),
    ("time=-0.5", "time must be in 0..3600 seconds, got -0.5"),
    ("time=inf", "time must be in 0..3600 seconds, got inf"),
    (f"path={PREVIOUS}", "is a Stable-Baselines3 checkpoint; ismcts-net needs a .npz policy "
                         "file with a value head"),
    ("path=/nope/policy.npz", "checkpoint /nope/policy.npz does not exist"),
    ("depth=two", "option depth expects int"),
])
def test_bad_options_are_clear_errors(options, needle):
    spec = f"ismcts-net:{options}"
    with pytest.raises(AgentSpecError) as exc:
        parse_spec(spec)  # when the spec is read, before any agent is built
    assert needle in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(AgentSpecError) as exc:
        make_agent(spec, seed=0)
    assert needle.removeprefix("ismcts-net: ") in str(exc.value)


def test_an_sb3_checkpoint_is_refused_by_content_not_name(tmp_path):
    disguised = shutil.copy(PREVIOUS, tmp_path / "policy.npz")
    with pytest.raises(AgentSpecError, match="holds a Stable-Baselines3 checkpoint"):
        parse_spec(f"ismcts-net:path={disguised}")
    with pytest.raises(ValueError, match="ismcts-net: path: .* is a Stable-Baselines3 "
                                         "checkpoint; ismcts-net needs a .npz policy file"):
        NetISMCTSAgent(seed=0, path=str(PREVIOUS))


def _plain_policy(max_players, seed=0, hidden=8):
    """A random policy without heads for tables of up to ``max_players``."""
    rng = np.random.default_rng(seed)
    size = layout(max_players).size

    def w(*shape):
        return rng.normal(0, 0.3, shape).astype(np.float32)

    return NetPolicy([(w(size, hidden), w(hidden))], (w(hidden, NUM_ACTIONS), w(NUM_ACTIONS)),
                     (w(hidden, 1), w(1)), {"max_players": max_players})


def test_a_policy_file_of_a_smaller_table(tmp_path):
    """Another policy file plays through the same search; its table size is checked when
    the spec is read and when a match starts, as for ppo."""
    path = _plain_policy(4).save(tmp_path / "four.npz")
    spec = f"ismcts-net:path={path},iterations=8"
    assert table_limit(spec) == 4
    check_spec_for_table(spec, 4)
    with pytest.raises(AgentSpecError, match="plays tables of up to 4 players"):
        check_spec_for_table(spec, 5)
    config = RulesConfig(num_players=3, num_rounds=1)
    agents = [make_agent(spec, seed=1)] + [make_agent("heuristic", seed=k) for k in (1, 2)]
    rec = play_match(agents, config, seed=3)
    assert len(rec.rounds) == 1
    bot = make_agent(spec, seed=1)
    with pytest.raises(CheckpointError, match="trained for tables of up to 4 players and "
                                              "cannot play a table of 5"):
        bot.start_match(0, RulesConfig(num_players=5))


def _random_observations(max_players, rows, rng):
    """Random observation vectors whose ``seat_present`` bits name a real table size (the
    heads read it), with random action masks (at least one legal action each)."""
    lay = layout(max_players)
    obs = rng.random((rows, lay.size), dtype=np.float32)
    binary = obs[:, :lay.num_binary] < 0.3
    obs[:, :lay.num_binary] = binary
    seats = lay.field("seat_present")
    obs[:, seats.start:seats.start + seats.size] = 0.0
    sizes = [s for s in TABLE_SIZES if s <= max_players]
    for r in range(rows):
        obs[r, seats.start:seats.start + sizes[r % len(sizes)]] = 1.0
    mask = rng.random((rows, NUM_ACTIONS)) < 0.2
    mask[:, 0] = True
    return obs, mask


@pytest.mark.parametrize("which", ["shipped", "v4", "plain"])
def test_logits_and_value_equal_logits_and_value(which):
    policy = {"shipped": lambda: cached_policy(SHIPPED), "v4": lambda: cached_policy(SHIPPED_V4),
              "plain": lambda: _plain_policy(6, seed=3)}[which]()
    if which == "v4":
        assert policy.pi_counts is not None and policy.pi_gate is not None  # heads and all
    rng = np.random.default_rng(0)
    obs, mask = _random_observations(policy.max_players, 21, rng)
    logits, value = policy.logits_and_value(obs, mask)
    assert logits.shape == (21, NUM_ACTIONS) and value.shape == (21,)
    assert np.array_equal(logits, policy.logits(obs, mask))
    assert np.array_equal(value, policy.value(obs))
    assert np.isneginf(logits[~mask]).all() and np.isfinite(logits[mask]).all()
    assert len(np.unique(value)) > 1  # the observations differ, so do their values
    # one observation (no batch axis) and one mask for many rows
    z, v = policy.logits_and_value(obs[5], mask[5])
    assert z.shape == (NUM_ACTIONS,) and v.shape == ()
    assert np.array_equal(z, policy.logits(obs[5], mask[5])) and v == policy.value(obs[5])
    z, _ = policy.logits_and_value(obs, mask[0])
    assert np.array_equal(z, policy.logits(obs, mask[0]))
    # row: the logits of one row (the mover's), the values of all
    # (the row's trunk is the batch's: equal up to the rounding of another matrix kernel)
    z, v = policy.logits_and_value(obs, mask[7], row=7)
    assert np.allclose(z, policy.logits(obs[7], mask[7]), rtol=1e-5, atol=1e-5)
    assert np.isneginf(z[~mask[7]]).all()
    assert np.array_equal(v, policy.value(obs))
    with pytest.raises(ValueError, match="pad it first"):
        policy.logits_and_value(obs[:, :layout(2).size], mask)


def test_the_prior_and_values_come_from_the_network():
    """The root's prior is the softmax of the network's masked logits for the real (padded)
    observation, and its first-play value the network's value of it."""
    from dragons_egg_env import dragons_egg_v0
    from dragons_egg_env.observation import pad

    env = dragons_egg_v0.raw_env(num_players=4)
    env.reset(seed=5)
    rng = random.Random(0)
    bot = make_agent("ismcts-net:iterations=10", seed=0)
    bot.start_match(0, RulesConfig(num_players=4), 4)
    checked = 0
    while checked < 3:
        o = env.observe(env.agent_selection)
        obs, mask = o["observation"], o["action_mask"]
        legal = np.flatnonzero(mask)
        if len(legal) > 1:
            bot.act(obs, mask)
            z, v = bot.net.logits_and_value(pad(obs, 4, 8), mask.astype(bool))
            p = np.exp(z[legal] - z[legal].max())
            p /= p.sum()
            root = bot.last_root
            assert np.allclose([root.prior[a] for a in legal], p, atol=1e-6)
            assert math.isclose(root.fpu, float(v), rel_tol=1e-6)
            # a temperature above 1 flattens the prior: softmax(z / T)
            hot = make_agent("ismcts-net:iterations=2,temperature=3", seed=0)
            hot.start_match(0, RulesConfig(num_players=4), 4)
            hot.act(obs, mask)
            q = np.exp((z[legal] - z[legal].max()) / 3)
            q /= q.sum()
            assert np.allclose([hot.last_root.prior[a] for a in legal], q, atol=1e-6)
            assert q.max() < p.max() or p.max() == pytest.approx(1 / len(legal))
            checked += 1
        env.step(int(legal[rng.randrange(len(legal))]))


def test_depth_values_leaves_after_greedy_moves():
    """``depth`` plays the network's moves before a leaf is valued: same seed, same sampled
    worlds and the same root prior, but other leaf values than ``depth=0``."""
    from dragons_egg_env import dragons_egg_v0

    env = dragons_egg_v0.raw_env(num_players=4)
    env.reset(seed=9)
    rng = random.Random(1)
    while True:
        o = env.observe(env.agent_selection)
        legal = np.flatnonzero(o["action_mask"])
        if len(legal) > 2:
            break
        env.step(int(legal[rng.randrange(len(legal))]))
    roots = []
    for depth in (0, 0, 4):
        bot = make_agent(f"ismcts-net:iterations=30,depth={depth}", seed=3)
        bot.start_match(0, RulesConfig(num_players=4), 4)
        bot.act(o["observation"], o["action_mask"])
        assert bot.iterations_done == 30 and sum(bot.last_root.visits.values()) == 30
        roots.append(bot.last_root)
    assert roots[0].prior == roots[2].prior and roots[0].fpu == roots[2].fpu
    assert _fingerprint(roots[0]) == _fingerprint(roots[1])
    assert _fingerprint(roots[0]) != _fingerprint(roots[2])
