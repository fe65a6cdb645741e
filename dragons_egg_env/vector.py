"""A batched compiled engine: thousands of matches per call, bit-identical to the rules engine.

:class:`VectorEngine` holds ``B`` matches of one table size and one :class:`RulesConfig` as a
struct of numpy arrays (hands and every other card set as int64 bitmasks; the per-match scalars
as the columns of one int64 matrix with a row per match) and advances all of them with one
call, :meth:`VectorEngine.step`, to numba kernels
(``dragons_egg_env._vector_kernels``, a port of :mod:`dragons_egg_env.engine`). After
:meth:`~VectorEngine.reset` and every step the caller gets, for the seat to act in every match,
the legal-action mask, the observation (exactly ``observation.Encoder(n, max_players,
num_rounds).encode(state, seat)``), the seat, the rewards of the step, the round results and
the finished matches (:class:`VectorStep`). Finished matches restart by themselves.

:func:`random_replays` plays random matches in batch (the random choice made inside the
compiled loop) and returns them as replay dicts that :func:`dragons_egg_env.replay.replay`
plays back exactly. ``docs/vector.md`` describes the API, the autoreset semantics, seeding, the
differential check against the scalar engine and the speed.

Only this module and its kernel module import numba; nothing else in the package imports them.
numba comes with the ``vector`` extra: without it (or without numba's llvmlite), importing
this module (or :mod:`dragons_egg_env.vector_env`) raises
:class:`dragons_egg_env.extras.MissingExtraError` naming that extra, before numba or llvmlite
is imported. This module loads neither PettingZoo nor Gymnasium (it writes replays through
:mod:`dragons_egg_env.replay_format`); the Gymnasium adapter is
:mod:`dragons_egg_env.vector_env`.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import os
import reprlib
from array import array
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from . import engine as E
from .actions import NUM_ACTIONS, describe
from .cards import ALL_CARDS, NUM_CARDS, codes
from .config import MAX_PLAYERS, ConfigError, RulesConfig
from .extras import explain, require_imports
from .observation import Layout, layout
from .replay_format import build_replay

#: What needs the ``vector`` extra, as its error names it.
_NEEDS_VECTOR = "dragons_egg_env.vector (the batched engine)"
# numba and its llvmlite are found (not imported) first: without either, the error names the
# vector extra and its pip command instead of the kernels' first failing import.
require_imports(_NEEDS_VECTOR, "vector")
try:
    from . import _vector_kernels as K
except ModuleNotFoundError as _exc:  # a part of numba or llvmlite missing after all
    raise explain(_exc, _NEEDS_VECTOR, "vector") from None

#: Initial length of a match's action log (it doubles when a match needs more).
INITIAL_LOG = 256
#: Matches played at once by :func:`random_replays`.
REPLAY_BATCH = 1024


class _ConfigColumn(NamedTuple):
    """How one field of :class:`RulesConfig` reaches the kernels."""

    #: The name the kernels read it by: a ``C_*`` column of the config vector ``cfg``, or
    #: ``"prew"``, the array of place rewards (``engine.place_rewards``) passed beside it.
    name: str
    #: The int64 that column holds for a value of the field (``None`` for ``prew``).
    encode: Callable[[Any], int] | None


#: Every field of :class:`RulesConfig`, by name: where it reaches the kernels and how it is
#: encoded. :func:`_kernel_config` builds the config vector from ``dataclasses.fields``
#: through this table alone, and refuses a field that has no entry;
#: ``tests/env/test_vector_config.py`` fails when a field has no entry or when the kernels
#: never read an entry's column (``docs/architecture.md``: a new rule flag).
_CONFIG_COLUMNS: dict[str, _ConfigColumn] = {
    "num_players": _ConfigColumn("C_N", int),
    "num_rounds": _ConfigColumn("C_ROUNDS", int),
    "opening_ten_of_fire_alone": _ConfigColumn("C_ALONE", int),  # R5
    "pass_locks_out": _ConfigColumn("C_LOCKS", int),  # R10
    "completion_out_of_turn": _ConfigColumn("C_OOT", int),  # R12
    # R16: the row of the kernels' DRAGON_ACTIONS table (0: one, 1: any)
    "dragons_per_play": _ConfigColumn("C_ANY", lambda v: int(v == "any")),
    "tribute_asks": _ConfigColumn("C_ASKS", int),  # R31
    # R33: the cards the Dragon may give back (the Egg too, or every card but the Egg)
    "egg_in_tribute": _ConfigColumn("C_GIVE", lambda v: ALL_CARDS if v else E.ASKABLE_MASK),
    "reward_scheme": _ConfigColumn("prew", None),  # R27: the reward of each place
}
#: The columns of the config vector that are the engine's own settings, not rules:
#: ``max_players`` (the observation padding), ``record`` and autoreset (always on, but off
#: while :func:`random_replays` plays matches out).
_ENGINE_COLUMNS = ("C_M", "C_RECORD", "C_AUTO")


def _kernel_config(config: RulesConfig, max_players: int, record: bool
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The kernels' view of a configuration: the config vector ``cfg`` (every field of
    ``config`` through :data:`_CONFIG_COLUMNS`, then the engine's own columns) and ``prew``,
    the reward of each place (R27)."""
    cfg = np.zeros(K.NUM_CFG, dtype=np.int64)
    for f in dataclasses.fields(config):
        entry = _CONFIG_COLUMNS.get(f.name)
        if entry is None:
            raise RuntimeError(f"rule flag {f.name!r} has no entry in dragons_egg_env.vector."
                               f"_CONFIG_COLUMNS: the batched engine would ignore it "
                               f"(docs/architecture.md, 'A new rule flag')")
        if entry.encode is not None:
            cfg[getattr(K, entry.name)] = entry.encode(getattr(config, f.name))
    cfg[K.C_M] = max_players
    cfg[K.C_RECORD] = record
    cfg[K.C_AUTO] = 1
    return cfg, np.array(E.place_rewards(config), dtype=np.float64)


