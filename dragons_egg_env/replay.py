"""Replays: a match exported as JSON and played back exactly, or rejected.

``env.unwrapped.to_replay()`` / ``save_replay(path)`` export a finished or unfinished match;
:func:`replay` rebuilds the environment from that data, steps through every recorded move and
checks that the play reproduces what the file records. Anything that does not is a
:class:`ReplayError` that names the file (when there is one) and the step or the field.

The format (version 2)
    A JSON object with exactly these fields:

    - ``format``: ``"dragons-egg-replay"``; ``version``: ``2`` (an integer); ``env``:
      ``"dragons_egg_v0"``;
    - ``config``: every rule setting (:meth:`RulesConfig.to_dict`); ``max_players``: the
      observation padding; ``seed``: the match seed (a non-negative integer; it reproduces the
      random deals, but the deals are recorded anyway);
    - ``deals``: per round started, one list of card codes per seat;
    - ``actions``: ``[agent, action]`` per move, in order. When ``env()`` ended the match for an
      illegal move, that move is the last entry and ``illegal_move`` repeats it
      (``[agent, action]``; ``null`` otherwise);
    - ``finished``: every round was played; ``partial``: the match was saved before its end on
      purpose (``dragons-egg play`` when the player quits, ``to_replay()`` of a match in
      progress). Exactly one of ``finished``, ``partial`` and ``illegal_move`` holds;
    - ``scores``: each seat's match score (R28) at the end of the recorded play, as exact
      rationals in strings (``"4/3"``, ``"-1"``, ``"0"``); round rewards are multiples of
      ``1/(n-1)``, so floats would not compare exactly;
    - ``digest``: ``"sha256:"`` and the hex SHA-256 of the other fields as canonical JSON
      (:func:`replay_digest`). It is an integrity check, not a signature: it catches a file
      changed after it was written (a legal action swapped for another that happens to end
      with the same scores), not someone who recomputes it.

    :func:`build_replay` makes such a dict; ``raw_env.to_replay`` and the batched engine's
    replays both go through it. It lives, with :class:`ReplayCheck` and the format's constants,
    in :mod:`dragons_egg_env.replay_format` (below the environment, which this module imports
    to play replays back) and is re-exported here.

What is checked
    Every move is legal at its step and made by the agent to act (an illegal move only where
    ``illegal_move`` says so, and it must be illegal); the deals cover exactly the rounds
    played; then the play's end must match ``finished``, ``partial`` and ``illegal_move``, its
    scores ``scores``, and its trajectory ``digest``. An unknown or missing field is an error.
    A replay cut short by hand and still claiming its old end fails on ``finished`` or
    ``scores``; :func:`partial_replay` cuts one properly.

Version 1 files (written before the scores and the digest)
    They still load: legality, the turn order and their ``finished`` flag are checked (a file
    cut inside its last round that says ``finished: true`` is rejected), and the illegal move
    they record apart from ``actions`` ends the match as ``env()`` did. They cannot prove their
    scores or that no legal move was swapped for another: :func:`replay` and
    :func:`iter_replay` say so with a :class:`ReplayWarning`, and the :class:`ReplayCheck` they
    leave on the env (``env.replay_check``) lists ``scores`` and ``digest`` under
    ``unverified``. A negative seed in a version 1 file is read as its absolute value, which is
    what the environment of that time played.

Reading
    :func:`replay` plays a replay (a dict or a path) to its end; :func:`iter_replay` yields the
    env before each move and once at the end, after the whole replay has been checked (so a
    viewer never shows a replay that will be rejected); :func:`check_replay` returns the
    :class:`ReplayCheck` alone; :func:`replay_moves` lists the moves with the illegal one marked,
    for displays.
"""

from __future__ import annotations

import gzip
import json
import os
import warnings
import zlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard

from . import engine as E
from .actions import NUM_ACTIONS, describe
from .config import ConfigError, RulesConfig
from .dragons_egg_v0 import raw_env
from .replay_format import (
    ENV_NAME,
    FIELDS,
    REPLAY_FORMAT,
    REPLAY_VERSION,
    ReplayCheck,
    build_replay,
    exact_scores,
    replay_digest,
)

