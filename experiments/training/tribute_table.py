"""The give-back table the self-play trainer learns (``tribute_table``): a tribute head of its
own, with its own baseline, fitted to counterfactual values inside the trainer.

A give-back (R33) moves the round by a hundredth of a point or so, far below the noise of the
round that follows, and most of what its counterfactual values (:mod:`.counterfactual`) say
about one decision is the deal's hidden cards. The network, pushed by every decision's values
(the all-action surrogate, the logit update or a per-decision regression), followed that
noise: at 4 players its give-back stayed behind the heuristic's rule (docs/training.md,
"Tribute learned in the trainer"). What beat the rule there was a *table over few features*,
each cell pooling thousands of decisions (``dragons_egg.experiments.research.tribute.headroom``,
fitted after training). This module learns that table inside the trainer, at every table size:

- **Keys.** A give-back choice's key is its table size, its card group (a number, or the
  dragon cards) and how many cards of that group the Dragon holds: what
  :func:`dragons_egg.agents.heads.sized_tribute_features` lets a policy file hold.
- **Fit.** Every counterfactual give-back decision the trainer values adds, for each legal
  class of choice (:func:`~.counterfactual.action_classes`), its value minus the value of the
  heuristic's give-back (H9, :func:`dragons_egg.agents.heuristic.heuristic_actions`: the
  baseline) to its key's sum. A key's score is its mean gain shrunk towards the rule's level,
  as if ``shrink`` more decisions had gained 0; the table gives back a card of the legal key
  that scores highest (the Egg first, where the rules let it be given, as in H9).
- **Which sizes.** Before a decision joins the sums, the table as it stands is scored on it
  against the network's own give-back (the behaviour policy's most likely one, what the
  greedy ``ppo`` agent plays): the value of the table's choice minus the network's. Each
  table size keeps the last ``window`` of these held-out differences; the table replaces the
  network's give-back at a size only when at least ``min_decisions`` are kept there and their
  mean's 95% interval lies above 0. Every other size keeps the network's give-back.
- **Export.** :meth:`GiveBackTable.policy` writes the table into a policy file's heads
  ``tribute_by_size`` and ``gate`` (:func:`giveback_policy`): at a size that uses it, the
  give columns' own logits are switched off and the table's scores are the logits; at every
  other size, and for play and the asks at every size, the network's logits are untouched.

The table is in the checkpoint, so a resumed run goes on with the same sums and windows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from dragons_egg.agents.heads import GROUPS, group_counts, size_index, tribute_row
from dragons_egg.experiments.common.settings import SettingsGroup, check_range
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, NUM_ACTIONS
from dragons_egg_env.cards import NUM_NUMBERS
from dragons_egg_env.config import TABLE_SIZES

from .counterfactual import COLUMN_GROUP
from .hooks import UpdateHook

if TYPE_CHECKING:
    from .learner import Learner
    from .rollout import Rollout

#: Keys per table size: card group (0..9: number - 1, 10: the dragon cards) x count held (0..4).
KEYS = GROUPS * 5
#: Logit units per unit of table score in an exported policy (the give columns' own logits
#: are switched off where the table plays, so only the table's order matters).
EXPORT_SCALE = 1000.0
#: The card group of each give column (``GIVE_BASE`` on): -1 for the Egg.
GIVE_GROUP = COLUMN_GROUP[GIVE_BASE - ASK_BASE:]


@dataclass(frozen=True)
class TributeTableSettings(SettingsGroup):
    """The plug-in ``table`` of the self-play trainer: a give-back table learned beside the
    network (:class:`GiveBackTable`; docs/training.md, "A give-back table in the trainer")."""

    #: Learn the table: every counterfactual give-back decision adds each choice's value over
    #: the heuristic's give-back to a key of table size, card group and count held; the
    #: exported policy gives back by the table at each table size where, on decisions it had
    #: not yet fitted, it beat the network's own give-back (95% interval above 0), and by the
    #: network elsewhere. Needs the ``tribute_cf`` plug-in (``tribute_counterfactual`` > 0).
    tribute_table: bool = False
    #: A table key's score is its mean gain shrunk towards the rule's as if this many more
    #: decisions had gained 0.
    tribute_table_shrink: float = 50.0
    #: Held-out give-back decisions per table size (the latest) that decide whether the table
    #: plays there.
    tribute_table_window: int = 20_000
    #: The table plays at a table size only with at least this many held-out decisions there.
    tribute_table_min: int = 1_000

    def check(self) -> None:
        super().check()
        check_range(self.tribute_table_shrink >= 0, "tribute_table_shrink",
                    self.tribute_table_shrink, ">= 0")
        check_range(self.tribute_table_window >= 2, "tribute_table_window",
                    self.tribute_table_window, ">= 2")
        check_range(1 <= self.tribute_table_min <= self.tribute_table_window,
                    "tribute_table_min", self.tribute_table_min,
                    f"in 1..tribute_table_window ({self.tribute_table_window})")

    def new_table(self, max_players: int) -> GiveBackTable | None:
        """An empty give-back table with these settings, else None (``tribute_table`` off)."""
        if not self.tribute_table:
            return None
        return GiveBackTable(max_players, self.tribute_table_shrink, self.tribute_table_window,
                             self.tribute_table_min)

    def update_hook(self, max_players: int) -> TableHook | None:
        """The plug-in's update hook (:class:`TableHook`), else None."""
        table = self.new_table(max_players)
        return None if table is None else TableHook(table)


