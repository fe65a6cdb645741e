"""``ppo``: a policy trained with MaskablePPO (``experiments/train_ppo.py``), from a checkpoint.

``ppo`` alone plays the checkpoint shipped inside the package (``agents/data/``);
``ppo:path=runs/x/final.zip`` plays any checkpoint. The policy's observation size tells the
padding it was trained with (``max_players``); observations of smaller tables are padded to it
(:func:`dragons_egg_env.observation.pad`). ``deterministic=false`` samples from the policy
with the agent's own seeded RNG instead of taking the most likely action.

Loading needs the ``train`` extra (torch, stable-baselines3, sb3-contrib). Torch runs on one
thread unless ``DRAGONS_EGG_TORCH_THREADS`` says otherwise. Loaded policies are cached per
process, so a pool of snapshots or a tournament loads each file once.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg_env.observation import pad, players_for_size

from .base import Agent

DATA_DIR = Path(__file__).resolve().parent / "data"
SHIPPED = DATA_DIR / "ppo_dragons_egg.zip"

_CACHE: dict[tuple[str, float], Any] = {}


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt or not a Dragon's Egg MaskablePPO policy."""


def _torch_threads() -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("DRAGONS_EGG_TORCH_THREADS", "1")))


def load_policy(path: str | Path) -> Any:
    """Load (once per process and file version) a MaskablePPO checkpoint for inference."""
    p = Path(path)
    if not p.is_file():
        raise CheckpointError(f"checkpoint {p} does not exist")
    key = (str(p.resolve()), p.stat().st_mtime)
    model = _CACHE.get(key)
    if model is None:
        if not zipfile.is_zipfile(p):
            raise CheckpointError(f"checkpoint {p} is corrupt or not an SB3 zip file")
        try:
            from sb3_contrib import MaskablePPO
        except ImportError as exc:  # pragma: no cover - the train extra is installed in tests
            raise CheckpointError("the ppo agent needs the 'train' extra: pip install "
                                  "'dragons-egg[train]'") from exc
        _torch_threads()
        try:
            model = MaskablePPO.load(str(p), device="cpu")
        except Exception as exc:  # noqa: BLE001 - SB3 raises many kinds on a bad file
            raise CheckpointError(f"checkpoint {p} could not be loaded: "
                                  f"{type(exc).__name__}: {exc}") from None
        size = model.observation_space.shape[0]
        if players_for_size(size) is None:
            raise CheckpointError(f"checkpoint {p} expects observations of {size} values, "
                                  "which no Dragon's Egg table produces")
        _CACHE[key] = model
    return model


def policy_players(model: Any) -> int:
    """The ``max_players`` a policy was trained with (from its observation size)."""
    players = players_for_size(model.observation_space.shape[0])
    assert players is not None, "load_policy checks the observation size"
    return players


class PPOAgent(Agent):
    """A MaskablePPO policy (see the module docstring)."""

    name = "ppo"

    def __init__(self, seed: int | None = None, path: str = "", deterministic: bool = True
                 ) -> None:
        super().__init__(seed)
        self.path = Path(path) if path else SHIPPED
        self.deterministic = deterministic
        self.model = load_policy(self.path)
        self.policy_players = policy_players(self.model)

    def start_match(self, seat, config, max_players=None) -> None:
        super().start_match(seat, config, max_players)
        if self.max_players > self.policy_players:
            raise CheckpointError(
                f"{self.path.name} was trained for tables of up to {self.policy_players} "
                f"seats; this table has {self.max_players}")

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        import torch

        obs = pad(observation, self.max_players, self.policy_players)
        mask = np.asarray(action_mask, dtype=bool)
        if self.deterministic:
            action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
            return int(action)
        with torch.no_grad():
            t = torch.as_tensor(obs[None], dtype=torch.float32)
            dist = self.model.policy.get_distribution(t, action_masks=mask[None])
            probs = dist.distribution.probs[0].numpy()
        legal = np.flatnonzero(mask)
        return int(self.rng.choices(legal.tolist(), weights=probs[legal].tolist())[0])