_V1_FIELDS = ("format", "version", "env", "config", "max_players", "seed", "deals", "actions",
              "finished", "illegal_move")
_GZIP_MAGIC = b"\x1f\x8b"
#: Replay versions this module reads.
VERSIONS = (1, REPLAY_VERSION)


class ReplayError(ValueError):
    """A replay that is malformed or does not replay. The message names the file (``source``,
    when the replay came from one) and the step or the field at fault, which are also
    attributes (``None`` when not applicable)."""

    def __init__(self, message: str, *, source: str | None = None, step: int | None = None,
                 field: str | None = None) -> None:
        self.message = message
        self.source = source
        self.step = step
        self.field = field
        super().__init__(f"replay {source}: {message}" if source is not None else message)


class ReplayWarning(UserWarning):
    """A replay loaded, but it cannot prove everything (a version 1 file)."""


class ReplayData(dict[str, Any]):
    """A replay read from a file by :func:`load_replay`: a plain dict that remembers its file
    (``source``), so that later errors name it."""

    source: str | None = None


class Move(NamedTuple):
    """One recorded move: ``illegal`` marks the move that ended the match (``env()``)."""

    agent: str
    action: int
    illegal: bool


# -- reading --------------------------------------------------------------------------------
def load_replay(path: str | os.PathLike[str]) -> ReplayData:
    """Read a replay file and check its header and field types; any fault (a missing file,
    bytes that are not UTF-8, invalid JSON, a top-level list, a bad version or field) is a
    :class:`ReplayError` naming the file. A gzip-compressed file (``.json.gz``, as
    ``dragons-egg tournament --save-replays`` keeps them; known by its first bytes) is read
    the same; a damaged one is a :class:`ReplayError` too."""
    source = os.fspath(path)
    try:
        raw = Path(source).read_bytes()
    except OSError as exc:
        raise ReplayError(f"cannot read replay file: {exc.strerror or exc}",
                          source=source) from None
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
            raise ReplayError(f"is a damaged gzip file ({exc})", source=source) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReplayError(f"is not UTF-8 text ({exc})", source=source) from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, too-long integers
        raise ReplayError(f"is not valid JSON: {exc}", source=source) from None
    _check_fields(data, source)
    out = ReplayData(data)
    out.source = source
    return out


def _source_of(data: Any, source: str | os.PathLike[str] | None) -> str | None:
    if source is not None:
        return os.fspath(source)
    return getattr(data, "source", None)


def _is_int(x: object) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_fields(data: Any, source: str | None) -> int:
    """Check the header and the type of every field; returns the version."""
    if not isinstance(data, dict):
        raise ReplayError(f"a replay is a JSON object, got a JSON {_json_type(data)}",
                          source=source)
    if data.get("format") != REPLAY_FORMAT:
        raise ReplayError(f"not a Dragon's Egg replay (format {data.get('format')!r}, expected "
                          f"{REPLAY_FORMAT!r})", source=source, field="format")
    version = data.get("version")
    if not _is_int(version) or version not in VERSIONS:
        raise ReplayError(f"unsupported replay version {version!r} ({_json_type(version)}): "
                          f"this library reads versions {' and '.join(map(str, VERSIONS))} "
                          f"(integers)", source=source, field="version")
    if data.get("env") != ENV_NAME:
        raise ReplayError(f"a replay of env {data.get('env')!r}; this library plays "
                          f"{ENV_NAME!r}", source=source, field="env")
    known = FIELDS if version == REPLAY_VERSION else _V1_FIELDS
    required = FIELDS if version == REPLAY_VERSION else ("config", "deals", "actions")
    for key in required:
        if key not in data:
            raise ReplayError(f"has no field {key!r} (a version {version} replay records "
                              f"{', '.join(required)})", source=source, field=key)
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise ReplayError(f"unknown field(s) {', '.join(map(repr, unknown))} in a version "
                          f"{version} replay (its fields: {', '.join(known)})", source=source,
                          field=unknown[0])
    _check_types(data, version, source)
    return version


def _json_type(x: Any) -> str:
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                       (list, "list"), (dict, "object"), (type(None), "null")):
        if isinstance(x, kind):
            return name
    return type(x).__name__


