"""A policy network saved as plain arrays, played with numpy: the checkpoint format of the
batched self-play trainer (``dragons_egg.experiments.training.selfplay``).

A checkpoint is one ``.npz`` file: the weights of a multilayer perceptron (``w0``, ``b0``,
``w1``, ``b1``, ... for the shared layers, ``pi_w``/``pi_b`` for the action logits and
``v_w``/``v_b`` for the value), optionally ``pi_counts`` and ``pi_gate``, the weights of
the extra logit terms the file's heads name (:mod:`dragons_egg.agents.heads`: ``counts``,
``tribute``, ``tribute_by_size`` add ``features(obs) @ pi_counts``; ``gate`` scales the
network's own logits per table size), optionally ``size_emb`` (head ``size_embedding``: per
table size, a vector added to the first layer's pre-activation), and ``meta``, a JSON object
with ``format`` (``"dragons-egg-policy"``), ``version`` (5), ``heads`` (the list of head
names, empty for a plain network), ``max_players`` (the observation padding it was trained
with), ``obs_size``, ``num_actions``, ``hidden`` and ``activation``, and whatever provenance the
trainer records, among it ``rules``: the rule flags it was trained under
(:meth:`dragons_egg_env.config.RulesConfig.to_dict` without ``num_players``; a file without it,
as every file written before it was recorded, was trained under the default rules:
:attr:`NetPolicy.rules`). Files of versions 1 to 4, written before heads were named, carry no
``heads``: their version says which (:data:`dragons_egg.agents.heads.VERSION_HEADS`), and they
load as before. Loading needs numpy only (no torch); playing one observation costs a few tens of
microseconds.

A policy file holds numbers only, so it is safe to take from others: it is read with
``allow_pickle=False`` (no Python object is ever unpickled), only the members above are accepted,
and every member's ``.npy`` header (shape and dtype) is checked before any array is read: against
the others (the layer sizes must chain from ``layout(max_players).size`` observations to
``NUM_ACTIONS`` logits), against the member's size in the zip, and against
:data:`MAX_POLICY_BYTES`, so an oversized or mismatched member is refused, not allocated. Files
written after 0.3.0 record ``digest`` in ``meta``: the sha256 of the arrays and of the rest of
``meta`` (:func:`policy_digest`), checked on load, so a damaged or altered array is refused;
files written before have none and load unchecked (the zip's CRC-32 of each member is still
checked). Weights that are not finite (NaN, infinity) are refused, when a file is written and
when it is read. A ``rules`` record that is not an object of known rule flags with allowed
values (:func:`check_policy_rules`) is refused too. Every refusal is a :class:`PolicyFileError`
naming the file.

The agent ``ppo`` (:class:`dragons_egg.agents.ppo.PPOAgent`) plays such a file at any table size
up to its ``max_players``; ``net`` (:class:`NetAgent`) is its alias for policy files.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import secrets
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from dragons_egg_env.actions import ASK_BASE, NUM_ACTIONS
from dragons_egg_env.config import TABLE_SIZES, ConfigError, RulesConfig
from dragons_egg_env.observation import (
    MaskArray,
    ObsArray,
    layout,
    players_for_size,
)

from .heads import (
    GATE,
    GATED,
    HEADS,
    SIZE_EMBEDDING,
    VERSION_HEADS,
    FloatArray,
    additive_head,
    check_heads,
    size_index,
)

POLICY_FORMAT = "dragons-egg-policy"
#: The version written: 5, the first whose ``meta`` names its ``heads``.
POLICY_VERSION = 5
#: Versions this library reads (1 to 4: heads from the version, ``VERSION_HEADS``).
READ_VERSIONS = (1, 2, 3, 4, 5)
ACTIVATIONS = ("tanh", "relu")
#: The most bytes the arrays of a policy file may hold in all (declared by their ``.npy``
#: headers, checked before any is read): 64 times the shipped policy's ~1.7 MB, far beyond any
#: network these trainers make, and far below what a crafted file could ask for.
MAX_POLICY_BYTES = 256 * 2**20
#: The most bytes of the ``meta`` record (JSON: the settings and provenance of the run).
MAX_META_BYTES = 16 * 2**20
#: The arrays a policy file may hold (``meta`` and the weights; see the module docstring).
MEMBER_NAMES = re.compile(r"(meta|[wb]\d+|pi_w|pi_b|v_w|v_b|pi_counts|pi_gate|size_emb)\.npy")

#: The ``meta`` key of the rules a policy was trained under (rule flags without
#: ``num_players``: a policy plays every table up to its ``max_players``).
RULES_KEY = "rules"
#: The rule flags a policy's ``rules`` record may hold: every field of
#: :class:`~dragons_egg_env.config.RulesConfig` but ``num_players``.
RULE_FLAGS = tuple(name for name in RulesConfig.field_names() if name != "num_players")


class PolicyFileError(ValueError):
    """A policy file that is missing, not a policy, or corrupt (the message names it)."""


def check_policy_rules(rules: object) -> dict[str, Any]:
    """The rule flags of a policy's ``meta["rules"]`` record, every one of :data:`RULE_FLAGS`
    (a flag the record does not name has its default; ``None``, no record, is the default
    rules, under which every policy file written before the record was trained). A
    ``ValueError`` naming the problem when the record is not a JSON object, names
    ``num_players`` or an unknown flag, or gives a flag a value it does not allow (R1..R34
    flags as :class:`~dragons_egg_env.config.RulesConfig` checks them)."""
    if rules is None:
        rules = {}
    if not isinstance(rules, dict):
        raise ValueError(f"its rules record is {type(rules).__name__} {_short(rules)}, not an "
                         "object of rule flags")
    if "num_players" in rules:
        raise ValueError("its rules record names num_players; a policy's rules hold the rule "
                         "flags only (it plays every table up to its max_players)")
    unknown = sorted(str(k) for k in rules if k not in RULE_FLAGS)
    if unknown:
        raise ValueError(f"its rules record names the unknown rule flag {unknown[0]!r}; known: "
                         f"{', '.join(RULE_FLAGS)}")
    try:
        config = RulesConfig.from_kwargs(rules)
    except ConfigError as exc:
        raise ValueError(f"its rules record is bad: {exc}") from None
    full = config.to_dict()
    return {name: full[name] for name in RULE_FLAGS}


def _short(x: object, limit: int = 60) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class NetPolicy:
    """The arrays of a policy network and a numpy forward pass (see the module docstring)."""

    def __init__(self, layers: list[tuple[FloatArray, FloatArray]],
                 pi: tuple[FloatArray, FloatArray], v: tuple[FloatArray, FloatArray],
                 meta: dict[str, Any], pi_counts: FloatArray | None = None,
                 pi_gate: FloatArray | None = None, heads: Sequence[str] = (),
                 size_emb: FloatArray | None = None) -> None:
        self.layers = layers
        self.pi = pi
        self.v = v
        #: The names of its extra logit terms (:data:`dragons_egg.agents.heads.HEADS` and
        #: ``gate``); a ValueError when they do not fit ``pi_counts`` and ``pi_gate``.
        self.heads = check_heads(list(heads))
        #: ``(head.rows, NUM_ACTIONS)``: logits += ``head.features(obs) @ pi_counts`` for its
        #: additive head (``counts``, ``tribute`` or ``tribute_by_size``), or None.
        self.pi_counts = pi_counts
        #: ``(len(TABLE_SIZES), NUM_ACTIONS)``: per table size, the weight on the network's
        #: own logit of each action (head ``gate``), or None (every weight 1).
        self.pi_gate = pi_gate
        #: ``(len(TABLE_SIZES), hidden[0])``: per table size, the vector added to the first
        #: layer's pre-activation (head ``size_embedding``), or None.
        self.size_emb = size_emb
        self._head = additive_head(self.heads)
        _check_head_arrays(self.heads, pi_counts, pi_gate)
        if (size_emb is not None) != (SIZE_EMBEDDING in self.heads):
            raise ValueError(f"size_emb is there exactly when the heads name "
                             f"{SIZE_EMBEDDING!r} (heads: {list(self.heads)})")
        if size_emb is not None and size_emb.shape != (len(TABLE_SIZES), layers[0][0].shape[1]):
            raise ValueError(f"size_emb has shape {size_emb.shape}, not (table sizes, first "
                             f"layer) = {(len(TABLE_SIZES), layers[0][0].shape[1])}")
        #: ``pi_counts`` adds nothing to the play actions (the tribute heads' fits leave those
        #: columns at 0): its term is skipped where no tribute action is legal, exactly.
        self._tribute_only = pi_counts is not None and not pi_counts[:, :ASK_BASE].any()
        self.meta = meta
        #: The rule flags it was trained under (``meta["rules"]``, :func:`check_policy_rules`:
        #: every flag of :data:`RULE_FLAGS`, the defaults where the file records none).
        self.rules: dict[str, Any] = check_policy_rules(meta.get(RULES_KEY))
        self.max_players = int(meta["max_players"])
        #: Length of the observations it takes (``layout(max_players).size``).
        self.obs_size = layout(self.max_players).size
        self.activation = meta.get("activation", "tanh")

    def rule_differences(self, config: RulesConfig) -> list[tuple[str, Any, Any]]:
        """``(flag, policy value, game value)`` for every rule flag of :data:`RULE_FLAGS` on
        which ``config``, the rules of a game, differs from :attr:`rules`, the ones the policy
        was trained under (empty when it plays its own rules; the table size is not a rule
        flag here: a policy plays every table up to :attr:`max_players`)."""
        game = config.to_dict()
        return [(name, mine, game[name]) for name, mine in self.rules.items()
                if game[name] != mine]

    def _trunk(self, x: FloatArray) -> FloatArray:
        relu: bool = self.activation != "tanh"
        emb = None if self.size_emb is None else \
            self.size_emb[size_index(x, self.max_players)]
        for w, b in self.layers:
            z: FloatArray = x @ w + b
            if emb is not None:
                z, emb = z + emb, None
            x = np.maximum(z, np.float32(0.0)) if relu else np.tanh(z)
        return x

    def _checked(self, obs: ObsArray) -> FloatArray:
        """``obs`` as float32, with a clear error when its length is not this policy's."""
        x = np.asarray(obs, dtype=np.float32)
        if x.shape[-1:] != (self.obs_size,):
            raise ValueError(self._size_message(x.shape))
        return x

    def _size_message(self, shape: tuple[int, ...]) -> str:
        m = self.max_players
        mine = f"this policy plays up to {m} seats (max_players={m}, {self.obs_size} values)"
        size = shape[-1] if shape else 0
        seats = players_for_size(size)
        if seats is None:
            return (f"{mine}; the observation has shape {shape}, which is no Dragon's Egg "
                    f"observation")
        theirs = f"the observation is a {seats}-seat one (max_players={seats}, {size} values)"
        if seats < m:
            return (f"{mine}, but {theirs}: pad it first, dragons_egg_env.observation."
                    f"pad(obs, {seats}, {m})")
        return f"{mine}, but {theirs}: the policy cannot play a table of that size"

    def logits(self, obs: ObsArray, mask: MaskArray) -> FloatArray:
        """Masked action logits ``(..., NUM_ACTIONS)`` (illegal actions at ``-inf``).

        ``obs`` must be padded to the policy's :attr:`max_players`
        (:func:`dragons_egg_env.observation.pad`); another length is a ``ValueError`` that
        names both seat counts."""
        x = self._checked(obs)
        return self._masked_logits(x, self._trunk(x), mask)

    def _masked_logits(self, x: FloatArray, h: FloatArray, mask: MaskArray) -> FloatArray:
        """The policy head on the trunk's output ``h`` of the (checked) observations ``x``:
        the network's logits, gated and with the additive head's term as the file's heads
        say, masked."""
        z: FloatArray = h @ self.pi[0] + self.pi[1]
        if self.pi_gate is not None:
            z = z * self.pi_gate[size_index(x, self.max_players)]
        if self.pi_counts is not None and (
                not self._tribute_only or np.asarray(mask)[..., ASK_BASE:].any()):
            z = z + self.count_term(x)
        return np.where(np.asarray(mask, dtype=bool), z, np.float32(-np.inf))

    def count_term(self, obs: ObsArray) -> FloatArray:
        """``pi_counts``' part of the logits: its head's features times ``pi_counts``."""
        counts, head = self.pi_counts, self._head
        if counts is None or head is None:
            raise ValueError("this policy has no pi_counts (no additive head)")
        out: FloatArray = head.features(obs, self.max_players) @ counts
        return out

    def value(self, obs: ObsArray) -> FloatArray:
        """The value estimate of each observation."""
        return self._value(self._trunk(self._checked(obs)))

    def _value(self, h: FloatArray) -> FloatArray:
        """The value head on the trunk's output ``h``."""
        out: FloatArray = h @ self.v[0] + self.v[1]
        return out[..., 0]

    def logits_and_value(self, obs: ObsArray, mask: MaskArray, row: int | None = None
                         ) -> tuple[FloatArray, FloatArray]:
        """``(logits(obs, mask), value(obs))`` with the shared layers computed once: what a
        search that needs both calls (``ismcts-net``). With ``row``, ``obs`` is a batch and the
        logits are those of ``obs[row]`` alone (``mask`` its mask), the values every row's."""
        x = self._checked(obs)
        h = self._trunk(x)
        if row is None:
            return self._masked_logits(x, h, mask), self._value(h)
        return self._masked_logits(x[row], h[row], mask), self._value(h)

    def save(self, path: str | Path) -> Path:
        """Write the policy to ``path`` (a compressed ``.npz``), atomically (a temporary file,
        renamed)."""
        path = Path(path)
        arrays: dict[str, npt.NDArray[Any]] = {}
        for i, (w, b) in enumerate(self.layers):
            arrays[f"w{i}"], arrays[f"b{i}"] = w, b
        arrays["pi_w"], arrays["pi_b"] = self.pi
        arrays["v_w"], arrays["v_b"] = self.v
        if self.pi_counts is not None:
            arrays["pi_counts"] = self.pi_counts
        if self.pi_gate is not None:
            arrays["pi_gate"] = self.pi_gate
        if self.size_emb is not None:
            arrays["size_emb"] = self.size_emb
        for name, a in arrays.items():
            if not np.isfinite(a).all():
                raise ValueError(f"refusing to write policy file {path}: its array {name} "
                                 "holds values that are not finite (NaN or infinity)")
        meta = {k: v for k, v in self.meta.items() if k != "digest"}
        # as the file will hold it (JSON: tuples as lists), so that the digest reads back
        meta = json.loads(json.dumps({**meta, "format": POLICY_FORMAT,
                                      "version": POLICY_VERSION, "heads": list(self.heads)}))
        meta["digest"] = policy_digest(arrays, meta)
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        # a temporary file of this call's own, on the disk before it takes the name: two
        # writers never share one, and readers see the old file or the new one
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(6)}.tmp")
        try:
            with open(tmp, "xb") as f:
                # (numpy's stub would also let **arrays fill allow_pickle; the keys are names)
                np.savez_compressed(f, **arrays)  # type: ignore[arg-type]
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return path


