"""The self-play trainer's learner: the network, its optimiser and the PPO update
(:class:`Learner`), with the tribute decisions' counterfactual loss and, with
``search_targets``, the search targets fitted in every minibatch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dragons_egg.experiments.training.counterfactual import tribute_rows
from dragons_egg.experiments.training.network import build_network, new_table, torch_module
from dragons_egg.experiments.training.rollout import (
    Rollout,
    TributeReplay,
    counterfactual_batch,
    tribute_regret,
)
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.observation import layout

if TYPE_CHECKING:
    from dragons_egg.experiments.training.settings import SelfPlayConfig


#: With search targets, every this many-th cycle of the folder's table sizes (one batch of
#: each size in its ``players`` list, in turn) is held out of the fit, for the evaluations'
#: ``search_ce`` and ``search_agree`` (:meth:`Learner.search_figures`).
HELD_OUT = 20


class Learner:
    """The network, its optimiser and the PPO update."""

    def __init__(self, cfg: SelfPlayConfig) -> None:
        torch = torch_module()
        torch.set_num_threads(cfg.torch_threads)
        torch.manual_seed(cfg.seed)
        self.torch = torch
        self.cfg = cfg
        self.model = build_network(cfg)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.ppo.learning_rate, eps=1e-5)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        #: Called after each minibatch's backward pass, before clipping and the step: a
        #: data-parallel learner averages the gradients across its workers here.
        self.after_backward: Any = None
        #: Called before each minibatch: the pipelined trainer sets torch's threads here.
        self.before_minibatch: Any = None
        #: The counterfactual decisions every update fits (``tribute_cf_replay``), else None.
        keep = cfg.tribute_cf.tribute_cf_replay
        self.replay = TributeReplay(keep) if keep else None
        #: The give-back table learned beside the network (``tribute_table``), else None.
        self.table = new_table(cfg)
        #: The search targets every minibatch fits (``search_targets``: obs, mask and
        #: target tensors), else None; :meth:`load_search_targets`.
        self.search: dict[str, Any] | None = None
        #: The held-out search targets the evaluations measure (:meth:`search_figures`).
        self.search_held: dict[str, Any] | None = None

    def search_figures(self) -> dict[str, float]:
        """On the held-out search targets (none: ``{}``): the policy's cross-entropy against
        the visit distributions (``search_ce``) and the share of decisions where its most
        likely move is the move the search played (``search_agree``, by table size
        ``search_agree_<N>p``, on the decisions where the search played another move than
        its guiding network's most likely one ``search_agree_overruled``, and on the others
        ``search_agree_kept``)."""
        held = self.search_held
        if held is None:
            return {}
        torch = self.torch
        with torch.no_grad():
            ce = self._search_loss(held).item()
            logits, _ = self.model(held["obs"], held["mask"])
            same = (logits.argmax(-1) == held["played"]).float()
        out = {"search_ce": round(ce, 4), "search_agree": round(same.mean().item(), 4)}
        # the decisions where the search overruled its guide carry what the search adds; on
        # the others, the search and its guide agree, and the policy should keep that move
        over = held["overruled"]
        if over.any():
            out["search_agree_overruled"] = round(same[over].mean().item(), 4)
        if (~over).any():
            out["search_agree_kept"] = round(same[~over].mean().item(), 4)
        for n in sorted(set(held["players"].tolist())):
            out[f"search_agree_{n}p"] = round(same[held["players"] == n].mean().item(), 4)
        return out

    def load_search_targets(self, folder: str) -> dict[str, Any]:
        """Load a search-targets folder (every batch checked:
        :func:`~dragons_egg.experiments.training.search_targets.load_targets`) for the
        updates to fit; returns what it holds (decisions, table sizes, the policy file's
        SHA-256 and the gathering seconds), for the run's provenance. A ``ValueError`` when
        its observations are not this network's (another ``max_players``)."""
        from dragons_egg.experiments.training.search_targets import load_targets

        data, settings = load_targets(folder)
        width = layout(self.cfg.max_players).size
        if data["obs"].shape[1] != width or data["mask"].shape[1] != NUM_ACTIONS:
            raise ValueError(f"search_targets {folder}: its observations have "
                             f"{data['obs'].shape[1]} values, this network reads {width} "
                             f"(max_players {self.cfg.max_players})")
        torch = self.torch
        # every HELD_OUT-th cycle of table sizes (whole matches on deals of their own, every
        # size in its share) is not fitted: the evaluations measure on it how far the policy
        # has come towards the search
        cycle = data["batch"] // len(settings["players"])
        held = cycle % HELD_OUT == HELD_OUT - 1

        def tensors(rows: np.ndarray) -> dict[str, Any]:
            return {"obs": torch.from_numpy(data["obs"][rows].astype(np.float32)),
                    "mask": torch.from_numpy(data["mask"][rows].astype(bool)),
                    "target": torch.from_numpy(data["target"][rows].astype(np.float32)),
                    "played": torch.from_numpy(data["played"][rows].astype(np.int64)),
                    "players": torch.from_numpy(data["players"][rows].astype(np.int64)),
                    "overruled": torch.from_numpy(data["played"][rows] != data["net_move"][rows])}
        self.search = tensors(~held)
        self.search_held = tensors(held) if held.any() else None
        sizes, counts = np.unique(data["players"], return_counts=True)
        return {"folder": str(folder), "decisions": int((~held).sum()),
                "held_out": int(held.sum()),
                "decisions_by_players": {str(int(n)): int(c) for n, c in zip(sizes, counts,
                                                                             strict=True)},
                "policy": settings["policy"], "policy_sha256": settings["policy_sha256"],
                "iterations": settings["iterations"],
                "gathered_seconds": round(float(settings["gathered_seconds"]), 1)}

    def update(self, ro: Rollout, adv: np.ndarray) -> dict[str, float]:
        torch = self.torch
        cfg = self.cfg
        idx = np.flatnonzero(ro.learner)
        ret = adv + ro.value
        weight = np.where(tribute_rows(ro.mask), cfg.ppo.tribute_weight, 1.0).astype(np.float32)
        t = {k: torch.from_numpy(np.ascontiguousarray(v[idx])) for k, v in (
            ("obs", ro.obs), ("mask", ro.mask), ("act", ro.action), ("logp", ro.logp),
            ("adv", adv), ("ret", ret), ("w", weight), ("v", ro.value))}
        n = len(idx)
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "clip_frac": 0.0,
                 "approx_kl": 0.0}
        cf = counterfactual_batch(ro) if len(ro.cf_index) else None
        if self.replay is not None:  # this rollout's decisions and the earlier ones kept
            cf = self.replay.add(cf)
        if cf is not None:
            stats["cf_loss"] = 0.0
            cf = {k: torch.from_numpy(v) for k, v in cf.items()}
        search = self.search
        if search is not None:
            stats["search_loss"] = 0.0
        regret = tribute_regret(ro)
        egg_regret = tribute_regret(ro, egg=True)
        if self.table is not None and len(ro.cf_index):
            mask = ro.mask[ro.cf_index]
            self.table.add(ro.obs[ro.cf_index], mask, ro.cf_q,
                           np.argmax(np.where(mask, ro.cf_probs, -1.0), axis=1))
        count = 0
        # equal minibatches of at most ``minibatch`` decisions: no tiny remainder whose
        # advantages could not be normalised (one decision has no standard deviation)
        parts = -(-n // cfg.ppo.minibatch)
        for _ in range(cfg.ppo.epochs):
            perm = torch.randperm(n, generator=self.gen)
            # the counterfactual rows, spread over the same minibatches (drawn only when
            # there are some, so that a run without them draws as before)
            cf_parts = (torch.tensor_split(torch.randperm(len(cf["obs"]), generator=self.gen),
                                           parts) if cf is not None else [None] * parts)
            for mb, cmb in zip(torch.tensor_split(perm, parts), cf_parts, strict=True):
                if self.before_minibatch is not None:
                    self.before_minibatch()
                sb = None
                if search is not None:  # drawn only then: a run without them draws as before
                    rows = torch.randint(len(search["obs"]), (cfg.search.search_batch,),
                                         generator=self.gen)
                    sb = {k: search[k][rows] for k in ("obs", "mask", "target")}
                s = self._minibatch({k: v[mb] for k, v in t.items()},
                                    None if cmb is None or cf is None or not len(cmb)
                                    else {k: v[cmb] for k, v in cf.items()}, sb)
                for k in stats:
                    stats[k] += s.get(k, 0.0)
                count += 1
        out = {k: v / max(count, 1) for k, v in stats.items()}
        if regret is not None:
            out["cf_regret"] = regret
        if egg_regret is not None:
            out["egg_regret"] = egg_regret
        if self.table is not None:
            out.update(self.table.figures())
        return out

    def _minibatch(self, b: dict[str, Any], cf: dict[str, Any] | None = None,
                   search: dict[str, Any] | None = None) -> dict[str, float]:
        torch = self.torch
        cfg = self.cfg
        logits, v = self.model(b["obs"], b["mask"])
        logp_all = torch.log_softmax(logits, -1)
        logp = logp_all.gather(1, b["act"][:, None]).squeeze(-1)
        ratio = torch.exp(logp - b["logp"])
        adv = b["adv"]
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        w = b["w"]
        clip = cfg.ppo.clip_range
        pg = -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv)
        policy_loss = (pg * w).sum() / w.sum()
        value_loss = (((v - b["ret"]) ** 2) * w).sum() / w.sum()
        # -sum p log p over the legal actions: exp of the legal log-probabilities only (an
        # illegal action's 0 gives exp(0) * 0 = 0, as its probability 0 did), never exp of
        # an illegal action's -1e9 logit, whose underflow takes exp's slow path (10x here)
        logp_legal = logp_all.masked_fill(~b["mask"], 0.0)
        ent = -(logp_legal.exp() * logp_legal).sum(-1)
        entropy = (ent * w).sum() / w.sum()
        loss = policy_loss + cfg.ppo.vf_coef * value_loss - cfg.ppo.ent_coef * entropy
        cf_loss = self._cf_loss(cf) if cf is not None else None
        if cf_loss is not None:
            loss = loss + cfg.tribute_cf.tribute_cf_coef * cf_loss
        search_loss = self._search_loss(search) if search is not None else None
        if search_loss is not None:
            loss = loss + cfg.search.search_coef * search_loss
        if not torch.isfinite(loss):
            raise FloatingPointError(
                f"the PPO loss is not finite (policy {policy_loss.item()}, value "
                f"{value_loss.item()}, entropy {entropy.item()}, minibatch of {len(adv)}); the "
                "weights were left as they were: resume from the last checkpoint")
        self.opt.zero_grad()
        loss.backward()
        if self.after_backward is not None:
            self.after_backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.ppo.max_grad_norm)
        self.opt.step()
        with torch.no_grad():
            kl = ((ratio - 1) - (logp - b["logp"])).mean().item()
            clip = ((ratio - 1).abs() > cfg.ppo.clip_range).float().mean().item()
        out = {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(),
               "entropy": entropy.item(), "clip_frac": clip, "approx_kl": kl}
        if cf_loss is not None:
            out["cf_loss"] = cf_loss.item()
        if search_loss is not None:
            out["search_loss"] = search_loss.item()
        return out

    def _search_loss(self, search: dict[str, Any]) -> Any:
        """The cross-entropy of the policy against the search's visit distributions: minus
        the sum over the legal actions of each one's visit share times its log-probability,
        averaged over the decisions."""
        torch = self.torch
        logits, _ = self.model(search["obs"], search["mask"])
        logp = torch.log_softmax(logits, -1).masked_fill(~search["mask"], 0.0)
        return -(search["target"] * logp).sum(-1).mean()

    def _cf_loss(self, cf: dict[str, Any]) -> Any:
        """The all-action clipped surrogate of the counterfactual tribute rows: for each, the
        behaviour policy's expectation over its legal actions ``a`` of PPO's clipped
        objective with the ratio ``pi(a) / pi_b(a)`` and the advantage ``A(a)``
        (:func:`counterfactual_batch`), negated."""
        torch = self.torch
        eps = self.cfg.ppo.clip_range
        logits, _ = self.model(cf["obs"], cf["mask"])
        if self.cfg.tribute_cf.tribute_cf_update == "logits":
            return self._cf_logits_loss(logits, cf)
        if self.cfg.tribute_cf.tribute_cf_update == "regression":
            return self._cf_regression_loss(logits, cf)
        logp = torch.log_softmax(logits, -1).masked_fill(~cf["mask"], 0.0)
        ratio = torch.exp(logp - cf["logp_b"])
        adv = cf["adv"]
        obj = torch.min(ratio * adv, ratio.clamp(1 - eps, 1 + eps) * adv)
        return self._kind_mean(-(cf["probs"] * obj).sum(-1), cf)

    @staticmethod
    def _centred_logits(logits: Any, mask: Any) -> Any:
        """Each legal action's logit minus the mean of its decision's legal logits; 0 where
        illegal (what the logit update pushes and the regression fits)."""
        z = logits.masked_fill(~mask, 0.0)
        return (z - z.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True)).masked_fill(~mask, 0.0)

    def _cf_logits_loss(self, logits: Any, cf: dict[str, Any]) -> Any:
        """The logit update of the counterfactual tribute rows (NeuRD): minus the sum over
        the legal actions of each one's advantage over the behaviour policy's expected value
        (``adv_u``) times its logit centred on the legal actions' mean, so that the gradient
        on a logit is its advantage, whatever its probability; a logit already
        ``tribute_cf_threshold`` above (below) the mean is not pushed further up (down)."""
        torch = self.torch
        mask = cf["mask"]
        y = self._centred_logits(logits, mask)
        adv = cf["adv_u"]
        beta = self.cfg.tribute_cf.tribute_cf_threshold
        with torch.no_grad():
            push = torch.where(((adv > 0) & (y < beta)) | ((adv < 0) & (y > -beta)), adv,
                               torch.zeros_like(adv))
        return self._kind_mean(-(push * y).sum(-1), cf)

    def _cf_regression_loss(self, logits: Any, cf: dict[str, Any]) -> Any:
        """The regression of the counterfactual tribute rows: each legal action's logit,
        centred on the decision's legal mean, fitted to ``tribute_cf_scale`` (``c``) times its
        centred value (``target``): ``sum_a (y_a - c t_a)^2 / (2c)`` over the legal actions,
        averaged over the rows, so that the gradient on a logit is its error in round reward,
        ``y_a / c - t_a`` (the same order as the logit update's pushes)."""
        mask = cf["mask"]
        c = self.cfg.tribute_cf.tribute_cf_scale
        y = self._centred_logits(logits, mask)
        return self._kind_mean(((y - c * cf["target"]) ** 2).sum(-1), cf) / (2 * c)

    @staticmethod
    def _kind_mean(per_row: Any, cf: dict[str, Any]) -> Any:
        """The mean over the tribute rows plus the mean over the Egg holder's rows (each
        kind weighs in the loss as it would alone); the plain mean where the batch does not
        mark them (the tribute replay holds tribute rows only)."""
        egg = cf.get("egg")
        if egg is None or not bool(egg.any()) or bool(egg.all()):
            return per_row.mean()
        return per_row[~egg].mean() + per_row[egg].mean()


__all__ = ["HELD_OUT", "Learner"]