class VectorStep(NamedTuple):
    """What :meth:`VectorEngine.reset` and :meth:`VectorEngine.step` return (``B`` matches,
    ``n`` seats). Everything describes the state *after* the call, except the fields marked
    "of this step", which describe what the step did (all zero/False after ``reset``)."""

    #: ``(B, obs_size)`` float32: the observation of the seat to act in each match.
    obs: npt.NDArray[np.float32]
    #: ``(B, 134)`` bool: its legal actions.
    mask: npt.NDArray[np.bool_]
    #: ``(B,)`` int64: the seat to act.
    seat: npt.NDArray[np.int64]
    #: ``(B, n)`` float64, of this step: each seat's reward (R27; nonzero when a round ended).
    rewards: npt.NDArray[np.float64]
    #: ``(B,)`` bool, of this step: a round ended.
    round_ended: npt.NDArray[np.bool_]
    #: ``(B, n)`` int8, of this step: that round's finishing order, first to last (R25); -1
    #: where no round ended.
    round_order: npt.NDArray[np.int8]
    #: ``(B,)`` bool, of this step: that round ended in a deadlock (R24).
    round_deadlock: npt.NDArray[np.bool_]
    #: ``(B,)`` bool, of this step: the match ended (R26); the slot holds a new match now.
    done: npt.NDArray[np.bool_]
    #: ``(B, n)`` float64, of this step: the final scores of a match that ended (R28), zeros
    #: elsewhere.
    final_scores: npt.NDArray[np.float64]


class RandomStats(NamedTuple):
    """What :meth:`VectorEngine.random_steps` played."""

    steps: int           # steps taken, all matches together
    rounds: int          # rounds that ended
    matches: int         # matches that ended (and restarted)
    #: ``(B, n)`` float64: the rewards of every step, summed per match and seat.
    rewards: npt.NDArray[np.float64]


def _offsets(lay: Layout) -> npt.NDArray[np.int64]:
    """The kernel's view of an observation layout: field starts, the scalar part's start and
    the size. The scalar tail must be hand_size, score (one per seat), round, asks_left."""
    offs = np.full(K.NUM_OFFS, -1, dtype=np.int64)
    names = [f.name for f in lay.fields]
    for j, name in enumerate(K.OBS_FIELDS):
        if name in names:
            offs[j] = lay.field(name).start
    m = lay.max_players
    tail = [(f.name, f.start, f.size) for f in lay.fields if not f.binary]
    nb = lay.num_binary
    expected = [("hand_size", nb, m), ("score", nb + m, m), ("round", nb + 2 * m, 1),
                ("asks_left", nb + 2 * m + 1, 1)]
    known = set(K.OBS_FIELDS)
    if tail != expected or lay.size != nb + 2 * m + 2 or not set(names) - known <= {
            t[0] for t in expected}:
        raise RuntimeError("the observation layout changed; update dragons_egg_env."
                           "_vector_kernels.encode to match it")
    offs[K.O_NB] = nb
    offs[K.O_SIZE] = lay.size
    return offs


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < low or (high is not None and value > high):
        rng = f"{low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an int {rng}, got {value!r}")
    return int(value)


def _check_config(config: RulesConfig) -> None:
    """Every value of ``config`` checked again (a frozen dataclass can still be changed with
    ``object.__setattr__``): they size the engine's arrays and index them in the kernels."""
    for name in RulesConfig.field_names():
        RulesConfig.check_value(name, getattr(config, name, None))


#: ``engine.State``'s int fields (and ``phase``, an ``IntEnum``): each must be a Python int
#: (not a bool) within int64, as the kernels hold them in int64 columns.
_INT_FIELDS = ("n", "pile", "top_rank", "top_count", "rem", "played", "last_player", "passed",
               "locked", "active", "egg_holder", "egg_known", "current", "turn",
               "opening_mask", "round_idx", "dragon", "victim", "asks_left", "asked", "hits",
               "given", "gives_left", "dealer", "mask", "any_dragons", "give_mask",
               "all_seats")
_INT_LISTS = ("hands", "th", "owner", "finish")
_NUMBER_LISTS = ("scores", "place_rewards")
_get_ints = operator.attrgetter(*_INT_FIELDS)
_get_int_lists = operator.attrgetter(*_INT_LISTS)
_get_number_lists = operator.attrgetter(*_NUMBER_LISTS)
_get_rest = operator.attrgetter("phase", "oot", "locks", "plays", "results")
_INT64 = 1 << 63
_SEQUENCES = frozenset((list, tuple))
_INT = frozenset((int,))
_FLOAT = frozenset((float,))
#: Plays the kernel's pile record holds (``OP`` columns after the owners).
_PLAY_SLOTS = K.NUM_OP - K.PLAYS


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -_INT64 <= v < _INT64


def _is_number(v: Any) -> bool:
    return _is_int(v) or (isinstance(v, float) and math.isfinite(v))


def _ints(values: Any) -> bool:
    """Whether ``values`` is a list or tuple of ints within int64 (plain ints tested fast)."""
    if not isinstance(values, (list, tuple)):
        return False
    if not all(type(x) is int for x in values):
        return all(_is_int(x) for x in values)
    return not values or (-_INT64 <= min(values) and max(values) < _INT64)


def _numbers(values: Any) -> bool:
    """Whether ``values`` is a list or tuple of finite numbers (floats tested fast)."""
    if not isinstance(values, (list, tuple)):
        return False
    if all(type(x) is float for x in values):
        return all(map(math.isfinite, values))
    return all(_is_number(x) for x in values)


def _is_result(r: Any) -> bool:
    return (isinstance(r, E.RoundResult) and _is_int(r.round) and isinstance(r.deadlock, bool)
            and _ints(r.order) and _numbers(r.rewards))


