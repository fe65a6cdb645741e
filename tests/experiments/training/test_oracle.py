"""The plug-ins that read the hidden hands during training (issue 49): the centralised critic
(``critic``) and the hand-prediction head (``belief``) of ``training/oracle.py``. What the
collection keeps is every other seat's true hand in the observation's seat order; the
advantages are the critic's; the actor and the exported policy never see a hidden card; a
resume cannot switch a plug-in's network on or off."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("numba")

from support import tiny  # noqa: E402

from dragons_egg.experiments.training import selfplay  # noqa: E402
from dragons_egg.experiments.training.oracle import (  # noqa: E402
    HANDS,
    critic_values,
    relative_hands,
)
from dragons_egg.experiments.training.rollout import Collector, advantages  # noqa: E402
from dragons_egg_env.cards import NUM_CARDS  # noqa: E402
from dragons_egg_env.config import RulesConfig  # noqa: E402
from dragons_egg_env.observation import layout  # noqa: E402
from dragons_egg_env.vector import VectorEngine  # noqa: E402


def bits(mask: int) -> np.ndarray:
    return np.array([(mask >> c) & 1 for c in range(NUM_CARDS)], np.bool_)


@pytest.mark.parametrize("n", [2, 5, 8])
def test_relative_hands_are_the_other_seats_hands_in_play_order(n):
    """Against the scalar state of each match (a fixed deal: seeded engine, seeded random
    steps): row b, block j is the hand of seat (seat_b + 1 + j) % n; blocks past the table
    are zeros."""
    m = 8
    eng = VectorEngine(6, RulesConfig(num_players=n, num_rounds=2), max_players=m, seed=3)
    eng.reset()
    eng.random_steps(7)
    seats = np.arange(6) % n
    got = relative_hands(eng.state(), seats, n, m).reshape(6, m - 1, NUM_CARDS)
    for b in range(6):
        hands = eng.to_state(b).hands
        for j in range(m - 1):
            want = bits(hands[(seats[b] + 1 + j) % n]) if j < n - 1 else np.zeros(NUM_CARDS,
                                                                                   np.bool_)
            assert np.array_equal(got[b, j], want), (b, j)


def test_the_rollout_keeps_each_learner_decisions_hidden_hands(tmp_path):
    """The hands kept for a decision agree with its observation: none of them is in the
    decider's own hand, and each other seat's card count is the observation's hand size of
    that relative seat (so the seat order is the observation's too)."""
    cfg = tiny(tmp_path, hand_prediction=0.5, table_sizes=(3, 6))
    run = selfplay.Run(cfg)
    col = Collector(cfg, seed=5)
    col.start()
    ro, _ = col.collect(run.acting.act, [], run.acting.value, run.acting)
    hands = ro.features[HANDS]
    assert hands.shape == (len(ro.obs), (cfg.max_players - 1) * NUM_CARDS)
    lay = layout(cfg.max_players)
    rows = np.flatnonzero(ro.learner)
    assert len(rows) > 100
    own = ro.obs[rows][:, lay["hand"]] > 0.5
    other = hands[rows].reshape(len(rows), cfg.max_players - 1, NUM_CARDS)
    assert not (other & own[:, None, :]).any()
    sizes = np.rint(ro.obs[rows][:, lay["hand_size"]] * NUM_CARDS).astype(int)
    assert np.array_equal(other.sum(-1), sizes[:, 1:])
    assert other.any()


def test_the_advantages_are_the_central_critics(tmp_path):
    """With ``central_critic`` the rollout's values are the critic's (observation and hidden
    hands) and change with the hidden hands alone; without it they are the actor's value
    head's."""
    cfg = tiny(tmp_path, central_critic=True, critic_hidden=(32,), table_sizes=(2, 4))
    run = selfplay.Run(cfg)
    col = Collector(cfg, seed=1)
    col.start()
    ro, _ = col.collect(run.acting.act, [], run.acting.value, run.acting)
    rows = np.flatnonzero(ro.learner)
    model = run.learner.model
    want = critic_values(model, ro.obs[rows], ro.features[HANDS][rows])
    assert np.allclose(ro.value[rows], want, atol=1e-6)
    # the same observations with other hidden hands: other values
    shuffled = critic_values(model, ro.obs[rows], ro.features[HANDS][rows][::-1])
    assert not np.allclose(want, shuffled)
    # the actor's own value head gives other values: the critic replaced them
    _, _, actor_v = run.acting.act(ro.obs[rows], ro.mask[rows])
    assert not np.allclose(ro.value[rows], actor_v)
    open_ = np.flatnonzero(ro.learner & (ro.next_index < 0) & ~ro.terminal)
    assert len(open_) and np.isfinite(ro.bootstrap[open_]).all()
    adv = advantages(ro, cfg.collection.rollout_steps, col.num, cfg.ppo.gamma,
                     cfg.ppo.gae_lambda)
    assert np.isfinite(adv).all()


def test_both_plugins_learn_and_the_policy_file_is_the_actor_alone(tmp_path):
    """A short run with both: the critic's and the hand head's losses fall, and the exported
    policy has the shapes of a run without them (it reads the observation only)."""
    from dragons_egg.agents.netpolicy import load_policy_file

    on = tiny(tmp_path, run_name="on", central_critic=True, critic_hidden=(32,),
              hand_prediction=1.0, hidden=(32,), total_samples=144 * 24)
    run = selfplay.Run(on)
    figures = [run.iteration() for _ in range(24)]
    first = np.mean([f["hand_loss"] for f in figures[:3]])
    last = np.mean([f["hand_loss"] for f in figures[-3:]])
    assert last < first - 0.05, (first, last)
    assert all(np.isfinite(f["critic_loss"]) for f in figures)
    assert 0.5 < figures[-1]["hand_acc"] <= 1.0
    final = run.train()  # the budget is spent: it exports the policy
    off = selfplay.Run(dataclasses.replace(on, critic=dataclasses.replace(
        on.critic, central_critic=False), belief=dataclasses.replace(
        on.belief, hand_prediction=0.0), run_name="off", total_samples=144))
    plain = off.train()
    a, b = load_policy_file(final), load_policy_file(plain)
    assert [w.shape for w, _ in a.layers] == [w.shape for w, _ in b.layers]
    assert a.meta["obs_size"] == b.meta["obs_size"] == layout(on.max_players).size
    assert set(a.meta["provenance"]["plugins"]) == {"critic", "belief"}


def test_a_resume_keeps_the_plugins_networks(tmp_path, capsys):
    """A checkpoint with the critic resumes with its weights; switching the critic or the hand
    head on or off at a resume is refused, naming the setting."""
    cfg = tiny(tmp_path, run_name="c", central_critic=True, critic_hidden=(16,),
               hand_prediction=0.3, total_samples=144)
    run = selfplay.Run(cfg)
    run.train()
    ckpt = run.dir / "checkpoints" / "latest.pt"
    again = selfplay.Run(dataclasses.replace(cfg, total_samples=288), resume=str(ckpt))
    w0 = run.learner.model.critic[0].weight.detach().numpy()
    assert np.array_equal(again.learner.model.critic[0].weight.detach().numpy(), w0)
    again.train()
    assert again.samples == 288
    for flag, name in ((["--no-central-critic"], "--central-critic"),
                       (["--hand-prediction", "0"], "--hand-prediction"),
                       (["--critic-hidden", "8"], "--critic-hidden")):
        capsys.readouterr()
        with pytest.raises(SystemExit):
            selfplay.parse_args(["--resume", str(ckpt), *flag])
        assert name in capsys.readouterr().err
