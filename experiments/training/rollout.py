"""Collection for the self-play trainer: the engines of every table size played by the
learner's policy and the league (:class:`Collector`), the rollout they fill (:class:`Rollout`)
and its advantages (GAE over per-seat trajectories, :func:`advantages`). The plug-ins that
play decisions out act in the collection through their collection hooks (:mod:`.hooks`; the
tribute and the Egg holder's counterfactuals, :mod:`.counterfactual`), whose rows the rollout
holds. A collector runs in the learner's process or as a Ray actor (:mod:`.distributed`); both
draw the same actions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dragons_egg.experiments.training.counterfactual import tribute_rows
from dragons_egg.experiments.training.network import torch_module
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.observation import layout

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from dragons_egg.experiments.training.settings import SelfPlayConfig
    from dragons_egg_env.vector import VectorStep

    #: The learner's play of a batch: ``(obs, mask) -> (action, logp, value)``.
    ActFn = Callable[[npt.NDArray[np.float32], npt.NDArray[np.bool_]],
                     tuple[npt.NDArray[np.int64], npt.NDArray[np.float32],
                           npt.NDArray[np.float32]]]
    #: The value of each observation of a batch.
    ValueFn = Callable[[npt.NDArray[np.float32]], npt.NDArray[np.float32]]


@dataclass
class Rollout:
    """One rollout, time-major: index ``t * B + g`` is step ``t`` of global match ``g``."""

    obs: np.ndarray
    mask: np.ndarray
    action: np.ndarray
    logp: np.ndarray
    value: np.ndarray
    learner: np.ndarray    # bool: a learner decision (trained on)
    reward: np.ndarray     # what the deciding seat earned until its next decision
    terminal: np.ndarray   # the match ended before the seat decided again
    next_index: np.ndarray  # index of the seat's next decision in this rollout, else -1
    bootstrap: np.ndarray  # value of the seat's observation at the end of the rollout
    seat: np.ndarray       # the deciding seat
    #: The played-out rows: decisions the collection hooks valued (:mod:`.hooks`; the
    #: tribute decisions of ``tribute_counterfactual``, the Egg holder's plays of
    #: ``egg_counterfactual``): their indices, ``Q`` of every action (NaN where illegal;
    #: :mod:`.counterfactual`) and the behaviour policy's probabilities of every action.
    cf_index: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, np.int64))
    cf_q: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros((0, NUM_ACTIONS), np.float32))
    cf_probs: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros((0, NUM_ACTIONS), np.float32))
    #: Per counterfactual row: a play decision of the Egg's holder (``egg_counterfactual``),
    #: not a tribute decision.
    cf_egg: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.bool_))
    #: What collection hooks keep per decision for their update hooks, by name (arrays of
    #: one row per decision of the rollout; the hidden hands of :mod:`.oracle`).
    features: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)


class ActingPolicy:
    """The learner's policy as a collector plays it: ``model`` (the learner's network, or a
    collector's copy of it) and the generator its actions are sampled with. The generator is
    the collector's own, not the learner's (whose draws order the minibatches), so that a
    collector draws the same actions in the learner's process and in a Ray actor."""

    def __init__(self, model: Any, seed: int) -> None:
        torch = torch_module()
        self.torch = torch
        self.model = model
        self.gen = torch.Generator().manual_seed(seed)

    def act(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]
            ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32],
                       npt.NDArray[np.float32]]:
        torch = self.torch
        with torch.no_grad():
            logits, v = self.model(torch.from_numpy(obs), torch.from_numpy(mask))
            probs = torch.softmax(logits, -1)
            a = torch.multinomial(probs, 1, generator=self.gen).squeeze(-1)
            lp = torch.log_softmax(logits, -1).gather(1, a[:, None]).squeeze(-1)
        return a.numpy(), lp.numpy(), v.numpy()

    def value(self, obs: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        torch = self.torch
        with torch.no_grad():
            h = self.model.features(torch.from_numpy(obs))
            out: npt.NDArray[np.float32] = self.model.v(h).squeeze(-1).numpy()
            return out

    def probs(self, obs: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]
              ) -> npt.NDArray[np.float32]:
        """The policy's probability of every action (0 where illegal)."""
        torch = self.torch
        with torch.no_grad():
            logits, _ = self.model(torch.from_numpy(obs), torch.from_numpy(mask))
            out: npt.NDArray[np.float32] = torch.softmax(logits, -1).numpy()
            return out

    def greedy(self, obs: npt.NDArray[Any], mask: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """The policy's most likely action of each row (the counterfactual play-outs')."""
        torch = self.torch
        with torch.no_grad():
            logits, _ = self.model(torch.from_numpy(obs.astype(np.float32, copy=False)),
                                   torch.from_numpy(mask.astype(bool, copy=False)))
            out: npt.NDArray[np.int64] = logits.argmax(-1).numpy()
            return out

    def load(self, weights: dict[str, np.ndarray]) -> None:
        """The learner's weights (numpy arrays by parameter name)."""
        self.model.load_state_dict({k: self.torch.from_numpy(v) for k, v in weights.items()})


def snapshot_fns(policies: list[Any]) -> list[Any]:
    """The league's snapshots (loaded policy files) as functions ``(obs, mask) -> action``:
    each plays its most likely action."""
    def greedy(pol: Any) -> Any:
        return lambda obs, mask: np.argmax(pol.logits(obs, mask), axis=-1)
    return [greedy(pol) for pol in policies]


class Collector:
    """The engines of every table size and the per-seat bookkeeping of a rollout."""

    def __init__(self, cfg: SelfPlayConfig, seed: int) -> None:
        from dragons_egg_env.vector import VectorEngine

        self.cfg = cfg
        self.engines = []
        self.offsets = []
        off = 0
        for k, n in enumerate(cfg.collection.table_sizes):
            eng = VectorEngine(cfg.collection.envs_per_size, cfg.table_rules(n),
                               max_players=cfg.max_players, seed=seed * 1000 + k,
                               record=False)
            self.engines.append(eng)
            self.offsets.append(off)
            off += cfg.collection.envs_per_size
        self.num = off
        self.steps = [eng.reset() for eng in self.engines]
        self.rng = np.random.default_rng(seed)
        #: The plug-ins' hooks in the collection (:meth:`.settings.SelfPlayConfig.collection_hooks`:
        #: each with a generator of its own, so that the seat draws are the same with or
        #: without them).
        self.hooks = cfg.collection_hooks(seed)
        #: owner[e][b, s]: 0 for the learner, k > 0 for member k-1 of the league (the
        #: snapshots, then the league agents).
        self.owner = [np.zeros((cfg.collection.envs_per_size, n), np.int64)
                      for n in cfg.collection.table_sizes]
        self.matches_done = 0

    def start(self) -> None:
        """Draw the seats of the first matches (a league may hold some of them too)."""
        for e, own in enumerate(self.owner):
            self.draw_owners(e, np.arange(len(own)), self.league_size)

    def draw_owners(self, e: int, rows: np.ndarray, league: int) -> None:
        """Seats of fresh matches: each a league member (one of ``league``, uniformly) with
        probability ``opponent_share``, but at least one learner seat per match (at
        ``opponent_share`` 1 exactly one, at a seat drawn uniformly)."""
        own = self.owner[e]
        if not league or not self.cfg.league.opponent_share or not len(rows):
            own[rows] = 0
            return
        n = own.shape[1]
        pick = self.rng.random((len(rows), n)) < self.cfg.league.opponent_share
        pick[np.arange(len(rows)), self.rng.integers(0, n, len(rows))] = False
        own[rows] = np.where(pick, self.rng.integers(1, league + 1, (len(rows), n)), 0)

    def collect(self, act_fn: ActFn, snap_fns: Sequence[Callable[..., Any]], value_fn: ValueFn,
                acting: ActingPolicy | None = None) -> tuple[Rollout, dict[str, float]]:
        """Play ``rollout_steps`` steps of every match. ``act_fn(obs, mask) -> (action, logp,
        value)`` is the learner; ``snap_fns[k]`` the league's members; ``acting`` the policy
        whose greedy play values the decisions the collection hooks play out (needed with
        any), and whose probabilities of them the rollout keeps (``cf_probs``)."""
        for hook in self.hooks:
            if hook.needs_acting and acting is None:  # said before the rollout is played
                raise ValueError(f"{hook.name or type(hook).__name__} needs the acting "
                                 "policy (acting=...)")
            hook.on_collect_start(self)
        T, B = self.cfg.collection.rollout_steps, self.num
        size = layout(self.cfg.max_players).size
        N = T * B
        ro = Rollout(np.empty((N, size), np.float32), np.empty((N, NUM_ACTIONS), np.bool_),
                     np.zeros(N, np.int64), np.zeros(N, np.float32), np.zeros(N, np.float32),
                     np.zeros(N, np.bool_), np.zeros(N, np.float32), np.zeros(N, np.bool_),
                     np.full(N, -1, np.int64), np.zeros(N, np.float32), np.zeros(N, np.int64))
        pending = [np.full((eng.num_envs, eng.num_players), -1, np.int64)
                   for eng in self.engines]
        rounds = 0
        for t in range(T):
            sl = slice(t * B, (t + 1) * B)
            obs = np.concatenate([st.obs for st in self.steps])
            mask = np.concatenate([st.mask for st in self.steps])
            seat = np.concatenate([st.seat for st in self.steps])
            who = np.concatenate([own[np.arange(len(own)), st.seat]
                                  for own, st in zip(self.owner, self.steps, strict=True)])
            ro.obs[sl], ro.mask[sl], ro.seat[sl] = obs, mask, seat
            learn = who == 0
            ro.learner[sl] = learn
            actions = np.zeros(B, np.int64)
            a, lp, v = act_fn(obs[learn], mask[learn])
            actions[learn] = a
            ro.logp[sl][learn], ro.value[sl][learn] = lp, v
            for k, fn in enumerate(snap_fns, start=1):
                rows = who == k
                if rows.any():
                    actions[rows] = fn(obs[rows], mask[rows])
            ro.action[sl] = actions
            for e, eng in enumerate(self.engines):
                o = self.offsets[e]
                idx = t * B + o + np.arange(eng.num_envs)
                rows = slice(o, o + eng.num_envs)
                self._before(e, pending[e], idx, seat[rows], learn[rows], ro)
                for hook in self.hooks:
                    hook.before_step(self, e, obs[rows], mask[rows], learn[rows], idx)
                st = eng.step(actions[rows])
                self.steps[e] = st
                rounds += int(st.round_ended.sum())
                self._after(e, pending[e], st, ro)
        self._bootstrap(pending, value_fn, ro)
        parts = [p for hook in self.hooks
                 if (p := hook.on_collect_end(self, ro, acting)) is not None]
        if parts:
            if acting is None:
                raise ValueError("the played-out rows need the acting policy (acting=...)")
            ro.cf_index = np.concatenate([p.rows for p in parts])
            ro.cf_q = np.concatenate([p.q for p in parts])
            ro.cf_egg = np.concatenate([p.egg for p in parts])
            ro.cf_probs = acting.probs(ro.obs[ro.cf_index], ro.mask[ro.cf_index])
        return ro, {"rounds": rounds, "cf_states": len(ro.cf_index),
                    "egg_states": int(ro.cf_egg.sum())}

    @staticmethod
    def _before(e: int, pend: np.ndarray, idx: np.ndarray, seat: np.ndarray,
                learn: np.ndarray, ro: Rollout) -> None:
        """The seat to act decides: its previous decision's trajectory continues here."""
        b = np.arange(len(idx))
        prev = pend[b, seat]
        link = (prev >= 0) & learn
        ro.next_index[prev[link]] = idx[link]
        pend[b, seat] = np.where(learn, idx, -1)

    def _after(self, e: int, pend: np.ndarray, st: VectorStep, ro: Rollout) -> None:
        """Credit the step's rewards to every seat's pending decision; close finished
        matches."""
        for s in range(pend.shape[1]):
            p = pend[:, s]
            has = p >= 0
            if has.any():
                np.add.at(ro.reward, p[has], st.rewards[has, s].astype(np.float32))
        done = np.flatnonzero(st.done)
        if len(done):
            p = pend[done]
            ro.terminal[p[p >= 0]] = True
            pend[done] = -1
            self.matches_done += len(done)
            self.draw_owners(e, done, self.league_size)

    league_size = 0

    def _bootstrap(self, pending: list[npt.NDArray[np.int64]], value_fn: ValueFn,
                   ro: Rollout) -> None:
        """Open trajectories end with the value of the seat's observation now."""
        for e, eng in enumerate(self.engines):
            pend = pending[e]
            for s in range(eng.num_players):
                p = pend[:, s]
                has = p >= 0
                if has.any():
                    obs = eng.observe(np.full(eng.num_envs, s, np.int64))
                    ro.bootstrap[p[has]] = value_fn(obs[has])


def advantages(ro: Rollout, T: int, B: int, gamma: float, lam: float,
               tribute_lam: float | None = None) -> np.ndarray:
    """GAE over each seat's own trajectory (its decisions in order, ``next_index``).
    ``tribute_lam``: the lambda of tribute decisions (ask and give) where it differs from
    ``lam`` (GAE with a per-decision lambda)."""
    N = T * B
    adv = np.zeros(N, np.float32)
    lams = np.full(N, lam, np.float32)
    if tribute_lam is not None:
        lams[tribute_rows(ro.mask)] = tribute_lam
    for t in range(T - 1, -1, -1):
        sl = slice(t * B, (t + 1) * B)
        nx = ro.next_index[sl]
        term = ro.terminal[sl]
        linked = nx >= 0
        safe = np.where(linked, nx, 0)
        next_v = np.where(term, 0.0, np.where(linked, ro.value[safe], ro.bootstrap[sl]))
        next_adv = np.where(linked & ~term, adv[safe], 0.0)
        delta = ro.reward[sl] + gamma * next_v - ro.value[sl]
        adv[sl] = np.where(ro.learner[sl], delta + gamma * lams[sl] * next_adv, 0.0)
    return adv


__all__ = ["Rollout", "ActingPolicy", "snapshot_fns", "Collector", "advantages"]
