"""Self-play checkpoints as files: what one holds, its digest, and reading one safely.

A checkpoint (``checkpoints/latest.pt`` of a :mod:`.selfplay` run) holds torch tensors and
plain data only (:func:`plain_state`), with a ``digest`` of its contents (:func:`state_digest`),
so that :func:`load_checkpoint` reads it with ``torch.load(weights_only=True)``: loading one runs
no code, and a damaged or altered one is refused by name. A checkpoint of the old format
(pickled objects) is read only when trusted (``--trust-checkpoint``, :data:`TRUST_HELP`).
What the checkpoint's settings and network are is :mod:`.selfplay`'s.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

CHECKPOINT_FORMAT = "dragons-egg-selfplay"
#: Version 2: tensors and plain data only (read with ``torch.load(weights_only=True)``) and a
#: ``digest``; a checkpoint without ``version`` is of the old format (pickled objects).
CHECKPOINT_VERSION = 2
#: What a checkpoint holds, and the type of each.
CHECKPOINT_FIELDS: dict[str, Any] = {
    "config": dict, "model": dict, "optimizer": dict, "samples": int, "updates": int,
    "seconds": (int, float), "eval_seconds": (int, float), "history": list, "league": list,
    "marks": dict}


def plain_state(value: Any, where: str = "checkpoint") -> Any:
    """``value`` as a checkpoint holds it: torch tensors, and plain data (dicts with string or
    integer keys, lists, strings, numbers, booleans, ``None``) that ``torch.load(...,
    weights_only=True)`` reads without unpickling any object. Tuples become lists, numpy
    numbers Python numbers; anything else is a ``TypeError`` naming where it is."""
    import torch
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.generic):  # before float: numpy's float64 is a float
        return plain_state(value.item(), where)
    if value is None or type(value) in (bool, int, float, str):
        return value
    for base in (bool, int, float, str):  # an enum or another subclass: its plain value
        if isinstance(value, base):
            return base(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str | int) or isinstance(k, bool):
                raise TypeError(f"{where} has a key {k!r}, which is neither a string nor an int")
            out[k] = plain_state(v, f"{where}[{k!r}]")
        return out
    if isinstance(value, list | tuple):
        return [plain_state(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise TypeError(f"{where} holds a {type(value).__name__}, which a checkpoint cannot hold "
                    "(tensors and plain data only)")


def state_digest(state: dict[str, Any]) -> str:
    """``"sha256:<hex>"`` of a checkpoint's contents but its ``digest``: every tensor (dtype,
    shape, bytes) and every plain value (as JSON), dicts in key order: what a checkpoint
    records in ``digest`` and what loading checks."""
    import hashlib

    import torch

    h = hashlib.sha256()

    def feed(v: Any) -> None:
        if isinstance(v, torch.Tensor):
            t = v.detach().cpu().contiguous()
            h.update(f"T{t.dtype}{tuple(t.shape)}:".encode())
            if t.numel():  # an empty tensor has nothing to hash (and no byte view)
                h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
        elif isinstance(v, dict):
            h.update(b"{")
            for k in sorted(v, key=lambda k: (type(k).__name__, str(k))):
                feed(k)
                feed(v[k])
            h.update(b"}")
        elif isinstance(v, list | tuple):
            h.update(b"[")
            for x in v:
                feed(x)
            h.update(b"]")
        else:
            h.update(f"{json.dumps(v)};".encode())

    feed({k: v for k, v in state.items() if k != "digest"})
    return f"sha256:{h.hexdigest()}"


def save_state(state: dict[str, Any], path: Path) -> Path:
    """``state`` written to ``path`` with ``torch.save``, whole: through a temporary file of
    this process's own (:func:`~dragons_egg.experiments.common.files.atomic_path`), named
    ``latest.pt.tmp`` for ``latest.pt``, since torch names the archive's root folder after
    the file it writes, and load errors quote that name (``latest.pt/data/0``).

    Torch's writer says only that a write failed (a ``RuntimeError``: ``unexpected pos``),
    not why; then the same checkpoint is written once more in Python, whose ``OSError`` says
    why (a full disk: ``ENOSPC``) and is raised instead. Torch's error is raised when that
    write succeeds. Either way ``path`` keeps the checkpoint it held."""
    import io

    import torch

    from dragons_egg.experiments.common.files import atomic_path, write_whole

    with atomic_path(path) as tmp:
        try:
            torch.save(state, tmp)
        except RuntimeError:
            buffer = io.BytesIO()
            torch.save(state, buffer)
            with open(tmp, "wb", buffering=0) as f:
                write_whole(f, buffer.getbuffer())
            raise
    return path


#: What ``--trust-checkpoint`` does (the flag of ``--resume`` and of ``ship``).
TRUST_HELP = ("load a checkpoint written before checkpoints held only tensors and plain data: "
              "reading one unpickles Python objects, which runs any code stored in the file, "
              "so give it only for a checkpoint from a source you trust (a warning names it)")
_WARNED: set[str] = set()


def _warn_once(path: Path, message: str) -> None:
    key = f"{path.resolve()}:{message}"
    if key not in _WARNED:
        _WARNED.add(key)
        print(f"warning: {message}", file=sys.stderr)


#: A checkpoint's members may declare, uncompressed, at most this many times the file's size
#: plus :data:`SIZE_SLACK` bytes: torch stores a checkpoint's tensors uncompressed, so its
#: members add up to about the file's size, while a crafted member (a 2.1 MB file inflating to
#: 2 GB) would cost gigabytes and seconds before any check could refuse it.
SIZE_RATIO = 4
SIZE_SLACK = 1 << 20


def _check_sizes(path: Path, infos: list[Any]) -> None:
    """The uncompressed sizes a checkpoint's zip declares, read from its directory before
    anything is decompressed, within :data:`SIZE_RATIO` of the file's size."""
    size = path.stat().st_size
    declared = sum(int(i.file_size) for i in infos)
    cap = SIZE_RATIO * size + SIZE_SLACK
    if declared > cap:
        big = max(infos, key=lambda i: i.file_size)
        raise ValueError(f"checkpoint {path} is refused: its members declare {declared:,} "
                         f"bytes uncompressed, more than {SIZE_RATIO}x its {size:,} bytes "
                         f"(a checkpoint stores its tensors uncompressed; the largest member, "
                         f"{big.filename}, declares {big.file_size:,} bytes from "
                         f"{big.compress_size:,})")


