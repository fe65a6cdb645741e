"""Plug-ins of the self-play trainer that read, during training only, what the observation
hides: the other seats' hands.

* ``critic`` (:class:`CentralCriticSettings`): a *centralised critic*, PerfectDou's
  perfect-information distillation in PPO's terms. A second value network reads the deciding
  seat's observation and every other seat's hand; the advantages of the update (GAE) are taken
  with its values, and it is fitted to the returns they give. The actor, and the value head of
  the exported policy, read the observation alone, as before: what the policy file holds and
  plays is unchanged.
* ``belief`` (:class:`HandPredictionSettings`): a *hand-prediction auxiliary head* on the
  actor's trunk, which predicts every card of every other seat's hand (binary cross-entropy,
  weight ``hand_prediction``), so that the trunk learns to count cards. The head is not
  exported: the policy file plays as before.

Both read the hands through one collection hook (:class:`HiddenHands`), which keeps, for every
learner decision of a rollout, the other seats' hands in relative seat order
(:func:`relative_hands`, from the batched engine's ``state()``) in the rollout's features
(``Rollout.features[HANDS]``). The networks they add are parts of the learner's model
(:func:`network_parts`: in its optimiser, its checkpoint and what Ray collectors load), made
after the core's, so that a run without them draws the same initial weights as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dragons_egg.experiments.common.settings import SettingsGroup, check_range
from dragons_egg.experiments.training.hooks import CollectionHook, UpdateHook
from dragons_egg_env.cards import NUM_CARDS
from dragons_egg_env.observation import layout

if TYPE_CHECKING:
    from torch import nn

    from dragons_egg.experiments.training.learner import Learner
    from dragons_egg.experiments.training.rollout import ActingPolicy, Collector, Rollout

#: The rollout feature of :class:`HiddenHands`: per decision, the other seats' hands.
HANDS = "hidden_hands"


def relative_hands(state: np.ndarray, seats: np.ndarray, n: int, m: int) -> np.ndarray:
    """The hands of the seats other than ``seats[b]`` in match ``b``, in relative seat order
    (the next seat in play order first, as the observation orders seats), one bit per card:
    ``(B, (m - 1) * NUM_CARDS)`` bool, zeros past the table's ``n`` seats. ``state`` is the
    batched engine's ``state()`` (``layout(m, state=True)``: ``all_hands`` at absolute
    seats)."""
    b = len(state)
    hands = state[:, layout(m, state=True)["all_hands"]].reshape(b, m, NUM_CARDS) > 0.5
    rel = (np.asarray(seats)[:, None] + np.arange(1, n)[None, :]) % n
    out = np.zeros((b, m - 1, NUM_CARDS), np.bool_)
    out[:, :n - 1] = hands[np.arange(b)[:, None], rel]
    return out.reshape(b, (m - 1) * NUM_CARDS)


@dataclass(frozen=True)
class CentralCriticSettings(SettingsGroup):
    """The plug-in ``critic``: a centralised value network for the advantages (the module
    docstring)."""

    #: Take the advantages with a critic that also reads every other seat's hand (training
    #: only; the actor and the exported policy read the observation alone).
    central_critic: bool = False
    #: Hidden layer sizes of the centralised critic (tanh).
    critic_hidden: tuple[int, ...] = (256, 256)

    def check(self) -> None:
        super().check()
        check_range(len(self.critic_hidden) >= 1 and min(self.critic_hidden) >= 1,
                    "critic_hidden", list(self.critic_hidden), "one or more sizes >= 1")


@dataclass(frozen=True)
class HandPredictionSettings(SettingsGroup):
    """The plug-in ``belief``: a hand-prediction auxiliary head on the actor's trunk (the
    module docstring)."""

    #: Weight of the auxiliary loss of predicting the other seats' hands from the actor's
    #: trunk (binary cross-entropy per card; 0: off, no head).
    hand_prediction: float = 0.0

    def check(self) -> None:
        super().check()
        check_range(self.hand_prediction >= 0, "hand_prediction", self.hand_prediction, ">= 0")


def hidden_size(m: int) -> int:
    """Length of :func:`relative_hands`' rows at tables padded to ``m`` seats."""
    return (m - 1) * NUM_CARDS


def network_parts(critic: CentralCriticSettings, belief: HandPredictionSettings,
                  obs_size: int, trunk_size: int, m: int) -> dict[str, nn.Module]:
    """The networks the plug-ins that are on add to the learner's model, by attribute name:
    ``critic`` (observation and hidden hands to a value) and ``hand_head`` (the trunk's
    output to a logit per card of every other seat)."""
    from torch import nn

    parts: dict[str, nn.Module] = {}
    if critic.central_critic:
        layers: list[nn.Module] = []
        prev = obs_size + hidden_size(m)
        for h in critic.critic_hidden:
            layers += [nn.Linear(prev, h), nn.Tanh()]
            prev = h
        parts["critic"] = nn.Sequential(*layers, nn.Linear(prev, 1))
    if belief.hand_prediction > 0:
        parts["hand_head"] = nn.Linear(trunk_size, hidden_size(m))
    return parts


def critic_values(model: Any, obs: np.ndarray, hands: np.ndarray) -> np.ndarray:
    """The centralised critic's value of each row (no gradient)."""
    import torch

    with torch.no_grad():
        x = torch.cat([torch.from_numpy(np.ascontiguousarray(obs, np.float32)),
                       torch.from_numpy(hands.astype(np.float32))], -1)
        out: np.ndarray = model.critic(x).squeeze(-1).numpy()
        return out


