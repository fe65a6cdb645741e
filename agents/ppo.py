"""``ppo``: a policy trained with PPO, from a checkpoint.

``ppo`` alone plays the agent shipped inside the package (``agents/data/ppo_dragons_egg.npz``,
trained by the batched self-play trainer ``dragons_egg.experiments.selfplay``; it plays every table
size 2..8). ``ppo:path=FILE`` plays any checkpoint of either format:

- a ``.npz`` policy file (:mod:`dragons_egg.agents.netpolicy`, written by
  ``dragons_egg.experiments.selfplay``), played
  with numpy, no torch needed;
- a Stable-Baselines3 MaskablePPO ``.zip`` (``dragons_egg.experiments.train_ppo``), loaded with the
  ``train`` extra (torch, stable-baselines3, sb3-contrib), on one torch thread unless
  ``DRAGONS_EGG_TORCH_THREADS`` says otherwise. The agent shipped with 0.1.0 and 0.2.0 is one
  (:data:`PREVIOUS`), played by name from any folder as ``ppo-0.1``
  (:class:`PreviousPPOAgent`).

The format is read from the file's contents (a ``.npz`` holds ``meta.npy``, an SB3 zip a
``data`` entry), not its name. The policy's observation size tells the padding it was trained
with (``max_players``); observations of smaller tables are padded to it
(:func:`dragons_egg_env.observation.pad`). ``deterministic=false`` samples from the policy
with the agent's own seeded RNG instead of taking the most likely action. Loaded policies are
cached per process, so a pool of snapshots or a tournament loads each file once.

When a spec is read, :func:`check_checkpoint` checks the file without torch (it exists, is a
file, is a policy of either format with a Dragon's Egg observation size) and
:func:`checkpoint_players` reads the table size the policy was trained for, so a missing,
corrupt or too-small checkpoint is a one-line error before any match starts; so is an SB3
checkpoint without the ``train`` extra (:class:`dragons_egg_env.extras.MissingExtraError`), and
a relative path that does not exist but names a shipped file suggests the agent's name
(``ppo`` or ``ppo-0.1``, :data:`SHIPPED_AGENTS`).
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from dragons_egg_env.config import RulesConfig
from dragons_egg_env.extras import missing_error, require
from dragons_egg_env.observation import MaskArray, ObsArray, pad, players_for_size

from .base import Agent, one_line

if TYPE_CHECKING:
    from sb3_contrib import MaskablePPO

    from .netpolicy import NetPolicy

DATA_DIR = Path(__file__).resolve().parent / "data"
#: The agent ``ppo`` plays: a self-play policy (``.npz``), provenance in the ``.json`` beside it.
SHIPPED = DATA_DIR / "ppo_dragons_egg.npz"
#: The agent shipped with 0.1.0 and 0.2.0 (SB3 MaskablePPO, 4 players): the agent ``ppo-0.1``.
PREVIOUS = DATA_DIR / "ppo_sb3_0.1.zip"
#: The policy files shipped in the package, by the name of the agent that plays them.
SHIPPED_AGENTS = {"ppo": SHIPPED, "ppo-0.1": PREVIOUS}
#: The modules of the ``train`` extra an SB3 checkpoint needs to be played.
SB3_MODULES = ("torch", "stable_baselines3", "sb3_contrib")

_CACHE: dict[tuple[str, float], MaskablePPO] = {}


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt or not a Dragon's Egg PPO policy."""


def _torch_threads() -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("DRAGONS_EGG_TORCH_THREADS", "1")))


def _check_file(p: Path) -> None:
    if p.is_dir():
        raise CheckpointError(f"checkpoint {p} is a directory, not a checkpoint file (a .npz "
                              "written by dragons_egg.experiments.selfplay or a .zip written by "
                              "dragons_egg.experiments.train_ppo)")
    if not p.exists():
        raise CheckpointError(_missing_message(p))
    if not p.is_file():
        raise CheckpointError(f"checkpoint {p} is not a regular file")
    try:
        is_zip = zipfile.is_zipfile(p)
    except OSError as exc:
        raise CheckpointError(f"checkpoint {p} cannot be read: {exc}") from None
    if not is_zip:
        raise CheckpointError(f"checkpoint {p} is corrupt or not an SB3 zip file (nor a .npz "
                              "policy)")


def _missing_message(p: Path) -> str:
    """Why ``p`` is not there; a relative path is read from the current folder, and one that
    names a shipped file gets the agent's name, which plays it from any folder."""
    msg = f"checkpoint {p} does not exist"
    if not p.is_absolute():
        msg += f" (in {Path.cwd()})"
    for name, shipped in SHIPPED_AGENTS.items():
        if p.name == shipped.name:
            msg += (f"; {shipped.name} is shipped in the package: play it by name from any "
                    f"folder, as the agent {name}")
    return msg


def checkpoint_format(path: str | Path = "") -> Literal["net", "sb3"]:
    """``"net"`` for a ``.npz`` policy file, ``"sb3"`` for anything else that is a zip (checked
    further as an SB3 checkpoint); ``""`` is the shipped agent. A :class:`CheckpointError`
    when the file is missing or not a zip."""
    p = Path(path) if path else SHIPPED
    _check_file(p)
    try:
        with zipfile.ZipFile(p) as z:
            names = set(z.namelist())
    except (OSError, zipfile.BadZipFile) as exc:
        raise CheckpointError(f"checkpoint {p} cannot be read: {exc}") from None
    return "net" if "meta.npy" in names else "sb3"


