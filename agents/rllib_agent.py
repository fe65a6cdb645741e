"""``rllib``: a module trained with ``experiments/training/train_rllib.py``, exported as a folder.

``rllib:path=runs/rllib/main_module`` plays it (greedy over the masked logits). Needs the
``rllib`` extra (ray and torch), checked when the spec is read. Observations of smaller
tables are padded to the module's size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg_env.config import RulesConfig
from dragons_egg_env.extras import require
from dragons_egg_env.observation import MaskArray, ObsArray, pad, players_for_size

from .base import Agent, one_line

_CACHE: dict[str, Any] = {}
#: The file every exported RLlib module folder has (``Checkpointable``).
CTOR_FILE = "class_and_ctor_args.pkl"


def check_module_folder(path: str) -> None:
    """Check, without ray, that ``path`` looks like an exported RLlib module folder (a
    ``ValueError`` naming the problem)."""
    if not path:
        raise ValueError("path is required: rllib:path=FOLDER (an exported module, "
                         "<out>/main_module of dragons_egg.experiments.training.train_rllib)")
    p = Path(path)
    if not p.exists():
        raise ValueError(f"exported module folder {p} does not exist")
    if not p.is_dir():
        raise ValueError(f"{p} is a file; the rllib agent's path is an exported module "
                         "folder (<out>/main_module of "
                         "dragons_egg.experiments.training.train_rllib)")
    if not (p / CTOR_FILE).is_file():
        raise ValueError(f"{p} is not an exported RLlib module folder (it has no {CTOR_FILE})")


class RLlibAgent(Agent):
    name = "rllib"

    def __init__(self, seed: int | None = None, path: str = "") -> None:
        super().__init__(seed)
        check_module_folder(path)
        p = Path(path)
        key = str(p.resolve())
        if key not in _CACHE:
            try:
                from ray.rllib.core.rl_module.rl_module import RLModule
            except ImportError as exc:
                raise ValueError("the rllib agent needs the 'rllib' extra: pip install "
                                 f"'dragons-egg[rllib]' ({exc})") from None
            try:
                _CACHE[key] = RLModule.from_checkpoint(key)
            except Exception as exc:  # noqa: BLE001 - many kinds of bad folders
                raise ValueError(f"cannot load a module from {p}: {one_line(exc)}") from None
        self.module = _CACHE[key]
        self.path = p
        try:
            size = self.module.observation_space["observations"].shape[0]
        except (AttributeError, KeyError, TypeError, IndexError):
            size = -1
        players = players_for_size(size)
        if players is None:
            raise ValueError(f"the module at {p} does not take Dragon's Egg observations")
        self.policy_players: int = players

    @classmethod
    def check_options(cls, path: str = "") -> None:
        check_module_folder(path)
        require("the rllib agent", "rllib", only=("ray", "torch"))  # a MissingExtraError

    def start_match(self, seat: int, config: RulesConfig, max_players: int | None = None
                    ) -> None:
        super().start_match(seat, config, max_players)
        if self.max_players > self.policy_players:
            raise ValueError(f"the module at {self.path} was trained for tables of up to "
                             f"{self.policy_players} players and cannot play a table of "
                             f"{self.max_players}")

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        import torch
        from ray.rllib.core.columns import Columns

        obs = pad(observation, self.max_players, self.policy_players)
        batch = {Columns.OBS: {
            "observations": torch.as_tensor(obs[None], dtype=torch.float32),
            "action_mask": torch.as_tensor(np.asarray(action_mask, np.float32)[None])}}
        with torch.no_grad():
            out = self.module.forward_inference(batch)
        logits = out[Columns.ACTION_DIST_INPUTS][0].numpy()
        return int(np.argmax(np.where(np.asarray(action_mask, dtype=bool), logits, -np.inf)))
