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

This module is also the room of the trainer's two plug-ins that play decisions out, with their
settings and their hooks (:mod:`.hooks`): ``tribute_cf`` (:class:`TributeCounterfactualSettings`)
and ``egg_cf`` (:class:`EggCounterfactualSettings`). Each has a collection hook
(:class:`PlayOuts`: the decisions it keeps and their values); both kinds of rows are learned
from by one update hook (:class:`CounterfactualLoss`: the loss of ``tribute_cf_update``, the
replay of ``tribute_cf_replay``, the figures ``cf_regret`` and ``egg_regret``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt

from dragons_egg.experiments.common.settings import (
    SettingsGroup,
    check_range,
    require,
)
from dragons_egg.experiments.training.hooks import CollectionHook, PlayedOut, UpdateHook
from dragons_egg_env import engine as E
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, NUM_ACTIONS
from dragons_egg_env.cards import EGG, NUM_NUMBERS
from dragons_egg_env.observation import layout

if TYPE_CHECKING:
    from dragons_egg.experiments.training.learner import Learner
    from dragons_egg.experiments.training.rollout import ActingPolicy, Collector, Rollout

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

    def collection_hook(self, seed: int, max_players: int) -> PlayOuts:
        """The plug-in's hook in a collector seeded ``seed`` (its own generator)."""
        return PlayOuts("tribute_counterfactual", self.tribute_counterfactual, egg=False,
                        rng=np.random.default_rng((seed, 2)), max_players=max_players)

    def update_hook(self, clip_range: float) -> CounterfactualLoss:
        """The update of the played-out rows (this plug-in's and ``egg_cf``'s)."""
        return CounterfactualLoss(self, clip_range)


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

    def collection_hook(self, seed: int, max_players: int) -> PlayOuts:
        """The plug-in's hook in a collector seeded ``seed`` (its own generator)."""
        return PlayOuts("egg_counterfactual", self.egg_counterfactual, egg=True,
                        rng=np.random.default_rng((seed, 3)), max_players=max_players)


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


# ---------------------------------------------------------------------------------------
# The plug-ins' hooks: the collection (which decisions are played out) and the update.

class PlayOuts(CollectionHook):
    """The collection hook of ``tribute_cf`` (``egg`` false: the learner's tribute decisions
    with a choice) or ``egg_cf`` (``egg``: its play decisions with a choice made while its
    seat holds the Egg): a ``share`` of them, drawn with ``rng``, is kept before it is
    played, and at the end of the rollout every choice of each (with ``tribute_cf``, every
    class of choice, :func:`action_classes`) is played out to the end of the round by the
    acting policy, greedy (:func:`counterfactual_values`), per table size."""

    def __init__(self, name: str, share: float, *, egg: bool, rng: np.random.Generator,
                 max_players: int) -> None:
        #: The setting that turns it on (named when the acting policy is missing).
        self.name = name
        self.share = share
        self.egg = egg
        self.rng = rng
        self.max_players = max_players
        #: Where an observation shows the observer's own Egg.
        self.egg_col = layout(max_players)["hand"].start + EGG
        #: Per engine: ``(state, rollout index)`` of each decision kept this rollout.
        self.kept: list[list[tuple[E.State, int]]] = []

    def choice_rows(self, obs: np.ndarray, mask: np.ndarray,
                    learn: np.ndarray) -> npt.NDArray[np.bool_]:
        """Which rows are decisions of this hook's kind with a choice."""
        choice = learn & (mask.sum(axis=1) > 1)
        if self.egg:
            choice = choice & (obs[:, self.egg_col] > 0) & ~tribute_rows(mask)
        else:
            choice = choice & tribute_rows(mask)
        return cast("npt.NDArray[np.bool_]", choice)

    def on_collect_start(self, collector: Collector) -> None:
        self.kept = [[] for _ in collector.engines]

    def before_step(self, collector: Collector, e: int, obs: np.ndarray, mask: np.ndarray,
                    learn: np.ndarray, idx: np.ndarray) -> None:
        rows = np.flatnonzero(self.choice_rows(obs, mask, learn))
        if not len(rows):  # no draw when there is none
            return
        rows = rows[self.rng.random(len(rows)) < self.share]
        eng = collector.engines[e]
        for b in rows:
            self.kept[e].append((eng.to_state(int(b)), int(idx[b])))

    def on_collect_end(self, collector: Collector, ro: Rollout,
                       acting: ActingPolicy | None) -> PlayedOut | None:
        if acting is None:
            raise ValueError(f"{self.name} needs the acting policy (acting=...)")
        index, qs = [], []
        for kept in self.kept:
            if not kept:
                continue
            at = np.array([i for _, i in kept], np.int64)
            states = [s for s, _ in kept]
            q = counterfactual_values(states, [s.current for s in states], ro.mask[at],
                                      acting.greedy, acting.greedy, self.max_players,
                                      int(self.rng.integers(2**62)), per_class=not self.egg,
                                      rng=self.rng)
            index.append(at)
            qs.append(q.astype(np.float32))
        self.kept = []
        if not index:
            return None
        at = np.concatenate(index)
        return PlayedOut(at, np.concatenate(qs), np.full(len(at), self.egg))


def counterfactual_batch(ro: Rollout) -> dict[str, np.ndarray]:
    """The counterfactual tribute rows of a rollout as the learner trains on them: the
    observation, mask, behaviour probabilities ``probs`` (and their logs, 0 where illegal)
    and each legal action's advantage ``A(a) = Q(a) - sum_b pi_b(b) Q(b)``, divided by the
    behaviour policy's root mean square of ``A`` over every row (as PPO normalises its
    advantages); 0 where illegal; ``adv_u`` the same ``A`` divided by its root mean square
    over every legal action alike (the logit update's); ``target`` each legal action's value
    minus the legal actions' mean value (the regression's), 0 where illegal; ``egg`` which
    rows are the Egg holder's plays (``egg_counterfactual``). The tribute rows and the Egg
    holder's rows are normalised apart, each over its own rows, so that either scales as it
    would alone. Rows whose actions all have the same value add nothing."""
    mask = ro.mask[ro.cf_index]
    probs = np.where(mask, np.maximum(ro.cf_probs, 1e-8), 0.0).astype(np.float32)
    probs /= probs.sum(axis=1, keepdims=True)
    q = np.where(mask, np.nan_to_num(ro.cf_q), 0.0)
    raw = np.where(mask, q - (probs * q).sum(axis=1, keepdims=True), 0.0)
    egg = egg_rows(ro)
    adv, adv_u = np.zeros_like(raw), np.zeros_like(raw)
    for rows in (~egg, egg):
        if rows.any():
            r = raw[rows]
            adv[rows] = r / (float(np.sqrt((probs[rows] * r ** 2).sum(axis=1).mean())) + 1e-8)
            # the same advantages divided instead by their root mean square over every legal
            # action of every row, weighed alike (the logit update's: an action the behaviour
            # policy almost never plays counts as much as the one it plays)
            adv_u[rows] = r / (float(np.sqrt((r ** 2).sum() / mask[rows].sum())) + 1e-8)
    target = np.where(mask, q - q.sum(axis=1, keepdims=True) / mask.sum(axis=1, keepdims=True),
                      0.0)
    return {"obs": np.ascontiguousarray(ro.obs[ro.cf_index]), "mask": mask,
            "probs": probs, "logp_b": np.where(mask, np.log(probs + (~mask)), 0.0
                                                ).astype(np.float32),
            "adv": adv.astype(np.float32), "adv_u": adv_u.astype(np.float32),
            "target": target.astype(np.float32), "egg": egg}


def egg_rows(ro: Rollout) -> npt.NDArray[np.bool_]:
    """Which counterfactual rows are the Egg holder's plays (none in a rollout built
    without the marker)."""
    if len(ro.cf_egg) == len(ro.cf_index):
        return ro.cf_egg.astype(bool)
    return np.zeros(len(ro.cf_index), bool)


class TributeReplay:
    """The last ``size`` counterfactual tribute decisions (``tribute_cf_replay``), oldest
    first: what the regression fits of each (:data:`KEYS` of :func:`counterfactual_batch`)."""

    KEYS = ("obs", "mask", "target")

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: dict[str, np.ndarray] | None = None

    def __len__(self) -> int:
        return 0 if self.data is None else len(self.data["target"])

    def add(self, batch: dict[str, np.ndarray] | None) -> dict[str, np.ndarray] | None:
        """Keep ``batch``'s decisions (``None``: none), dropping the oldest past ``size``;
        every decision kept, this batch's last."""
        if batch is not None and len(batch["target"]):
            new = {k: np.asarray(batch[k]) for k in self.KEYS}
            if self.data is not None:
                new = {k: np.concatenate([self.data[k], new[k]]) for k in self.KEYS}
            self.data = {k: np.ascontiguousarray(v[-self.size:]) for k, v in new.items()}
        return self.data

    def state(self) -> dict[str, Any]:
        """The decisions as a checkpoint holds them (tensors; empty: ``{}``)."""
        import torch

        return {} if self.data is None else {k: torch.from_numpy(v) for k, v in
                                             self.data.items()}

    def load(self, state: dict[str, Any]) -> None:
        """The decisions of :meth:`state` (the last ``size`` of them: a resume may keep fewer);
        a ``ValueError`` naming what is wrong with a damaged one."""
        import torch

        if not state:
            self.data = None
            return
        if set(state) != set(self.KEYS):
            raise ValueError(f"the checkpoint's tribute replay holds {sorted(state)}, not "
                             f"{list(self.KEYS)}")
        if not all(isinstance(state[k], torch.Tensor) for k in self.KEYS):
            raise ValueError("the checkpoint's tribute replay holds something other than "
                             "tensors")
        data = {k: state[k].numpy() for k in self.KEYS}
        rows = {len(v) for v in data.values()}
        if len(rows) != 1 or data["mask"].dtype != np.bool_ or data["mask"].ndim != 2 or \
                data["mask"].shape != data["target"].shape or data["obs"].ndim != 2:
            raise ValueError("the checkpoint's tribute replay is damaged: its arrays do not "
                             "agree in rows or shape")
        self.data = None
        self.add(data)


def tribute_regret(ro: Rollout, egg: bool = False) -> float | None:
    """How far the behaviour policy's tribute choices fall short of the best, in round reward:
    the mean over the rollout's counterfactual tribute rows of
    ``max_a Q(a) - sum_a pi_b(a) Q(a)`` (0 for a policy that always takes a best choice of
    the deal; logged as ``cf_regret``, the learning curve of the tribute). With ``egg``, the
    same over the Egg holder's plays (``egg_regret``). ``None`` without such rows."""
    rows = egg_rows(ro) == egg
    if not rows.any():
        return None
    mask = ro.mask[ro.cf_index[rows]]
    q = np.where(mask, np.nan_to_num(ro.cf_q[rows]), -np.inf)
    probs = np.where(mask, ro.cf_probs[rows], 0.0)
    expected = (probs * np.where(mask, q, 0.0)).sum(axis=1) / probs.sum(axis=1)
    return float((q.max(axis=1) - expected).mean())


class CounterfactualLoss(UpdateHook):
    """The update hook of the played-out rows (``tribute_cf``'s and ``egg_cf``'s): each
    update trains on the rollout's rows (with ``tribute_cf_replay``, and the replay's), spread
    over the same minibatches as PPO's decisions, with the loss of ``tribute_cf_update``
    weighted ``tribute_cf_coef``; its figures are ``cf_loss``, ``cf_regret`` and
    ``egg_regret`` (:func:`tribute_regret`). The replay is kept in the checkpoint
    (``tribute_replay``)."""

    name = "tribute_replay"
    loss_name = "cf_loss"

    def __init__(self, settings: TributeCounterfactualSettings, clip_range: float) -> None:
        self.settings = settings
        self.coef = settings.tribute_cf_coef
        self.clip_range = clip_range
        #: The counterfactual decisions every update fits (``tribute_cf_replay``), else None.
        self.replay = (TributeReplay(settings.tribute_cf_replay) if settings.tribute_cf_replay
                       else None)
        self.batch: dict[str, Any] | None = None
        self.split: list[Any] = []
        self.regrets: dict[str, float | None] = {}

    def on_update_start(self, learner: Learner, ro: Rollout) -> bool:
        cf = counterfactual_batch(ro) if len(ro.cf_index) else None
        if self.replay is not None:  # this rollout's decisions and the earlier ones kept
            cf = self.replay.add(cf)
        self.regrets = {"cf_regret": tribute_regret(ro),
                        "egg_regret": tribute_regret(ro, egg=True)}
        torch = learner.torch
        self.batch = None if cf is None else {k: torch.from_numpy(v) for k, v in cf.items()}
        return self.batch is not None

    def on_epoch_start(self, learner: Learner, parts: int) -> None:
        # drawn only when there are rows, so that a run without them draws as before
        if self.batch is not None:
            torch = learner.torch
            self.split = list(torch.tensor_split(
                torch.randperm(len(self.batch["obs"]), generator=learner.gen), parts))

    def minibatch(self, learner: Learner, k: int) -> dict[str, Any] | None:
        if self.batch is None or not len(self.split[k]):
            return None
        rows = self.split[k]
        return {key: v[rows] for key, v in self.batch.items()}

    def loss(self, learner: Learner, batch: dict[str, Any]) -> Any:
        """The all-action clipped surrogate of the counterfactual rows: for each, the
        behaviour policy's expectation over its legal actions ``a`` of PPO's clipped
        objective with the ratio ``pi(a) / pi_b(a)`` and the advantage ``A(a)``
        (:func:`counterfactual_batch`), negated; or the logit update or the regression
        (``tribute_cf_update``)."""
        torch = learner.torch
        logits, _ = learner.model(batch["obs"], batch["mask"])
        if self.settings.tribute_cf_update == "logits":
            return self.logits_loss(logits, batch)
        if self.settings.tribute_cf_update == "regression":
            return self.regression_loss(logits, batch)
        eps = self.clip_range
        logp = torch.log_softmax(logits, -1).masked_fill(~batch["mask"], 0.0)
        ratio = torch.exp(logp - batch["logp_b"])
        adv = batch["adv"]
        obj = torch.min(ratio * adv, ratio.clamp(1 - eps, 1 + eps) * adv)
        return self.kind_mean(-(batch["probs"] * obj).sum(-1), batch)

    @staticmethod
    def centred_logits(logits: Any, mask: Any) -> Any:
        """Each legal action's logit minus the mean of its decision's legal logits; 0 where
        illegal (what the logit update pushes and the regression fits)."""
        z = logits.masked_fill(~mask, 0.0)
        return (z - z.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True)).masked_fill(~mask, 0.0)

    def logits_loss(self, logits: Any, cf: dict[str, Any]) -> Any:
        """The logit update of the counterfactual rows (NeuRD): minus the sum over the legal
        actions of each one's advantage over the behaviour policy's expected value
        (``adv_u``) times its logit centred on the legal actions' mean, so that the gradient
        on a logit is its advantage, whatever its probability; a logit already
        ``tribute_cf_threshold`` above (below) the mean is not pushed further up (down)."""
        import torch

        mask = cf["mask"]
        y = self.centred_logits(logits, mask)
        adv = cf["adv_u"]
        beta = self.settings.tribute_cf_threshold
        with torch.no_grad():
            push = torch.where(((adv > 0) & (y < beta)) | ((adv < 0) & (y > -beta)), adv,
                               torch.zeros_like(adv))
        return self.kind_mean(-(push * y).sum(-1), cf)

    def regression_loss(self, logits: Any, cf: dict[str, Any]) -> Any:
        """The regression of the counterfactual rows: each legal action's logit, centred on
        the decision's legal mean, fitted to ``tribute_cf_scale`` (``c``) times its centred
        value (``target``): ``sum_a (y_a - c t_a)^2 / (2c)`` over the legal actions, averaged
        over the rows, so that the gradient on a logit is its error in round reward,
        ``y_a / c - t_a`` (the same order as the logit update's pushes)."""
        mask = cf["mask"]
        c = self.settings.tribute_cf_scale
        y = self.centred_logits(logits, mask)
        return self.kind_mean(((y - c * cf["target"]) ** 2).sum(-1), cf) / (2 * c)

    @staticmethod
    def kind_mean(per_row: Any, cf: dict[str, Any]) -> Any:
        """The mean over the tribute rows plus the mean over the Egg holder's rows (each
        kind weighs in the loss as it would alone); the plain mean where the batch does not
        mark them (the tribute replay holds tribute rows only)."""
        egg = cf.get("egg")
        if egg is None or not bool(egg.any()) or bool(egg.all()):
            return per_row.mean()
        return per_row[~egg].mean() + per_row[egg].mean()

    def figures(self) -> dict[str, float]:
        return {k: v for k, v in self.regrets.items() if v is not None}

    def state(self) -> dict[str, Any]:
        return self.replay.state() if self.replay is not None else {}

    def load(self, state: dict[str, Any]) -> None:
        if self.replay is not None:  # an older checkpoint's run kept none
            self.replay.load(state)


__all__ = ["COLUMN_GROUP", "CounterfactualLoss", "EggCounterfactualSettings", "PlayOuts",
           "TributeCounterfactualSettings", "TributeReplay", "action_classes",
           "counterfactual_batch", "counterfactual_values", "egg_rows", "tribute_regret",
           "tribute_rows"]