def _net_policy(p: Path) -> NetPolicy:
    from .netpolicy import PolicyFileError, cached_policy

    try:
        return cached_policy(p)
    except PolicyFileError as exc:
        raise CheckpointError(str(exc)) from None


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
    if checkpoint_format(p) == "net":
        return _net_policy(p).max_players
    size = _observation_size(p)
    players = players_for_size(size)
    if players is None:
        raise CheckpointError(f"checkpoint {p} expects observations of {size} values, "
                              "which no Dragon's Egg table produces")
    return players


def check_checkpoint(path: str | Path = "") -> None:
    """Check a checkpoint without loading it (see :func:`checkpoint_players`)."""
    checkpoint_players(path)


def load_policy(path: str | Path) -> MaskablePPO:
    """Load (once per process and file version) a MaskablePPO checkpoint for inference (an
    SB3 zip; :mod:`dragons_egg.agents.netpolicy` reads ``.npz`` policies)."""
    p = Path(path)
    _check_file(p)
    key = (str(p.resolve()), p.stat().st_mtime)
    model = _CACHE.get(key)
    if model is None:
        err = missing_error(f"SB3 checkpoint {p}", "train", only=SB3_MODULES)
        if err is not None:
            raise CheckpointError(str(err))
        from sb3_contrib import MaskablePPO
        _torch_threads()
        try:
            model = MaskablePPO.load(str(p), device="cpu")
        except Exception as exc:  # noqa: BLE001 - SB3 raises many kinds on a bad file
            raise CheckpointError(f"checkpoint {p} could not be loaded: "
                                  f"{one_line(exc)}") from None
        shape = model.observation_space.shape
        size = shape[0] if shape else -1
        if players_for_size(size) is None:
            raise CheckpointError(f"checkpoint {p} expects observations of {size} values, "
                                  "which no Dragon's Egg table produces")
        _CACHE[key] = model
    return model


def policy_players(model: MaskablePPO) -> int:
    """The ``max_players`` a policy was trained with (from its observation size)."""
    shape = model.observation_space.shape
    players = players_for_size(shape[0] if shape else -1)
    assert players is not None, "load_policy checks the observation size"
    return players


def table_message(path: str, players: int, table: int) -> str:
    """Why a checkpoint cannot play a table of ``table`` seats (one line)."""
    shipped = {str(file): name for name, file in SHIPPED_AGENTS.items()}
    what = (f"the shipped {shipped[str(path or SHIPPED)]} agent" if str(path or SHIPPED) in shipped
            else f"checkpoint {path}")
    return (f"{what} was trained for tables of up to {players} players and cannot play a "
            f"table of {table}; the shipped ppo agent plays every table size, or train one "
            f"for larger tables with python -m dragons_egg.experiments.selfplay "
            f"--max-players {table}")


class PPOAgent(Agent):
    """A PPO policy of either checkpoint format (see the module docstring)."""

    name = "ppo"

    def __init__(self, seed: int | None = None, path: str = "", deterministic: bool = True
                 ) -> None:
        super().__init__(seed)
        self.path = Path(path) if path else SHIPPED
        self.deterministic = deterministic
        self.format = checkpoint_format(self.path)
        if self.format == "net":
            self.net = _net_policy(self.path)
            self.policy_players = self.net.max_players
        else:
            self.model = load_policy(self.path)
            self.policy_players = policy_players(self.model)

    @classmethod
    def check_options(cls, path: str = "", deterministic: bool = True) -> None:
        check_checkpoint(path)
        if checkpoint_format(path) == "sb3":  # played with SB3: a MissingExtraError without it
            require("an SB3 checkpoint", "train", only=SB3_MODULES)

    @classmethod
    def table_limit(cls, path: str = "", deterministic: bool = True) -> int:
        return checkpoint_players(path)

    def start_match(self, seat: int, config: RulesConfig, max_players: int | None = None
                    ) -> None:
        super().start_match(seat, config, max_players)
        if self.max_players > self.policy_players:
            raise CheckpointError(table_message(str(self.path) if self.path != SHIPPED else "",
                                                self.policy_players, self.max_players))

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        obs = pad(observation, self.max_players, self.policy_players)
        mask = np.asarray(action_mask, dtype=bool)
        if self.format == "net":
            z = self.net.logits(obs, mask)
            if self.deterministic:
                return int(np.argmax(z))
            probs = np.exp(z - z.max())
        elif self.deterministic:
            action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
            return int(action)
        else:
            import torch

            with torch.no_grad():
                t = torch.as_tensor(obs[None], dtype=torch.float32)
                dist = self.model.policy.get_distribution(t, action_masks=mask[None])
                # Discrete actions: one (masked) categorical distribution, not a list of them
                assert isinstance(dist.distribution, torch.distributions.Categorical)
                probs = dist.distribution.probs[0].numpy()
        legal = np.flatnonzero(mask)
        return int(self.rng.choices(legal.tolist(), weights=probs[legal].tolist())[0])


class PreviousPPOAgent(PPOAgent):
    """``ppo-0.1``: the agent shipped with 0.1.0 and 0.2.0 (:data:`PREVIOUS`, SB3 MaskablePPO
    trained at 4 players, so it plays tables of 2 to 4), by name from any folder. It is
    ``ppo:path=<the package's ppo_sb3_0.1.zip>`` and needs the ``train`` extra, as every SB3
    checkpoint does."""

    name = "ppo-0.1"

    def __init__(self, seed: int | None = None, deterministic: bool = True) -> None:
        super().__init__(seed, path=str(PREVIOUS), deterministic=deterministic)

    @classmethod
    def check_options(cls, deterministic: bool = True) -> None:  # type: ignore[override]
        PPOAgent.check_options(str(PREVIOUS), deterministic)

    @classmethod
    def table_limit(cls, deterministic: bool = True) -> int:  # type: ignore[override]
        return checkpoint_players(PREVIOUS)
