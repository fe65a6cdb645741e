"""``ppo``: a policy trained with PPO, from a checkpoint.

``ppo`` alone plays the agent shipped inside the package (``agents/data/ppo_dragons_egg.npz``,
trained by the batched self-play trainer ``dragons_egg.experiments.training.selfplay``; it plays
every table
size 2..8). ``ppo:path=FILE`` plays any checkpoint of either format:

- a ``.npz`` policy file (:mod:`dragons_egg.agents.netpolicy`, written by
  ``dragons_egg.experiments.training.selfplay``), played
  with numpy, no torch needed;
- a Stable-Baselines3 MaskablePPO ``.zip`` (``dragons_egg.experiments.training.train_ppo``), loaded
with the
  ``train`` extra (torch, stable-baselines3, sb3-contrib), on one torch thread unless
  ``DRAGONS_EGG_TORCH_THREADS`` says otherwise. The agent shipped with 0.1.0 and 0.2.0 is one
  (:data:`PREVIOUS`), played by name from any folder as ``ppo-0.1``
  (:class:`PreviousPPOAgent`).

What a file is decides how it is read (:func:`checkpoint_format`): a file named ``.npz`` is a
policy file, read with numpy and never unpickled, whatever it holds (an SB3 zip named ``.npz``
is refused, never handed to SB3); a file of another name that holds a policy file (``meta.npy``)
is read the same way; only a ``.zip`` holding an SB3 ``data`` entry is an SB3 checkpoint.
Loading an SB3 checkpoint runs code stored in it (SB3 unpickles its ``data`` entry with
cloudpickle), so a path is loaded only with the explicit option ``trust=1``
(``ppo:path=FILE.zip,trust=1``), for files whose source you trust; without it the spec is a
one-line error (:class:`UntrustedCheckpointError`) when it is read, before anything is
unpickled. The one exception is a file whose bytes are the SB3 checkpoint shipped in the package
(its sha256 is :data:`PREVIOUS_SHA256`, recorded here): ``ppo-0.1``, or the same bytes by path,
load without the option; a modified copy does not. The policy's observation size tells the
padding it was trained with (``max_players``); observations of smaller tables are padded to it
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

A policy file records the rules it was trained under
(:attr:`dragons_egg.agents.netpolicy.NetPolicy.rules`; files without the record were trained
under the default rules). At the start of a match under other rules (any rule flag, the number
of rounds included; the table size is checked apart, and a table larger than the policy's
``max_players`` stays refused) the agent plays on and warns with a
:class:`RulesMismatchWarning` naming each flag that differs, the policy's value and the game's:
once per process for each policy file and set of differences (:func:`warn_rules_mismatch`), so a
tournament of many matches warns once. The option ``rules_mismatch=ignore``
(``ppo:path=FILE.npz,rules_mismatch=ignore``, or the constructor's argument) silences it. An SB3
checkpoint records no rules and is not checked.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

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
#: sha256 of :data:`PREVIOUS`, the SB3 checkpoint shipped in the package: a file with exactly
#: these bytes is loaded without ``trust=1`` (its code is the package's own).
PREVIOUS_SHA256 = "2f5735d7702038f1bfa8d9c6e2c9a3f3ebcbb096911c867959f3c97760ae3767"
#: The sha256 of every SB3 checkpoint the package vouches for.
TRUSTED_SB3_SHA256 = frozenset({PREVIOUS_SHA256})
#: The most bytes of an SB3 zip's ``data`` entry (JSON; the shipped one's is 31 kB) read to
#: check a checkpoint without loading it.
MAX_SB3_DATA_BYTES = 64 * 2**20

#: Loaded SB3 models (with the sha256 of the bytes they were loaded from), by resolved path,
#: modification time and size.
_CACHE: dict[tuple[str, int, int], tuple[str, MaskablePPO]] = {}
#: sha256 of files, by resolved path, modification time and size.
_DIGESTS: dict[tuple[str, int, int], str] = {}


#: The values of the option ``rules_mismatch``: ``warn`` (once, :func:`warn_rules_mismatch`)
#: when a policy file plays under other rules than it was trained under, or ``ignore``.
RULES_MISMATCH = ("warn", "ignore")
#: The rule differences already warned about in this process, by policy file.
_WARNED: set[tuple[str, tuple[tuple[str, Any, Any], ...]]] = set()


class RulesMismatchWarning(UserWarning):
    """A policy file plays a game under other rules than it was trained under (the message
    names each differing flag, with the policy's value and the game's)."""


class CheckpointError(ValueError):
    """A checkpoint that is missing, corrupt or not a Dragon's Egg PPO policy."""