def _bad_field(data: dict[str, Any], key: str, want: str, source: str | None) -> ReplayError:
    return ReplayError(f"field {key!r} must be {want}, got {data[key]!r} "
                       f"({_json_type(data[key])})", source=source, field=key)


def _check_types(data: dict[str, Any], version: int, source: str | None) -> None:
    v2 = version == REPLAY_VERSION

    def bad(key: str, want: str) -> ReplayError:
        return _bad_field(data, key, want, source)

    if not isinstance(data["config"], dict):
        raise bad("config", "an object of rule settings")
    if (v2 or data.get("max_players") is not None) and not _is_int(data.get("max_players")):
        raise bad("max_players", "an integer")
    seed = data.get("seed")
    if (v2 or seed is not None) and not _is_int(seed):
        raise bad("seed", "a non-negative integer")
    if v2 and _is_int(seed) and seed < 0:  # (an int in v2, checked above)
        raise bad("seed", "a non-negative integer")
    if not isinstance(data["deals"], list):
        raise bad("deals", "a list of deals (per round, one list of card codes per seat)")
    if not isinstance(data["actions"], list):
        raise bad("actions", "a list of [agent, action] entries")
    for k, item in enumerate(data["actions"]):
        if not _is_move(item):
            raise ReplayError(f"step {k}: malformed action entry {item!r} (expected [agent, "
                              f"action], an agent name and an integer)", source=source, step=k,
                              field="actions")
    ill = data.get("illegal_move")
    if ill is not None and not _is_move(ill):
        raise bad("illegal_move", "null or [agent, action]")
    for key in ("finished", "partial"):
        if (v2 or data.get(key) is not None) and key in data and not isinstance(data[key], bool):
            raise bad(key, "true or false")
    if v2:
        _check_record_types(data, source)


def _check_record_types(data: dict[str, Any], source: str | None) -> None:
    scores = data["scores"]
    if not (isinstance(scores, list) and all(isinstance(x, str) for x in scores)):
        raise _bad_field(data, "scores", "a list of exact scores in strings, one per seat",
                         source)
    digest = data["digest"]
    if not (isinstance(digest, str) and digest.startswith("sha256:")):
        raise _bad_field(data, "digest", "a string 'sha256:<hex>'", source)


def _is_move(item: Any) -> bool:
    return isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) \
        and _is_int(item[1])


def replay_moves(data: Mapping[str, Any], *, source: str | os.PathLike[str] | None = None
                 ) -> list[Move]:
    """The moves of a replay, in order, the illegal one (if ``env()`` ended the match for one)
    marked; the same for version 1 files, which keep that move apart from ``actions``. The
    replay's structure is checked (:class:`ReplayError`), not its play."""
    src = _source_of(data, source)
    version = _check_fields(data, src)
    moves = [Move(agent, action, False) for agent, action in data["actions"]]
    ill = data.get("illegal_move")
    if ill is None:
        return moves
    if version == REPLAY_VERSION:
        if not moves or list(moves[-1][:2]) != ill:
            raise ReplayError(f"field 'illegal_move' {ill!r} must repeat the last action "
                              f"{list(moves[-1][:2]) if moves else None!r}", source=src,
                              field="illegal_move")
        moves[-1] = Move(ill[0], ill[1], True)
    else:
        moves.append(Move(ill[0], ill[1], True))
    return moves


