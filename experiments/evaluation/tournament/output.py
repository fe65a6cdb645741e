"""A tournament's output folder: ``config.json``, ``results.jsonl`` appended as matches finish,
resuming a stopped run, partial reports, and :func:`run_tournament`, which plays a tournament
into its folder."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from dragons_egg.experiments.common.runs import write_atomically
from dragons_egg_env.extras import require

from .config import TournamentConfig
from .report import jsonable, markdown_report, plot_summary
from .runner import AgentFailed, TournamentStopped, run_matches
from .schedule import match_key, match_seats, match_tasks
from .stats import summarize


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
    probe = out
    while not probe.exists() and probe.parent != probe:  # the nearest existing ancestor
        probe = probe.parent
    if probe == out and probe.exists() and not probe.is_dir():
        raise OutputError(f"output folder {str(out)!r} is an existing file, not a folder")
    if not probe.is_dir():
        raise OutputError(f"cannot create output folder {str(out)!r}: {str(probe)!r} is not "
                          "a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write to output folder {str(out)!r}: {str(probe)!r} is "
                          "not writable")
    return out


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
OUTPUT_FILES = ("config.json", "results.jsonl", "summary.json", "report.md", "ratings.png",
                "head_to_head.png", "places.png")
#: The subfolder of the replays of forfeited matches (``seqS-rotR.json``).
REPLAYS = "replays"
#: The settings a resume must keep: they change the results or the summary (``workers``,
#: ``out_dir`` and ``on_agent_error`` may change).
RESUME_SETTINGS = ("agents", "num_players", "matches", "seed", "num_rounds", "rules",
                   "bootstrap", "move_timeout")


def holds_tournament(path: str | os.PathLike[str]) -> bool:
    """Whether the folder holds a tournament's files (``config.json`` or ``results.jsonl``)."""
    out = Path(path)
    return (out / "config.json").exists() or (out / "results.jsonl").exists()


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
    defaults = {f.name: f.default if f.default is not MISSING else f.default_factory()
                for f in fields(TournamentConfig) if f.name != "agents"}
    now = tc.to_json()
    out = {}
    for key in RESUME_SETTINGS:
        old = plain(saved.get(key, defaults.get(key)))
        new = plain(now[key])
        if old != new:
            out[key] = (old, new)
    return out


