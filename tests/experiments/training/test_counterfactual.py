"""Tribute learned in the trainer: counterfactual values of tribute choices
(dragons_egg.experiments.training.counterfactual) and the self-play trainer's use of them
(``tribute_counterfactual``: R31..R33 decisions played out, the all-action surrogate)."""

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("numba")

from support import tiny, tribute_state  # noqa: E402

from dragons_egg.experiments.training import counterfactual as cf  # noqa: E402
from dragons_egg.experiments.training import rollout  # noqa: E402
from dragons_egg.experiments.training.distributed import (  # noqa: E402
    CollectorWorker,
    model_weights,
)
from dragons_egg.experiments.training.learner import Learner  # noqa: E402
from dragons_egg.experiments.training.selfplay import Run  # noqa: E402
from dragons_egg_env import engine as E  # noqa: E402
from dragons_egg_env.actions import ASK_BASE, NUM_ACTIONS, PASS  # noqa: E402
from dragons_egg_env.cards import EGG  # noqa: E402
from dragons_egg_env.observation import layout  # noqa: E402


def first_legal(obs, mask):
    """A deterministic policy that reads nothing but the mask."""
    return np.argmax(mask, axis=1)


def last_legal(obs, mask):
    return mask.shape[1] - 1 - np.argmax(mask[:, ::-1], axis=1)


@pytest.mark.parametrize("n", [2, 4, 6])
def test_values_are_the_round_played_out_on_the_scalar_engine(n):
    """Q(s, a) is the deciding seat's round reward (R27) after ``a`` (an ask, R31) when the
    given policies play the rest of the round (play: the first legal action; later tribute
    choices, R32/R33: the last) on the scalar engine."""
    s = tribute_state(seed=5, n=n)
    dragon = s.current
    assert s.phase == E.ASK
    mask = np.zeros(NUM_ACTIONS, bool)
    mask[E.legal_actions(s)] = True
    q = cf.counterfactual_values([s], [dragon], mask[None], first_legal, last_legal, 8,
                                 seed=0)[0]
    assert np.isnan(q[~mask]).all() and not np.isnan(q[mask]).any()
    for a in np.flatnonzero(mask):
        t = s.clone()
        E.step(t, int(a))
        rounds = len(t.results)
        while len(t.results) == rounds:
            acts = E.legal_actions(t)
            tribute = t.phase in (E.ASK, E.GIVE)
            E.step(t, acts[-1] if tribute else acts[0])
        assert q[a] == t.results[-1].rewards[dragon], a
    # per class: one card of each number, one dragon card, the pass; the value is shared
    legal = np.flatnonzero(mask)
    cls = cf.action_classes(legal)
    qc = cf.counterfactual_values([s], [dragon], mask[None], first_legal, last_legal, 8,
                                  seed=1, per_class=True)[0]
    for c in np.unique(cls):
        assert len(set(qc[legal[cls == c]])) == 1
    assert qc[PASS] == q[PASS]


def test_the_collector_values_a_share_of_the_learners_tribute_choices(tmp_path):
    """With ``tribute_counterfactual`` the rollout is the same as without (the values are
    taken on copies, with a generator of their own), and the values are those of the kept
    decisions: learner tribute decisions with a choice, every legal action valued."""
    rollouts = {}
    for share in (0.0, 0.5, 1.0):
        run = Run(tiny(tmp_path, run_name=f"s{share}", seed=2, num_rounds=3, rollout_steps=60,
                       tribute_counterfactual=share))
        ro, info = run.collector.collect(run.acting.act, [], run.acting.value, run.acting)
        rollouts[share] = ro
        assert info["cf_states"] == len(ro.cf_index)
    base = rollouts[0.0]
    assert len(base.cf_index) == 0
    choice = base.learner & cf.tribute_rows(base.mask) & (base.mask.sum(axis=1) > 1)
    assert choice.sum() >= 5
    for share in (0.5, 1.0):
        ro = rollouts[share]
        for k in ("obs", "mask", "action", "logp", "reward", "next_index"):
            assert np.array_equal(getattr(ro, k), getattr(base, k)), k
        assert choice[ro.cf_index].all()
        legal = ro.mask[ro.cf_index]
        assert np.isfinite(ro.cf_q[legal]).all() and np.isnan(ro.cf_q[~legal]).all()
        assert np.allclose(ro.cf_probs.sum(axis=1), 1.0, atol=1e-5)
        assert (ro.cf_probs[~legal] == 0).all()
    assert len(rollouts[1.0].cf_index) == choice.sum()
    assert 0 < len(rollouts[0.5].cf_index) < choice.sum()


