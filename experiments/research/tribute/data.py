"""The tribute fit's gathered states and values as arrays and files: batches as one set of
arrays (:func:`concat_chunks`), ``data.npz`` (:func:`save_data`, :func:`load_data`), and the
batches a gather saves as each finishes (``OUT/gather/``: :func:`save_batch`,
:func:`load_batches`), each naming the policy it came from (:func:`file_digest`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt
from typing_extensions import NotRequired

from dragons_egg.agents.heads import IntArray
from dragons_egg.experiments.common.files import atomic_path
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.observation import ObsArray

from .settings import PLAY_POLICIES, TributeFitConfig, jsonable

#: Legal-action masks of the states (``(N, NUM_ACTIONS)``).
BoolArray = npt.NDArray[np.bool_]
#: Counterfactual values ``Q[i, a]`` (``(N, NUM_ACTIONS)``, NaN where ``a`` is not legal), the
#: fit's rows, targets and parameters.
Float64Array = npt.NDArray[np.float64]


class Batch(TypedDict):
    """One batch of states of one table size and play policy
    (:func:`.gather.run_chunk`, or read back by :func:`load_data`)."""

    #: The deciding seats' observations, padded to the policy's ``max_players``.
    obs: ObsArray
    mask: BoolArray
    #: ``Q[i, a]`` (:func:`.gather.counterfactual_values`).
    q: Float64Array
    #: The table size.
    n: int
    #: The play policy, of :data:`PLAY_POLICIES`.
    play: str
    #: The heuristic's choice in each state.
    heuristic: IntArray
    #: Seconds the worker took to gather it (only as gathered).
    seconds: NotRequired[float]


class StateArrays(TypedDict):
    """Batches as one set of arrays, a row per state (:func:`concat_chunks`)."""

    obs: ObsArray
    mask: BoolArray
    q: Float64Array
    heuristic: IntArray
    #: The table size of each state.
    n: IntArray
    #: Each state's play policy: an index into :data:`PLAY_POLICIES`.
    play: IntArray


def concat_chunks(chunks: Sequence[Batch]) -> StateArrays:
    """The batches of :func:`gather` (or :func:`load_data`) as one set of arrays: ``obs``,
    ``mask``, ``q``, ``heuristic``, and per state ``n`` (table size) and ``play`` (index into
    :data:`PLAY_POLICIES`)."""
    return {"obs": np.concatenate([c["obs"] for c in chunks]),
            "mask": np.concatenate([c["mask"] for c in chunks]),
            "q": np.concatenate([c["q"] for c in chunks]),
            "heuristic": np.concatenate([c["heuristic"] for c in chunks]),
            "n": np.concatenate([np.full(len(c["q"]), c["n"]) for c in chunks]),
            "play": np.concatenate([np.full(len(c["q"]), PLAY_POLICIES.index(c["play"]))
                                    for c in chunks])}


def save_data(path: Path, chunks: Sequence[Batch], seconds: float,
              cfg: TributeFitConfig) -> None:
    """The gathered states and values (``data.npz``), to refit without gathering again."""
    data = concat_chunks(chunks)
    arrays: dict[str, npt.NDArray[Any]] = {
        "obs": data["obs"], "mask": data["mask"], "q": data["q"],
        "heuristic": data["heuristic"], "n": data["n"], "play": data["play"]}
    arrays["chunk_sizes"] = np.array([len(c["q"]) for c in chunks])
    arrays["meta"] = np.frombuffer(json.dumps({"seconds": seconds, "config": jsonable(cfg),
                                               "command": cfg.command,
                                               "policy_sha256": file_digest(cfg.policy)})
                                   .encode(), np.uint8)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        # numpy's stub also matches **kwds against its allow_pickle: bool
        np.savez_compressed(f, **arrays)  # type: ignore[arg-type]


def load_data(path: str | Path) -> tuple[list[Batch], dict[str, Any]]:
    """Read :func:`save_data`'s file back as batches; a ``ValueError`` naming a bad file."""
    import zipfile

    p = Path(path)
    try:
        with np.load(p, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
        meta: dict[str, Any] = json.loads(bytes(d.pop("meta")).decode())  # save_data's
        sizes = d.pop("chunk_sizes")
        ends = np.cumsum(sizes)
        if ends[-1] != len(d["q"]) or d["q"].shape != d["mask"].shape != (ends[-1], NUM_ACTIONS):
            raise ValueError("arrays of different lengths")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"tribute-fit data {p} is not readable: {exc}") from None
    chunks: list[Batch] = []
    for lo, hi in zip(np.r_[0, ends[:-1]], ends, strict=True):
        chunks.append({"obs": d["obs"][lo:hi], "mask": d["mask"][lo:hi], "q": d["q"][lo:hi],
                       "heuristic": d["heuristic"][lo:hi], "n": int(d["n"][lo]),
                       "play": PLAY_POLICIES[int(d["play"][lo])]})
    return chunks, meta


def file_digest(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex): how data files name the policy they came from."""
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


#: Settings that do not change what a batch holds, nor the order of the batches.
NOT_IN_STATES = ("out", "overwrite", "workers", "progress")
#: The folder of a fit's output that holds its batches as each is gathered (``batch_*.npz``,
#: :func:`save_batch`) and its settings (``settings.json``), until ``data.npz`` holds them all.
GATHER = "gather"


def save_batch(folder: Path, k: int, batch: Batch, seconds: float,
               cfg: TributeFitConfig) -> Path:
    """Batch ``k`` of a gather as its own file (:func:`save_data`'s form, written whole or
    not at all), with the gathering ``seconds`` spent when it finished."""
    path = folder / f"batch_{k:05d}.npz"
    save_data(path, [batch], seconds, cfg)
    return path


def load_batches(folder: Path, cfg: TributeFitConfig) -> tuple[list[Batch], float]:
    """The batches a stopped gather saved in ``folder`` (:func:`save_batch`), in order, and
    the gathering seconds they took; a ``ValueError`` naming a damaged or missing batch, or
    one gathered with other settings or another policy."""
    files = sorted(folder.glob("batch_*.npz"))
    chunks: list[Batch] = []
    seconds = 0.0
    def same(config: dict[str, Any]) -> dict[str, Any]:  # what the states depend on, as JSON
        kept: dict[str, Any] = json.loads(json.dumps({k: v for k, v in config.items()
                                                      if k not in NOT_IN_STATES}))
        return kept

    want = same(jsonable(cfg))
    digest = file_digest(cfg.policy)
    for k, path in enumerate(files):
        if path.name != f"batch_{k:05d}.npz":
            raise ValueError(f"{folder} lacks batch_{k:05d}.npz (it has {path.name}): the "
                             "saved batches are not a gather's first ones")
        batch, meta = load_data(path)
        if same(meta.get("config", {})) != want or meta.get("policy_sha256") != digest:
            raise ValueError(f"{path} was gathered with other settings or another policy than "
                             f"the fit in {folder.parent} (settings.json)")
        chunks += batch
        seconds = float(meta["seconds"])
    return chunks, seconds