def _check_head_arrays(heads: tuple[str, ...], pi_counts: FloatArray | None,
                       pi_gate: FloatArray | None) -> None:
    """``pi_counts`` and ``pi_gate`` are there exactly when ``heads`` name them, with the
    shapes the heads need (a ValueError otherwise)."""
    head = additive_head(heads)
    if (pi_counts is None) != (head is None):
        raise ValueError(f"pi_counts needs an additive head naming its features (heads: "
                         f"{', '.join(HEADS)})" if head is None else
                         f"the head {head.name!r} needs a pi_counts array")
    if head is not None and pi_counts is not None and \
            pi_counts.shape != (head.rows, NUM_ACTIONS):
        raise ValueError(f"pi_counts has shape {pi_counts.shape}; the head {head.name!r} "
                         f"needs ({head.rows}, {NUM_ACTIONS})")
    if (pi_gate is None) != (GATE not in heads):
        raise ValueError(f"pi_gate needs the head {GATE!r} (with {GATED!r})" if GATE not in
                         heads else f"the head {GATE!r} needs a pi_gate array")
    if pi_gate is not None and pi_gate.shape != (len(TABLE_SIZES), NUM_ACTIONS):
        raise ValueError(f"pi_gate has shape {pi_gate.shape}; a policy file holds "
                         f"({len(TABLE_SIZES)}, {NUM_ACTIONS})")