def test_without_the_acting_policy_it_is_an_error(tmp_path):
    run = Run(tiny(tmp_path, tribute_counterfactual=0.5))
    with pytest.raises(ValueError, match="tribute_counterfactual needs the acting policy"):
        run.collector.collect(run.acting.act, [], run.acting.value)


def test_the_batch_centres_the_values_on_the_behaviour_policy():
    mask = np.zeros((2, NUM_ACTIONS), bool)
    mask[0, [PASS, ASK_BASE, ASK_BASE + 4]] = True
    mask[1, [ASK_BASE, ASK_BASE + 1]] = True
    q = np.full((2, NUM_ACTIONS), np.nan, np.float32)
    q[0, [PASS, ASK_BASE, ASK_BASE + 4]] = [0.0, 1.0, -1.0]
    q[1, [ASK_BASE, ASK_BASE + 1]] = 0.5  # no choice matters: no signal
    probs = np.where(mask, 1.0, 0.0) / mask.sum(axis=1, keepdims=True)
    ro = rollout.Rollout(
        obs=np.zeros((2, 3), np.float32), mask=mask, action=np.zeros(2, np.int64),
        logp=np.zeros(2, np.float32), value=np.zeros(2, np.float32),
        learner=np.ones(2, bool), reward=np.zeros(2, np.float32),
        terminal=np.zeros(2, bool), next_index=np.full(2, -1), bootstrap=np.zeros(2),
        seat=np.zeros(2, np.int64), cf_index=np.array([0, 1]), cf_q=q,
        cf_probs=probs.astype(np.float32))
    b = cf.counterfactual_batch(ro)
    assert (b["adv"][~mask] == 0).all()
    assert (b["probs"] * b["adv"]).sum(axis=1) == pytest.approx([0, 0], abs=1e-6)
    assert np.all(b["adv"][1] == 0)
    # the root mean square of the advantage under the behaviour policy is 1
    assert np.sqrt((b["probs"] * b["adv"] ** 2).sum(axis=1).mean()) == pytest.approx(1.0)
    a0 = b["adv"][0]
    assert a0[ASK_BASE] > a0[PASS] > a0[ASK_BASE + 4]
    # the regret: best minus expected under the behaviour policy (uniform here)
    assert cf.tribute_regret(ro) == pytest.approx(((1 - 0) + (0.5 - 0.5)) / 2)
    # the logit update's advantages: the same, over the behaviour policy's expected value,
    # with a root mean square of 1 over every legal action of every row alike
    u = b["adv_u"]
    assert (u[~mask] == 0).all() and np.all(u[1] == 0)
    assert np.sqrt((u[mask] ** 2).mean()) == pytest.approx(1.0)
    np.testing.assert_allclose(u[0] * (b["adv"][0, ASK_BASE] / u[0, ASK_BASE]), b["adv"][0],
                               rtol=1e-5, atol=1e-7)


def test_the_logit_update_pushes_each_logit_by_its_advantage_whatever_its_probability(
        tmp_path):
    torch = pytest.importorskip("torch")
    learner = Learner(tiny(tmp_path, tribute_cf_update="logits",
                                    tribute_cf_threshold=2.0))
    mask = torch.zeros((2, NUM_ACTIONS), dtype=torch.bool)
    mask[:, [PASS, ASK_BASE, ASK_BASE + 4]] = True
    z = torch.zeros((2, NUM_ACTIONS))
    # row 0 saturated on the pass (probability ~1 - 2e-6), row 1 with the ask far above the
    # mean already
    z[0, [PASS, ASK_BASE, ASK_BASE + 4]] = torch.tensor([13.0, 0.0, 0.0])
    z[1, [PASS, ASK_BASE, ASK_BASE + 4]] = torch.tensor([0.0, 9.0, 0.0])
    z = z.masked_fill(~mask, -1e9).requires_grad_()
    adv = torch.zeros((2, NUM_ACTIONS))
    adv[:, [PASS, ASK_BASE, ASK_BASE + 4]] = torch.tensor([-1.0, 2.0, -1.0])
    cf.CounterfactualLoss(learner.cfg.tribute_cf, 0.2).logits_loss(z, {"mask": mask, "adv_u": adv}).backward()
    g = -z.grad  # the direction a step moves the logits
    # row 0: the ask, almost never played, moves up as much as a likely action would (the
    # surrogate's step on it would be scaled by its probability, ~1e-6); the gradient is
    # centred on the legal actions (the softmax does not see a common shift)
    assert g[0, ASK_BASE] > 0 and g[0, PASS] < 0 and g[0, ASK_BASE + 4] < 0
    # (the other ask, already 4.3 below the mean, is not pushed down: pushes -1, 2, 0, their
    # mean 1/3, over 2 rows)
    assert g[0, [PASS, ASK_BASE, ASK_BASE + 4]].tolist() == pytest.approx(
        [(-1 - 1 / 3) / 2, (2 - 1 / 3) / 2, (0 - 1 / 3) / 2], rel=1e-5)
    # row 1: the ask is 6 above its decision's mean (past the threshold 2), the others 3
    # below: nothing is pushed further
    assert (g[1] == 0).all()
    assert (g[~mask] == 0).all()