class UntrustedCheckpointError(CheckpointError):
    """An SB3 checkpoint (which runs code when loaded) given without the trust option."""


def _torch_threads() -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("DRAGONS_EGG_TORCH_THREADS", "1")))


def _check_file(p: Path) -> None:
    if p.is_dir():
        raise CheckpointError(f"checkpoint {p} is a directory, not a checkpoint file (a .npz "
                              "written by dragons_egg.experiments.training.selfplay or a .zip "
                              "written by dragons_egg.experiments.training.train_ppo)")
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
    """``"net"`` for a policy file: every file named ``.npz`` (read with numpy, never
    unpickled: an SB3 zip of that name is refused here) and a file of another name that holds
    a policy's ``meta.npy``; ``"sb3"`` for any other ``.zip`` (checked further as an SB3
    checkpoint, and loaded only when trusted: :func:`check_trust`); ``""`` is the shipped
    agent. A :class:`CheckpointError` when the file is missing, not a zip, or
    neither."""
    p = Path(path) if path else SHIPPED
    _check_file(p)
    try:
        with zipfile.ZipFile(p) as z:
            names = set(z.namelist())
    except (OSError, zipfile.BadZipFile) as exc:
        raise CheckpointError(f"checkpoint {p} cannot be read: {exc}") from None
    suffix = p.suffix.lower()
    if suffix == ".npz" and "meta.npy" not in names and "data" in names:
        raise CheckpointError(f"checkpoint {p} is named .npz (a policy file, which holds numbers "
                              "only) but holds a Stable-Baselines3 checkpoint, which runs code "
                              "when loaded: it is not loaded from a .npz name")
    if suffix == ".npz" or "meta.npy" in names:
        return "net"
    if suffix != ".zip":
        raise CheckpointError(f"checkpoint {p} is neither a policy file (.npz) nor a "
                              "Stable-Baselines3 checkpoint (.zip)")
    return "sb3"


def file_sha256(path: str | Path) -> str:
    """The sha256 of a file's bytes (hex), remembered by path, modification time and size."""
    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_mtime_ns, st.st_size)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def is_shipped_sb3(path: str | Path) -> bool:
    """Whether a file's bytes are an SB3 checkpoint shipped in the package (its sha256 is in
    :data:`TRUSTED_SB3_SHA256`)."""
    return file_sha256(path) in TRUSTED_SB3_SHA256


def untrusted_message(path: str | Path, how: str = "") -> str:
    """Why an SB3 checkpoint is not loaded without trust (one line); ``how`` says how to
    give it (default: the agent option ``trust=1``)."""
    p = Path(path)
    if p.resolve() == PREVIOUS.resolve():
        return (f"the package's {p.name} ({p}) does not match the sha256 recorded for it "
                "(dragons_egg.agents.ppo.PREVIOUS_SHA256): it was altered or damaged, and an "
                "SB3 checkpoint runs code when loaded; reinstall the package")
    note = "" if how else " (policy files, .npz, hold numbers only and need no trust)"
    how = how or f"ppo:path={path},trust=1"
    return (f"checkpoint {p} is a Stable-Baselines3 zip, and loading one runs code stored in "
            f"it (pickle): load it only if you trust where it came from, with {how}{note}")


def check_trust(path: str | Path, trust: bool = False, how: str = "") -> None:
    """Raise :class:`UntrustedCheckpointError` unless ``trust`` is given or the file is the
    package's own SB3 checkpoint (:func:`is_shipped_sb3`)."""
    if not trust and not is_shipped_sb3(path):
        raise UntrustedCheckpointError(untrusted_message(path, how))


def net_policy(path: str | Path) -> NetPolicy:
    """The policy file at ``path`` (:mod:`dragons_egg.agents.netpolicy`), loaded once per
    process and file version (:func:`~dragons_egg.agents.netpolicy.cached_policy`): what the
    agents built on a policy file (``ppo``, ``net``, ``ismcts-net``) play. A bad file is a
    :class:`CheckpointError` (one line, naming it)."""
    from .netpolicy import PolicyFileError, cached_policy

    try:
        return cached_policy(path)
    except PolicyFileError as exc:
        raise CheckpointError(str(exc)) from None