class _Plan:
    """A replay's checked header, settings and moves."""

    def __init__(self, data: Any, source: str | os.PathLike[str] | None) -> None:
        if isinstance(data, (str, os.PathLike)):
            data = load_replay(data)
        self.source = _source_of(data, source)
        if not isinstance(data, Mapping):
            raise ReplayError(f"a replay is a dict or a path to a JSON file, got "
                              f"{type(data).__name__}", source=self.source)
        self.data = data
        self.moves = replay_moves(data, source=self.source)
        self.version = data["version"]
        try:
            self.config = RulesConfig.from_kwargs(data["config"])
        except (ConfigError, ValueError, TypeError) as exc:
            raise self.error(f"config is invalid: {exc}", field="config") from None
        seed = data.get("seed")
        if self.version == 1 and seed is not None:
            seed = abs(seed)  # the environment of version 1 played -s as s
        self.seed = seed

    def error(self, message: str, **where: Any) -> ReplayError:
        return ReplayError(message, source=self.source, **where)

    def start(self, env_fn: Callable[..., raw_env]) -> raw_env:
        try:
            env = env_fn(max_players=self.data.get("max_players"), **self.config.to_dict())
        except (ValueError, TypeError) as exc:
            raise self.error(f"config is invalid: {exc}", field="max_players") from None
        try:
            env.reset(seed=self.seed, options={"deals": self.data["deals"]})
        except (ValueError, TypeError) as exc:
            raise self.error(f"deals are invalid: {exc}", field="deals") from None
        return env

    def apply(self, env: raw_env, k: int, move: Move) -> None:
        """Play move ``k``; a :class:`ReplayError` naming the step when it does not fit."""
        agent, action, illegal = move
        if env.phase() == "done":
            raise self.error(f"step {k}: the match is already over, but the replay goes on",
                             step=k)
        if agent != env.agent_selection:
            raise self.error(f"step {k}: the replay says {agent!r} acts, but it is "
                             f"{env.agent_selection!r}'s turn", step=k)
        legal = E.legal_mask(env.engine_state)
        is_legal = 0 <= action < NUM_ACTIONS and legal >> action & 1
        if illegal:
            if is_legal or not 0 <= action < NUM_ACTIONS:
                why = "legal" if is_legal else "outside the action space"
                raise self.error(f"step {k}: field 'illegal_move' says action {action} by "
                                 f"{agent} ended the match, but it is {why}", step=k,
                                 field="illegal_move")
            env._end_by_illegal(agent, action, warn=False)
            return
        if not is_legal:
            try:
                what = describe(action)
            except ValueError:
                what = "out of range"
            names = ", ".join(describe(a) for a in env.legal_actions())
            raise self.error(f"step {k}: action {action} ({what}) by {agent} is not legal "
                             f"(legal: {names})", step=k)
        env.step(action)

    def finish(self, env: raw_env, stacklevel: int = 4) -> ReplayCheck:
        """After the last move: the deals, the end, the scores and the digest must match."""
        data = self.data
        played = len(env.deals)
        if played != len(data["deals"]):
            raise self.error(f"field 'deals' holds {len(data['deals'])} deals but the actions "
                             f"play {played} rounds", field="deals")
        done = env.engine_state.phase == E.DONE
        ill = env.illegal_move
        self._check_end(env, done)
        verified = ["actions", "deals", "illegal_move"]
        if "finished" in data:
            verified.append("finished")
        unverified: tuple[str, ...] = ()
        if self.version == REPLAY_VERSION:
            self._check_record(env)
            verified += ["partial", "scores", "digest"]
        else:
            unverified = ("scores", "digest")
        check = ReplayCheck(self.source, self.version, len(self.moves), done,
                            not done and ill is None, ill, tuple(verified), unverified)
        if unverified:
            warnings.warn(ReplayWarning(
                f"replay{f' {self.source}' if self.source else ''} is a version "
                f"{self.version} file: its moves are legal"
                + (" and its 'finished' flag holds" if "finished" in data else "")
                + ", but it records no final scores and no digest, so a legal move swapped for "
                  "another cannot be detected" + ("" if "finished" in data else
                                                  ", nor whether it was cut short")),
                stacklevel=stacklevel)
        return check

    def _check_end(self, env: raw_env, done: bool) -> None:
        data = self.data
        claimed = data.get("finished")
        if claimed is None:
            return
        if claimed and not done:
            s = env.engine_state
            where = (f"the match ended by an illegal move at step {len(self.moves) - 1}"
                     if env.illegal_move else
                     f"its {len(self.moves)} moves stop in round {s.round_idx + 1} of "
                     f"{self.config.num_rounds} ({env.phase()}, {env.agent_selection} to act)")
            raise self.error(f"field 'finished' says every round was played, but {where}; a "
                             f"replay saved before the end says \"finished\": false"
                             + (", \"partial\": true" if self.version > 1 else ""),
                             field="finished")
        if not claimed and done:
            raise self.error("field 'finished' says the match is not over, but its moves play "
                             "every round", field="finished")

    def _check_record(self, env: raw_env) -> None:
        data = self.data
        expected = env.to_replay()
        for key in ("config", "max_players", "seed", "deals", "actions", "illegal_move"):
            if data[key] != expected[key]:
                raise self.error(f"field {key!r} is not what the play records: the file has "
                                 f"{_short(data[key])}, the play {_short(expected[key])}",
                                 field=key)
        if data["partial"] != expected["partial"]:
            raise self.error(
                f"field 'partial' is {str(data['partial']).lower()}, but the match "
                + ("goes on after the last move" if expected["partial"] else
                   "is over after the last move"), field="partial")
        if data["scores"] != expected["scores"]:
            raise self.error(f"field 'scores' is {data['scores']}, but the moves give "
                             f"{expected['scores']}", field="scores")
        if data["digest"] != expected["digest"]:
            raise self.error(f"field 'digest' does not match the play ({data['digest'][:19]}... "
                             f"in the file, {expected['digest'][:19]}... replayed): the file was "
                             f"changed after it was written (its config, seed, deals or "
                             f"actions)", field="digest")


