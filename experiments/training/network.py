"""The self-play trainer's network: the masked actor-critic MLP it trains, its export as a
``dragons_egg.agents.netpolicy`` file (numpy arrays, played by the ``net`` and ``ppo`` agents)
and the run's empty give-back table (``tribute_table``). Torch is imported when a network is
built, not when the module is.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dragons_egg.experiments.training.tribute_table import GiveBackTable
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.config import TABLE_SIZES
from dragons_egg_env.observation import layout

if TYPE_CHECKING:
    import torch
    from torch import nn

    from dragons_egg.experiments.training.settings import SelfPlayConfig


def torch_module() -> types.ModuleType:
    """Torch, imported when first needed (the trainer's modules import without it)."""
    import torch

    return torch


def build_network(cfg: SelfPlayConfig) -> nn.Module:
    """The masked actor-critic MLP: a tanh trunk, an action head and a value head, with
    ``ppo.size_embedding`` a learned vector per table size added to the first layer's
    pre-activation (``size_emb``, zeros at the start), and the networks of the plug-ins that
    are on (:meth:`~.settings.SelfPlayConfig.network_parts`: the centralised critic, the
    hand-prediction head; trained, never exported). :meth:`features` is the trunk's output
    (what the heads read)."""
    import torch
    from torch import nn

    seats = layout(cfg.max_players).field("seat_present")

    class ActorCritic(nn.Module):
        def __init__(self, obs_size: int, hidden: tuple[int, ...]) -> None:
            super().__init__()
            layers: list[Any] = []
            prev = obs_size
            for h in hidden:
                layers += [nn.Linear(prev, h), nn.Tanh()]
                prev = h
            self.trunk = nn.Sequential(*layers)
            self.pi = nn.Linear(prev, NUM_ACTIONS)
            self.v = nn.Linear(prev, 1)
            nn.init.orthogonal_(self.pi.weight, 0.01)
            nn.init.zeros_(self.pi.bias)

        def features(self, obs: torch.Tensor) -> torch.Tensor:
            emb = getattr(self, "size_emb", None)
            if emb is None:
                out: torch.Tensor = self.trunk(obs)
                return out
            n = obs[..., seats.start:seats.start + seats.size].sum(-1).round().long()
            z = self.trunk[0](obs) + emb[(n - TABLE_SIZES[0]).clamp(0, len(TABLE_SIZES) - 1)]
            rest: torch.Tensor = self.trunk[1:](z)
            return rest

        def forward(self, obs: torch.Tensor, mask: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
            h = self.features(obs)
            logits = self.pi(h).masked_fill(~mask, -1e9)
            return logits, self.v(h).squeeze(-1)

    obs_size = layout(cfg.max_players).size
    model = ActorCritic(obs_size, tuple(cfg.ppo.hidden))
    if cfg.ppo.size_embedding:  # after the core's weights: without it, the same as before
        model.size_emb = nn.Parameter(torch.zeros(len(TABLE_SIZES), cfg.ppo.hidden[0]))
    # the plug-ins' parts after the core's: without them, the same initial weights as before
    for name, part in cfg.network_parts(obs_size).items():
        model.add_module(name, part)
    return model


def load_initial_weights(model: Any, cfg: SelfPlayConfig, path: str | Path) -> None:
    """Copy the trunk, action head and value head of the policy file ``path`` into ``model``
    (``ppo.init_policy``), and its size embedding where it has one (a network with
    ``ppo.size_embedding`` from a file without keeps its zeros); a ``ValueError`` naming the
    file when it cannot be read or is not of the network's shape (hidden sizes, seats,
    activation, a size embedding the network lacks)."""
    import torch

    from dragons_egg.agents.netpolicy import load_policy_file

    try:
        pol = load_policy_file(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"init_policy {path}: {exc}") from None
    want = (list(cfg.ppo.hidden), cfg.max_players, "tanh")
    got = (list(pol.meta.get("hidden", [])), pol.max_players, pol.meta.get("activation"))
    if got != want:
        raise ValueError(f"init_policy {path} is a network of hidden {got[0]}, max_players "
                         f"{got[1]}, activation {got[2]}; this run's is hidden {want[0]}, "
                         f"max_players {want[1]}, activation tanh")
    if pol.size_emb is not None and not cfg.ppo.size_embedding:
        raise ValueError(f"init_policy {path} has a size embedding (head size_embedding); "
                         "this run's network has none: add --size-embedding")
    lin = [m for m in model.trunk if hasattr(m, "weight")]
    with torch.no_grad():
        for m, (w, b) in zip(lin, pol.layers, strict=True):
            m.weight.copy_(torch.from_numpy(w.T.copy()))
            m.bias.copy_(torch.from_numpy(b.copy()))
        for m, (w, b) in ((model.pi, pol.pi), (model.v, pol.v)):
            m.weight.copy_(torch.from_numpy(w.T.copy()))
            m.bias.copy_(torch.from_numpy(b.reshape(-1).copy()))
        if pol.size_emb is not None:
            model.size_emb.copy_(torch.from_numpy(pol.size_emb.copy()))


def export_policy(model: Any, cfg: SelfPlayConfig, path: Path, provenance: dict[str, Any],
                  table: GiveBackTable | None = None) -> Path:
    """Write the network as an ``dragons_egg.agents.netpolicy`` file (numpy arrays); with the
    run's give-back ``table`` (``tribute_table``), its give-back at the sizes where the table
    plays (:meth:`~.tribute_table.GiveBackTable.policy`)."""
    from dragons_egg.agents.heads import SIZE_EMBEDDING
    from dragons_egg.agents.netpolicy import RULES_KEY, NetPolicy

    lin = [m for m in model.trunk if hasattr(m, "weight")]
    layers = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in lin]
    pi = (model.pi.weight.detach().numpy().T.copy(), model.pi.bias.detach().numpy().copy())
    v = (model.v.weight.detach().numpy().T.copy(), model.v.bias.detach().numpy().copy())
    emb = getattr(model, "size_emb", None)
    size_emb = None if emb is None else emb.detach().numpy().copy()
    meta = {"max_players": cfg.max_players, "obs_size": layout(cfg.max_players).size,
            "num_actions": NUM_ACTIONS, "hidden": list(cfg.ppo.hidden), "activation": "tanh",
            "provenance": provenance, RULES_KEY: cfg.rule_flags()}
    policy = NetPolicy(layers, pi, v, meta, heads=[] if size_emb is None else [SIZE_EMBEDDING],
                       size_emb=size_emb)
    return (policy if table is None else table.policy(policy)).save(path)


def new_table(cfg: SelfPlayConfig) -> GiveBackTable | None:
    """An empty give-back table with the run's settings (``tribute_table``), else None."""
    return cfg.table.new_table(cfg.max_players)


__all__ = ["torch_module", "build_network", "export_policy", "load_initial_weights",
           "new_table"]