def check_rules_mismatch(rules_mismatch: str) -> None:
    """A ``ValueError`` unless ``rules_mismatch`` is one of :data:`RULES_MISMATCH`."""
    if rules_mismatch not in RULES_MISMATCH:
        raise ValueError(f"rules_mismatch is one of {', '.join(RULES_MISMATCH)}, got "
                         f"{rules_mismatch!r}")


def rules_mismatch_message(path: str | Path, differences: Sequence[tuple[str, Any, Any]]
                           ) -> str:
    """Why a policy file warns at the start of a match (one line): each flag that differs,
    as ``flag: policy VALUE, game VALUE``."""
    flags = "; ".join(f"{name}: policy {mine!r}, game {theirs!r}"
                      for name, mine, theirs in differences)
    return (f"policy file {path} was trained under other rules than this game's ({flags}); it "
            "plays on (the option rules_mismatch=ignore silences this)")


def warn_rules_mismatch(path: str | Path, net: NetPolicy, config: RulesConfig,
                        rules_mismatch: str = "warn") -> list[tuple[str, Any, Any]]:
    """Compare the rules the policy ``net`` (read from ``path``) was trained under with
    ``config``, the game's (:meth:`~dragons_egg.agents.netpolicy.NetPolicy.rule_differences`),
    and warn with a :class:`RulesMismatchWarning` when they differ and ``rules_mismatch`` is
    ``"warn"``: once per process for each policy file and set of differences. Returns the
    differences (``(flag, policy value, game value)``; empty when the rules agree)."""
    differences = net.rule_differences(config)
    key = (str(Path(path).resolve()), tuple(differences))
    if differences and rules_mismatch == "warn" and key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(rules_mismatch_message(path, differences), RulesMismatchWarning,
                      stacklevel=3)
    return differences


def _observation_size(p: Path) -> int:
    """The observation size recorded in an SB3 zip's ``data`` entry (JSON), read without
    torch; a :class:`CheckpointError` when the entry is missing or unreadable."""
    try:
        with zipfile.ZipFile(p) as z:
            if z.getinfo("data").file_size > MAX_SB3_DATA_BYTES:
                raise CheckpointError(f"checkpoint {p}: its 'data' entry is larger than an SB3 "
                                      f"checkpoint's ({MAX_SB3_DATA_BYTES // 2**20} MiB at most)")
            data = json.loads(z.read("data"))
        shape = data["observation_space"]["_shape"]
        (size,) = shape
        return int(size)
    except CheckpointError:
        raise
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
        return net_policy(p).max_players
    size = _observation_size(p)
    players = players_for_size(size)
    if players is None:
        raise CheckpointError(f"checkpoint {p} expects observations of {size} values, "
                              "which no Dragon's Egg table produces")
    return players


def check_checkpoint(path: str | Path = "") -> None:
    """Check a checkpoint without loading it (see :func:`checkpoint_players`)."""
    checkpoint_players(path)


def load_policy(path: str | Path, trust: bool = False) -> MaskablePPO:
    """Load (once per process and file contents) a MaskablePPO checkpoint for inference (an
    SB3 ``.zip``; :mod:`dragons_egg.agents.netpolicy` reads ``.npz`` policies). SB3 unpickles
    the file, which runs code stored in it: without ``trust`` only the package's own checkpoint
    (:data:`TRUSTED_SB3_SHA256`) is loaded, others are an :class:`UntrustedCheckpointError`.
    The bytes hashed are the bytes loaded."""
    p = Path(path)
    _check_file(p)
    if checkpoint_format(p) != "sb3":
        raise CheckpointError(f"checkpoint {p} is not a Stable-Baselines3 checkpoint (.zip)")
    if not trust:
        check_trust(p)  # before the file is read into memory
    st = p.stat()
    key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    cached = _CACHE.get(key)
    if cached is not None:
        if not trust and cached[0] not in TRUSTED_SB3_SHA256:
            raise UntrustedCheckpointError(untrusted_message(p))
        return cached[1]
    data = p.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if not trust and digest not in TRUSTED_SB3_SHA256:  # it changed since check_trust read it
        raise UntrustedCheckpointError(untrusted_message(p))
    err = missing_error(f"SB3 checkpoint {p}", "train", only=SB3_MODULES)
    if err is not None:
        raise CheckpointError(str(err))
    from sb3_contrib import MaskablePPO
    _torch_threads()
    try:
        model = MaskablePPO.load(io.BytesIO(data), device="cpu")
    except Exception as exc:  # noqa: BLE001 - SB3 raises many kinds on a bad file
        raise CheckpointError(f"checkpoint {p} could not be loaded: "
                              f"{one_line(exc)}") from None
    shape = model.observation_space.shape
    size = shape[0] if shape else -1
    if players_for_size(size) is None:
        raise CheckpointError(f"checkpoint {p} expects observations of {size} values, "
                              "which no Dragon's Egg table produces")
    _CACHE[key] = digest, model
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
            f"for larger tables with python -m dragons_egg.experiments.training.selfplay "
            f"--max-players {table}")


