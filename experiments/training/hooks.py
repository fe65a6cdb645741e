"""The self-play trainer's hooks inside its loop: where a plug-in acts in the collection of a
rollout (:class:`CollectionHook`) and in the update on it (:class:`UpdateHook`).

The hooks around the loop, in Stable-Baselines3's sense (after a rollout, after an update,
after an evaluation, at a checkpoint), are :mod:`.callbacks`'. These are the two a plug-in
needs to change *what* is collected and *what* is learned; each plug-in registers them from
its settings group, in its own module:

=========================  =================================  =================================
plug-in (settings group)   collection                         update
=========================  =================================  =================================
``tribute_cf``             keeps a share of the learner's     the counterfactual loss (one
                           tribute decisions and plays every  for both kinds of rows), the
                           choice out (:mod:`.counterfactual`) replay, ``cf_regret``
``egg_cf``                 the same for the Egg holder's      ``egg_regret`` (its rows join
                           plays                              the counterfactual loss)
``table``                  --                                 the give-back table, fed the
                                                              counterfactual rows
                                                              (:mod:`.tribute_table`)
``search``                 --                                 the search targets' loss
                                                              (:mod:`.search_targets`)
=========================  =================================  =================================

:meth:`~.settings.SelfPlayConfig.collection_hooks` and
:meth:`~.settings.SelfPlayConfig.update_hooks` make them from a run's settings, in that order;
the order is part of the arithmetic (the generators' draws, the sum of the loss terms), which
``tests/experiments/training/test_recipe_weights.py`` pins.

A collection hook's rows are the rollout's *played-out rows* (``Rollout.cf_index``, ``cf_q``,
``cf_egg``, ``cf_probs``): the collector joins every hook's, in hook order, and adds the
acting policy's probabilities of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from dragons_egg.experiments.training.learner import Learner
    from dragons_egg.experiments.training.rollout import ActingPolicy, Collector, Rollout


class PlayedOut(NamedTuple):
    """Decisions of a rollout a collection hook valued: their rollout indices (``rows``),
    the value of every action (NaN where illegal) and which of them are the Egg holder's
    plays."""

    rows: np.ndarray
    q: np.ndarray
    egg: np.ndarray


class CollectionHook:
    """A plug-in's part in the collection of a rollout (one per collector, made with the
    collector's seed, so that a collector draws the same in-process and on Ray)."""

    #: The plug-in's name in errors (the setting that turns it on).
    name = ""
    #: Whether the hook plays decisions out with the acting policy (the collection refuses
    #: to start without one).
    needs_acting = True

    def on_collect_start(self, collector: Collector) -> None:
        """A rollout's collection begins."""

    def before_step(self, collector: Collector, e: int, obs: np.ndarray, mask: np.ndarray,
                    learn: np.ndarray, idx: np.ndarray) -> None:
        """Engine ``e`` is about to play one step: its observations, masks, which rows are
        the learner's and each row's index in the rollout."""

    def on_collect_end(self, collector: Collector, ro: Rollout,
                       acting: ActingPolicy | None) -> PlayedOut | None:
        """The rollout is collected (and bootstrapped); the decisions this hook valued, if
        any."""
        return None


class UpdateHook:
    """A plug-in's part in the PPO update (one per learner).

    In an update the learner calls :meth:`on_update_start` once, :meth:`on_epoch_start`
    at each epoch, :meth:`minibatch` before each minibatch, and, with what that returned,
    :meth:`loss` inside the minibatch: the term ``coef * loss`` joins PPO's loss, and its
    mean over the minibatches is the update's ``loss_name`` figure. :meth:`figures` adds the
    update's other figures. :meth:`state` and :meth:`load` keep what the hook holds across a
    resume, under its ``name`` in the checkpoint."""

    #: The checkpoint entry of the hook's state ("" : it keeps none).
    name = ""
    #: The figure of its loss term ("" : it adds none).
    loss_name = ""
    #: The weight of its loss term.
    coef = 1.0

    def on_update_start(self, learner: Learner, ro: Rollout) -> bool:
        """The update on ``ro`` begins; whether the hook adds a loss term to this update."""
        return False

    def on_epoch_start(self, learner: Learner, parts: int) -> None:
        """An epoch of ``parts`` minibatches begins."""

    def minibatch(self, learner: Learner, k: int) -> Any:
        """What minibatch ``k`` of the epoch fits of this hook's (``None``: nothing)."""
        return None

    def loss(self, learner: Learner, batch: Any) -> Any:
        """The loss term on ``batch`` (a torch scalar), before ``coef``."""
        raise NotImplementedError

    def figures(self) -> dict[str, float]:
        """The update's figures of this hook."""
        return {}

    def state(self) -> dict[str, Any]:
        """What a checkpoint keeps of the hook (tensors and plain data)."""
        return {}

    def load(self, state: dict[str, Any]) -> None:
        """What :meth:`state` gave; a ``ValueError`` names what is wrong with a damaged
        one."""


__all__ = ["CollectionHook", "PlayedOut", "UpdateHook"]
