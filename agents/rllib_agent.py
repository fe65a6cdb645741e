"""``rllib``: a module trained with ``experiments/train_rllib.py``, exported as a folder.

``rllib:path=runs/rllib/main_module`` plays it (greedy over the masked logits). Needs the
``rllib`` extra. Observations of smaller tables are padded to the module's size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg_env.observation import pad, players_for_size

from .base import Agent

_CACHE: dict[str, Any] = {}


class RLlibAgent(Agent):
    name = "rllib"

    def __init__(self, seed: int | None = None, path: str = "") -> None:
        super().__init__(seed)
        p = Path(path)
        if not path or not p.is_dir():
            raise ValueError(f"rllib: path must be an exported module folder, got {path!r}")
        key = str(p.resolve())
        if key not in _CACHE:
            from ray.rllib.core.rl_module.rl_module import RLModule

            try:
                _CACHE[key] = RLModule.from_checkpoint(key)
            except Exception as exc:  # noqa: BLE001 - many kinds of bad folders
                raise ValueError(f"rllib: cannot load a module from {p}: "
                                 f"{type(exc).__name__}: {exc}") from None
        self.module = _CACHE[key]
        size = self.module.observation_space["observations"].shape[0]
        self.policy_players = players_for_size(size)
        if self.policy_players is None:
            raise ValueError(f"rllib: the module at {p} does not take Dragon's Egg "
                             "observations")

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        import torch
        from ray.rllib.core.columns import Columns

        obs = pad(observation, self.max_players, self.policy_players)
        batch = {Columns.OBS: {
            "observations": torch.as_tensor(obs[None], dtype=torch.float32),
            "action_mask": torch.as_tensor(np.asarray(action_mask, np.float32)[None])}}
        with torch.no_grad():
            out = self.module.forward_inference(batch)
        logits = out[Columns.ACTION_DIST_INPUTS][0].numpy()
        return int(np.argmax(np.where(np.asarray(action_mask) > 0, logits, -np.inf)))
