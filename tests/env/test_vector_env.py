"""The single-learner Gymnasium vector env (dragons_egg_env.vector_env) and the agent adapter
(dragons_egg.agents.batched): rewards and episode returns, seat draws, seeding, opponents, replays of the
played matches through the scalar engine, autoreset infos and bad input."""

from collections import Counter, defaultdict

import numpy as np
import pytest

pytest.importorskip("numba")

from gymnasium.vector import AutoresetMode

from dragons_egg.agents.base import Agent
from dragons_egg.agents.batched import AgentPolicy
from dragons_egg.agents.heuristic import HeuristicAgent
from dragons_egg_env.engine import IllegalActionError
from dragons_egg_env.replay import replay
from dragons_egg_env.vector_env import MatchAwarePolicy, SingleAgentVectorEnv


class RandomPolicy:
    """A batched uniformly random legal policy (a plain callable), counting its calls."""

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.calls = 0
        self.rows = 0

    def __call__(self, obs, mask):
        assert obs.dtype == np.float32 and mask.dtype == np.bool_
        assert obs.shape[0] == mask.shape[0] >= 1
        self.calls += 1
        self.rows += len(mask)
        return np.array([self.rng.choice(np.flatnonzero(m)) for m in mask], dtype=np.int64)


class Recorder(RandomPolicy):
    """A match-aware random policy that records what it was asked and answered."""

    def __init__(self, seed=0):
        super().__init__(seed)
        self.started = []       # (match, seats it plays)
        self.moves = defaultdict(list)  # match -> [(seat, action)] of the current match
        self.rounds = Counter()
        self.finished = defaultdict(list)  # match -> moves of each earlier match in the slot

    def start_matches(self, matches, seats, config, max_players):
        for b, row in zip(matches, seats, strict=True):
            self.started.append((int(b), tuple(np.flatnonzero(row))))
            self.finished[int(b)].append(self.moves[int(b)])
            self.moves[int(b)] = []

    def act_rows(self, obs, mask, matches, seats):
        acts = self(obs, mask)
        for b, s, a in zip(matches, seats, acts, strict=True):
            self.moves[int(b)].append((int(s), int(a)))
        return acts

    def end_rounds(self, matches, results):
        for b, res in zip(matches, results, strict=True):
            assert set(res) == {"round", "finish_order", "dragon", "egg", "deadlock"}
            assert res["dragon"] == res["finish_order"][0]
            self.rounds[int(b)] += 1


def random_learner(env, rng):
    m = env.action_masks()
    assert m.shape == (env.num_envs, 134) and m.dtype == np.bool_ and m.any(axis=1).all()
    return np.array([rng.choice(np.flatnonzero(r)) for r in m])