def test_the_regression_fits_each_logit_to_its_scaled_value(tmp_path):
    """The regression's gradient on a legal logit is its centred logit over the scale minus
    its centred value, whatever its probability; illegal logits get none, and a common shift
    of the logits changes nothing."""
    torch = pytest.importorskip("torch")
    learner = Learner(tiny(tmp_path, tribute_cf_update="regression",
                                    tribute_cf_scale=10.0))
    mask = torch.zeros((2, NUM_ACTIONS), dtype=torch.bool)
    legal = [PASS, ASK_BASE, ASK_BASE + 4]
    mask[:, legal] = True
    z = torch.zeros((2, NUM_ACTIONS))
    z[0, legal] = torch.tensor([13.0, 0.0, 0.0])  # saturated on the pass
    z[1, legal] = torch.tensor([5.0, 8.0, 5.0])   # already 10 x its centred values, shifted
    target = torch.zeros((2, NUM_ACTIONS))
    target[:, legal] = torch.tensor([-0.1, 0.2, -0.1])
    z = z.masked_fill(~mask, -1e9).requires_grad_()
    loss = cf.CounterfactualLoss(learner.cfg.tribute_cf, 0.2).regression_loss(z, {"mask": mask, "target": target})
    loss.backward()
    y0 = np.array([13.0, 0.0, 0.0]) - 13.0 / 3
    want0 = (y0 / 10 - np.array([-0.1, 0.2, -0.1])) / 2  # mean over the 2 rows
    assert z.grad[0, legal].tolist() == pytest.approx(want0.tolist(), rel=1e-5)
    # the rarely played ask is pulled up by its whole error, not by its probability (~2e-6)
    assert -z.grad[0, ASK_BASE] > 0.1
    assert z.grad[1].abs().max() < 1e-6  # already fitted: no step
    assert (z.grad[~mask] == 0).all()
    assert loss.item() == pytest.approx(((y0 - 10 * np.array([-0.1, 0.2, -0.1])) ** 2).sum()
                                        / 20 / 2, rel=1e-5)