def policy_digest(arrays: Mapping[str, npt.NDArray[Any]], meta: Mapping[str, Any]) -> str:
    """``"sha256:<hex>"`` of a policy's weight arrays (each by name, dtype, shape and bytes, in
    name order) and of its ``meta`` record without ``digest`` (canonical JSON): what a policy
    file records in ``meta["digest"]`` and what loading checks."""
    h = hashlib.sha256()
    rest = {k: v for k, v in meta.items() if k != "digest"}
    h.update(json.dumps(rest, sort_keys=True).encode())
    for name in sorted(arrays):
        if name == "meta":
            continue
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return f"sha256:{h.hexdigest()}"


#: What a ``.npy`` header declares: the shape and the dtype.
Header = tuple[tuple[int, ...], np.dtype[Any]]


def _read_header(p: Path, name: str, f: IO[bytes]) -> Header:
    """The shape and dtype a member's ``.npy`` header declares (``f`` is left at the data)."""
    fmt = np.lib.format
    version = fmt.read_magic(f)
    if version == (1, 0):
        shape, _, dtype = fmt.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, _, dtype = fmt.read_array_header_2_0(f)
    else:
        raise PolicyFileError(f"policy file {p}: member {name} has .npy format version "
                              f"{version}, which policy files do not use")
    if dtype.hasobject or dtype.kind not in "fiub":
        what = "Python objects (pickled)" if dtype.hasobject else f"dtype {dtype}"
        raise PolicyFileError(f"policy file {p}: member {name} holds {what}; a policy file "
                              "holds numbers only")
    return tuple(int(n) for n in shape), dtype


