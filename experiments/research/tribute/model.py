"""The tribute fit's model (step 3 of :mod:`.fit`): each tribute column's logit as a linear
model of the state (:func:`features`), fitted by ridge regression to the counterfactual values
(:func:`design`, :func:`solve`) and written into the policy (:func:`fitted_policy`); and the
scores of a way of choosing on held-out states (:func:`score`, :func:`evaluate`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dragons_egg.agents.heads import (
    GROUPS,
    SIZE_EMBEDDING,
    TRIBUTE_FEATURES,
    FloatArray,
    IntArray,
    group_counts,
    tribute_context,
    tribute_row,
)
from dragons_egg.experiments.training.counterfactual import COLUMN_GROUP
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, NUM_ACTIONS, PASS
from dragons_egg_env.observation import ObsArray

from .data import Batch, BoolArray, Float64Array, concat_chunks
from .settings import PHASES, PLAY_POLICIES

if TYPE_CHECKING:
    from dragons_egg.agents.netpolicy import NetPolicy


#: Tribute columns of the action layer (asks of cards 0..43, then gives of cards 0..44) and
#: what each one is: its card, whether it is a give, and its group of
#: :func:`dragons_egg.agents.heads.group_counts` (0..9: the card's number, 10: a dragon card;
#: -1: the
#: Egg, which has no count term).
NCOL = NUM_ACTIONS - ASK_BASE
_GIVE = np.r_[np.zeros(GIVE_BASE - ASK_BASE, int), np.ones(NUM_ACTIONS - GIVE_BASE, int)]
#: Parameters of the fit: a bias per column, a weight per (tribute context, group, count held)
#: (the rows of a ``tribute`` head's ``pi_counts``) and a weight per phase on the old
#: policy's logits.
NPARAM = NCOL + TRIBUTE_FEATURES + 2
_BLOCK = GROUPS * 5


def features(obs: ObsArray, base: FloatArray, max_players: int) -> FloatArray:
    """``(N, NCOL, NPARAM)``: what each tribute column's logit is linear in (see the module
    docstring): its own bias, how many cards of its group the own hand holds (one-hot, in the
    block of the state's tribute context) and the old logit (relative to the pass logit for
    asks)."""
    N = len(obs)
    onehot = (group_counts(obs)[:, :, None] == np.arange(5)).astype(np.float32)
    ctx = tribute_context(obs, max_players)
    F = np.zeros((N, NCOL, NPARAM), np.float32)
    F[:, np.arange(NCOL), np.arange(NCOL)] = 1.0
    rows = np.arange(N)[:, None]
    for j in np.flatnonzero(COLUMN_GROUP >= 0):
        k = NCOL + _BLOCK * ctx + 5 * COLUMN_GROUP[j]  # (N,)
        F[rows, j, k[:, None] + np.arange(5)] = onehot[:, COLUMN_GROUP[j]]
    ask = slice(0, GIVE_BASE - ASK_BASE)
    F[:, ask, NPARAM - 2] = base[:, ASK_BASE:GIVE_BASE] - base[:, [PASS]]
    F[:, GIVE_BASE - ASK_BASE:, NPARAM - 1] = base[:, GIVE_BASE:]
    return F


def design(obs: ObsArray, mask: BoolArray, q: Float64Array, base: FloatArray,
           scale: float, max_players: int) -> tuple[Float64Array, Float64Array]:
    """Rows (one per state and legal tribute action) and targets of the least-squares fit:
    ``scale * (Q(s, a) - Q(s, pass))`` in ask states (the model is the logit minus the pass
    logit); in give states targets and features centred per state (only differences between
    gives matter)."""
    F = features(obs, np.where(np.isfinite(base), base, 0.0), max_players)
    legal = mask[:, ASK_BASE:]
    qt = np.where(legal, q[:, ASK_BASE:], 0.0)
    ask_state = mask[:, PASS]
    y = np.zeros(qt.shape)
    y[ask_state] = scale * (qt[ask_state] - q[ask_state, PASS][:, None])
    g = ~ask_state & legal.any(axis=1)
    lg = legal[g]
    count = lg.sum(axis=1, keepdims=True)
    F[g] -= (F[g] * lg[:, :, None]).sum(axis=1, keepdims=True) / count[:, :, None]
    y[g] = scale * (qt[g] - (qt[g] * lg).sum(axis=1, keepdims=True) / count)
    return F[legal].astype(np.float64), y[legal]


def solve(obs: ObsArray, mask: BoolArray, q: Float64Array, base: FloatArray, scale: float,
          ridge: float, max_players: int, batch: int = 2048) -> Float64Array:
    """The fitted parameters (ridge regression on :func:`design`), accumulated over batches
    of states so that memory stays small (the rows of 2,048 states take about 140 MB)."""
    xtx = np.zeros((NPARAM, NPARAM))
    xty = np.zeros(NPARAM)
    for lo in range(0, len(obs), batch):
        sl = slice(lo, lo + batch)
        X, y = design(obs[sl], mask[sl], q[sl], base[sl], scale, max_players)
        xtx += X.T @ X
        xty += X.T @ y
    return np.linalg.solve(xtx + ridge * np.eye(NPARAM), xty).astype(np.float64, copy=False)


def fitted_policy(policy: NetPolicy, theta: Float64Array, meta: dict[str, Any]) -> NetPolicy:
    """The policy with its tribute columns rewritten to the fitted model; every other column
    (play and pass) and the shared layers unchanged."""
    from dragons_egg.agents.netpolicy import NetPolicy

    w0, b0 = policy.pi
    w, b = w0.astype(np.float64).copy(), b0.astype(np.float64).copy()
    counts = np.zeros((TRIBUTE_FEATURES, NUM_ACTIONS))
    a_ask, a_give = theta[NPARAM - 2], theta[NPARAM - 1]
    for j in range(NCOL):
        col = ASK_BASE + j
        if _GIVE[j]:
            w[:, col] = a_give * w0[:, col]
            b[col] = a_give * b0[col] + theta[j]
        else:
            w[:, col] = w0[:, PASS] + a_ask * (w0[:, col] - w0[:, PASS])
            b[col] = b0[PASS] + a_ask * (b0[col] - b0[PASS]) + theta[j]
        if COLUMN_GROUP[j] >= 0:  # the blocks of its phase's contexts (asks: 0..2; gives: 3)
            for c in ((3,) if _GIVE[j] else (0, 1, 2)):
                r = tribute_row(c, COLUMN_GROUP[j])
                counts[r:r + 5, col] = theta[NCOL + r:NCOL + r + 5]
    extra = [h for h in policy.heads if h == SIZE_EMBEDDING]  # kept as it is
    return NetPolicy(policy.layers, (w.astype(np.float32), b.astype(np.float32)), policy.v,
                     meta, counts.astype(np.float32), heads=["tribute", *extra],
                     size_emb=policy.size_emb)


# ---------------------------------------------------------------------------------------
# Scores.

def choice_values(q: Float64Array, choice: npt.NDArray[np.integer[Any]]) -> Float64Array:
    chosen: Float64Array = q[np.arange(len(q)), choice]
    return chosen


def score(policy_logits: Mapping[str, FloatArray], q: Float64Array, mask: BoolArray,
          heuristic: IntArray) -> dict[str, float]:
    """Mean ``Q`` of each way of choosing, over states."""
    qm = np.where(mask, q, np.nan)
    with np.errstate(invalid="ignore"):
        out = {name: float(np.mean(choice_values(q, np.argmax(z, axis=1))))
               for name, z in policy_logits.items()}
        out["heuristic"] = float(np.mean(choice_values(q, heuristic)))
        out["oracle"] = float(np.mean(np.nanmax(qm, axis=1)))
        out["uniform"] = float(np.mean(np.nanmean(qm, axis=1)))
    out["states"] = len(q)
    return out


def interval(d: Float64Array) -> list[float]:
    """Mean and 95% normal interval of paired differences."""
    half = 1.96 * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return [float(d.mean()), float(d.mean() - half), float(d.mean() + half)]


def evaluate(old: NetPolicy, new: NetPolicy, chunks: Sequence[Batch]) -> dict[str, Any]:
    """Mean ``Q`` of each way of choosing on ``chunks``, per play policy and phase, and the
    paired difference between the fitted choice and the heuristic's (95% normal interval);
    under ``by_size``, that difference per table size, play policy and phase (with the
    number of states)."""
    data = concat_chunks(chunks) if chunks else None
    out: dict[str, Any] = {}
    if data is None:
        return out
    by_size: dict[str, dict[str, list[float]]] = {}
    for pi, play in enumerate(PLAY_POLICIES):
        for phase in PHASES:
            sel = (data["play"] == pi) & (data["mask"][:, PASS] == (phase == "ask"))
            if not sel.any():
                continue
            o, m, q, h = (data["obs"][sel], data["mask"][sel], data["q"][sel],
                          data["heuristic"][sel])
            zf, zo = new.logits(o, m), old.logits(o, m)
            d = choice_values(q, np.argmax(zf, axis=1)) - choice_values(q, h)
            row: dict[str, float | list[float]] = {
                **score({"fitted": zf, "old": zo}, q, m, h), "fitted_minus_heuristic": interval(d)}
            out[f"{play}/{phase}"] = row
            sizes = data["n"][sel]
            for n in np.unique(sizes):
                dn = d[sizes == n]
                by_size.setdefault(str(n), {})[f"{play}/{phase}"] = [*interval(dn), len(dn)]
    out["by_size"] = dict(sorted(by_size.items(), key=lambda kv: int(kv[0])))
    return out
