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
from typing import Any

import numpy as np

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


def tribute_rows(mask: np.ndarray) -> np.ndarray:
    """Which decisions are tribute decisions (an ask or a give-back is legal, R31..R33)."""
    return mask[:, ASK_BASE:].any(axis=1)


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
