"""The tribute fit's gathered states and values as arrays and files: batches as one set of
arrays (:func:`concat_chunks`), ``data.npz`` (:func:`save_data`, :func:`load_data`), and the
batches a gather saves as each finishes (``OUT/gather/``: :func:`save_batch`,
:func:`load_batches`), each naming the policy it came from (:func:`file_digest`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg.experiments.common.runs import atomic_path
from dragons_egg_env.actions import NUM_ACTIONS

from .settings import PLAY_POLICIES, TributeFitConfig, jsonable


def concat_chunks(chunks: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The batches of :func:`gather` (or :func:`load_data`) as one set of arrays: ``obs``,
    ``mask``, ``q``, ``heuristic``, and per state ``n`` (table size) and ``play`` (index into
    :data:`PLAY_POLICIES`)."""
    out = {k: np.concatenate([c[k] for c in chunks]) for k in ("obs", "mask", "q", "heuristic")}
    out["n"] = np.concatenate([np.full(len(c["q"]), c["n"]) for c in chunks])
    out["play"] = np.concatenate([np.full(len(c["q"]), PLAY_POLICIES.index(c["play"]))
                                  for c in chunks])
    return out


def save_data(path: Path, chunks: list[dict[str, Any]], seconds: float, cfg) -> None:
    """The gathered states and values (``data.npz``), to refit without gathering again."""
    data = concat_chunks(chunks)
    data["chunk_sizes"] = np.array([len(c["q"]) for c in chunks])
    data["meta"] = np.frombuffer(json.dumps({"seconds": seconds, "config": jsonable(cfg),
                                             "command": cfg.command,
                                             "policy_sha256": file_digest(cfg.policy)})
                                 .encode(), np.uint8)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez_compressed(f, **data)


def load_data(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read :func:`save_data`'s file back as batches; a ``ValueError`` naming a bad file."""
    import zipfile

    p = Path(path)
    try:
        with np.load(p, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
        meta = json.loads(bytes(d.pop("meta")).decode())
        sizes = d.pop("chunk_sizes")
        ends = np.cumsum(sizes)
        if ends[-1] != len(d["q"]) or d["q"].shape != d["mask"].shape != (ends[-1], NUM_ACTIONS):
            raise ValueError("arrays of different lengths")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"tribute-fit data {p} is not readable: {exc}") from None
    chunks = []
    for lo, hi in zip(np.r_[0, ends[:-1]], ends, strict=True):
        c = {k: d[k][lo:hi] for k in ("obs", "mask", "q", "heuristic")}
        c["n"], c["play"] = int(d["n"][lo]), PLAY_POLICIES[int(d["play"][lo])]
        chunks.append(c)
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


def save_batch(folder: Path, k: int, batch: dict[str, Any], seconds: float,
               cfg: TributeFitConfig) -> Path:
    """Batch ``k`` of a gather as its own file (:func:`save_data`'s form, written whole or
    not at all), with the gathering ``seconds`` spent when it finished."""
    path = folder / f"batch_{k:05d}.npz"
    save_data(path, [batch], seconds, cfg)
    return path


def load_batches(folder: Path, cfg: TributeFitConfig) -> tuple[list[dict[str, Any]], float]:
    """The batches a stopped gather saved in ``folder`` (:func:`save_batch`), in order, and
    the gathering seconds they took; a ``ValueError`` naming a damaged or missing batch, or
    one gathered with other settings or another policy."""
    files = sorted(folder.glob("batch_*.npz"))
    chunks, seconds = [], 0.0
    def same(config: dict[str, Any]) -> dict[str, Any]:  # what the states depend on, as JSON
        return json.loads(json.dumps({k: v for k, v in config.items()
                                      if k not in NOT_IN_STATES}))

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