def _short(x: Any, limit: int = 100) -> str:
    text = json.dumps(x)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _verify(plan: _Plan) -> ReplayCheck:
    env = plan.start(raw_env)
    for k, move in enumerate(plan.moves):
        plan.apply(env, k, move)
    return plan.finish(env)


def check_replay(data: Mapping[str, Any] | str | os.PathLike[str], *,
                 source: str | os.PathLike[str] | None = None) -> ReplayCheck:
    """Play a replay (a dict or a path) through and return what it proved; a
    :class:`ReplayError` when it does not replay."""
    return _verify(_Plan(data, source))


def iter_replay(data: Mapping[str, Any] | str | os.PathLike[str],
                env_fn: Callable[..., raw_env] = raw_env, *,
                source: str | os.PathLike[str] | None = None
                ) -> Iterator[tuple[int, raw_env]]:
    """Yield ``(step, env)`` before each move (:func:`replay_moves`) and once more at the end
    (``step == len(moves)``); the env is the same object, stepped in place, and carries
    ``replay_check`` at the end. The whole replay is checked when this is called, before
    anything is yielded: a :class:`ReplayError` (naming ``source``, or the file
    :func:`load_replay` read) when it does not replay."""
    plan = _Plan(data, source)
    check = _verify(plan)
    return _steps(plan, check, env_fn)


def _steps(plan: _Plan, check: ReplayCheck, env_fn: Callable[..., raw_env]
           ) -> Iterator[tuple[int, raw_env]]:
    env = plan.start(env_fn)
    for k, move in enumerate(plan.moves):
        yield k, env
        plan.apply(env, k, move)
    env.replay_check = check
    yield len(plan.moves), env


def replay(data: Mapping[str, Any] | str | os.PathLike[str],
           env_fn: Callable[..., raw_env] = raw_env) -> raw_env:
    """Play a replay (a dict or a path) to its end and return the environment, with
    ``env.replay_check`` (a :class:`ReplayCheck`) saying what was verified."""
    plan = _Plan(data, None)
    env = plan.start(env_fn)
    for k, move in enumerate(plan.moves):
        plan.apply(env, k, move)
    env.replay_check = plan.finish(env, stacklevel=3)
    return env


def partial_replay(data: Mapping[str, Any] | str | os.PathLike[str], num_moves: int
                   ) -> dict[str, Any]:
    """The first ``num_moves`` moves of a replay as a (version 2) partial replay, sealed with
    its own scores and digest; the whole replay is checked first. ``num_moves`` equal to the
    number of moves gives the whole replay."""
    plan = _Plan(data, None)
    _verify(plan)
    if not _is_int(num_moves) or not 0 <= num_moves <= len(plan.moves):
        raise ValueError(f"num_moves must be an integer in 0..{len(plan.moves)}, got "
                         f"{num_moves!r}")
    env = plan.start(raw_env)
    for k, move in enumerate(plan.moves[:num_moves]):
        plan.apply(env, k, move)
    return env.to_replay()


__all__ = ["ReplayError", "ReplayWarning", "ReplayCheck", "ReplayData", "Move", "FIELDS",
           "VERSIONS", "build_replay", "exact_scores", "replay_digest", "load_replay",
           "replay_moves", "check_replay", "iter_replay", "replay", "partial_replay"]
