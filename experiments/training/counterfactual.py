"""Counterfactual values of tribute choices: each choice played out on the same deal.

A tribute decision (an ask or a give-back, R31..R33) is a few per match, and its effect on the
round is small next to everything played after it, so a sampled return says little about it.
Here it is measured instead: the state of the decision is copied once per legal choice (with
``per_class``, once per class of :func:`action_classes`: one card of each number, one dragon
card, the Egg and the pass, whose value counts for the whole class, as suits cannot change the
game, R7), every copy plays its choice and then the rest of the round, all copies in one
batch on the compiled engine (:class:`dragons_egg_env.vector.VectorEngine`), and ``Q(s, a)``
is the deciding seat's round reward (R27) after ``a``. The rest of the round is played by
deterministic policies given as functions, so each value is exact for its deal, and its mean
over deals is the value of ``a`` in what the deciding seat knows.

Two users: the self-play trainer (:mod:`.selfplay`, ``tribute_counterfactual``), which plays
the rest of the round with its own policy, greedy, and trains its tribute on these values;
and the research tool ``dragons_egg.experiments.research.tribute.fit``, which refits a
finished policy's tribute to them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from dragons_egg.experiments.common.settings import (
    SettingsGroup,
    check_range,
    require,
)
from dragons_egg_env import engine as E
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, NUM_ACTIONS
from dragons_egg_env.cards import EGG, NUM_NUMBERS

#: Actions for rows of padded observations and their masks: ``fn(obs, mask) -> actions``.
ActionFn = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: The card of each tribute column (asks of cards 0..43, then gives of cards 0..44).
_CARD = np.r_[np.arange(GIVE_BASE - ASK_BASE), np.arange(NUM_ACTIONS - GIVE_BASE)]
#: The card group of each tribute column (``ASK_BASE`` on): number - 1 for a numbered card,
#: ``NUM_NUMBERS`` for a dragon card, -1 for the Egg (the groups of
#: :func:`dragons_egg.agents.heads.group_counts`).
COLUMN_GROUP = np.where(_CARD < 4 * NUM_NUMBERS, _CARD // 4,
                        np.where(_CARD < EGG, NUM_NUMBERS, -1))


@dataclass(frozen=True)
class TributeCounterfactualSettings(SettingsGroup):
    """The plug-in ``tribute_cf`` of the self-play trainer: the learner's tribute decisions
    played out, choice by choice, and learned from on those values (docs/training.md,
    "Tribute learned in the trainer"). Flat flags, as every group's (``--tribute-cf-coef``)."""

    #: Share of the learner's tribute decisions (asks and give-backs with a choice) whose
    #: every choice is played out to the end of the round on the same deal by the acting
    #: policy, greedy (:func:`counterfactual_values`), and learned from with the all-action
    #: surrogate on those values (0: none, the plug-in is off).
    tribute_counterfactual: float = 0.0
    #: Loss weight of the counterfactual tribute surrogate.
    tribute_cf_coef: float = 1.0
    #: How the counterfactual values move the policy: ``surrogate``, the all-action clipped
    #: PPO surrogate (an action's step scales with its probability), or ``logits``, each
    #: legal action's logit moved by its advantage (NeuRD, Hennes et al. 2020: no
    #: probability factor, so a choice the policy almost never makes still moves),
    #: within ``tribute_cf_threshold`` of the decision's mean logit.
    #: ``regression``: each legal action's logit, centred on the decision's legal mean,
    #: fitted to ``tribute_cf_scale`` times its value centred alike (a tribute decision is a
    #: bandit whose every arm was played out: regressing every arm averages the hidden cards'
    #: noise over the decisions that share an observation's features, and the policy's best
    #: choice becomes the one of the best expected value).
    tribute_cf_update: Literal["surrogate", "logits", "regression"] = "surrogate"
    #: With ``tribute_cf_update = "logits"``: a logit more than this above (below) its
    #: decision's mean is pushed no further up (down), so the logits stay bounded.
    tribute_cf_threshold: float = 2.0
    #: With ``tribute_cf_update = "regression"``: logits per unit of round reward (20: a
    #: choice worth 0.1 more than another is fitted 2 logits above it).
    tribute_cf_scale: float = 20.0
    #: With ``tribute_cf_update = "regression"``: every update fits the last this many
    #: counterfactual tribute decisions (a replay, kept in the checkpoint), not only its
    #: rollout's (0). Each is fitted once an epoch, beside the rollout's decisions.
    tribute_cf_replay: int = 0

    def check(self) -> None:
        super().check()
        check_range(0 <= self.tribute_counterfactual <= 1, "tribute_counterfactual",
                    self.tribute_counterfactual, "in [0, 1]")
        check_range(self.tribute_cf_coef >= 0, "tribute_cf_coef", self.tribute_cf_coef,
                    ">= 0")
        check_range(self.tribute_cf_threshold > 0, "tribute_cf_threshold",
                    self.tribute_cf_threshold, "> 0")
        check_range(self.tribute_cf_scale > 0, "tribute_cf_scale", self.tribute_cf_scale,
                    "> 0")
        check_range(self.tribute_cf_replay >= 0, "tribute_cf_replay", self.tribute_cf_replay,
                    ">= 0")
        require(not self.tribute_cf_replay or self.tribute_cf_update == "regression",
                f"tribute_cf_replay ({self.tribute_cf_replay}) needs tribute_cf_update = "
                f"regression (not {self.tribute_cf_update}): the other updates weigh each "
                "decision by the policy that played it, which a replayed one no longer is")
        require(not self.tribute_cf_replay or self.tribute_counterfactual > 0,
                f"tribute_cf_replay ({self.tribute_cf_replay}) keeps counterfactual tribute "
                "decisions, which tribute_counterfactual 0 makes none of")

    @property
    def on(self) -> bool:
        """Whether the plug-in plays any decision out."""
        return self.tribute_counterfactual > 0