def load_results(tc: TournamentConfig, path: str | os.PathLike[str]
                 ) -> tuple[list[dict[str, Any]], int | None]:
    """The finished matches in a folder's ``results.jsonl``, checked against ``tc`` (every
    line a match of this tournament, once), and, when the file ends in an unfinished line (a
    run killed while it wrote), the length of its whole lines (else ``None``)."""
    file = Path(path) / "results.jsonl"
    if not file.exists():
        return [], None
    data = file.read_bytes()
    cut = None
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        data = data[:cut]
    planned = set(match_tasks(tc))
    seen: dict[tuple[int, int], int] = {}
    results = []
    for i, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        where = f"cannot resume: {file} line {i}"
        try:
            r = json.loads(line)
            key = (r["sequence"], r["rotation"])
        except (ValueError, TypeError, KeyError):
            raise OutputError(f"{where} is not a match result") from None
        if key not in planned:
            raise OutputError(f"{where} is a match (sequence, rotation) {key} that this "
                              "tournament does not plan")
        if key in seen:
            raise OutputError(f"{where} repeats the match of line {seen[key]} {key}")
        if r.get("seats") != match_seats(tc, *key) or not isinstance(r.get("rounds"), list):
            raise OutputError(f"{where} does not match the tournament's line-up (seats "
                              f"{r.get('seats')!r}, expected {match_seats(tc, *key)!r})")
        sitting = r.get("sitting", 1)
        if not isinstance(sitting, int) or isinstance(sitting, bool) or sitting < 1:
            raise OutputError(f"{where} has sitting {sitting!r}: the run that played it is "
                              "counted 1, 2, ... (a whole number from 1)")
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
        path = self.out / "results.jsonl"
        if self.resume:
            if self.cut is not None:  # drop an unfinished last line before appending
                os.truncate(path, self.cut)
                self.cut = None
            self.file = open(path, "a", encoding="utf-8")
            return
        if self.overwrite:
            for name in OUTPUT_FILES:
                (self.out / name).unlink(missing_ok=True)
            for old in (self.out / REPLAYS).glob("seq*-rot*.json"):
                old.unlink()
        write_atomically(self.out / "config.json", json.dumps(self.tc.to_json(), indent=1))
        self.file = open(path, "w", encoding="utf-8")

    def keep_replay(self, r: dict[str, Any]) -> dict[str, Any]:
        """A forfeit's replay saved in :data:`REPLAYS`, its path in the record."""
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
        self.file.write(json.dumps(r) + "\n")
        self.file.flush()
        self.results.append(r)

    def close(self) -> None:
        if self.file is not None:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            self.file = None

    def finish(self) -> dict[str, Any]:
        """Close ``results.jsonl`` and write ``summary.json``, ``report.md`` and the plots
        from every finished match (partial when some are missing); a complete run's results
        are rewritten in match order."""
        self.open()
        self.close()
        self.results, _ = load_results(self.tc, self.out)  # what the file holds, exactly
        results = sorted(self.results, key=match_key)
        if len(results) == self.planned:  # in match order, replacing the file in one step
            write_atomically(self.out / "results.jsonl",
                          "".join(json.dumps(r) + "\n" for r in results))
        if results:
            summary = summarize(self.tc, results)
            plots = plot_summary(summary, self.out)
        else:
            summary = {"matches": 0, "planned": self.planned, "partial": True, "forfeits": []}
            plots = []
        write_atomically(self.out / "summary.json", json.dumps(jsonable(summary), indent=1))
        write_atomically(self.out / "report.md", markdown_report(self.tc, summary, plots))
        return summary

    def stopped(self, exc: BaseException) -> None:
        """The run stopped early: keep the failing match's replay, write the partial report
        (when anything was written) and note on ``exc`` where the finished matches are."""
        if isinstance(exc, AgentFailed):
            exc.record = self.keep_replay(exc.record)
            exc.record["forfeit"]["replay"] = str(self.out / exc.record["forfeit"]["replay"])
        if self.file is None and not self.resume and not isinstance(
                exc, (KeyboardInterrupt, TournamentStopped)):
            return  # a mistake before any match finished: nothing to keep
        try:
            self.finish()
        finally:
            exc.tournament_saved = SavedRun(str(self.out), len(self.results), self.planned)


@dataclass(frozen=True)
class SavedRun:
    """Where a tournament that stopped early keeps its finished matches (set as
    ``tournament_saved`` on the exception that stopped it)."""

    out_dir: str
    finished: int
    planned: int


def run_tournament(tc: TournamentConfig, progress: bool = True,
                   start_method: str | None = None, *, resume: bool = False,
                   overwrite: bool = False) -> dict[str, Any]:
    """Play, summarize and (with ``out_dir``) write results.jsonl (as matches finish),
    config.json, summary.json, report.md and the plots. Returns the summary. The output
    folder is checked before any match is played: one that holds a tournament is refused
    unless ``resume`` (play only its missing matches, with its saved settings) or
    ``overwrite`` (:class:`OutputError`); so are the ``experiments`` extra's modules the
    summary needs (openskill; matplotlib for the plots), a
    :class:`~dragons_egg_env.extras.MissingExtraError` otherwise. A run that stops early
    (Ctrl-C, :class:`TournamentStopped`, an agent that fails to build) writes a partial
    summary and report of the matches that finished, and its exception carries a
    :class:`SavedRun` as ``tournament_saved``."""
    require("run_tournament", "experiments",
            only=("openskill", "matplotlib") if tc.out_dir else ("openskill",))
    tc.validate()
    if not tc.out_dir:
        if resume or overwrite:
            raise ValueError("resume and overwrite need an output folder (out_dir)")
        return summarize(tc, run_matches(tc, progress=progress, start_method=start_method))
    if resume and overwrite:
        raise ValueError("resume and overwrite exclude each other")
    log = _Log(tc, check_out_dir(tc.out_dir), resume, overwrite)
    try:
        run_matches(tc, progress=progress, start_method=start_method, done=log.done(),
                    on_result=log.add)
    except BaseException as exc:
        log.stopped(exc)
        raise
    try:
        return log.finish()
    except BaseException as exc:  # Ctrl-C while the report is written: the matches are kept
        exc.tournament_saved = SavedRun(str(log.out), len(log.results), log.planned)
        raise