def _headers(p: Path, z: zipfile.ZipFile) -> dict[str, Header]:
    """Every member's declared shape and dtype, by array name, read from the headers alone;
    a member that is not a policy array, or whose size in the zip is not what its header
    declares, is a :class:`PolicyFileError`."""
    out: dict[str, Header] = {}
    for info in z.infolist():
        if not MEMBER_NAMES.fullmatch(info.filename):
            what = ("a Stable-Baselines3 checkpoint's 'data' entry" if info.filename == "data"
                    else "no array of a policy file")
            raise PolicyFileError(f"policy file {p} holds {info.filename!r}, {what}: it is "
                                  "not a Dragon's Egg policy file")
        name = info.filename[:-len(".npy")]
        with z.open(info) as f:
            shape, dtype = _read_header(p, name, f)
            data_start = f.tell()
        declared = math.prod(shape) * dtype.itemsize
        if data_start + declared != info.file_size:
            raise PolicyFileError(f"policy file {p}: member {name} declares an array of shape "
                                  f"{shape} ({dtype}, {declared:,} bytes) but holds "
                                  f"{info.file_size - data_start:,} bytes")
        out[name] = shape, dtype
    return out


def _read_member(p: Path, z: zipfile.ZipFile, name: str) -> npt.NDArray[Any]:
    """One member's array (never unpickled); the zip checks its CRC-32 on the way."""
    with z.open(name + ".npy") as f:
        a = np.lib.format.read_array(f, allow_pickle=False)
        if f.read(1):  # pragma: no cover - _headers checked the size
            raise PolicyFileError(f"policy file {p}: member {name} is longer than its array")
    return a


