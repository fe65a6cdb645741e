"""A tournament's output folder: ``config.json``, ``results.jsonl`` appended as matches finish,
resuming a stopped run, partial reports, :func:`run_tournament`, which plays a tournament
into its folder, and :func:`compress_results`, which keeps a finished folder's lines as
``results.jsonl.gz``.

Compressed lines. A finished tournament's ``results.jsonl`` may be kept as
``results.jsonl.gz`` (:func:`compress_results`, ``dragons-egg tournament compress DIR``):
every reader (:func:`load_results`, :func:`read_result_lines`, the comparison of two
tournaments) reads the ``.gz`` when ``results.jsonl`` is absent, and refuses a folder that
holds both (an :class:`OutputError` naming both). A resume of a folder that holds only the
``.gz`` decompresses it into ``results.jsonl`` (removing the ``.gz``) and goes on as usual:
missing matches are played and the summary and report rewritten; compress it again after."""

from __future__ import annotations

import gzip
import json
import math
import os
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from dragons_egg.experiments.common.files import (
    atomic_path,
    disk_full,
    write_atomically,
    write_whole,
    writing,
)
from dragons_egg.experiments.common.locks import FolderBusy, FolderLock, FolderUnwritable
from dragons_egg_env.config import ConfigError, RulesConfig
from dragons_egg_env.extras import require

from .config import TournamentConfig
from .records import DigestChain, RecordError, line_digest, parse_line
from .report import markdown_report, plot_summary
from .result import TournamentResult
from .runner import AgentFailed, TournamentStopped, run_matches
from .schedule import match_key, match_seats, match_tasks
from .summary import summarize

#: A tournament's per-match lines, and the same compressed (:func:`compress_results`).
RESULTS = "results.jsonl"
RESULTS_GZ = "results.jsonl.gz"