def _check_loadable(j: int, s: E.State) -> None:
    """Raise a ``TypeError`` or :class:`engine.StateError` naming state ``j`` unless
    :meth:`VectorEngine.from_states` can load ``s``: every field of the engine's type (what
    :func:`engine.check_state` compares and the kernels store), then ``check_state``."""
    if not _plain(s):
        _check_types(j, s)
    try:
        E.check_state(s)
    except E.StateError as exc:
        raise E.StateError(f"state {j}: {exc}") from None
    except Exception as exc:  # a malformed field the checks above let through: named anyway
        raise TypeError(f"state {j} is malformed ({type(exc).__name__}: {exc})") from exc


def _plain(s: E.State) -> bool:
    """The fast test (a few microseconds) that every field of ``s`` has the type the engine
    gives it: plain ints within int64, lists or tuples of them, finite floats. The engine's
    own states pass; whatever fails is looked at field by field by :func:`_check_types`."""
    try:
        hands, th, owner, finish = _get_int_lists(s)
        scores, rewards = _get_number_lists(s)
        phase, oot, locks, plays, results = _get_rest(s)
        if not {*map(type, (hands, th, owner, finish, scores, rewards, plays, results))} \
                <= _SEQUENCES or not {*map(type, plays)} <= _SEQUENCES \
                or not {*map(len, plays)} <= {2} or len(plays) > _PLAY_SLOTS:
            return False
        ints = [*_get_ints(s), *hands, *th, *owner, *finish, *chain.from_iterable(plays)]
        floats = [*scores, *rewards]
        for r in results:
            if type(r) is not E.RoundResult or type(r.deadlock) is not bool \
                    or type(r.order) is not tuple or type(r.rewards) is not tuple:
                return False
            ints.append(r.round)
            ints += r.order
            floats += r.rewards
        array("q", ints)  # OverflowError outside int64
        return ({*map(type, ints)} <= _INT
                and {*map(type, floats)} <= _FLOAT and math.isfinite(sum(floats))
                and isinstance(phase, E.Phase) and type(oot) is bool and type(locks) is bool)
    except Exception:  # a missing field, a value that is not a sequence, ...
        return False


def _check_types(j: int, s: E.State) -> None:
    """A ``TypeError`` naming state ``j`` and the field unless every field of ``s`` has the
    type the engine gives it (ints within int64, finite scores, ...)."""
    def bad(what: str, value: Any) -> TypeError:
        return TypeError(f"state {j}: {what}, got {reprlib.repr(value)}")

    try:
        ints, int_lists, number_lists = _get_ints(s), _get_int_lists(s), _get_number_lists(s)
        phase, oot, locks, plays, results = _get_rest(s)
    except AttributeError as exc:  # a State made without __init__
        raise TypeError(f"state {j}: {exc}") from None
    if not _ints(ints):
        name, v = next((k, v) for k, v in zip(_INT_FIELDS, ints, strict=True)
                       if not _is_int(v))
        raise bad(f"{name} must be an int within int64", v)
    if not _is_int(phase):
        raise bad("phase must be an int (an engine.Phase)", phase)
    for name, v in (("oot", oot), ("locks", locks)):
        if not isinstance(v, bool):
            raise bad(f"{name} must be a bool", v)
    for name, v in zip(_INT_LISTS, int_lists, strict=True):
        if not _ints(v):
            raise bad(f"{name} must be a list of ints within int64", v)
    for name, v in zip(_NUMBER_LISTS, number_lists, strict=True):
        if not _numbers(v):
            raise bad(f"{name} must be a list of finite numbers", v)
    if not isinstance(plays, (list, tuple)) or not all(
            isinstance(p, (list, tuple)) and len(p) == 2 and _ints(p) for p in plays):
        raise bad("plays must be a list of (seat, cards) int pairs", plays)
    if len(plays) > _PLAY_SLOTS:
        raise E.StateError(f"state {j}: {len(plays)} plays on the pile; {_PLAY_SLOTS} cards "
                           f"make at most {_PLAY_SLOTS}")
    if not isinstance(results, (list, tuple)) or not all(_is_result(r) for r in results):
        raise bad("results must be a list of engine.RoundResult (int round, int seats, bool "
                  "deadlock, finite rewards)", results)