def run(env, steps, seed=0):
    """Step ``steps`` times with random legal learner actions, yielding each step (lazily,
    so the env's state is that of the step being looked at)."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        yield env.step(random_learner(env, rng))


def test_spaces_and_autoreset_mode():
    env = SingleAgentVectorEnv(3, [RandomPolicy()], num_players=5, max_players=6, seed=0)
    assert env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert env.single_observation_space.shape == (env.engine.obs_size,)
    assert env.single_action_space.n == 134
    assert env.observation_space.shape == (3, env.engine.obs_size)
    obs, info = env.reset(seed=3)
    assert obs.shape == (3, env.engine.obs_size) and obs.dtype == np.float32
    assert env.observation_space.contains(obs)
    assert ((0 <= info["seat"]) & (info["seat"] < 5)).all()
    # every match waits for its learner
    assert (env.engine.seats == info["seat"]).all()


def test_episode_return_is_the_learners_final_score():
    env = SingleAgentVectorEnv(16, [RandomPolicy(1)], num_players=4, num_rounds=2, seed=5)
    obs, info = env.reset()
    returns = np.zeros(16)
    episodes = 0
    for _obs, reward, term, trunc, infos in run(env, 300):
        assert not trunc.any()
        assert (env.engine.seats == infos["seat"]).all()  # the learner is to act everywhere
        returns += reward
        if term.any():
            fi = infos["final_info"]
            assert (infos["_final_obs"] == term).all() and (infos["_final_info"] == term).all()
            for b in np.flatnonzero(term):
                seat = fi["seat"][b]
                score = fi["final_scores"][b][seat]
                assert returns[b] == pytest.approx(score, abs=1e-9)
                assert fi["episode_return"][b] == pytest.approx(score, abs=1e-9)
                assert fi["episode_length"][b] > 0
                assert infos["final_obs"][b].shape == (env.engine.obs_size,)
                # the scores of a match sum to the rewards' total (rank scheme: zero)
                assert fi["final_scores"][b].sum() == pytest.approx(0.0, abs=1e-9)
                returns[b] = 0.0
                episodes += 1
            assert infos["final_obs"][~term].tolist() == [None] * int((~term).sum())
        else:
            assert "final_obs" not in infos
    assert episodes > 20


def test_rewards_come_only_at_round_ends_and_losers_minus_one_arrives():
    env = SingleAgentVectorEnv(8, [RandomPolicy(2)], num_players=3, num_rounds=1, seed=1)
    env.reset()
    seen_minus_one = False
    for _, reward, term, _, _ in run(env, 200, seed=4):
        # one round per match: the only reward of an episode is its last step's
        assert (reward[~term] == 0).all()
        seen_minus_one |= bool((reward[term] == -1).any())
    assert seen_minus_one


def test_played_matches_replay_on_the_scalar_engine():
    """Only the matches an opponent or the learner moves in change (partial steps): every
    finished match replays through the scalar engine, and its moves are exactly those the
    learner and the opponents chose."""
    rec = Recorder(7)
    env = SingleAgentVectorEnv(6, [rec], num_players=4, num_rounds=2, seed=2, record=True)
    env.reset()
    rng = np.random.default_rng(0)
    learner_moves = defaultdict(list)
    checked = 0
    for _ in range(400):
        acts = random_learner(env, rng)
        seats = env.learner_seats.copy()
        for b in range(6):
            learner_moves[b].append((int(seats[b]), int(acts[b])))
        _, _, term, _, infos = env.step(acts)
        for b in np.flatnonzero(term):
            data = env.engine.finished_replay(b)
            env_state = replay(data)  # checks every move, the end and the scores
            assert env_state is not None
            moves = [(int(p.split("_")[1]), a) for p, a in data["actions"]]
            seat = infos["final_info"]["seat"][b]
            assert [m for m in moves if m[0] == seat] == learner_moves[b]
            assert [m for m in moves if m[0] != seat] == rec.finished[b][-1]
            assert data["finished"] and data["scores"] is not None
            learner_moves[b] = []
            checked += 1
    assert checked >= 10
    assert sum(rec.rounds.values()) >= 2 * checked


def test_opponents_never_play_the_learner_seat():
    rec = Recorder(3)
    env = SingleAgentVectorEnv(5, [rec], num_players=3, seed=0)
    env.reset()
    for b, seats in rec.started:
        assert env.learner_seats[b] not in seats and len(seats) == 2
    calls = rec.calls
    list(run(env, 50))
    assert rec.calls > calls
    for b, moves in rec.moves.items():
        assert all(s != env.learner_seats[b] for s, _ in moves)


def test_seat_draws_cover_every_seat_and_respect_seats():
    env = SingleAgentVectorEnv(32, [RandomPolicy()], num_players=5, num_rounds=1, seed=0)
    _, info = env.reset()
    seen = Counter(info["seat"].tolist())
    for _, _, term, _, infos in run(env, 150):
        seen.update(infos["seat"][term].tolist())
    assert set(seen) == set(range(5))
    env = SingleAgentVectorEnv(8, [RandomPolicy()], num_players=4, seats=[2], seed=0)
    _, info = env.reset()
    assert (info["seat"] == 2).all()
    for _, _, _, _, infos in run(env, 60):
        assert (infos["seat"] == 2).all()


def test_weights_choose_the_opponents():
    a, b = RandomPolicy(0), RandomPolicy(1)
    env = SingleAgentVectorEnv(8, [a, b], weights=[1, 0], seed=0)
    env.reset()
    list(run(env, 30))
    assert a.calls > 0 and b.calls == 0
    assert ((env.owners == 0) | (env.owners == -1)).all()


def test_same_seed_same_episodes():
    def trace(seed):
        env = SingleAgentVectorEnv(6, [RandomPolicy(9), RandomPolicy(8)], seed=seed)
        obs, info = env.reset(seed=seed)
        out = [obs, info["seat"]]
        for o, r, t, _, _ in run(env, 80, seed=1):
            out += [o, r, t]
        return out

    one, two, other = trace(11), trace(11), trace(12)
    assert all(np.array_equal(x, y) for x, y in zip(one, two, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(one, other, strict=True))


def test_agent_policy_heuristic_plays_legal_moves():
    pol = AgentPolicy("heuristic", seed=1)
    assert isinstance(pol, MatchAwarePolicy)
    env = SingleAgentVectorEnv(4, [pol], num_players=4, num_rounds=2, seed=0)
    env.reset()
    episodes = 0
    for _, _, term, _, _ in run(env, 120):  # an illegal move would raise
        episodes += int(term.sum())
    assert episodes >= 1
    # one agent per (match, seat) it played, started at its seat
    assert all(agent.seat == s for (_, s), agent in pol._agents.items())
    with pytest.raises(TypeError, match="act_rows"):
        pol(np.zeros((1, 10), np.float32), np.ones((1, 134), bool))


def test_agent_policy_batches_the_heuristic_and_plays_the_same_games():
    """The heuristic's rows go to one ``act_batch`` call per step; the games are the ones the
    same agent plays row by row (``act``)."""
    calls = Counter()

    class Counted(HeuristicAgent):
        def act_batch(self, observations, action_masks):
            calls["batch"] += 1
            return super().act_batch(observations, action_masks)

    class RowByRow(HeuristicAgent):
        act_batch = Agent.act_batch  # not its own: AgentPolicy calls act row by row

    def trace(cls):
        env = SingleAgentVectorEnv(6, [AgentPolicy(cls, seed=1)], num_players=4, num_rounds=2,
                                   max_players=8, seed=0)
        env.reset(seed=3)
        return [x for o, r, t, _, _ in run(env, 150, seed=2) for x in (o, r, t)]

    batched, rows = trace(Counted), trace(RowByRow)
    assert calls["batch"] >= 150
    assert all(np.array_equal(x, y) for x, y in zip(batched, rows, strict=True))


def test_agent_policy_passes_round_results():
    ends = []

    class Spy:
        def __init__(self, seed):
            self.rng = np.random.default_rng(seed)

        def start_match(self, seat, config, max_players=None):
            self.seat = seat

        def act(self, observation, action_mask):
            return int(self.rng.choice(np.flatnonzero(action_mask)))

        def end_round(self, result):
            ends.append((self.seat, result["round"]))

    env = SingleAgentVectorEnv(3, [AgentPolicy(Spy, seed=0)], num_players=3, num_rounds=2,
                               seed=0)
    env.reset()
    list(run(env, 120))
    assert ends and {r for _, r in ends} == {0, 1}


def test_bad_input():
    env = SingleAgentVectorEnv(3, [RandomPolicy()], seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(3, np.int64))
    env.reset()
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        env.step(np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="integers"):
        env.step(np.zeros(3))
    illegal = np.array([np.flatnonzero(~m)[0] for m in env.action_masks()])
    with pytest.raises(IllegalActionError, match="match 0: illegal action"):
        env.step(illegal)
    with pytest.raises(TypeError, match="AgentPolicy"):
        SingleAgentVectorEnv(2, ["heuristic"])
    with pytest.raises(ValueError, match="empty"):
        SingleAgentVectorEnv(2, [])
    with pytest.raises(ValueError, match="weights"):
        SingleAgentVectorEnv(2, [RandomPolicy()], weights=[1, 2])
    with pytest.raises(ValueError, match="seats"):
        SingleAgentVectorEnv(2, [RandomPolicy()], num_players=3, seats=[3])
    with pytest.raises(TypeError, match="AgentPolicy"):
        AgentPolicy(42)


def test_bad_opponent_is_named():
    def cheat(obs, mask):
        return np.array([np.flatnonzero(~m)[0] for m in mask])

    env = SingleAgentVectorEnv(2, [cheat], seed=0)
    with pytest.raises(IllegalActionError, match=r"match \d: opponent 0 \(cheat\) at seat \d "
                                                  r"chose illegal action"):
        env.reset()

    env = SingleAgentVectorEnv(2, [lambda obs, mask: np.zeros(len(mask) + 1, np.int64)],
                               seed=0)
    with pytest.raises(ValueError, match="opponent 0 .* expected"):
        env.reset()
    env = SingleAgentVectorEnv(2, [lambda obs, mask: np.full(len(mask), 999)], seed=0)
    with pytest.raises(IllegalActionError, match="outside 0..133"):
        env.reset()