def check_table(path: str | Path, players: int, table: int) -> None:
    """The one table-size check of a learned policy: a :class:`CheckpointError`
    (:func:`table_message`) when a policy trained for tables of up to ``players`` seats is
    asked to play a table of ``table``."""
    if table > players:
        shipped = Path(path or SHIPPED) == SHIPPED
        raise CheckpointError(table_message("" if shipped else str(path), players, table))


def sample_action(rng: random.Random, probs: npt.NDArray[Any], mask: MaskArray) -> int:
    """The one sampling routine of a learned policy: a legal action drawn with weights
    ``probs`` (any positive scale) by one ``rng.random()`` (``random.Random.choices``)."""
    legal = np.flatnonzero(mask)
    return int(rng.choices(legal.tolist(), weights=probs[legal].tolist())[0])


class _NetBackend:
    """A numpy policy file (:class:`dragons_egg.agents.netpolicy.NetPolicy`)."""

    def __init__(self, path: Path) -> None:
        self.net = net_policy(path)
        self.max_players = self.net.max_players

    def greedy(self, obs: ObsArray, mask: MaskArray) -> int:
        return int(np.argmax(self.net.logits(obs, mask)))

    def weights(self, obs: ObsArray, mask: MaskArray) -> npt.NDArray[Any]:
        z = self.net.logits(obs, mask)
        out: npt.NDArray[Any] = np.exp(z - z.max())
        return out


class _SB3Backend:
    """A Stable-Baselines3 MaskablePPO checkpoint (loaded only when trusted)."""

    def __init__(self, path: Path, trust: bool) -> None:
        self.model = load_policy(path, trust=trust)
        self.max_players = policy_players(self.model)

    def greedy(self, obs: ObsArray, mask: MaskArray) -> int:
        action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
        return int(action)

    def weights(self, obs: ObsArray, mask: MaskArray) -> npt.NDArray[Any]:
        import torch

        with torch.no_grad():
            t = torch.as_tensor(obs[None], dtype=torch.float32)
            dist = self.model.policy.get_distribution(t, action_masks=mask[None])
            # Discrete actions: one (masked) categorical distribution, not a list of them
            assert isinstance(dist.distribution, torch.distributions.Categorical)
            out: npt.NDArray[Any] = dist.distribution.probs[0].numpy()
            return out