def give_rows(mask: np.ndarray) -> npt.NDArray[np.bool_]:
    """Which decisions are give-backs (a give column is legal, R33)."""
    # a 2-d mask: any(axis=1) is an array (numpy's stubs allow a scalar)
    return cast("npt.NDArray[np.bool_]", np.asarray(mask)[:, GIVE_BASE:].any(axis=1))


def column_keys(obs: np.ndarray) -> np.ndarray:
    """``(n, NUM_ACTIONS)`` int: the key (``group * 5 + count held``) of each give column of
    each observation; -1 for the Egg's column and every other column."""
    counts = group_counts(obs)
    keys = np.full((len(counts), NUM_ACTIONS), -1, np.int64)
    g = np.maximum(GIVE_GROUP, 0)
    keys[:, GIVE_BASE:] = np.where(GIVE_GROUP >= 0, g * 5 + counts[:, g], -1)
    return keys


def giveback_policy(policy: Any, scores: dict[int, np.ndarray], meta: dict[str, Any]) -> Any:
    """``policy`` (a :class:`dragons_egg.agents.netpolicy.NetPolicy` without ``pi_counts``) with
    its give-back at each table size of ``scores`` chosen by that size's table (``scores[n]``:
    ``(KEYS,)``, a score per :data:`KEYS` key), as a policy with the heads ``tribute_by_size``
    and ``gate``: at those sizes the give columns' own logits are switched off (``pi_gate`` 0)
    and the keys' scores, times :data:`EXPORT_SCALE`, are their logits. Every other size, and
    play, the pass and the asks at every size, are left exactly as they were. The Egg, where
    the rules let it be given back (R33), scores above every key, as in H9. Among the cards of
    the best key the first legal column is given (suits cannot change the game, R7)."""
    from dragons_egg.agents.heads import SIZE_EMBEDDING, SIZED_TRIBUTE_FEATURES
    from dragons_egg.agents.netpolicy import NetPolicy

    if policy.pi_counts is not None or policy.pi_gate is not None:
        raise ValueError("the base policy already has a tribute term (pi_counts); export "
                         "from the policy it came from")
    gate = np.ones((len(TABLE_SIZES), NUM_ACTIONS), np.float32)
    counts = np.zeros((SIZED_TRIBUTE_FEATURES, NUM_ACTIONS), np.float32)
    for players, score in scores.items():
        if players not in TABLE_SIZES:
            raise ValueError(f"players must be one of {TABLE_SIZES}, not {players}")
        score = np.asarray(score, np.float64)
        if score.shape != (KEYS,):
            raise ValueError(f"a give-back table has {KEYS} scores, not {score.shape}")
        gate[TABLE_SIZES.index(players), GIVE_BASE:] = 0.0
        top = max(0.0, float(score.max()))
        for col in range(GIVE_BASE, NUM_ACTIONS):
            group = GIVE_GROUP[col - GIVE_BASE]
            for c in range(5):  # exactly one count of each group is held: one row is active
                if group < 0:  # the Egg, scored on the dragon group's rows
                    counts[tribute_row("give", NUM_NUMBERS, c, players), col] = \
                        EXPORT_SCALE * (top + 1.0)
                else:
                    counts[tribute_row("give", group, c, players), col] = \
                        EXPORT_SCALE * score[group * 5 + c]
    extra = [h for h in policy.heads if h == SIZE_EMBEDDING]  # kept as it is
    return NetPolicy(policy.layers, policy.pi, policy.v, meta, counts, gate,
                     heads=["tribute_by_size", "gate", *extra], size_emb=policy.size_emb)