class HiddenHands(CollectionHook):
    """Keeps the other seats' hands of every learner decision (``Rollout.features[HANDS]``);
    with the centralised critic, it also values the rollout's learner decisions and its
    open trajectories' ends with the critic (``Rollout.value``, ``Rollout.bootstrap``), so
    that the advantages are the critic's."""

    name = "central_critic"

    def __init__(self, m: int, critic: bool) -> None:
        self.m = m
        self.critic = critic
        self.needs_acting = critic
        self.buf = np.zeros((0, hidden_size(m)), np.bool_)

    def on_collect_start(self, collector: Collector) -> None:
        n = collector.cfg.collection.rollout_steps * collector.num
        self.buf = np.zeros((n, hidden_size(self.m)), np.bool_)

    def before_step(self, collector: Collector, e: int, obs: np.ndarray, mask: np.ndarray,
                    learn: np.ndarray, idx: np.ndarray) -> None:
        if not learn.any():
            return
        eng = collector.engines[e]
        rel = relative_hands(eng.state(), eng.seats, eng.num_players, self.m)
        self.buf[idx[learn]] = rel[learn]

    def on_collect_end(self, collector: Collector, ro: Rollout,
                       acting: ActingPolicy | None) -> None:
        ro.features[HANDS] = self.buf
        if not self.critic:
            return
        assert acting is not None  # needs_acting: the collection checked
        rows = np.flatnonzero(ro.learner)
        ro.value[rows] = critic_values(acting.model, ro.obs[rows], self.buf[rows])
        # the open trajectories: valued at the seat's observation and the hands now
        open_ = np.flatnonzero(ro.learner & (ro.next_index < 0) & ~ro.terminal)
        match = open_ % collector.num
        for e, eng in enumerate(collector.engines):
            o = collector.offsets[e]
            mine = open_[(match >= o) & (match < o + eng.num_envs)]
            if not len(mine):
                continue
            state = eng.state()
            for s in np.unique(ro.seat[mine]):
                r = mine[ro.seat[mine] == s]
                b = r % collector.num - o
                seats = np.full(eng.num_envs, s, np.int64)
                obs = eng.observe(seats)[b]
                hands = relative_hands(state, seats, eng.num_players, self.m)[b]
                ro.bootstrap[r] = critic_values(acting.model, obs, hands)


class CriticLoss(UpdateHook):
    """The centralised critic's value loss on each PPO minibatch: squared error to the
    returns of the update's advantages (weight ``vf_coef``; the figure ``critic_loss``)."""

    loss_name = "critic_loss"

    def __init__(self, vf_coef: float) -> None:
        self.coef = vf_coef
        self.x: Any = None

    def on_update_start(self, learner: Learner, ro: Rollout) -> bool:
        torch = learner.torch
        idx = learner.ppo_index
        self.x = torch.cat([torch.from_numpy(ro.obs[idx]),
                            torch.from_numpy(ro.features[HANDS][idx].astype(np.float32))], -1)
        return True

    def minibatch(self, learner: Learner, k: int) -> Any:
        mb = learner.ppo_minibatch
        return self.x[mb], learner.ppo_returns[mb]

    def loss(self, learner: Learner, batch: Any) -> Any:
        x, ret = batch
        critic: Any = learner.model.critic
        v = critic(x).squeeze(-1)
        return ((v - ret) ** 2).mean()


class HandLoss(UpdateHook):
    """The hand-prediction head's binary cross-entropy on each PPO minibatch, over every card
    of every other seat present (weight ``hand_prediction``; the figures ``hand_loss`` and
    ``hand_acc``, the share of those cards it predicts right)."""

    loss_name = "hand_loss"

    def __init__(self, coef: float, m: int) -> None:
        self.coef = coef
        self.m = m
        self.obs: Any = None
        self.target: Any = None
        self.seats: Any = None
        self.hits = 0.0
        self.count = 0.0

    def on_update_start(self, learner: Learner, ro: Rollout) -> bool:
        torch = learner.torch
        idx = learner.ppo_index
        self.obs = torch.from_numpy(ro.obs[idx])
        self.target = torch.from_numpy(ro.features[HANDS][idx].astype(np.float32))
        # the seats present at each decision's table, per relative seat, one flag per card
        present = ro.obs[idx][:, layout(self.m)["seat_present"]][:, 1:] > 0.5
        self.seats = torch.from_numpy(np.repeat(present, NUM_CARDS, axis=1).astype(np.float32))
        self.hits = self.count = 0.0
        return True

    def minibatch(self, learner: Learner, k: int) -> Any:
        mb = learner.ppo_minibatch
        return self.obs[mb], self.target[mb], self.seats[mb]

    def loss(self, learner: Learner, batch: Any) -> Any:
        torch = learner.torch
        obs, target, seats = batch
        model: Any = learner.model
        logits = model.hand_head(model.features(obs))
        bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, target,
                                                                   reduction="none")
        with torch.no_grad():
            self.hits += float((((logits > 0).float() == target).float() * seats).sum())
            self.count += float(seats.sum())
        return (bce * seats).sum() / seats.sum().clamp(min=1.0)

    def figures(self) -> dict[str, float]:
        return {"hand_acc": self.hits / self.count} if self.count else {}


__all__ = ["HANDS", "relative_hands", "hidden_size", "CentralCriticSettings",
           "HandPredictionSettings", "network_parts", "critic_values", "HiddenHands",
           "CriticLoss", "HandLoss"]