class PPOAgent(Agent):
    """The learned-policy agent: a policy file or an SB3 checkpoint, chosen by the file's
    content (:func:`checkpoint_format`; see the module docstring).

    ``rules_mismatch`` (:data:`RULES_MISMATCH`): ``"warn"`` (once) when a policy file plays
    a match under other rules than it was trained under, ``"ignore"`` to play on silently."""

    name = "ppo"

    def __init__(self, seed: int | None = None, path: str = "", deterministic: bool = True,
                 trust: bool = False, rules_mismatch: str = "warn") -> None:
        super().__init__(seed)
        check_rules_mismatch(rules_mismatch)
        self.path = Path(path) if path else SHIPPED
        self.deterministic = deterministic
        self.rules_mismatch = rules_mismatch
        self.format = checkpoint_format(self.path)
        self.backend: _NetBackend | _SB3Backend = (
            _NetBackend(self.path) if self.format == "net" else _SB3Backend(self.path, trust))
        self.policy_players = self.backend.max_players

    @property
    def net(self) -> NetPolicy | None:
        """The numpy policy it plays (:class:`~dragons_egg.agents.netpolicy.NetPolicy`, read
        from a policy file), or ``None`` for an SB3 checkpoint."""
        return self.backend.net if isinstance(self.backend, _NetBackend) else None

    @classmethod
    def check_options(cls, path: str = "", deterministic: bool = True,
                      trust: bool = False, rules_mismatch: str = "warn") -> None:
        check_rules_mismatch(rules_mismatch)
        check_checkpoint(path)
        if checkpoint_format(path) == "sb3":
            check_trust(path, trust)  # it runs code when loaded: only when trusted
            require("an SB3 checkpoint", "train", only=SB3_MODULES)  # a MissingExtraError

    @classmethod
    def table_limit(cls, path: str = "", deterministic: bool = True,
                    trust: bool = False, rules_mismatch: str = "warn") -> int:
        return checkpoint_players(path)

    def start_match(self, seat: int, config: RulesConfig, max_players: int | None = None
                    ) -> None:
        """As :meth:`Agent.start_match`; a table larger than the policy's is a
        :class:`CheckpointError`, and a policy file under other rules than its own warns
        (:func:`warn_rules_mismatch`, unless ``rules_mismatch="ignore"``)."""
        super().start_match(seat, config, max_players)
        check_table(self.path, self.policy_players, self.max_players)
        if self.net is not None:
            warn_rules_mismatch(self.path, self.net, config, self.rules_mismatch)

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        obs = pad(observation, self.max_players, self.policy_players)
        mask = np.asarray(action_mask, dtype=bool)
        if self.deterministic:
            return self.backend.greedy(obs, mask)
        return sample_action(self.rng, self.backend.weights(obs, mask), mask)


def _policy_file_path(path: str) -> str:
    """``net``'s ``path``: required, and a policy file (``.npz``), not an SB3 checkpoint."""
    if not path:
        raise ValueError("net: give the policy file, net:path=FILE.npz")
    if checkpoint_format(path) != "net":
        raise CheckpointError(f"net plays policy files (.npz); {path} is a Stable-Baselines3 "
                              f"checkpoint: play it as ppo:path={path},trust=1")
    return path


class NetAgent(PPOAgent):
    """``net``: the agent ``ppo`` for policy files only (``net:path=FILE.npz``), kept as an
    alias; it plays exactly as ``ppo:path=FILE.npz``. It is :attr:`memoryless`."""

    name = "net"
    memoryless = True

    def __init__(self, seed: int | None = None, path: str = "",
                 deterministic: bool = True, rules_mismatch: str = "warn") -> None:
        super().__init__(seed, path=_policy_file_path(path), deterministic=deterministic,
                         rules_mismatch=rules_mismatch)

    @classmethod
    def check_options(cls, path: str = "",  # type: ignore[override]
                      deterministic: bool = True, rules_mismatch: str = "warn") -> None:
        PPOAgent.check_options(_policy_file_path(path), deterministic,
                               rules_mismatch=rules_mismatch)

    @classmethod
    def table_limit(cls, path: str = "",  # type: ignore[override]
                    deterministic: bool = True, rules_mismatch: str = "warn") -> int:
        return checkpoint_players(_policy_file_path(path))


class PreviousPPOAgent(PPOAgent):
    """``ppo-0.1``: the agent shipped with 0.1.0 and 0.2.0 (:data:`PREVIOUS`, SB3 MaskablePPO
    trained at 4 players, so it plays tables of 2 to 4), by name from any folder. It is
    ``ppo:path=<the package's ppo_sb3_0.1.zip>`` and needs the ``train`` extra, as every SB3
    checkpoint does. It loads without ``trust=1`` because the file's sha256 is the one recorded
    in the package (:data:`PREVIOUS_SHA256`); an altered file is refused."""

    name = "ppo-0.1"

    def __init__(self, seed: int | None = None, deterministic: bool = True) -> None:
        super().__init__(seed, path=str(PREVIOUS), deterministic=deterministic)

    @classmethod
    def check_options(cls, deterministic: bool = True) -> None:  # type: ignore[override]
        PPOAgent.check_options(str(PREVIOUS), deterministic)

    @classmethod
    def table_limit(cls, deterministic: bool = True) -> int:  # type: ignore[override]
        return checkpoint_players(PREVIOUS)