@dataclass(frozen=True)
class EggCounterfactualSettings(SettingsGroup):
    """The plug-in ``egg_cf`` of the self-play trainer: the Egg holder's plays played out
    (docs/training.md, "The Egg holder's plays played out"), learned from with the update of
    :class:`TributeCounterfactualSettings` (``tribute_cf_update``, ``tribute_cf_coef``)."""

    #: Share of the learner's play decisions with a choice made while holding the Egg (R19:
    #: only a clear passes it on, R20) whose every legal play is played out to the end of the
    #: round on the same deal by the acting policy, greedy, as the counterfactual tribute
    #: decisions are (0: none, the plug-in is off).
    egg_counterfactual: float = 0.0

    def check(self) -> None:
        super().check()
        check_range(0 <= self.egg_counterfactual <= 1, "egg_counterfactual",
                    self.egg_counterfactual, "in [0, 1]")

    @property
    def on(self) -> bool:
        """Whether the plug-in plays any decision out."""
        return self.egg_counterfactual > 0


def tribute_rows(mask: np.ndarray) -> npt.NDArray[np.bool_]:
    """Which decisions are tribute decisions (an ask or a give-back is legal, R31..R33)."""
    # a 2-d mask: any(axis=1) is an array (numpy's stubs allow a scalar)
    return cast("npt.NDArray[np.bool_]", mask[:, ASK_BASE:].any(axis=1))


def action_classes(legal: np.ndarray) -> np.ndarray:
    """The class of each legal tribute action: the cards of one number, or the dragon cards,
    asked for or given back, form a class (their suits, and which dragon card, cannot change
    the game, R7); the pass and the Egg are classes of their own."""
    legal = np.asarray(legal)
    cls = np.where(legal >= ASK_BASE, COLUMN_GROUP[np.maximum(legal - ASK_BASE, 0)], -2)
    return np.where(cls == -1, -1 - legal, cls)  # the Egg: a class of its own


def counterfactual_values(states: Sequence[E.State], seats: Sequence[int], masks: np.ndarray,
                          play: ActionFn, tribute: ActionFn, max_players: int, seed: int,
                          per_class: bool = False,
                          rng: np.random.Generator | None = None) -> np.ndarray:
    """``Q[i, a]``: the round reward of ``seats[i]`` after action ``a`` in ``states[i]`` (states
    of one rules config, taken from the engine with ``VectorEngine.to_state``) and the rest of
    the round played by ``play`` (play decisions) and ``tribute`` (later tribute decisions);
    NaN where ``a`` is not legal. With ``per_class``, one action of each class of
    :func:`action_classes`, drawn from ``rng`` (default: seeded from ``seed``), is played out
    and its value is every member's: the members are interchangeable in play and the deal is
    uniform, so the value of each is unbiased over deals, for a third of the play-outs in the
    ask phase. Both policies must be deterministic for the values to be exact."""
    from dragons_egg_env.vector import VectorEngine

    if rng is None:
        rng = np.random.default_rng((seed, 1))  # the representatives (the engine gets seed)
    owner: list[int] = []
    cand: list[int] = []
    shared: list[Any] = []
    for i, mk in enumerate(masks):
        legal = np.flatnonzero(mk)
        if per_class:
            cls = action_classes(legal)
            for c in np.unique(cls):
                members = legal[cls == c]
                owner.append(i)
                cand.append(int(members[rng.integers(len(members))]))
                shared.append(members)
        else:
            owner += [i] * len(legal)
            cand += legal.tolist()
            shared += [[a] for a in legal]
    owner_a, cand_a = np.array(owner), np.array(cand, np.int64)
    # trusted: the states are the engine's own (taken with to_state).
    eng = VectorEngine.from_states([states[i] for i in owner], max_players=max_players,
                                   seed=seed, record=False, trusted=True)
    decider = np.asarray(seats)[owner_a]
    q = np.full(masks.shape, np.nan)
    active = np.ones(len(owner), bool)
    st = eng.step(cand_a)
    while True:
        ended = active & st.round_ended
        if ended.any():
            rows = np.flatnonzero(ended)
            q[owner_a[rows], cand_a[rows]] = st.rewards[rows, decider[rows]]
            active &= ~ended
        if not active.any():
            for row, members in enumerate(shared):
                q[owner_a[row], members] = q[owner_a[row], cand_a[row]]
            return q
        acts = np.argmax(st.mask, axis=1)  # finished copies: any legal action, unread
        trib = active & tribute_rows(st.mask)
        if trib.any():
            acts[trib] = tribute(st.obs[trib], st.mask[trib])
        rest = active & ~trib
        if rest.any():
            acts[rest] = play(st.obs[rest], st.mask[rest])
        st = eng.step(acts)
