"""Collection for the self-play trainer: the engines of every table size played by the
learner's policy and the league (:class:`Collector`), the rollout they fill (:class:`Rollout`),
its advantages (GAE over per-seat trajectories, :func:`advantages`), and the tribute
decisions played out counterfactually (:func:`counterfactual_batch`, :class:`TributeReplay`,
:func:`tribute_regret`). A collector runs in the learner's process or as a Ray actor
(:mod:`.distributed`); both draw the same actions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dragons_egg.experiments.training.counterfactual import (
    counterfactual_values,
    tribute_rows,
)
from dragons_egg.experiments.training.network import torch_module
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.cards import EGG
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
    #: Tribute decisions with counterfactual values (``tribute_counterfactual``): their
    #: indices, ``Q`` of every action (NaN where illegal; :mod:`.counterfactual`) and the
    #: behaviour policy's probabilities of every action.
    cf_index: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, np.int64))
    cf_q: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros((0, NUM_ACTIONS), np.float32))
    cf_probs: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros((0, NUM_ACTIONS), np.float32))
    #: Per counterfactual row: a play decision of the Egg's holder (``egg_counterfactual``),
    #: not a tribute decision.
    cf_egg: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.bool_))


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
            h = self.model.trunk(torch.from_numpy(obs))
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
        #: Which tribute decisions get counterfactual values, and their representatives (a
        #: generator of its own, so that the seat draws are the same with or without them).
        self.cf_rng = np.random.default_rng((seed, 2))
        #: The same for the Egg holder's play decisions (``egg_counterfactual``).
        self.egg_rng = np.random.default_rng((seed, 3))
        #: Where an observation shows the observer's own Egg.
        self.egg_col = layout(cfg.max_players)["hand"].start + EGG
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
        probability ``opponent_share``, but at least one learner seat per match."""
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
        whose greedy play values tribute choices (needed with ``tribute_counterfactual``)."""
        share = self.cfg.tribute_cf.tribute_counterfactual
        egg_share = self.cfg.egg_cf.egg_counterfactual
        for name, value in (("tribute_counterfactual", share), ("egg_counterfactual", egg_share)):
            if value and acting is None:
                raise ValueError(f"{name} needs the acting policy (acting=...)")
        cf: list[list[tuple[Any, int]]] = [[] for _ in self.engines]
        egg: list[list[tuple[Any, int]]] = [[] for _ in self.engines]
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
                if share:
                    self._pick_counterfactual(e, share, mask[rows], learn[rows], idx, cf[e])
                if egg_share:
                    self._pick_egg(e, egg_share, obs[rows], mask[rows], learn[rows], idx,
                                   egg[e])
                st = eng.step(actions[rows])
                self.steps[e] = st
                rounds += int(st.round_ended.sum())
                self._after(e, pending[e], st, ro)
        self._bootstrap(pending, value_fn, ro)
        if share or egg_share:
            assert acting is not None
            self._counterfactual(cf, egg, acting, ro)
        return ro, {"rounds": rounds, "cf_states": len(ro.cf_index),
                    "egg_states": int(ro.cf_egg.sum())}

    def _pick_counterfactual(self, e: int, share: float, mask: np.ndarray, learn: np.ndarray,
                             idx: np.ndarray, out: list[tuple[Any, int]]) -> None:
        """Keep the state of a share of engine ``e``'s learner tribute decisions with a
        choice, before they are played."""
        choice = learn & tribute_rows(mask) & (mask.sum(axis=1) > 1)
        self._keep(e, choice, share, self.cf_rng, idx, out)

    def _pick_egg(self, e: int, share: float, obs: np.ndarray, mask: np.ndarray,
                  learn: np.ndarray, idx: np.ndarray, out: list[tuple[Any, int]]) -> None:
        """Keep the state of a share of engine ``e``'s learner play decisions with a choice
        whose seat holds the Egg, before they are played."""
        choice = (learn & (obs[:, self.egg_col] > 0) & ~tribute_rows(mask)
                  & (mask.sum(axis=1) > 1))
        self._keep(e, choice, share, self.egg_rng, idx, out)

    def _keep(self, e: int, choice: np.ndarray, share: float, rng: np.random.Generator,
              idx: np.ndarray, out: list[tuple[Any, int]]) -> None:
        """Append ``(state, rollout index)`` of each row of ``choice`` that ``rng`` draws
        with probability ``share`` (no draw when there is none)."""
        rows = np.flatnonzero(choice)
        if not len(rows):
            return
        rows = rows[rng.random(len(rows)) < share]
        eng = self.engines[e]
        for b in rows:
            out.append((eng.to_state(int(b)), int(idx[b])))

    def _counterfactual(self, cf: list[list[tuple[Any, int]]],
                        egg: list[list[tuple[Any, int]]], acting: ActingPolicy,
                        ro: Rollout) -> None:
        """The counterfactual values of the kept tribute decisions (every class of choice
        played out to the end of the round by the acting policy, greedy) and of the kept
        plays of the Egg's holder (every legal play: each is a class of its own), per table
        size."""
        index, qs, kinds = [], [], []
        for kept_lists, is_egg, rng in ((cf, False, self.cf_rng), (egg, True, self.egg_rng)):
            for kept in kept_lists:
                if not kept:
                    continue
                at = np.array([i for _, i in kept], np.int64)
                states = [s for s, _ in kept]
                seats = [s.current for s in states]
                q = counterfactual_values(states, seats, ro.mask[at], acting.greedy,
                                          acting.greedy, self.cfg.max_players,
                                          int(rng.integers(2**62)), per_class=not is_egg,
                                          rng=rng)
                index.append(at)
                qs.append(q.astype(np.float32))
                kinds.append(np.full(len(at), is_egg))
        if index:
            ro.cf_index = np.concatenate(index)
            ro.cf_q = np.concatenate(qs)
            ro.cf_egg = np.concatenate(kinds)
            ro.cf_probs = acting.probs(ro.obs[ro.cf_index], ro.mask[ro.cf_index])

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
    egg = _egg_rows(ro)
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


def _egg_rows(ro: Rollout) -> np.ndarray:
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
        torch = torch_module()
        return {} if self.data is None else {k: torch.from_numpy(v) for k, v in
                                             self.data.items()}

    def load(self, state: dict[str, Any]) -> None:
        """The decisions of :meth:`state` (the last ``size`` of them: a resume may keep fewer);
        a ``ValueError`` naming what is wrong with a damaged one."""
        if not state:
            self.data = None
            return
        if set(state) != set(self.KEYS):
            raise ValueError(f"the checkpoint's tribute replay holds {sorted(state)}, not "
                             f"{list(self.KEYS)}")
        torch = torch_module()
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
    rows = _egg_rows(ro) == egg
    if not rows.any():
        return None
    mask = ro.mask[ro.cf_index[rows]]
    q = np.where(mask, np.nan_to_num(ro.cf_q[rows]), -np.inf)
    probs = np.where(mask, ro.cf_probs[rows], 0.0)
    expected = (probs * np.where(mask, q, 0.0)).sum(axis=1) / probs.sum(axis=1)
    return float((q.max(axis=1) - expected).mean())


__all__ = ["Rollout", "ActingPolicy", "snapshot_fns", "Collector", "advantages",
           "counterfactual_batch", "TributeReplay", "tribute_regret"]