def test_the_replay_keeps_the_last_decisions_and_survives_a_checkpoint(tmp_path):
    """``tribute_cf_replay`` keeps the last N counterfactual decisions across updates, fits
    them every update and is saved in the checkpoint, so a resumed run goes on as the run
    would have; a damaged replay in a checkpoint is named."""
    torch = pytest.importorskip("torch")
    replay = cf.TributeReplay(5)
    batch = {"obs": np.arange(12, dtype=np.float32).reshape(4, 3),
             "mask": np.ones((4, 2), bool), "target": np.arange(8, dtype=np.float32
                                                                ).reshape(4, 2),
             "adv": np.zeros((4, 2), np.float32)}
    assert replay.add(None) is None and len(replay) == 0
    replay.add(batch)
    kept = replay.add(batch)
    assert len(replay) == 5 and set(kept) == set(cf.TributeReplay.KEYS)
    assert kept["obs"][:, 0].tolist() == [9.0, 0.0, 3.0, 6.0, 9.0]  # oldest first
    again = cf.TributeReplay(3)  # a resume that keeps fewer keeps the newest
    again.load(replay.state())
    assert again.data["obs"][:, 0].tolist() == [3.0, 6.0, 9.0]
    with pytest.raises(ValueError, match="tribute replay is damaged"):
        again.load({**replay.state(), "target": torch.zeros((2, 2))})

    cfg = tiny(tmp_path, run_name="rp", seed=4, rollout_steps=60, num_rounds=3,
               tribute_counterfactual=1.0, tribute_cf_update="regression",
               tribute_cf_replay=40)
    run = Run(cfg)
    run.iteration()
    first = len(run.learner.replay)
    assert first > 0
    run.iteration()
    assert min(first + 1, 40) <= len(run.learner.replay) <= 40  # the second's kept too
    path = run.save()
    resumed = Run(cfg, resume=str(path))
    for k in cf.TributeReplay.KEYS:
        assert np.array_equal(resumed.learner.replay.data[k], run.learner.replay.data[k])
    # the same rollout, updated on by both learners: the same step (the same weights,
    # optimiser, generator and replayed decisions); without the replay, another
    ro, _ = run.collector.collect(run.acting.act, [], run.acting.value, run.acting)
    adv = rollout.advantages(ro, cfg.collection.rollout_steps, run.batch, 1.0, 0.95)
    forgetful = Run(cfg, resume=str(path))
    forgetful.learner.replay.load({})
    for learner in (run.learner, resumed.learner, forgetful.learner):
        learner.update(ro, adv)
    params = [list(r.learner.model.parameters()) for r in (run, resumed, forgetful)]
    assert all(torch.equal(a, b) for a, b in zip(params[0], params[1], strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(params[0], params[2], strict=True))
    # a checkpoint whose replay was altered is refused by its digest, by name
    state = torch.load(path, weights_only=True)
    state["tribute_replay"]["target"][0, 0] += 1.0
    torch.save(state, path)
    with pytest.raises(ValueError, match="damaged or was altered"):
        Run(cfg, resume=str(path))


def expected_q(run, ro):
    obs, mask = ro.obs[ro.cf_index], ro.mask[ro.cf_index]
    p = run.acting.probs(obs, mask)
    return float((p * np.nan_to_num(ro.cf_q)).sum(axis=1).mean())


@pytest.mark.parametrize("update", ["surrogate", "logits", "regression"])
def test_the_surrogate_moves_the_tribute_towards_the_better_choices(tmp_path, update):
    """An update with the counterfactual loss (either form) raises the expected value of the
    tribute choices it was computed on far more than the same update without it."""
    gains = {}
    for coef in (0.0, 1.0):
        run = Run(tiny(tmp_path, run_name=f"c{coef}", seed=4, rollout_steps=60, epochs=4,
                       learning_rate=3e-3, tribute_counterfactual=1.0, tribute_cf_coef=coef,
                       tribute_cf_update=update))
        ro, _ = run.collector.collect(run.acting.act, [], run.acting.value, run.acting)
        assert len(ro.cf_index) >= 5
        before = expected_q(run, ro)
        adv = rollout.advantages(ro, run.cfg.collection.rollout_steps, run.batch, 1.0, 0.95)
        stats = run.learner.update(ro, adv)
        assert "cf_loss" in stats and stats["cf_regret"] >= 0
        gains[coef] = expected_q(run, ro) - before
    assert gains[1.0] > 0
    assert gains[1.0] > gains[0.0] + 0.01


def test_a_collector_actor_values_tribute_choices_too(tmp_path):
    """The Ray collectors' code (here without Ray) returns the values with the rollout."""
    cfg = tiny(tmp_path, rollout_steps=60, tribute_counterfactual=1.0, num_rounds=3)
    run = Run(cfg)
    worker = CollectorWorker(dict(vars(cfg)), 0, 0)
    ro, info = worker.collect(model_weights(run.learner.model), (0, []))
    assert info["cf_states"] == len(ro.cf_index) > 0
    assert np.isfinite(ro.cf_q[ro.mask[ro.cf_index]]).all()


@pytest.mark.parametrize("bad, message", [
    ({"tribute_counterfactual": 1.5}, "tribute_counterfactual"),
    ({"tribute_counterfactual": -0.1}, "tribute_counterfactual"),
    ({"tribute_cf_coef": -1.0}, "tribute_cf_coef"),
    ({"tribute_cf_scale": 0.0}, "tribute_cf_scale"),
    ({"tribute_cf_replay": -1}, "tribute_cf_replay"),
    ({"tribute_counterfactual": 0.5, "tribute_cf_replay": 100},
     "needs tribute_cf_update = regression"),
    ({"tribute_cf_update": "regression", "tribute_cf_replay": 100},
     "tribute_counterfactual 0 makes none"),
])
def test_bad_counterfactual_settings_are_named(tmp_path, bad, message):
    with pytest.raises(ValueError, match=message):
        tiny(tmp_path, **bad).validate()


# -- the Egg holder's plays (``egg_counterfactual``) ----------------------------------------
def egg_play_state(seed=0, n=4):
    """A match played by the first legal action up to a play decision with a choice of the
    seat that holds the Egg (R19)."""
    import random

    from dragons_egg_env.config import RulesConfig

    rng = random.Random(seed)
    s = E.new_match(RulesConfig(num_players=n, num_rounds=1))
    while True:
        if s.phase == E.Phase.DEAL:
            E.deal(s, E.random_deal(s, rng))
            continue
        acts = E.legal_actions(s)
        if s.phase == E.Phase.PLAY and s.current == s.egg_holder and len(acts) > 2:
            return s
        E.step(s, acts[0])


@pytest.mark.parametrize("n", [2, 5])
def test_an_egg_holders_plays_are_each_played_out(n):
    """Q(s, a) of a play of the Egg's holder is its round reward (R27) after ``a`` and the
    rest of the round played by the policy, on the scalar engine; without classes every legal
    play is played out on its own."""
    s = egg_play_state(seed=3, n=n)
    holder = s.current
    mask = np.zeros(NUM_ACTIONS, bool)
    mask[E.legal_actions(s)] = True
    q = cf.counterfactual_values([s], [holder], mask[None], first_legal, last_legal, 8,
                                 seed=0)[0]
    assert not np.isnan(q[mask]).any()
    for a in np.flatnonzero(mask):
        t = s.clone()
        E.step(t, int(a))
        while not t.results:
            E.step(t, E.legal_actions(t)[0])
        assert q[a] == t.results[-1].rewards[holder], a
    assert len(set(q[mask])) > 1  # the choice matters on this deal


def egg_rows(run, ro):
    col = layout(run.cfg.max_players)["hand"].start + EGG  # the holder's own Egg
    return (ro.learner & (ro.obs[:, col] > 0) & ~cf.tribute_rows(ro.mask)
            & (ro.mask.sum(axis=1) > 1))


def test_the_collector_values_a_share_of_the_egg_holders_plays(tmp_path):
    """With ``egg_counterfactual`` the rollout is the same as without, and the kept
    decisions are the learner's play decisions with a choice whose seat holds the Egg, every
    legal play valued; tribute decisions keep their own share."""
    rollouts = {}
    for share in (0.0, 0.5, 1.0):
        run = Run(tiny(tmp_path, run_name=f"e{share}", seed=2, num_rounds=2, rollout_steps=40,
                       egg_counterfactual=share))
        ro, info = run.collector.collect(run.acting.act, [], run.acting.value, run.acting)
        rollouts[share] = ro
        assert info["egg_states"] == ro.cf_egg.sum() == len(ro.cf_index)
    base = rollouts[0.0]
    choice = egg_rows(run, base)
    assert len(base.cf_index) == 0 and choice.sum() >= 10
    for share in (0.5, 1.0):
        ro = rollouts[share]
        for k in ("obs", "mask", "action", "logp", "reward", "next_index"):
            assert np.array_equal(getattr(ro, k), getattr(base, k)), k
        assert choice[ro.cf_index].all() and ro.cf_egg.all()
        legal = ro.mask[ro.cf_index]
        assert np.isfinite(ro.cf_q[legal]).all() and np.isnan(ro.cf_q[~legal]).all()
    assert len(rollouts[1.0].cf_index) == choice.sum()
    assert 0 < len(rollouts[0.5].cf_index) < choice.sum()
    # with both shares the tribute rows come first, marked apart, and the tribute rows are
    # the ones the tribute share alone keeps
    both = Run(tiny(tmp_path, run_name="both", seed=2, num_rounds=2, rollout_steps=40,
                    egg_counterfactual=1.0, tribute_counterfactual=1.0))
    ro, info = both.collector.collect(both.acting.act, [], both.acting.value, both.acting)
    trib = Run(tiny(tmp_path, run_name="trib", seed=2, num_rounds=2, rollout_steps=40,
                    tribute_counterfactual=1.0))
    ro_t, _ = trib.collector.collect(trib.acting.act, [], trib.acting.value, trib.acting)
    assert len(ro_t.cf_index) > 0
    assert np.array_equal(ro.cf_index[~ro.cf_egg], ro_t.cf_index)
    assert np.array_equal(np.sort(ro.cf_index[ro.cf_egg]), np.flatnonzero(choice))
    assert cf.tribute_rows(ro.mask[ro.cf_index[~ro.cf_egg]]).all()


def test_the_update_moves_the_egg_holders_plays_towards_the_better_ones(tmp_path):
    """An update with the counterfactual loss raises the expected value of the Egg holder's
    plays it was computed on far more than the same update without it, and reports their
    regret apart from the tribute's."""
    gains = {}
    for coef in (0.0, 1.0):
        run = Run(tiny(tmp_path, run_name=f"c{coef}", seed=4, rollout_steps=40, epochs=4,
                       learning_rate=3e-3, egg_counterfactual=1.0, tribute_cf_coef=coef))
        ro, _ = run.collector.collect(run.acting.act, [], run.acting.value, run.acting)
        assert len(ro.cf_index) >= 10 and ro.cf_egg.all()
        before = expected_q(run, ro)
        adv = rollout.advantages(ro, run.cfg.collection.rollout_steps, run.batch, 1.0, 0.95)
        stats = run.learner.update(ro, adv)
        assert stats["egg_regret"] >= 0 and "cf_regret" not in stats
        gains[coef] = expected_q(run, ro) - before
    assert gains[1.0] > 0
    assert gains[1.0] > gains[0.0] + 0.01


def test_the_egg_share_needs_the_acting_policy_and_a_share(tmp_path):
    run = Run(tiny(tmp_path, egg_counterfactual=0.5))
    with pytest.raises(ValueError, match="egg_counterfactual needs the acting policy"):
        run.collector.collect(run.acting.act, [], run.acting.value)
    for bad in (1.5, -0.1):
        with pytest.raises(ValueError, match="egg_counterfactual"):
            tiny(tmp_path, egg_counterfactual=bad).validate()
    with pytest.raises(ValueError, match="cannot go with egg_counterfactual"):
        tiny(tmp_path, egg_counterfactual=0.5, tribute_counterfactual=0.5,
             tribute_cf_update="regression", tribute_cf_replay=100).validate()


@pytest.mark.parametrize("update", ["surrogate", "logits", "regression"])
def test_tribute_and_egg_rows_are_scaled_and_weighed_each_as_alone(tmp_path, update):
    """With both shares, the tribute rows get the advantages they get alone (each kind is
    normalised over its own rows), and the loss is the tribute rows' mean plus the Egg
    holder's rows' mean: neither kind dilutes the other."""
    import torch

    run = Run(tiny(tmp_path, seed=2, num_rounds=2, rollout_steps=40, egg_counterfactual=1.0,
                   tribute_counterfactual=1.0, tribute_cf_update=update))
    ro, _ = run.collector.collect(run.acting.act, [], run.acting.value, run.acting)
    egg = ro.cf_egg
    assert egg.any() and (~egg).any()
    both = cf.counterfactual_batch(ro)
    assert np.array_equal(both["egg"], egg)

    def alone(rows):
        part = rollout.Rollout(**{**vars(ro), "cf_index": ro.cf_index[rows],
                                   "cf_q": ro.cf_q[rows], "cf_probs": ro.cf_probs[rows],
                                   "cf_egg": egg[rows]})
        return cf.counterfactual_batch(part)

    for rows in (~egg, egg):
        one = alone(rows)
        for k in ("adv", "adv_u", "target"):
            np.testing.assert_allclose(both[k][rows], one[k], rtol=1e-5, atol=1e-6)

    def loss(batch):
        hook = run.learner.hook(cf.CounterfactualLoss)
        return hook.loss(run.learner, {k: torch.from_numpy(np.asarray(v))
                                       for k, v in batch.items()}).detach().item()

    assert loss(both) == pytest.approx(loss(alone(~egg)) + loss(alone(egg)), rel=1e-4)
    assert loss(alone(egg)) != pytest.approx(0.0)