class GiveBackTable:
    """The give-back table of a run (module docstring): per table size, the sum of gains over
    the heuristic's give-back and the number of decisions of each key, and the last
    ``window`` held-out differences between the table's choice and the network's."""

    def __init__(self, max_players: int, shrink: float = 50.0, window: int = 20_000,
                 min_decisions: int = 1_000) -> None:
        self.max_players = max_players
        self.shrink = shrink
        self.window = window
        self.min_decisions = min_decisions
        #: ``(sizes, KEYS)``: the sum of each key's gains over the heuristic's give-back.
        self.sums = np.zeros((len(TABLE_SIZES), KEYS))
        #: ``(sizes, KEYS)``: how many decisions each key's sum holds.
        self.counts = np.zeros((len(TABLE_SIZES), KEYS))
        #: Per table size: the table's choice minus the network's, on decisions not yet in
        #: the sums, the last ``window`` of them.
        self.held_out: list[np.ndarray] = [np.zeros(0) for _ in TABLE_SIZES]
        #: Give-back decisions added to the sums so far (every size).
        self.fitted = 0

    def scores(self) -> np.ndarray:
        """``(sizes, KEYS)``: each key's mean gain over the heuristic's give-back, shrunk
        towards 0 (the rule's level) as if ``shrink`` more decisions had gained 0 (0 for a
        key no decision reached)."""
        den = self.counts + self.shrink
        return np.divide(self.sums, den, out=np.zeros_like(self.sums), where=den > 0)

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> npt.NDArray[np.intp]:
        """The table's give-back for each give-back observation (padded to ``max_players``)
        and its mask: a card of the legal key that scores highest (its first legal column),
        the Egg first where it is legal."""
        obs, mask = np.asarray(obs), np.asarray(mask, bool)
        keys = column_keys(obs)
        score = self.scores()[size_index(obs, self.max_players)[:, None],
                              np.maximum(keys, 0)]
        score = np.where(keys < 0, np.inf, score)  # the Egg (the only give column with -1)
        score = np.where(mask & (np.arange(NUM_ACTIONS) >= GIVE_BASE), score, -np.inf)
        out: npt.NDArray[np.intp] = np.argmax(score, axis=1)
        return out

    def add(self, obs: np.ndarray, mask: np.ndarray, q: np.ndarray,
            network: np.ndarray) -> int:
        """Score the table on the give-back decisions among these counterfactual decisions
        (``q``: each legal action's value, :mod:`.counterfactual`; ``network``: the network's
        own choice), against ``network``, then add them to the sums. Returns how many were
        give-backs."""
        from dragons_egg.agents.heuristic import heuristic_actions

        rows = np.flatnonzero(give_rows(mask))
        if not len(rows):
            return 0
        obs, mask = np.asarray(obs)[rows], np.asarray(mask, bool)[rows]
        q, network = np.asarray(q, np.float64)[rows], np.asarray(network)[rows]
        n = np.arange(len(rows))
        size = size_index(obs, self.max_players)
        diff = q[n, self.choose(obs, mask)] - q[n, network]
        for s in np.unique(size):
            self.held_out[s] = np.concatenate([self.held_out[s], diff[size == s]]
                                              )[-self.window:]
        base = q[n, heuristic_actions(obs, mask, self.max_players)]
        keys = np.where(mask, column_keys(obs), -1)
        row, col = np.nonzero(keys >= 0)
        # one entry per key of a decision: a key's cards share their value (R7, per class)
        pairs, first = np.unique(np.stack([row, keys[row, col]], 1), axis=0, return_index=True)
        row, col = row[first], col[first]
        np.add.at(self.sums, (size[row], pairs[:, 1]), q[row, col] - base[row])
        np.add.at(self.counts, (size[row], pairs[:, 1]), 1.0)
        self.fitted += len(rows)
        return len(rows)

    def validation(self) -> dict[int, dict[str, float]]:
        """Per table size with held-out decisions: how many (``n``), and the mean of the
        table's choice minus the network's with its 95% interval (normal; ``low``, ``high``)."""
        out = {}
        for s, d in enumerate(self.held_out):
            if len(d):
                half = 1.96 * float(d.std(ddof=1)) / len(d) ** 0.5 if len(d) > 1 else np.inf
                mean = float(d.mean())
                out[TABLE_SIZES[s]] = {"n": len(d), "mean": mean, "low": mean - half,
                                       "high": mean + half}
        return out

    def sizes(self) -> list[int]:
        """The table sizes at which the table gives back instead of the network: at least
        ``min_decisions`` held-out decisions, and their mean's 95% interval above 0."""
        return [n for n, v in self.validation().items()
                if v["n"] >= self.min_decisions and v["low"] > 0]

    def figures(self) -> dict[str, float]:
        """For the update's figures: per size with held-out decisions, the table's mean gain
        over the network (``table_gain_<N>p``), and how many sizes it plays
        (``table_sizes``)."""
        out: dict[str, float] = {f"table_gain_{n}p": v["mean"]
                                 for n, v in self.validation().items()}
        out["table_sizes"] = float(len(self.sizes()))
        return out

    def summary(self) -> dict[str, Any]:
        """What the exported policy's provenance records: the sizes it plays, the held-out
        figures, the decisions fitted and the settings."""
        return {"sizes": self.sizes(), "validation": self.validation(),
                "decisions": self.fitted, "shrink": self.shrink, "window": self.window,
                "min_decisions": self.min_decisions}

    def policy(self, policy: Any) -> Any:
        """``policy`` with the table's give-back at :meth:`sizes` (:func:`giveback_policy`),
        its provenance recording :meth:`summary`; ``policy`` itself when no size uses it."""
        sizes = self.sizes()
        if not sizes:
            return policy
        meta = dict(policy.meta)
        meta["provenance"] = {**meta.get("provenance", {}), "tribute_table": self.summary()}
        scores = self.scores()
        return giveback_policy(policy, {n: scores[TABLE_SIZES.index(n)] for n in sizes}, meta)

    # -- checkpoints ----------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The table as a checkpoint holds it (tensors and numbers)."""
        import torch

        return {"sums": torch.from_numpy(self.sums.copy()),
                "counts": torch.from_numpy(self.counts.copy()),
                "held_out": [torch.from_numpy(h.copy()) for h in self.held_out],
                "fitted": self.fitted}

    def load(self, state: dict[str, Any]) -> None:
        """The table of :meth:`state` (``{}``: an empty one, from a checkpoint written
        without it); a ValueError naming what is wrong with a damaged one."""
        if not state:
            return
        try:
            sums = np.asarray(state["sums"].numpy(), np.float64)
            counts = np.asarray(state["counts"].numpy(), np.float64)
            held = [np.asarray(h.numpy(), np.float64) for h in state["held_out"]]
            fitted = int(state["fitted"])
        except (KeyError, AttributeError, TypeError) as exc:
            raise ValueError(f"its give-back table is damaged ({exc!r})") from None
        shape = (len(TABLE_SIZES), KEYS)
        if sums.shape != shape or counts.shape != shape or len(held) != len(TABLE_SIZES) \
                or not (np.isfinite(sums).all() and (counts >= 0).all()):
            raise ValueError(f"its give-back table is damaged (sums {sums.shape}, counts "
                             f"{counts.shape}, {len(held)} held-out windows; expected "
                             f"{shape} and {len(TABLE_SIZES)})")
        self.sums, self.counts = sums, counts
        self.held_out = [h[-self.window:] for h in held]
        self.fitted = fitted


class TableHook(UpdateHook):
    """The update hook of the ``table`` plug-in: at the start of each update, the rollout's
    counterfactual rows (:mod:`.counterfactual`'s, as the learner trains on them) join the
    table (:meth:`GiveBackTable.add`; the behaviour policy's most likely choice is the
    network's give-back it is scored against); its figures are the table's
    (:meth:`GiveBackTable.figures`). The table is kept in the checkpoint
    (``tribute_table``) and written into every exported policy."""

    name = "tribute_table"

    def __init__(self, table: GiveBackTable) -> None:
        self.table = table

    def on_update_start(self, learner: Learner, ro: Rollout) -> bool:
        if len(ro.cf_index):
            mask = ro.mask[ro.cf_index]
            self.table.add(ro.obs[ro.cf_index], mask, ro.cf_q,
                           np.argmax(np.where(mask, ro.cf_probs, -1.0), axis=1))
        return False

    def figures(self) -> dict[str, float]:
        return self.table.figures()

    def state(self) -> dict[str, Any]:
        return self.table.state()

    def load(self, state: dict[str, Any]) -> None:
        self.table.load(state)