def _check_crc(path: Path) -> None:
    """Every member of a checkpoint's zip must declare a size in proportion to the file
    (:func:`_check_sizes`, before anything is decompressed) and match its CRC-32 (torch does
    not check them when it reads one): a damaged file is a ``ValueError`` naming the member."""
    import zipfile

    if not zipfile.is_zipfile(path):
        return  # torch says what is wrong with it
    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise ValueError(f"checkpoint {path} could not be read: {exc}") from None
    with z:
        _check_sizes(path, z.infolist())
        try:
            bad = z.testzip()
        except (OSError, zipfile.BadZipFile, EOFError, ValueError) as exc:
            raise ValueError(f"checkpoint {path} could not be read: {exc}") from None
    if bad is not None:
        raise ValueError(f"checkpoint {path} is damaged: its member {bad} fails its CRC-32 "
                         "check")


def load_checkpoint(path: str | Path, trust: bool = False) -> dict[str, Any]:
    """Read a self-play checkpoint (``checkpoints/latest.pt``); a ``ValueError`` naming the
    file when it is missing, unreadable, damaged or not one.

    It is read with ``torch.load(weights_only=True)``: tensors and plain data, nothing
    unpickled that could run code. A checkpoint of the old format (written before, with
    pickled objects) needs ``trust`` (``--trust-checkpoint``) and is then read with
    ``weights_only=False``, with a warning naming it. Before torch reads the file, the CRC-32 of
    every member of its zip is checked; after, the digest the checkpoint records
    (:func:`state_digest`; an old checkpoint has none, and a warning says its contents are
    unchecked), and the network's weights must be finite."""
    import pickle
    import zipfile

    import torch

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint {path} does not exist")
    _check_crc(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if not zipfile.is_zipfile(path):
            raise ValueError(f"checkpoint {path} could not be read: "
                             f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from None
        if not trust:
            raise ValueError(f"checkpoint {path} is in the old format, whose loading unpickles "
                             "Python objects and so runs any code stored in the file; if you "
                             "trust where it came from, load it with --trust-checkpoint (the "
                             "next checkpoint is saved in the new format)") from None
        _warn_once(path, f"loading checkpoint {path} with --trust-checkpoint: it is in the old "
                         "format, and loading it runs any code stored in it")
        try:
            state = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as exc:  # noqa: BLE001 - torch raises many kinds on a bad file
            raise ValueError(f"checkpoint {path} could not be read: "
                             f"{type(exc).__name__}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds on a bad file
        raise ValueError(f"checkpoint {path} could not be read: "
                         f"{type(exc).__name__}: {exc}") from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a self-play checkpoint")
    digest = state.get("digest")
    if digest is None:
        _warn_once(path, f"checkpoint {path} records no digest (written before checkpoints "
                         "did): its contents are not checked")
    else:
        try:
            actual = state_digest(state)
        except (TypeError, ValueError) as exc:  # a value JSON cannot hold
            raise ValueError(f"{path} is not a self-play checkpoint: {exc}") from None
        if digest != actual:
            raise ValueError(f"checkpoint {path} is damaged or was altered: its contents do "
                             f"not match the digest it records ({str(digest)[:19]}...)")
    for key, kind in CHECKPOINT_FIELDS.items():
        if not isinstance(state.get(key), kind):
            want = " or ".join(t.__name__ for t in (kind if isinstance(kind, tuple) else (kind,)))
            raise ValueError(f"{path} is not a self-play checkpoint: its {key!r} is "
                             f"{type(state.get(key)).__name__}, not {want}")
    model = state["model"]
    for name, t in model.items():
        if isinstance(t, torch.Tensor) and t.is_floating_point() and \
                not bool(torch.isfinite(t).all()):
            raise ValueError(f"checkpoint {path}: its weight {name} holds values that are not "
                             "finite (NaN or infinity)")
    return state
