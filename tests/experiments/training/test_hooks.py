"""The self-play trainer's hooks inside its loop (training/hooks.py): a plug-in that is not
one of the package's acts through them alone, its collection hook sees every step and its
rows reach the rollout, its update hook's loss term moves the weights and its figures and
state reach the update's figures and the checkpoint."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("numba")

from support import tiny  # noqa: E402

from dragons_egg.experiments.training.hooks import (  # noqa: E402
    CollectionHook,
    PlayedOut,
    UpdateHook,
)
from dragons_egg.experiments.training.selfplay import Run  # noqa: E402


class CountSteps(CollectionHook):
    """Counts the steps it sees and values the first learner decision of each rollout."""

    needs_acting = True
    name = "count_steps"

    def __init__(self) -> None:
        self.steps = 0
        self.first: int | None = None

    def on_collect_start(self, collector):
        self.first = None

    def before_step(self, collector, e, obs, mask, learn, idx):
        self.steps += 1
        if self.first is None and learn.any():
            self.first = int(idx[np.flatnonzero(learn)[0]])

    def on_collect_end(self, collector, ro, acting):
        q = np.where(ro.mask[[self.first]], 0.0, np.nan).astype(np.float32)
        return PlayedOut(np.array([self.first]), q, np.array([False]))


class PullToPass(UpdateHook):
    """A loss term: the policy's log-probability of action 0 (the pass) where legal."""

    name = "pull_to_pass"
    loss_name = "pull_loss"
    coef = 5.0

    def __init__(self) -> None:
        self.updates = 0
        self.obs = None

    def on_update_start(self, learner, ro):
        self.updates += 1
        rows = np.flatnonzero(ro.learner & ro.mask[:, 0])
        self.obs = (learner.torch.from_numpy(ro.obs[rows]),
                    learner.torch.from_numpy(ro.mask[rows]))
        return bool(len(rows))

    def minibatch(self, learner, k):
        return self.obs

    def loss(self, learner, batch):
        logits, _ = learner.model(*batch)
        return -learner.torch.log_softmax(logits, -1)[:, 0].mean()

    def figures(self):
        return {"pull_updates": float(self.updates)}

    def state(self):
        return {"updates": self.updates}

    def load(self, state):
        self.updates = int(state.get("updates", 0))


def test_a_plug_in_of_ones_own_acts_through_the_hooks(tmp_path):
    run = Run(tiny(tmp_path, seed=3))
    assert run.collector is not None
    count, pull = CountSteps(), PullToPass()
    run.collector.hooks.append(count)
    run.learner.hooks.append(pull)
    ro, info = run.collector.collect(run.acting.act, [], run.acting.value, run.acting)
    steps = run.cfg.collection.rollout_steps * len(run.cfg.collection.table_sizes)
    assert count.steps == steps  # once per engine and step
    assert list(ro.cf_index) == [count.first] and info["cf_states"] == 1
    stats = run.iteration()
    assert stats["pull_updates"] == 1.0 and stats["pull_loss"] > 0
    path = run.save()
    from dragons_egg.experiments.training.checkpoint import load_checkpoint

    assert load_checkpoint(path)["pull_to_pass"] == {"updates": 1}


def test_the_loss_term_moves_the_weights(tmp_path):
    """The same seeded update with and without the term: the weights differ, and the term's
    direction wins (the pass's probability rises more with it)."""
    def pass_prob_after(with_term: bool) -> float:
        run = Run(tiny(tmp_path / str(with_term), seed=4))
        if with_term:
            run.learner.hooks.append(PullToPass())
        run.iteration()
        ro, _ = run.collector.collect(run.acting.act, [], run.acting.value, run.acting)
        rows = np.flatnonzero(ro.mask[:, 0])
        return float(run.acting.probs(ro.obs[rows], ro.mask[rows])[:, 0].mean())

    assert pass_prob_after(True) > pass_prob_after(False)