def write_results(path: Path, results: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")


class OutputError(ValueError):
    """An output folder that cannot be created or written."""


def check_out_dir(path: str | os.PathLike[str]) -> Path:
    """Check, without creating anything, that ``path`` is or can become a folder we may write
    in; an :class:`OutputError` with a one-line reason otherwise."""
    out = Path(path)
    limit = _name_max(out)
    long = [part for part in out.parts if len(os.fsencode(part)) > limit]
    if long:
        raise OutputError(f"output folder {str(out)[:80]!r}...: the name {long[0][:40]!r}... "
                          f"is {len(os.fsencode(long[0]))} bytes long, longer than the "
                          f"{limit} this file system allows")
    probe = out
    try:
        while not probe.exists() and probe.parent != probe:  # the nearest existing ancestor
            probe = probe.parent
    except OSError as exc:
        raise OutputError(f"cannot use output folder {str(out)!r}: {exc.strerror or exc}"
                          ) from None
    if probe == out and probe.exists() and not probe.is_dir():
        raise OutputError(f"output folder {str(out)!r} is an existing file, not a folder")
    if not probe.is_dir():
        raise OutputError(f"cannot create output folder {str(out)!r}: {str(probe)!r} is not "
                          "a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write to output folder {str(out)!r}: {str(probe)!r} is "
                          "not writable")
    return out


def _name_max(path: Path) -> int:
    """The longest file name (bytes) the file system of ``path``'s nearest existing
    ancestor allows (255 where it does not say)."""
    probe = path
    while probe.parent != probe and not os.path.isdir(probe):
        probe = probe.parent
    try:
        return int(os.pathconf(probe, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return 255


def prepare_out_dir(path: str | os.PathLike[str]) -> Path:
    """Create the output folder (and its parents) and check that files can be written in it;
    an :class:`OutputError` with a one-line reason otherwise."""
    out = check_out_dir(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise OutputError(f"cannot write to output folder {str(out)!r}: "
                          f"{exc.strerror or exc}") from None
    return out


#: The files a tournament writes in its output folder (``--overwrite`` replaces exactly
#: these, and the replays of forfeited matches in :data:`REPLAYS`).
OUTPUT_FILES = ("config.json", RESULTS, RESULTS_GZ, "summary.json", "report.md",
                "ratings.png", "head_to_head.png", "places.png")
#: The subfolder of the replays of forfeited matches (``seqS-rotR.json``) and, with
#: ``save_replays``, of every other match (``seqS-rotR.json.gz``, deterministic gzip).
REPLAYS = "replays"
#: The settings a resume must keep: they change the results or the summary (``workers``,
#: ``out_dir`` and ``on_agent_error`` may change).
RESUME_SETTINGS = ("agents", "num_players", "matches", "seed", "num_rounds", "rules",
                   "bootstrap", "move_timeout", "save_replays")


def holds_tournament(path: str | os.PathLike[str]) -> bool:
    """Whether the folder holds a tournament's files (``config.json``, ``results.jsonl`` or
    ``results.jsonl.gz``)."""
    out = Path(path)
    return any((out / name).exists() for name in ("config.json", RESULTS, RESULTS_GZ))


def results_file(path: str | os.PathLike[str]) -> Path | None:
    """The file of a folder's per-match lines: ``results.jsonl``, else ``results.jsonl.gz``,
    else ``None``; an :class:`OutputError` when both are there (which one is right?)."""
    out = Path(path)
    plain_file, packed = out / RESULTS, out / RESULTS_GZ
    if plain_file.exists() and packed.exists():
        raise OutputError(f"{str(out)!r} holds both {RESULTS} and {RESULTS_GZ}: keep one "
                          f"(remove {packed} if {plain_file} is the newer)")
    if plain_file.exists():
        return plain_file
    return packed if packed.exists() else None


def _read_bytes(file: Path) -> bytes:
    if file.name != RESULTS_GZ:
        return file.read_bytes()
    try:
        return gzip.decompress(file.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise OutputError(f"{file} cannot be decompressed ({exc})") from None


def read_result_lines(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The per-match lines of a folder (``results.jsonl`` or ``results.jsonl.gz``) as they
    are saved, without checking them against a config (an unfinished last line is left
    out); an :class:`OutputError` naming the file and line when one is not a match's
    result, or when the folder holds none."""
    file = results_file(path)
    if file is None:
        raise OutputError(f"{str(path)!r} holds no tournament results ({RESULTS} or "
                          f"{RESULTS_GZ})")
    data = _read_bytes(file)
    return [r for _, r in _checked_lines(file, data[:data.rfind(b"\n") + 1], str(file))]


def _checked_lines(file: Path, data: bytes, prefix: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` of each line of ``data`` (whole lines), every one checked
    against the record schema and its digest (:func:`.records.parse_line`); a line without a
    digest after one with a digest is refused too (its digest was removed). An
    :class:`OutputError` names the file and line (``prefix`` starts the message)."""
    chain = DigestChain()
    for i, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        where = f"{prefix} line {i}"
        try:
            r = parse_line(line, where)
            chain.check(r, i, where)
        except RecordError as exc:
            raise OutputError(str(exc)) from None
        yield i, r


def refuse_foreign(out: Path) -> None:
    """An :class:`OutputError` when the folder's ``config.json`` is not a tournament's (a
    training run's, say): a tournament there would replace it."""
    cfg = out / "config.json"
    if not cfg.is_file():
        return
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        data = None
    if not (isinstance(data, dict) and isinstance(data.get("agents"), list)
            and "num_players" in data):
        raise OutputError(f"output folder {str(out)!r} holds a config.json that is not a "
                          "tournament's: choose another folder")


def read_saved_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``config.json`` of the tournament in a folder, as saved; an :class:`OutputError`
    when there is none or it cannot be read."""
    out = Path(path)
    cfg = out / "config.json"
    if not cfg.is_file():
        raise OutputError(f"nothing to resume in {str(out)!r}: it holds no tournament "
                          "(no config.json)")
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise OutputError(f"cannot resume {str(out)!r}: {cfg} cannot be read "
                          f"({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list):
        raise OutputError(f"cannot resume {str(out)!r}: {cfg} is not a tournament's config "
                          "(no list of agents)")
    return data


def plain(x: Any) -> Any:
    return json.loads(json.dumps(x))


def settings_differences(saved: dict[str, Any], tc: TournamentConfig
                         ) -> dict[str, tuple[Any, Any]]:
    """The settings of :data:`RESUME_SETTINGS` in which ``tc`` differs from a saved
    ``config.json``: name -> (saved, asked). A setting missing from an older file counts as
    its default."""
    defaults = config_defaults()
    now = tc.to_json()
    out = {}
    for key in RESUME_SETTINGS:
        old = plain(saved.get(key, defaults.get(key)))
        new = plain(now.get(key, defaults.get(key)))
        if key == "rules" and same_rules(old, new, tc.num_players, tc.num_rounds):
            continue  # e.g. a default flag saved explicitly
        if old != new:
            out[key] = (old, new)
    return out


def config_defaults() -> dict[str, Any]:
    """Every setting's default (``rules``: ``{}``), for a key missing from an older
    ``config.json``."""
    out = {}
    for f in fields(TournamentConfig):
        if f.name == "agents" or not f.init:
            continue
        make = f.default_factory
        out[f.name] = f.default if f.default is not MISSING else (
            make() if callable(make) else None)
    return out


def same_rules(a: Any, b: Any, num_players: int, num_rounds: int) -> bool:
    """Whether two saved rule-flag dicts give the same rules at this table (a flag given at
    its default is the same as one left out)."""
    try:
        ra, rb = (RulesConfig.from_kwargs({**x, "num_players": num_players,
                                           "num_rounds": num_rounds}) for x in (a, b))
    except (ConfigError, TypeError, ValueError):
        return bool(a == b)
    return ra == rb


def load_results(tc: TournamentConfig, path: str | os.PathLike[str]
                 ) -> tuple[list[dict[str, Any]], int | None]:
    """The finished matches in a folder's ``results.jsonl`` (or ``results.jsonl.gz``, see the
    module's docstring), checked against ``tc`` (every line a match of this tournament,
    once), and, when the file ends in an unfinished line (a run killed while it wrote), the
    length of its whole lines (else ``None``)."""
    file = results_file(path)
    if file is None:
        return [], None
    data = _read_bytes(file)
    cut = None
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        data = data[:cut]
    planned = set(match_tasks(tc))
    seen: dict[tuple[int, int], int] = {}
    results = []
    for i, r in _checked_lines(file, data, f"cannot resume: {file}"):
        where = f"cannot resume: {file} line {i}"
        key = (r["sequence"], r["rotation"])
        if key not in planned:
            raise OutputError(f"{where} is a match (sequence, rotation) {key} that this "
                              "tournament does not plan")
        if key in seen:
            raise OutputError(f"{where} repeats the match of line {seen[key]} {key}")
        if r.get("seats") != match_seats(tc, *key) or not isinstance(r.get("rounds"), list):
            raise OutputError(f"{where} does not match the tournament's line-up (seats "
                              f"{r.get('seats')!r}, expected {match_seats(tc, *key)!r})")
        seen[key] = i
        results.append(r)
    return results, cut


class _Log:
    """An output folder's results: ``results.jsonl`` appended and flushed as matches finish,
    the replays of forfeits, and the summary and report, partial or not. Nothing is written
    before :meth:`open` (the first result, or a stop that keeps a report)."""

    def __init__(self, tc: TournamentConfig, out: Path, resume: bool, overwrite: bool) -> None:
        self.tc, self.out, self.resume, self.overwrite = tc, out, resume, overwrite
        self.results: list[dict[str, Any]] = []
        self.cut: int | None = None
        #: which run of this folder plays now: 1, then one more for each resume (each
        #: match records it, so its time per move is read against its own sitting's)
        self.sitting = 1
        self.file: Any = None
        if resume:
            saved = read_saved_config(out)
            diff = settings_differences(saved, tc)
            if diff:
                what = "; ".join(f"{k} {json.dumps(v[1])} (saved: {json.dumps(v[0])})"
                                 for k, v in diff.items())
                raise OutputError(f"cannot resume {str(out)!r} with other settings: {what}; "
                                  "resume with the saved settings, or start a new tournament "
                                  "in another folder")
            self.results, self.cut = load_results(tc, out)
            # matches recorded before sittings were (no "sitting") count as one sitting
            self.sitting = 1 + max((r.get("sitting", 1) for r in self.results), default=0)
            return
        refuse_foreign(out)
        if holds_tournament(out) and not overwrite:
            raise OutputError(f"output folder {str(out)!r} already holds a tournament: resume "
                              "it (resume=True) or replace it (overwrite=True), or choose "
                              "another folder")

    @property
    def planned(self) -> int:
        return len(match_tasks(self.tc))

    def done(self) -> list[tuple[int, int]]:
        return [match_key(r) for r in self.results]

    def open(self) -> None:
        if self.file is not None:
            return
        prepare_out_dir(self.out)
        path = self.out / RESULTS
        if self.resume:
            packed = self.out / RESULTS_GZ
            if not path.exists() and packed.exists():  # decompress, then append as usual
                data = _read_bytes(packed)
                with atomic_path(path) as tmp:
                    tmp.write_bytes(data[:self.cut] if self.cut is not None else data)
                packed.unlink()
                self.cut = None
            if self.cut is not None:  # drop an unfinished last line before appending
                os.truncate(path, self.cut)
                self.cut = None
            self.file = open(path, "ab", buffering=0)
            return
        if self.overwrite:
            for name in OUTPUT_FILES:
                (self.out / name).unlink(missing_ok=True)
            for pattern in ("seq*-rot*.json", "seq*-rot*.json.gz"):
                for old in (self.out / REPLAYS).glob(pattern):
                    old.unlink()
        write_atomically(self.out / "config.json", json.dumps(self.tc.to_json(), indent=1))
        self.file = open(path, "wb", buffering=0)

    def keep_replay(self, r: dict[str, Any]) -> dict[str, Any]:
        """A forfeit's replay saved in :data:`REPLAYS`, its path in the record; with
        ``save_replays``, any other match's replay too, compressed (``seqS-rotR.json.gz``).
        Each is written whole (a new file renamed over the old) before the match's line, so
        a line names a replay that is there, and a resume that plays a match again writes
        the same bytes over a replay left by a run stopped before its line."""
        if isinstance(r.get("replay"), dict):
            self.open()
            rel = f"{REPLAYS}/seq{r['sequence']}-rot{r['rotation']}.json.gz"
            (self.out / REPLAYS).mkdir(exist_ok=True)
            text = json.dumps(r["replay"], indent=1).encode()
            with atomic_path(self.out / rel) as tmp, open(tmp, "wb") as fh:
                fh.write(gzip.compress(text, compresslevel=9, mtime=0))
                fh.flush()
                os.fsync(fh.fileno())
            r = {**r, "replay": rel}
        f = r.get("forfeit")
        if not f or not isinstance(f.get("replay"), dict):
            return r
        self.open()
        rel = f"{REPLAYS}/seq{r['sequence']}-rot{r['rotation']}.json"
        (self.out / REPLAYS).mkdir(exist_ok=True)
        write_atomically(self.out / rel, json.dumps(f["replay"], indent=1))
        return {**r, "forfeit": {**f, "replay": rel}}

    def add(self, r: dict[str, Any]) -> None:
        self.open()
        r = {**self.keep_replay(r), "sitting": self.sitting}
        r["digest"] = line_digest(r)  # of the line as written: damage is refused by line
        # the line whole or not at all: a full disk leaves the file at its last whole line
        write_whole(self.file, (json.dumps(r) + "\n").encode())
        self.results.append(r)

    def close(self) -> None:
        if self.file is not None:
            file, self.file = self.file, None
            try:
                with writing(self.out / RESULTS):
                    os.fsync(file.fileno())
            finally:
                file.close()

    def finish(self) -> TournamentResult:
        """Close ``results.jsonl`` and write ``summary.json``, ``report.md`` and the plots
        from every finished match (partial when some are missing); a complete run's results
        are rewritten in match order."""
        self.open()
        self.close()
        self.results, _ = load_results(self.tc, self.out)  # what the file holds, exactly
        results = sorted(self.results, key=match_key)
        if len(results) == self.planned:  # in match order, replacing the file in one step
            write_atomically(self.out / RESULTS,
                          "".join(json.dumps(r) + "\n" for r in results))
        summary = summarize(self.tc, results)
        plots = plot_summary(summary, self.out) if results else []
        write_atomically(self.out / "summary.json", json.dumps(summary.to_json(), indent=1))
        write_atomically(self.out / "report.md", markdown_report(self.tc, summary, plots))
        return summary

    def stopped(self, exc: BaseException) -> None:
        """The run stopped early: keep the failing match's replay, write the partial report
        (when anything was written) and note on ``exc`` where the finished matches are."""
        if isinstance(exc, AgentFailed):
            exc.record = self.keep_replay(exc.record)
            exc.record["forfeit"]["replay"] = str(self.out / exc.record["forfeit"]["replay"])
        full = disk_full(exc)
        if self.file is None and not self.resume and not full and not isinstance(
                exc, (KeyboardInterrupt, TournamentStopped)):
            return  # a mistake before any match finished: nothing to keep
        report = False
        try:
            self.finish()
            report = True
        except BaseException as late:
            if not (full and disk_full(late)):
                self.saved(late, False)
                raise
            # the disk that stopped the run refused the report too: the matches are kept
        finally:
            self.saved(exc, report)

    def saved(self, exc: BaseException, report: bool = True) -> None:
        """Note on ``exc`` where the finished matches are (:class:`SavedRun`)."""
        setattr(exc, "tournament_saved",  # noqa: B010 - any exception carries it
                SavedRun(str(self.out), len(self.results), self.planned, report))


@dataclass(frozen=True)
class SavedRun:
    """Where a tournament that stopped early keeps its finished matches (set as
    ``tournament_saved`` on the exception that stopped it)."""

    out_dir: str
    finished: int
    planned: int
    #: Whether a (partial) report of them was written (not on a disk that refused it).
    report: bool = True


def run_tournament(tc: TournamentConfig, progress: bool = True,
                   start_method: str | None = None, *, resume: bool = False,
                   overwrite: bool = False) -> TournamentResult:
    """Play, summarize and (with ``out_dir``) write results.jsonl (as matches finish),
    config.json, summary.json, report.md and the plots. Returns the
    :class:`~.result.TournamentResult` (``summary.json`` holds its
    :meth:`~.result.TournamentResult.to_json`). The config was checked when it was built
    (:class:`~.config.TournamentConfig`): it is not checked again. The output
    folder is checked before any match is played: one that holds a tournament is refused
    unless ``resume`` (play only its missing matches, with its saved settings) or
    ``overwrite`` (:class:`OutputError`); so are the ``experiments`` extra's modules the
    summary needs (openskill; matplotlib for the plots), a
    :class:`~dragons_egg_env.extras.MissingExtraError` otherwise. A run that stops early
    (Ctrl-C, :class:`TournamentStopped`, an agent that fails to build) writes a partial
    summary and report of the matches that finished, and its exception carries a
    :class:`SavedRun` as ``tournament_saved``."""
    require("run_tournament", "experiments",
            only=("openskill", "matplotlib", "filelock") if tc.out_dir else ("openskill",))
    if not tc.out_dir:
        if resume or overwrite:
            raise ValueError("resume and overwrite need an output folder (out_dir)")
        return summarize(tc, run_matches(tc, progress=progress, start_method=start_method))
    if resume and overwrite:
        raise ValueError("resume and overwrite exclude each other")
    out = check_out_dir(tc.out_dir)
    # one writer per folder, for the whole run: a second one (or an --overwrite of this
    # folder) is refused at once, before it reads or removes anything
    lock = FolderLock(out, "tournament folder")
    try:
        lock.acquire()
    except (FolderBusy, FolderUnwritable) as exc:
        raise OutputError(str(exc)) from None
    try:
        log = _Log(tc, out, resume, overwrite)
        try:
            run_matches(tc, progress=progress, start_method=start_method, done=log.done(),
                        on_result=log.add)
        except BaseException as exc:
            log.stopped(exc)
            raise
        try:
            return log.finish()
        except BaseException as exc:  # Ctrl-C, a full disk while the report is written:
            log.saved(exc, False)     # the matches are kept
            raise
    finally:
        lock.release()


def compress_results(path: str | os.PathLike[str]) -> Path:
    """Keep a finished tournament's per-match lines as ``results.jsonl.gz`` in place of
    ``results.jsonl``, and return its path. Deterministic: the gzip header holds no time
    (``mtime=0``) and no file name, so the same lines give the same bytes. Refused, with an
    :class:`OutputError` naming the reason, for a folder that holds no tournament, one
    already compressed (or holding both files), and one not finished: every planned match
    once, no unfinished last line, and a ``summary.json`` that is not partial."""
    out = Path(path)
    saved = read_saved_config(out)
    file = results_file(out)
    if file is None:
        raise OutputError(f"cannot compress {str(out)!r}: it holds no {RESULTS}")
    if file.name == RESULTS_GZ:
        raise OutputError(f"cannot compress {str(out)!r}: its lines are compressed already "
                          f"({RESULTS_GZ})")
    data = file.read_bytes()
    if data and not data.endswith(b"\n"):
        raise OutputError(f"cannot compress {str(out)!r}: {RESULTS} ends in an unfinished "
                          "line (a run stopped while it wrote): resume it first")
    defaults = config_defaults()
    n = saved.get("num_players", defaults["num_players"])
    planned = math.ceil(saved.get("matches", defaults["matches"]) / n) * n
    keys = [(r["sequence"], r["rotation"]) for r in read_result_lines(out)]
    every = {(s, r) for s in range(planned // n) for r in range(n)}
    if len(keys) != planned or set(keys) != every:
        raise OutputError(f"cannot compress {str(out)!r}: it holds {len(set(keys) & every)} of "
                          f"its {planned} matches (an unfinished tournament): resume it first")
    summary_file = out / "summary.json"
    try:
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        summary = None
    if not isinstance(summary, dict) or summary.get("partial"):
        raise OutputError(f"cannot compress {str(out)!r}: its summary.json is missing or "
                          "partial: resume it first")
    packed = out / RESULTS_GZ
    with atomic_path(packed) as tmp, open(tmp, "wb") as f:
        f.write(gzip.compress(data, compresslevel=9, mtime=0))
        f.flush()
        os.fsync(f.fileno())
    file.unlink()
    return packed
