"""The self-play trainer's learner: the network, its optimiser and the PPO update
(:class:`Learner`). The plug-ins act in the update through their update hooks
(:mod:`.hooks`, :meth:`.settings.SelfPlayConfig.update_hooks`): the counterfactual rows' loss,
the give-back table and the search targets' loss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from dragons_egg.experiments.training.counterfactual import CounterfactualLoss, tribute_rows
from dragons_egg.experiments.training.network import (
    build_network,
    load_initial_weights,
    torch_module,
)
from dragons_egg.experiments.training.tribute_table import TableHook

if TYPE_CHECKING:
    from dragons_egg.experiments.training.counterfactual import TributeReplay
    from dragons_egg.experiments.training.hooks import UpdateHook
    from dragons_egg.experiments.training.rollout import Rollout
    from dragons_egg.experiments.training.settings import SelfPlayConfig
    from dragons_egg.experiments.training.tribute_table import GiveBackTable

H = TypeVar("H", bound="UpdateHook")


class Learner:
    """The network, its optimiser, the PPO update and the plug-ins' update hooks."""

    def __init__(self, cfg: SelfPlayConfig) -> None:
        torch = torch_module()
        torch.set_num_threads(cfg.torch_threads)
        torch.manual_seed(cfg.seed)
        self.torch = torch
        self.cfg = cfg
        self.model = build_network(cfg)
        if cfg.ppo.init_policy:
            load_initial_weights(self.model, cfg, cfg.ppo.init_policy)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.ppo.learning_rate, eps=1e-5)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        #: Called after each minibatch's backward pass, before clipping and the step: a
        #: data-parallel learner averages the gradients across its workers here.
        self.after_backward: Any = None
        #: Called before each minibatch: the pipelined trainer sets torch's threads here.
        self.before_minibatch: Any = None
        #: The plug-ins' hooks in the update, in their order (:mod:`.hooks`).
        self.hooks: list[UpdateHook] = cfg.update_hooks()
        #: In an update, for the hooks: the rollout indices of the decisions PPO fits, their
        #: returns (a tensor, in that order) and the positions among them of the minibatch
        #: being fitted (a tensor).
        self.ppo_index: np.ndarray = np.zeros(0, np.int64)
        self.ppo_returns: Any = None
        self.ppo_minibatch: Any = None

    def hook(self, cls: type[H]) -> H:
        """The update hook of type ``cls``; a ``LookupError`` when its plug-in is off."""
        for h in self.hooks:
            if isinstance(h, cls):
                return h
        raise LookupError(f"no {cls.__name__} among the learner's hooks (its plug-in is off)")

    def find_hook(self, cls: type[H]) -> H | None:
        """The update hook of type ``cls``, else None."""
        return next((h for h in self.hooks if isinstance(h, cls)), None)

    @property
    def replay(self) -> TributeReplay | None:
        """The counterfactual decisions every update fits (``tribute_cf_replay``), else
        None."""
        loss = self.find_hook(CounterfactualLoss)
        return None if loss is None else loss.replay

    @property
    def table(self) -> GiveBackTable | None:
        """The give-back table learned beside the network (``tribute_table``), else None."""
        hook = self.find_hook(TableHook)
        return None if hook is None else hook.table

    def hook_states(self) -> dict[str, Any]:
        """What the checkpoint keeps of the hooks, under each one's ``name``."""
        return {h.name: h.state() for h in self.hooks if h.name}

    def update(self, ro: Rollout, adv: np.ndarray) -> dict[str, float]:
        """One PPO update on the rollout ``ro`` with the advantages ``adv``, the hooks'
        loss terms included; returns its figures (means over the minibatches, then the
        hooks' figures)."""
        torch = self.torch
        cfg = self.cfg
        idx = np.flatnonzero(ro.learner)
        ret = adv + ro.value
        weight = np.where(tribute_rows(ro.mask), cfg.ppo.tribute_weight, 1.0).astype(np.float32)
        t = {k: torch.from_numpy(np.ascontiguousarray(v[idx])) for k, v in (
            ("obs", ro.obs), ("mask", ro.mask), ("act", ro.action), ("logp", ro.logp),
            ("adv", adv), ("ret", ret), ("w", weight), ("v", ro.value))}
        n = len(idx)
        self.ppo_index, self.ppo_returns = idx, t["ret"]
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "clip_frac": 0.0,
                 "approx_kl": 0.0}
        for h in self.hooks:
            if h.on_update_start(self, ro) and h.loss_name:
                stats[h.loss_name] = 0.0
        count = 0
        # equal minibatches of at most ``minibatch`` decisions: no tiny remainder whose
        # advantages could not be normalised (one decision has no standard deviation)
        parts = -(-n // cfg.ppo.minibatch)
        for _ in range(cfg.ppo.epochs):
            perm = torch.randperm(n, generator=self.gen)
            for h in self.hooks:
                h.on_epoch_start(self, parts)
            for k, mb in enumerate(torch.tensor_split(perm, parts)):
                if self.before_minibatch is not None:
                    self.before_minibatch()
                self.ppo_minibatch = mb
                extra = [h.minibatch(self, k) for h in self.hooks]
                s = self._minibatch({key: v[mb] for key, v in t.items()}, extra)
                for key in stats:
                    stats[key] += s.get(key, 0.0)
                count += 1
        out = {k: v / max(count, 1) for k, v in stats.items()}
        for h in self.hooks:
            out.update(h.figures())
        return out

    def _minibatch(self, b: dict[str, Any], extra: list[Any] | None = None
                   ) -> dict[str, float]:
        """One step on the minibatch ``b`` of PPO's decisions, with each hook's loss term on
        what it gave for this minibatch (``extra``, in hook order; ``None``: none)."""
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
        terms: dict[str, Any] = {}
        for h, batch in zip(self.hooks, extra or [None] * len(self.hooks), strict=True):
            if batch is not None:
                term = h.loss(self, batch)
                loss = loss + h.coef * term
                if h.loss_name:
                    terms[h.loss_name] = term
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
        out.update({name: term.item() for name, term in terms.items()})
        return out


__all__ = ["Learner"]