def available_memory() -> int | None:
    """Bytes of memory a new allocation can still get without swapping (Linux:
    ``MemAvailable`` of ``/proc/meminfo``; elsewhere the free physical pages), or ``None``
    where the system does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


class VectorEngine:
    """``num_envs`` matches of one table size and one rule configuration, stepped together.

    ``config`` or the keyword ``flags`` (the fields of :class:`RulesConfig`: ``num_players``,
    ``num_rounds`` and every rule flag; an unknown name is a ``ConfigError``) give the rules;
    ``max_players`` pads the observations as in ``dragons_egg_v0`` (default: ``num_players``).
    ``seed`` seeds the per-match generators (``None``: fresh entropy, see :attr:`seed`).
    ``record`` keeps each match's deals and actions for :meth:`to_replay` (two matches per slot:
    the current one and the last finished one). ``copy`` makes :meth:`step` return fresh
    arrays; with ``copy=False`` it returns the engine's own buffers, which the next call
    overwrites.

    Call :meth:`reset` first (or build the engine with :meth:`from_states`).
    """

    def __init__(self, num_envs: int, config: RulesConfig | None = None, *,
                 max_players: int | None = None, seed: int | None = None,
                 record: bool = True, copy: bool = True, **flags: Any) -> None:
        B = _check_int("num_envs", num_envs, 1)
        if config is None:
            config = RulesConfig.from_kwargs(flags)
        elif flags:
            raise ValueError(f"pass either a config or rule flags, not both "
                             f"(got {', '.join(sorted(flags))})")
        elif not isinstance(config, RulesConfig):
            raise TypeError(f"config must be a RulesConfig, got {type(config).__name__}")
        else:
            _check_config(config)
        if config.num_rounds >= 1 << 31:
            raise ValueError(f"num_rounds {config.num_rounds} is too many for the batched "
                             f"engine (it records round numbers as int32)")
        n = config.num_players
        m = n if max_players is None else _check_int("max_players", max_players, n, MAX_PLAYERS)
        self.config = config
        self.num_envs = B
        self.num_players = n
        self.max_players = m
        self.record = bool(record)
        self.copy = bool(copy)
        self._obs_lay = layout(m)
        self._state_lay = layout(m, True)
        self._offs = _offsets(self._obs_lay)
        self._state_offs = _offsets(self._state_lay)
        self._cfg, self._prew = _kernel_config(config, m, self.record)
        # the memory the arrays take once written (by reset() and the steps: zeroed pages are
        # committed when written) is checked against what the machine has, before any is made
        need = self.memory_needed()
        have = available_memory()
        if have is not None and need > have:
            raise ValueError(f"{B:,} match(es) of {config.num_rounds} round(s) need about "
                             f"{need / 2**20:,.0f} MiB once reset and stepped, and this machine "
                             f"has {have / 2**20:,.0f} MiB available: use fewer matches")
        try:
            self._st = self._allocate()
        except MemoryError:  # RulesConfig bounds no num_rounds; the round records are per round
            raise ValueError(f"{B} match(es) of {config.num_rounds} rounds do not fit in memory "
                             f"(the engine keeps a record of every round of every match)") \
                from None
        self._ready = False
        self.seed_generators(seed)

    # -- set-up -------------------------------------------------------------------------
    def _layout_of_state(self) -> dict[str, tuple[tuple[int, ...], type[np.generic]]]:
        """The shape and type of each of the state's arrays (:class:`K.VState`'s fields)."""
        B, R = self.num_envs, self.config.num_rounds
        slots = 2 if self.record else 1
        return {"S": ((B, K.NUM_I), np.int64), "OP": ((B, K.NUM_OP), np.int16),
                "F": ((B, K.NUM_F), np.float64), "RES": ((B, R, self.num_players + 2), np.int32),
                "RNG": ((B, K.NUM_RNG), np.uint64),
                "HD": ((B, slots, R, self.num_players), np.int64),
                "HL": ((B, slots, INITIAL_LOG if self.record else 1), np.int16),
                "obs": ((B, self._obs_lay.size), np.float32),
                "mask": ((B, NUM_ACTIONS), np.bool_)}

    def _allocate(self) -> K.VState:
        arrays = {k: np.zeros(shape, dtype=dt) for k, (shape, dt) in
                  self._layout_of_state().items()}
        arrays["S"][:, K.FIN:K.FIN + MAX_PLAYERS] = -1
        arrays["S"][:, K.RORD:K.RORD + MAX_PLAYERS] = -1
        arrays["OP"][:, :NUM_CARDS] = -1
        return K.VState(**arrays)

    def seed_generators(self, seed: int | None) -> None:
        """Seed every match's two generators (deals, random actions) from ``seed`` with
        ``numpy.random.SeedSequence(seed).generate_state``: match ``b`` gets words ``2b`` and
        ``2b + 1``, so its matches depend on ``seed`` and ``b`` only, not on the batch size.
        ``None`` draws fresh entropy (kept in :attr:`seed`)."""
        if seed is not None:
            _check_int("seed", seed, 0)
        ss = np.random.SeedSequence(seed)
        entropy = ss.entropy
        assert isinstance(entropy, (int, np.integer)), "an int seed or drawn entropy"
        #: The seed of the generators: the one given, or the entropy drawn for ``None``.
        self.seed = int(entropy)
        words = ss.generate_state(2 * self.num_envs, np.uint64)
        self._st.RNG[:, K.R_DEAL] = words[0::2]
        self._st.RNG[:, K.R_ACT] = words[1::2]

    # -- properties ---------------------------------------------------------------------
    @property
    def obs_size(self) -> int:
        """Length of an observation (``layout(max_players).size``)."""
        return self._obs_lay.size

    @property
    def state_size(self) -> int:
        """Length of a full-state vector (``layout(max_players, state=True).size``)."""
        return self._state_lay.size

    # (The kernel state's arrays are untyped, as the kernels are: each property names its type.)
    @property
    def observations(self) -> npt.NDArray[np.float32]:
        """The current observations ``(B, obs_size)`` (the engine's buffer; read only)."""
        obs: npt.NDArray[np.float32] = self._st.obs
        return obs

    @property
    def masks(self) -> npt.NDArray[np.bool_]:
        """The current legal-action masks ``(B, 134)`` (the engine's buffer; read only)."""
        mask: npt.NDArray[np.bool_] = self._st.mask
        return mask

    @property
    def seats(self) -> npt.NDArray[np.int64]:
        """The seat to act in each match ``(B,)`` (a view of the engine's state; read only)."""
        seats: npt.NDArray[np.int64] = self._st.S[:, K.SEAT]
        return seats

    @property
    def dealers(self) -> npt.NDArray[np.int64]:
        """The dealer of each match's current round ``(B,)`` (R4; -1 for a supplied deal in
        round 1, as ``engine.deal`` leaves it)."""
        dealers: npt.NDArray[np.int64] = self._st.S[:, K.DEALER].copy()
        return dealers

    @property
    def episodes(self) -> npt.NDArray[np.int64]:
        """Matches finished in each slot since the engine was made ``(B,)``."""
        episodes: npt.NDArray[np.int64] = self._st.S[:, K.EPIS].copy()
        return episodes

    # -- stepping -----------------------------------------------------------------------
    def reset(self, seed: int | None = None, deals: Any = None) -> VectorStep:
        """Start a new match in every slot and return the first decision of each.

        ``seed`` re-seeds the generators first (:meth:`seed_generators`); ``None`` carries on
        with them. ``deals``: an int array ``(B, n)`` (round 1) or ``(B, r, n)`` (rounds
        1..r, ``r <= num_rounds``) of card bitmasks, one hand per seat; each must split the 45
        cards into non-empty hands (R4). Rounds without a given deal are dealt at random (R4:
        round 1's dealer from the generator, later the last Egg holder). Given deals apply to
        this first match of each slot only."""
        if seed is not None:
            self.seed_generators(seed)
        S = self._st.S
        S[:, K.FORCED] = 0 if deals is None else self._load_deals(deals)
        if self.record:
            S[np.arange(self.num_envs), K.HOK + 1 - S[:, K.HCUR]] = 0
        K.k_reset(self._st, self._cfg, self._offs, np.ones(self.num_envs, np.bool_))
        self._ready = True
        return self._outputs()

    def _load_deals(self, deals: Any) -> int:
        B, n, R = self.num_envs, self.num_players, self.config.num_rounds
        arr = np.asarray(deals)
        if arr.ndim == 2:
            arr = arr[:, None, :]
        if arr.ndim != 3 or arr.shape[0] != B or arr.shape[2] != n or not 1 <= arr.shape[1] <= R:
            raise ValueError(f"deals must have shape ({B}, {n}) or ({B}, r, {n}) with "
                             f"1 <= r <= {R}, got {np.shape(deals)}")
        if arr.dtype.kind not in "iu":
            raise ValueError(f"deals must be integer card bitmasks, got dtype {arr.dtype}")
        for b in range(B):
            for r in range(arr.shape[1]):
                try:
                    E.check_deal([int(h) for h in arr[b, r]], n)
                except E.DealError as exc:
                    raise E.DealError(f"deal of match {b}, round {r}: {exc}") from None
        slots = self._st.S[:, K.HCUR]
        self._st.HD[np.arange(B), slots, :arr.shape[1], :] = arr.astype(np.int64)
        return int(arr.shape[1])

    def step(self, actions: Any) -> VectorStep:
        """Play ``actions[b]`` in match ``b`` for every ``b`` (an int array of shape ``(B,)``).

        A match whose round ends is dealt its next round within the step; a match that ends
        reports its last round and final scores and restarts (``docs/vector.md``). Raises
        ``ValueError`` for a bad shape or type, and :class:`engine.IllegalActionError` naming
        the first match whose action is not legal; then no match has moved."""
        self._check_ready()
        acts = self._check_actions(actions)
        st = self._st
        bad = K.k_check(st.S, acts)
        if bad >= 0:
            raise E.IllegalActionError(self._illegal_message(bad, int(acts[bad])))
        if K.k_step(st, self._cfg, self._prew, self._offs, acts):
            self._grow_log()
        return self._outputs()

    def step_rows(self, rows: Any, actions: Any) -> None:
        """Play ``actions[i]`` in match ``rows[i]`` only; the other matches do not move.

        For views that hold some matches while others move (a single learner seat per match
        while opponents play elsewhere). The step kernel runs on a copy of those rows' state,
        which is written back (every state array has one row per match and the kernel treats
        rows independently). Afterwards only the outputs of ``rows`` (:attr:`observations`,
        :attr:`masks`, :attr:`seats`, ...) are current; read the others from before. Raises
        :class:`engine.IllegalActionError` naming the match when an action is not legal;
        then no match has moved."""
        self._check_ready()
        idx = np.asarray(rows)
        if idx.ndim != 1 or idx.dtype.kind not in "iu" or not len(idx) \
                or ((idx < 0) | (idx >= self.num_envs)).any() or len(np.unique(idx)) != len(idx):
            raise ValueError(f"rows must be distinct match indices 0..{self.num_envs - 1}")
        acts = np.asarray(actions)
        if acts.shape != idx.shape or acts.dtype.kind not in "iu":
            raise ValueError(f"actions must be ints of shape {idx.shape}, got {acts.shape}")
        acts = np.ascontiguousarray(acts, dtype=np.int64)
        st = self._st
        part = K.VState(*(a[idx] for a in st))
        bad = K.k_check(part.S, acts)
        if bad >= 0:
            raise E.IllegalActionError(self._illegal_message(int(idx[bad]), int(acts[bad])))
        full = K.k_step(part, self._cfg, self._prew, self._offs, acts)
        for a, s in zip(st, part, strict=True):
            a[idx] = s
        if full:
            self._grow_log()

    def random_steps(self, k: int) -> RandomStats:
        """Play ``k`` uniformly random legal steps in every match, chosen inside the compiled
        loop from each match's action generator, with the observation and mask of every step
        computed (as :meth:`step` does; the buffers hold the last ones). Matches restart as in
        :meth:`step`; only the last finished match of each slot keeps its replay."""
        self._check_ready()
        k = _check_int("k", k, 0)
        steps_left = np.full(self.num_envs, k, dtype=np.int64)
        return self._run_random(steps_left)

    def _run_random(self, steps_left: npt.NDArray[np.int64]) -> RandomStats:
        acc = np.zeros((self.num_envs, self.num_players), dtype=np.float64)
        counts = np.zeros((self.num_envs, 3), dtype=np.int64)
        while True:  # (_grow_log replaces self._st)
            if K.k_random(self._st, self._cfg, self._prew, self._offs, steps_left, acc,
                          counts):
                self._grow_log()
            if not steps_left.any():
                break
        tot = counts.sum(axis=0)
        return RandomStats(int(tot[0]), int(tot[1]), int(tot[2]), acc)

    def _play_out(self) -> None:
        """Play every match to its end with random actions, without restarting it."""
        self._cfg[K.C_AUTO] = 0
        try:
            self._run_random(np.full(self.num_envs, 1 << 40, dtype=np.int64))
        finally:
            self._cfg[K.C_AUTO] = 1

    def _check_ready(self) -> None:
        if not self._ready:
            raise RuntimeError("call reset() first (or build the engine with from_states())")

    def _check_actions(self, actions: Any) -> npt.NDArray[np.int64]:
        B = self.num_envs
        arr = np.asarray(actions)
        if arr.shape != (B,):
            raise ValueError(f"actions must have shape ({B},), one action per match; got "
                             f"shape {arr.shape}")
        if arr.dtype.kind not in "iu":
            raise ValueError(f"actions must be integers, got dtype {arr.dtype}")
        out = np.ascontiguousarray(arr, dtype=np.int64)
        if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and (arr > NUM_ACTIONS).any():
            out = np.where(arr > NUM_ACTIONS, NUM_ACTIONS, arr).astype(np.int64)
        wrong = np.flatnonzero((out < 0) | (out >= NUM_ACTIONS))
        if len(wrong):
            b = int(wrong[0])
            raise ValueError(f"match {b}: action {arr[b].item()!r} is outside the action space "
                             f"0..{NUM_ACTIONS - 1}")
        return out

    def _illegal_message(self, b: int, a: int) -> str:
        S = self._st.S
        legal = ", ".join(f"{x} ({describe(x)})" for x in self.legal_actions(b))
        phase = E.PHASE_NAMES[int(S[b, K.PH])]
        return (f"match {b}: illegal action {a} ({describe(a)}) for seat {int(S[b, K.SEAT])} "
                f"in phase {phase!r}; legal: {legal}")

    def _grow_log(self) -> None:
        old = self._st.HL
        new = np.zeros((old.shape[0], old.shape[1], 2 * old.shape[2]), dtype=old.dtype)
        new[:, :, :old.shape[2]] = old
        self._st = self._st._replace(HL=new)

    def _outputs(self) -> VectorStep:
        st, n = self._st, self.num_players
        S, F = st.S, st.F
        out = VectorStep(
            st.obs, st.mask, S[:, K.SEAT], F[:, K.REW:K.REW + n], S[:, K.REND] != 0,
            S[:, K.RORD:K.RORD + n].astype(np.int8), S[:, K.RDEAD] != 0, S[:, K.DONE_] != 0,
            F[:, K.FSCORE:K.FSCORE + n])
        if self.copy:
            out = VectorStep(out.obs.copy(), out.mask.copy(), out.seat.copy(),
                             out.rewards.copy(), out.round_ended, out.round_order,
                             out.round_deadlock, out.done, out.final_scores.copy())
        return out

    # -- views --------------------------------------------------------------------------
    def legal_actions(self, i: int) -> list[int]:
        """The legal actions of the seat to act in match ``i``, ascending."""
        return np.flatnonzero(self._st.mask[self._index(i)]).tolist()

    def observe(self, seats: Any) -> npt.NDArray[np.float32]:
        """Observations ``(B, obs_size)`` of match ``b`` from seat ``seats[b]`` (any seat,
        not only the one to act): ``Encoder(n, max_players, num_rounds).encode``."""
        self._check_ready()
        arr = np.asarray(seats)
        if arr.shape != (self.num_envs,) or arr.dtype.kind not in "iu" \
                or ((arr < 0) | (arr >= self.num_players)).any():
            raise ValueError(f"seats must be ints 0..{self.num_players - 1} of shape "
                             f"({self.num_envs},)")
        out = np.empty((self.num_envs, self.obs_size), dtype=np.float32)
        K.k_encode_all(self._st.S, self._st.F, self._cfg, self._offs, False,
                       arr.astype(np.int64), out)
        return out

    def state(self) -> npt.NDArray[np.float32]:
        """The full state of every match ``(B, state_size)`` float32, for centralised critics:
        ``Encoder(n, max_players, num_rounds, state=True).encode(state, 0)``."""
        self._check_ready()
        out = np.empty((self.num_envs, self.state_size), dtype=np.float32)
        K.k_encode_all(self._st.S, self._st.F, self._cfg, self._state_offs, True,
                       np.zeros(self.num_envs, np.int64), out)
        return out

    def _index(self, i: Any) -> int:
        return _check_int("match index", i, 0, self.num_envs - 1)

    # -- scalar states ------------------------------------------------------------------
    def to_state(self, i: int) -> E.State:
        """Match ``i`` as a scalar :class:`engine.State`, equal field by field to the state the
        scalar engine reaches with the same deals and actions (its legal-mask cache stale)."""
        self._check_ready()
        b = self._index(i)
        st, cfg, n = self._st, self.config, self.num_players
        row = [int(x) for x in st.S[b]]
        s = E.State(cfg)
        s.hands = row[K.HAND:K.HAND + n]
        s.th = [E.thermometer(h) for h in s.hands]
        s.owner = [int(o) for o in st.OP[b, :NUM_CARDS]]
        s.plays = [_unpack_play(int(v)) for v in st.OP[b, K.PLAYS:K.PLAYS + row[K.NPLAYS]]]
        s.finish = row[K.FIN:K.FIN + row[K.NFIN]]
        s.scores = [float(x) for x in st.F[b, K.SCORE:K.SCORE + n]]
        s.phase = E.Phase(row[K.PH])
        for name, col in _SCALARS:
            setattr(s, name, row[col])
        prew = E.place_rewards(cfg)
        results = []
        for k in range(row[K.NRES]):
            res = [int(x) for x in st.RES[b, k]]
            order = tuple(res[:n])
            rewards = [0.0] * n
            for place, seat in enumerate(order):
                rewards[seat] = prew[place]
            results.append(E.RoundResult(res[n + 1], order, bool(res[n]), tuple(rewards)))
        s.results = results
        s.mask = -1
        return s

    @classmethod
    def from_states(cls, states: Sequence[E.State], *, max_players: int | None = None,
                    seed: int | None = None, record: bool = True, copy: bool = True,
                    trusted: bool = False) -> VectorEngine:
        """An engine whose match ``b`` continues ``states[b]`` (states of one config, in any
        decision phase, or waiting for a deal; not finished). A state waiting for its deal
        (phase ``deal``) is dealt from the generators. Matches started this way have no
        replay (the engine did not see their start); the next match in the slot has one.

        Every state is checked first: its fields must have the engine's types (Python ints,
        lists of them, finite scores) and :func:`engine.check_state` must hold; otherwise a
        :class:`engine.StateError` (a ``ValueError``) or a ``TypeError`` names the state's
        index and the problem, and no engine is made. ``trusted=True`` skips these checks
        (about 25 us a state) for states the caller's code took from the engine itself
        (:meth:`to_state`, :func:`engine.step`); a corrupt state is then undefined behaviour
        in the compiled kernels, up to crashing the interpreter."""
        if isinstance(states, E.State) or not isinstance(states, Iterable):
            raise TypeError(f"states must be a sequence of engine.State, got "
                            f"{type(states).__name__}")
        states = list(states)
        if not states:
            raise ValueError("from_states needs at least one state")
        for j, s in enumerate(states):
            if not isinstance(s, E.State):
                raise TypeError(f"state {j} is a {type(s).__name__}, not an engine.State")
        config = getattr(states[0], "config", None)
        if not isinstance(config, RulesConfig):
            raise TypeError(f"state 0: config must be a RulesConfig, got "
                            f"{type(config).__name__}")
        try:
            _check_config(config)
        except ConfigError as exc:
            raise ConfigError(f"state 0: config: {exc}") from None
        for j, s in enumerate(states):
            other = getattr(s, "config", None)
            if other is not config and (not isinstance(other, RulesConfig) or other != config):
                raise ValueError(f"state {j} has another config than state 0; one engine "
                                 f"plays one config")
        if not trusted:
            checked: set[int] = set()  # a state repeated in the batch is checked once
            for j, s in enumerate(states):
                if id(s) not in checked:
                    _check_loadable(j, s)
                    checked.add(id(s))
        eng = cls(len(states), config, max_players=max_players, seed=seed, record=record,
                  copy=copy)
        for b, s in enumerate(states):
            eng._load_state(b, s)
        K.k_refresh(eng._st, eng._cfg, eng._offs)
        eng._ready = True
        return eng

    def _load_state(self, b: int, s: E.State) -> None:
        st, n = self._st, self.num_players
        if s.phase == E.DONE:
            raise ValueError(f"state {b} is a finished match (phase 'done'): nothing to play")
        if s.phase == E.DEAL and s.round_idx > 0 and not s.results:
            raise ValueError(f"state {b} waits for the deal of round {s.round_idx + 1} but has "
                             f"no round results: the dealer and the Dragon come from the "
                             f"last one (R4, R30)")
        S = st.S
        S[b, K.HAND:K.HAND + n] = s.hands
        st.OP[b, :NUM_CARDS] = s.owner
        S[b, K.FIN:K.FIN + MAX_PLAYERS] = -1
        S[b, K.FIN:K.FIN + len(s.finish)] = s.finish
        S[b, K.NFIN] = len(s.finish)
        st.F[b, K.SCORE:K.SCORE + n] = s.scores
        S[b, K.PH] = int(s.phase)
        for name, col in _SCALARS:
            S[b, col] = getattr(s, name)
        S[b, K.NPLAYS] = len(s.plays)
        for k, (p, cards) in enumerate(s.plays):
            st.OP[b, K.PLAYS + k] = _pack_play(p, cards, b)
        S[b, K.NRES] = len(s.results)
        for k, res in enumerate(s.results):
            st.RES[b, k, :n] = res.order
            st.RES[b, k, n] = res.deadlock
            st.RES[b, k, n + 1] = res.round
        slot = int(S[b, K.HCUR])
        S[b, K.HLEN + slot] = 0
        S[b, K.HDEALT + slot] = 0
        S[b, K.HFIN + slot] = 0
        st.RNG[b, K.R_SEED + slot] = st.RNG[b, K.R_DEAL]
        S[b, K.HOK + slot] = s.phase == E.DEAL and s.round_idx == 0
        S[b, K.FORCED] = 0

    # -- replays ------------------------------------------------------------------------
    def to_replay(self, i: int) -> dict[str, Any]:
        """The current match of slot ``i`` so far, as a replay dict (the format of
        ``raw_env.to_replay``) that :func:`dragons_egg_env.replay.replay` plays back."""
        self._check_ready()
        b = self._index(i)
        S = self._st.S
        slot = int(S[b, K.HCUR])
        scores = self._st.F[b, K.SCORE:K.SCORE + self.num_players].tolist()
        return self._replay_dict(b, slot, bool(S[b, K.PH] == E.DONE), scores)

    def finished_replay(self, i: int) -> dict[str, Any]:
        """The last match that ended in slot ``i`` (the one whose end a step reported with
        ``done[i]``), as a replay dict; kept until the slot finishes its next match."""
        self._check_ready()
        b = self._index(i)
        S = self._st.S
        slot = 1 - int(S[b, K.HCUR]) if self.record else 0
        if not self.record or not S[b, K.HFIN + slot] or not S[b, K.HOK + slot]:
            raise ValueError(f"match slot {b} has no finished match with a replay "
                             f"(record={self.record})")
        col = K.HSCORE + slot * MAX_PLAYERS
        scores = self._st.F[b, col:col + self.num_players].tolist()
        return self._replay_dict(b, slot, True, scores)

    def match_deals(self, i: int) -> list[list[int]]:
        """The deals of the current match of slot ``i`` so far: per round, one card bitmask
        per seat (the rounds dealt before a :meth:`from_states` start are unknown: zeros)."""
        self._check_ready()
        b = self._index(i)
        S = self._st.S
        slot = int(S[b, K.HCUR])
        dealt = int(S[b, K.HDEALT + slot])
        return [[int(h) for h in self._st.HD[b, slot, r]] for r in range(dealt)]

    def _replay_dict(self, b: int, slot: int, finished: bool,
                     scores: list[float]) -> dict[str, Any]:
        st = self._st
        if not self.record:
            raise ValueError("this engine keeps no replays (record=False)")
        if not st.S[b, K.HOK + slot]:
            raise ValueError(f"match {b} started from an engine.State (from_states), not from "
                             f"its first deal: it has no replay (the next match in the slot "
                             f"will)")
        dealt = int(st.S[b, K.HDEALT + slot])
        log = st.HL[b, slot, :st.S[b, K.HLEN + slot]].tolist()
        return build_replay(self.config, self.max_players, int(st.RNG[b, K.R_SEED + slot]) >> 1,
                            st.HD[b, slot, :dealt].tolist(), [(v >> 8, v & 255) for v in log],
                            scores, finished=finished)

    # -- memory -------------------------------------------------------------------------
    def memory_needed(self) -> int:
        """Bytes the engine commits once it is reset and stepped: its state arrays, and the
        step's outputs and their copies (observations, masks, rewards; measured: 200,000
        4-player matches of 3 rounds held 0.74 GiB of state and grew by 1.3 GiB over a reset
        and a step)."""
        state = sum(math.prod(shape) * np.dtype(dt).itemsize
                    for shape, dt in self._layout_of_state().values())
        per_step = self.num_envs * (4 * self._obs_lay.size + NUM_ACTIONS
                                    + 8 * (3 * self.num_players + 8))
        return int(state + 2 * per_step)

    def memory_per_match(self) -> dict[str, float]:
        """Bytes per match: ``engine`` (the game state, legal masks and generators),
        ``observation`` (the observation buffer), ``outputs`` (mask, seat, rewards, round and
        match results), ``history`` (deals and action logs kept for replays)."""
        st, B = self._st, self.num_envs
        i_history = 8  # the HLEN/HOK/HFIN/HDEALT columns of S
        i_outputs = 4 + MAX_PLAYERS  # SEAT, REND, RDEAD, DONE_ and RORD
        engine = (st.S.nbytes // B - 8 * (i_history + i_outputs) + st.OP.nbytes // B
                  + 8 * MAX_PLAYERS + st.RES.nbytes // B + 8 * 2)
        outputs = 8 * (i_outputs + 2 * MAX_PLAYERS) + st.mask.nbytes // B
        history = (8 * i_history + 8 * 2 + 8 * 2 * MAX_PLAYERS + st.HD.nbytes // B
                   + st.HL.nbytes // B)
        return {"engine": engine, "observation": st.obs.nbytes / B, "outputs": outputs,
                "history": history}


#: (engine.State attribute, column of ``S``) of the per-match scalars copied one to one.
_SCALARS = (
    ("current", K.CUR), ("turn", K.TURN), ("top_rank", K.TOP), ("top_count", K.CNT),
    ("last_player", K.LAST), ("egg_holder", K.EGGH), ("dragon", K.DRAG), ("victim", K.VICT),
    ("dealer", K.DEALER), ("asks_left", K.ASKL), ("gives_left", K.GIVL),
    ("round_idx", K.ROUND), ("passed", K.PASSED), ("locked", K.LOCKED),
    ("active", K.ACTIVE), ("egg_known", K.EGGK), ("pile", K.PILE), ("rem", K.REM),
    ("played", K.PLAYED), ("opening_mask", K.OPEN), ("asked", K.ASKED), ("hits", K.HITS),
    ("given", K.GIVEN),
)


def _pack_play(p: int, cards: int, b: int) -> int:
    """A pile play ``(seat, cards)`` as the kernel stores it (cards within one nibble)."""
    low = (cards & -cards).bit_length() - 1
    nib = low >> 2
    if cards <= 0 or cards >> (4 * nib) > 15:
        raise ValueError(f"state {b}: play {codes(cards)} by seat {p} is not cards of one "
                         f"number or dragon cards")
    return p | (nib << 3) | ((cards >> (4 * nib)) << 7)


def _unpack_play(v: int) -> tuple[int, int]:
    return v & 7, ((v >> 7) & 15) << (4 * ((v >> 3) & 15))


def random_replays(num_matches: int, num_players: int = 4, num_rounds: int = 3, seed: int = 0,
                   max_players: int | None = None, **flags: Any) -> list[dict[str, Any]]:
    """``num_matches`` matches of uniformly random legal play, played in batches of up to
    :data:`REPLAY_BATCH` with the random choice made inside the compiled loop, as replay dicts
    that :func:`dragons_egg_env.replay.replay` plays back exactly (scores included). The same
    arguments give the same matches."""
    count = _check_int("num_matches", num_matches, 0)
    config = RulesConfig.from_kwargs({"num_players": num_players, "num_rounds": num_rounds,
                                      **flags})
    if count == 0:
        return []
    eng = VectorEngine(min(count, REPLAY_BATCH), config, max_players=max_players, seed=seed,
                       record=True, copy=False)
    out: list[dict[str, Any]] = []
    eng.reset()
    while True:
        eng._play_out()
        take = min(eng.num_envs, count - len(out))
        out.extend(eng.to_replay(i) for i in range(take))
        if len(out) >= count:
            return out
        eng.reset()


#: Names this module once re-exported from :mod:`dragons_egg_env.vector_env` (which imports
#: this module): no longer, so that this module never imports Gymnasium's adapter (no import
#: circle, and ``import dragons_egg_env.vector`` loads neither Gymnasium nor PettingZoo).
_MOVED = ("SingleAgentVectorEnv", "MatchAwarePolicy")


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}: import it from "
                             f"dragons_egg_env.vector_env (from dragons_egg_env.vector_env "
                             f"import {name})")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["VectorEngine", "VectorStep", "RandomStats", "random_replays"]