def _check_declared(p: Path, headers: Mapping[str, Header], meta: Mapping[str, Any]) -> None:
    """Check the declared shapes and sizes of the weights before any is read: the layers
    must chain from the observation size of ``meta``'s ``max_players`` to the actions, and
    all arrays together may hold at most :data:`MAX_POLICY_BYTES`."""
    total = sum(math.prod(s) * d.itemsize for k, (s, d) in headers.items() if k != "meta")
    if total > MAX_POLICY_BYTES:
        big = max((k for k in headers if k != "meta"),
                  key=lambda k: math.prod(headers[k][0]) * headers[k][1].itemsize)
        raise PolicyFileError(f"policy file {p}: its arrays would take {total / 2**20:,.0f} "
                              f"MiB (the largest, {big}, has shape {headers[big][0]}); a policy "
                              f"file holds at most {MAX_POLICY_BYTES // 2**20} MiB")
    shapes = {k: s for k, (s, _) in headers.items()}
    _check_shapes(p, shapes, meta)


def _check_shapes(p: Path, shapes: Mapping[str, tuple[int, ...]],
                  meta: Mapping[str, Any]) -> None:
    """The weights' shapes fit observations of ``meta``'s ``max_players`` and the actions
    (a :class:`PolicyFileError` naming the file otherwise)."""
    try:
        m = int(meta["max_players"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PolicyFileError(f"policy file {p} is incomplete: max_players: {exc}") from None
    depth = sum(1 for k in shapes if k.startswith("w"))
    names = [f"{x}{i}" for i in range(depth) for x in "wb"] + ["pi_w", "pi_b", "v_w", "v_b"]
    missing = [k for k in names if k not in shapes]
    if missing:
        raise PolicyFileError(f"policy file {p} is incomplete: no {', '.join(missing)}")
    if m not in TABLE_SIZES or not depth:
        raise PolicyFileError(f"policy file {p}: bad max_players {m} or no layers")
    size = layout(m).size
    prev = size
    ok = True
    for i in range(depth):
        w, b = shapes[f"w{i}"], shapes[f"b{i}"]
        ok &= len(w) == 2 and w[0] == prev and b == w[1:]
        prev = w[1] if len(w) == 2 else -1
    ok &= shapes["pi_w"] == (prev, NUM_ACTIONS) and shapes["pi_b"] == (NUM_ACTIONS,)
    ok &= shapes["v_w"] == (prev, 1) and shapes["v_b"] == (1,)
    heads = file_heads(p, meta, shapes)
    head = additive_head(heads)
    for name, named in (("pi_counts", head is not None), ("pi_gate", GATE in heads),
                        ("size_emb", SIZE_EMBEDDING in heads)):
        if named and name not in shapes:
            raise PolicyFileError(f"policy file {p} is incomplete: no {name} (its heads are "
                                  f"{list(heads)})")
        if not named and name in shapes:
            raise PolicyFileError(f"policy file {p} holds '{name}', which its heads "
                                  f"{list(heads)} do not use")
    if head is not None:
        ok &= shapes["pi_counts"] == (head.rows, NUM_ACTIONS)
    if GATE in heads:
        ok &= shapes["pi_gate"] == (len(TABLE_SIZES), NUM_ACTIONS)
    if SIZE_EMBEDDING in heads:
        ok &= shapes["size_emb"] == (len(TABLE_SIZES), shapes["w0"][-1])
    if not ok:
        raise PolicyFileError(f"policy file {p}: weight shapes do not fit observations of "
                              f"{size} values and {NUM_ACTIONS} actions")


def file_heads(p: Path, meta: Mapping[str, Any], members: Mapping[str, object]
               ) -> tuple[str, ...]:
    """The heads of a policy file: ``meta["heads"]`` (version 5; any version that records
    them), or for a file of versions 1 to 4 without them, its version's
    (:data:`dragons_egg.agents.heads.VERSION_HEADS`, when it holds ``pi_counts``; ``gate``
    when a version-4 file holds ``pi_gate``). A :class:`PolicyFileError` when they are bad."""
    version = meta.get("version")
    if "heads" in meta:
        try:
            return check_heads(meta["heads"])
        except ValueError as exc:
            raise PolicyFileError(f"policy file {p}: {exc}") from None
    if version not in VERSION_HEADS:
        raise PolicyFileError(f"policy file {p} (version {version}) does not name its heads")
    heads: tuple[str, ...] = ()
    if "pi_counts" in members:
        if not VERSION_HEADS[version]:
            raise PolicyFileError(f"policy file {p}: version {version} has no 'pi_counts' "
                                  "array")
        heads = VERSION_HEADS[version]
    if "pi_gate" in members:
        if version != 4 or "pi_counts" not in members:
            raise PolicyFileError(f"policy file {p}: only version 4 (with 'pi_counts') has a "
                                  f"'pi_gate' array")
        heads = (*heads, GATE)
    return heads


def load_policy_file(path: str | Path) -> NetPolicy:
    """Read a policy file; anything wrong with it is a :class:`PolicyFileError` naming it.

    Nothing is unpickled; every member's header is checked before any array is read
    (shapes, sizes and dtypes); the digest, where the file records one, and the weights'
    finiteness are checked after (see the module docstring)."""
    p = Path(path)
    if p.is_dir():
        raise PolicyFileError(f"policy path {p} is a directory, not a .npz policy file")
    if not p.is_file():
        raise PolicyFileError(f"policy file {p} does not exist")
    try:
        with zipfile.ZipFile(p) as z:
            headers = _headers(p, z)
            meta = _read_meta(p, z, headers)
            _check_declared(p, headers, meta)
            arrays = {k: _read_member(p, z, k) for k in headers if k != "meta"}
    except PolicyFileError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise PolicyFileError(f"policy file {p} is not a readable .npz file: {exc}") from None
    digest = meta.get("digest")
    if digest is not None and digest != policy_digest(arrays, meta):
        raise PolicyFileError(f"policy file {p} is damaged or was altered: its arrays do not "
                              f"match the digest it records ({str(digest)[:19]}...)")
    for name, a in arrays.items():
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise PolicyFileError(f"policy file {p}: its array {name} holds values that are "
                                  "not finite (NaN or infinity); a policy's weights are finite")
    return _build(p, arrays, meta)


def _read_meta(p: Path, z: zipfile.ZipFile, headers: Mapping[str, Header]) -> dict[str, Any]:
    """The ``meta`` record (checked small and one-dimensional bytes before it is read), with
    its format and version checked."""
    if "meta" not in headers:
        raise PolicyFileError(f"policy file {p} has no valid 'meta' record: no meta.npy")
    shape, dtype = headers["meta"]
    if len(shape) != 1 or dtype != np.uint8 or shape[0] > MAX_META_BYTES:
        raise PolicyFileError(f"policy file {p} has no valid 'meta' record: an array of shape "
                              f"{shape} ({dtype}), not at most {MAX_META_BYTES:,} bytes of JSON")
    from .policy_meta import check_meta, parse_meta

    try:  # pydantic's parser: a nesting past its limit is an error, not a RecursionError
        meta = parse_meta(bytes(_read_member(p, z, "meta")))
    except (ValueError, UnicodeDecodeError) as exc:
        raise PolicyFileError(f"policy file {p} has no valid 'meta' record: "
                              f"{str(exc).splitlines()[0]}") from None
    if not isinstance(meta, dict) or meta.get("format") != POLICY_FORMAT:
        raise PolicyFileError(f"{p} is not a Dragon's Egg policy file")
    if meta.get("version") not in READ_VERSIONS:
        raise PolicyFileError(f"policy file {p} has version {meta.get('version')!r}; this "
                              f"library reads versions {', '.join(map(str, READ_VERSIONS))}")
    try:
        check_policy_rules(meta.get(RULES_KEY))
    except ValueError as exc:
        raise PolicyFileError(f"policy file {p}: {exc}") from None
    try:  # the settings the loader reads, typed and bounded (PolicyMeta)
        check_meta(meta)
    except ValueError as exc:
        raise PolicyFileError(f"policy file {p} has a bad 'meta' record: {exc}") from None
    return meta


def _build(p: Path, arrays: dict[str, npt.NDArray[Any]], meta: dict[str, Any]) -> NetPolicy:
    _check_shapes(p, {k: a.shape for k, a in arrays.items()}, meta)
    if meta.get("activation", "tanh") not in ACTIVATIONS:
        raise PolicyFileError(f"policy file {p}: unknown activation {meta.get('activation')!r}")
    with np.errstate(over="ignore"):  # a float64 past float32's range becomes inf: refused
        f32 = {k: a.astype(np.float32) for k, a in arrays.items()}
    for name, a in f32.items():
        if not np.isfinite(a).all():
            raise PolicyFileError(f"policy file {p}: its array {name} holds values past "
                                  "float32's range (they are inf as the policy plays them)")
    depth = sum(1 for k in f32 if k.startswith("w"))
    layers = [(f32[f"w{i}"], f32[f"b{i}"]) for i in range(depth)]
    policy = NetPolicy(layers, (f32["pi_w"], f32["pi_b"]), (f32["v_w"], f32["v_b"]), meta,
                       f32.get("pi_counts"), f32.get("pi_gate"), file_heads(p, meta, f32),
                       f32.get("size_emb"))
    _probe(p, policy)
    return policy


def _probe(p: Path, policy: NetPolicy) -> None:
    """A :class:`PolicyFileError` when the policy's logits or values are not finite on a
    probe batch of real observations (:func:`probe_batch`): finite weights whose products
    overflow would have it forfeit every match."""
    obs, mask = probe_batch(policy.max_players)
    with np.errstate(over="ignore", invalid="ignore"):
        logits = policy.logits(obs, mask)
        value = policy.value(obs)
    if not np.isfinite(logits[mask.astype(bool)]).all() or not np.isfinite(value).all():
        raise PolicyFileError(f"policy file {p}: its logits or values overflow on a probe "
                              "batch of observations (not finite): it cannot play")


@functools.cache
def probe_batch(max_players: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int8]]:
    """Observations and masks of real decisions, padded to ``max_players`` seats: the first
    moves of a seeded match at every table size up to it (the first legal action played)."""
    from dragons_egg_env.dragons_egg_v0 import raw_env

    obs, masks = [], []
    for n in range(2, max_players + 1):
        env = raw_env(num_players=n, num_rounds=2, max_players=max_players)
        env.reset(seed=n)
        for _ in range(6):
            o = env.observe(env.agent_selection)
            obs.append(o["observation"])
            masks.append(o["action_mask"])
            env.step(int(np.flatnonzero(o["action_mask"])[0]))
    return np.stack(obs).astype(np.float32), np.stack(masks).astype(np.int8)


_CACHE: dict[tuple[str, float], NetPolicy] = {}


def cached_policy(path: str | Path) -> NetPolicy:
    """:func:`load_policy_file`, cached by path and modification time."""
    p = Path(path).resolve()
    key = (str(p), p.stat().st_mtime if p.exists() else 0.0)
    if key not in _CACHE:
        _CACHE[key] = load_policy_file(p)
    return _CACHE[key]
