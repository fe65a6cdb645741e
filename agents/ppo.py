"""``ppo``: a policy trained with MaskablePPO (``experiments/train_ppo.py``), from a checkpoint.

``ppo`` alone plays the checkpoint shipped inside the package (``agents/data/``);
``ppo:path=runs/x/final.zip`` plays any checkpoint. The policy's observation size tells the
padding it was trained with (``max_players``); observations of smaller tables are padded to it
(:func:`dragons_egg_env.observation.pad`). ``deterministic=false`` samples from the policy
with the agent's own seeded RNG instead of taking the most likely action.

Loading needs the ``train`` extra (torch, stable-baselines3, sb3-contrib). Torch runs on one
thread unless ``DRAGONS_EGG_TORCH_THREADS`` says otherwise. Loaded policies are cached per
process, so a pool of snapshots or a tournament loads each file once.

When a spec is read, :func:`check_checkpoint` checks the file without torch (it exists, is a
file, is an SB3 zip with a Dragon's Egg observation size) and :func:`checkpoint_players`
reads the table size the policy was trained for from the zip's ``data`` entry, so a missing,
corrupt or too-small checkpoint is a one-line error before any match starts.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg_env.observation import pad, players_for_size

from .base import Agent, one_line

DATA_DIR = Path(__file__).resolve().parent / "data"
SHIPPED = DATA_DIR / "ppo_dragons_egg.zip"

_CACHE: dict[tuple[str, float], Any] = {}


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt or not a Dragon's Egg MaskablePPO policy."""


def _torch_threads() -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("DRAGONS_EGG_TORCH_THREADS", "1")))


def _check_file(p: Path) -> None:
    if p.is_dir():
        raise CheckpointError(f"checkpoint {p} is a directory, not a checkpoint file (a .zip "
                              "written by experiments.train_ppo)")
    if not p.exists():
        raise CheckpointError(f"checkpoint {p} does not exist")
    if not p.is_file():
        raise CheckpointError(f"checkpoint {p} is not a regular file")
    try:
        is_zip = zipfile.is_zipfile(p)
    except OSError as exc:
        raise CheckpointError(f"checkpoint {p} cannot be read: {exc}") from None
    if not is_zip:
        raise CheckpointError(f"checkpoint {p} is corrupt or not an SB3 zip file")


def _observation_size(p: Path) -> int:
    """The observation size recorded in an SB3 zip's ``data`` entry (JSON), read without
    torch; a :class:`CheckpointError` when the entry is missing or unreadable."""
    try:
        with zipfile.ZipFile(p) as z:
            data = json.loads(z.read("data"))
        shape = data["observation_space"]["_shape"]
        (size,) = shape
        return int(size)
    except KeyError:
        raise CheckpointError(f"checkpoint {p} is a zip file but not an SB3 checkpoint "
                              "(no observation space in its 'data' entry)") from None
    except (OSError, ValueError, TypeError, zipfile.BadZipFile) as exc:
        raise CheckpointError(f"checkpoint {p} is corrupt: {type(exc).__name__}: {exc}"
                              ) from None


def checkpoint_players(path: str | Path = "") -> int:
    """The ``max_players`` a checkpoint's policy was trained with (its observation padding:
    it plays tables of up to that many seats), read from the zip without loading torch.
    ``""`` is the shipped checkpoint. A :class:`CheckpointError` for a bad file."""
    p = Path(path) if path else SHIPPED
    _check_file(p)
    size = _observation_size(p)
    players = players_for_size(size)
    if players is None:
        raise CheckpointError(f"checkpoint {p} expects observations of {size} values, "
                              "which no Dragon's Egg table produces")
    return players


def check_checkpoint(path: str | Path = "") -> None:
    """Check a checkpoint without loading it (see :func:`checkpoint_players`)."""
    checkpoint_players(path)


def load_policy(path: str | Path) -> Any:
    """Load (once per process and file version) a MaskablePPO checkpoint for inference."""
    p = Path(path)
    _check_file(p)
    key = (str(p.resolve()), p.stat().st_mtime)
    model = _CACHE.get(key)
    if model is None:
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
                                  f"{one_line(exc)}") from None
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


def table_message(path: str, players: int, table: int) -> str:
    """Why a checkpoint cannot play a table of ``table`` seats (one line)."""
    what = f"checkpoint {path}" if path else "the shipped ppo agent"
    return (f"{what} was trained for tables of up to {players} players and cannot play a "
            f"table of {table}; train one for larger tables with "
            f"python -m experiments.train_ppo --table-sizes ...,{table}")


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

    @classmethod
    def check_options(cls, path: str = "", deterministic: bool = True) -> None:
        check_checkpoint(path)

    @classmethod
    def table_limit(cls, path: str = "", deterministic: bool = True) -> int:
        return checkpoint_players(path)

    def start_match(self, seat, config, max_players=None) -> None:
        super().start_match(seat, config, max_players)
        if self.max_players > self.policy_players:
            raise CheckpointError(table_message(str(self.path) if self.path != SHIPPED else "",
                                                self.policy_players, self.max_players))

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
