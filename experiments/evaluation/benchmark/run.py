"""Playing a benchmark into its folder (:func:`run_benchmark`).

The folder holds ``benchmark.json`` (what was asked: the agent, the suite and its digest, the
tier), one folder per cell of the tier, ``cells/KEY/``, with two tournaments, ``agent/`` (the
agent at line-up place 0, the population in the others) and ``reference/`` (the population
alone, on the same seed: the same deals and seeds), then ``scorecard.json``, ``scorecard.md``
and ``scorecard.png``. The folder is locked for the run; a folder that holds a benchmark is
refused unless resumed, and a resume continues every cell's tournaments where they stopped
(:func:`~..tournament.output.run_tournament` with ``resume``), to the same card.

A cell's reference tournament is the same for every agent. With ``references`` (a folder
shared between benchmarks) it is played once into
``REFERENCES/SUITE-DIGEST-TIER[-timeoutT][-stop]/KEY/`` (:func:`reference_folder`) and
read there by every later benchmark of that suite, tier and setting: a finished one is read,
checked line by line against the cell (:func:`~..tournament.output.load_results`) and not
replayed; an unfinished one is resumed. Each tournament folder has one writer at a time: a
benchmark that reaches a reference another process is playing says so once and waits for it
(:data:`REFERENCE_POLL` seconds between looks; Ctrl-C stops the wait like any run), then reads
what that process finished and plays what it left. It holds the reference folder's lock from
its check to the end of its own play, so two benchmarks never both play one reference."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dragons_egg.experiments.common.files import write_atomically
from dragons_egg.experiments.common.locks import FolderBusy, FolderLock, FolderUnwritable

from ..tournament.config import Entrant, TournamentConfig
from ..tournament.output import (
    OutputError,
    holds_tournament,
    load_results,
    prepare_out_dir,
    read_result_lines,
    read_saved_config,
    run_tournament,
    settings_differences,
)
from ..tournament.schedule import derive, match_tasks
from .card import SCHEMA, ScoreCard, SuiteRef, cell_card, headline, interval, markdown, plot
from .suite import PUBLISHED, Cell, Suite

#: Seconds between two looks at a shared reference tournament another process is playing.
REFERENCE_POLL = 5.0
_sleep = time.sleep  # the wait between looks (a test makes it hand the lock over)

#: What a benchmark folder records of its run.
MANIFEST = "benchmark.json"
CARD, CARD_MD, CARD_PNG = "scorecard.json", "scorecard.md", "scorecard.png"


@dataclass(frozen=True)
class Request:
    """A benchmark to play: the agent spec, the suite (name as given, its definition and
    digest), the tier and the tournament settings that do not change the results."""

    agent: str
    suite_name: str
    suite: Suite
    digest: str
    tier: str
    workers: int = 1
    move_timeout: float | None = None
    on_agent_error: str = "forfeit"
    #: The shared folder of reference tournaments, if any (see the module's docstring).
    references: str | None = None

    def manifest(self) -> dict[str, Any]:
        """``benchmark.json``: what a resume must keep."""
        return {"agent": self.agent, "suite": self.suite_name, "suite_digest": self.digest,
                "tier": self.tier, "move_timeout": self.move_timeout,
                "references": self.references}

    def command(self) -> str:
        """The command that makes the same card (timings aside)."""
        suite = "" if self.suite_name == "v1" else f" --suite {self.suite_name}"
        timeout = "" if self.move_timeout is None else f" --move-timeout {self.move_timeout}"
        return f"dragons-egg benchmark {self.agent}{suite} --tier {self.tier}{timeout}"


def playable(req: Request) -> tuple[list[Cell], dict[str, str]]:
    """The tier's cells the agent can play, and those it cannot (by key, with why: a
    learned policy plays tables up to the size it was trained for); an :class:`OutputError`
    when it can play none."""
    from dragons_egg.agents import table_limit

    limit = table_limit(req.agent)
    cells, skipped = [], {}
    for cell in req.suite.tier_cells(req.tier):
        if limit is not None and cell.players > limit:
            skipped[cell.key] = (f"{req.agent} plays tables of up to {limit} players (the "
                                 "size its policy was trained for)")
        else:
            cells.append(cell)
    if not cells:
        raise OutputError(f"{req.agent} can play none of the tier's cells: "
                          f"{next(iter(skipped.values()))}")
    return cells, skipped


def cell_configs(req: Request, cell: Cell, out: Path) -> tuple[TournamentConfig,
                                                                TournamentConfig]:
    """The cell's two tournaments: the agent's and the population's own (reference)."""
    ref = req.suite.reference_lineup(cell)
    common: dict[str, Any] = dict(
        num_players=cell.players, matches=cell.sequences[req.tier] * cell.players,
        seed=cell.seed, num_rounds=req.suite.num_rounds, rules=dict(req.suite.rules),
        workers=req.workers, bootstrap=req.suite.bootstrap, move_timeout=req.move_timeout,
        on_agent_error=req.on_agent_error)
    mine = TournamentConfig(agents=[Entrant("agent", spec=req.agent), *ref[1:]],
                            out_dir=str(out / "cells" / cell.key / "agent"), **common)
    where = (reference_folder(req, cell) if req.references is not None
             else out / "cells" / cell.key / "reference")
    theirs = TournamentConfig(agents=list(ref), out_dir=str(where), **common)
    return mine, theirs


def reference_folder(req: Request, cell: Cell) -> Path:
    """Where a cell's reference tournament lives in the shared ``req.references`` folder:
    one folder per suite digest, tier and the settings that could change its matches."""
    name = f"{req.suite.suite}-{req.digest[:16]}-{req.tier}"
    if req.move_timeout is not None:
        name += f"-timeout{req.move_timeout:g}"
    if req.on_agent_error != "forfeit":
        name += f"-{req.on_agent_error}"
    return Path(req.references or ".") / name / cell.key


def finished_reference(tc: TournamentConfig) -> bool:
    """Whether a shared reference tournament is there and finished (every planned match,
    each line checked against ``tc``); one played with other settings is an
    :class:`OutputError` naming its folder."""
    folder = Path(tc.out_dir or "")
    if not (folder / "config.json").is_file():
        return False
    diff = settings_differences(read_saved_config(folder), tc)
    if diff:
        what = "; ".join(f"{k} {v[0]!r} (this cell: {v[1]!r})" for k, v in diff.items())
        raise OutputError(f"the reference tournament in {str(folder)!r} is not this cell's: "
                          f"{what}")
    lines, cut = load_results(tc, folder)
    return cut is None and len(lines) == len(match_tasks(tc))


def shared_reference(tc: TournamentConfig, progress: bool = True,
                     say: Callable[[str], None] = print) -> None:
    """A cell's reference tournament in the shared folder: read when finished, else resumed or
    played, under the folder's lock; while another process holds that lock, wait for it
    (saying so once), then look again."""
    lock = FolderLock(tc.out_dir or "", "reference tournament folder")
    waited = False
    while True:
        try:
            lock.acquire()
            break
        except FolderUnwritable as exc:
            raise OutputError(str(exc)) from None
        except FolderBusy:
            if not waited:
                say(f"waiting for another process to finish the reference tournament in "
                    f"{tc.out_dir!r} ({lock.holder()})")
                waited = True
            _sleep(REFERENCE_POLL)
    try:
        if not finished_reference(tc):
            run_tournament(tc, progress=progress, resume=holds_tournament(tc.out_dir or ""))
    finally:
        lock.release()


def read_manifest(out: Path) -> dict[str, Any]:
    """A benchmark folder's ``benchmark.json``; an :class:`OutputError` when it has none."""
    path = out / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OutputError(f"nothing to resume in {str(out)!r}: it holds no benchmark (no "
                          f"{MANIFEST})") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise OutputError(f"cannot resume {str(out)!r}: {path} cannot be read ({exc})"
                          ) from None
    if not isinstance(data, dict) or not isinstance(data.get("agent"), str):
        raise OutputError(f"cannot resume {str(out)!r}: {path} is not a benchmark's")
    return data


def run_benchmark(req: Request, out_dir: str | os.PathLike[str], *, resume: bool = False,
                  progress: bool = True, say: Callable[[str], None] = print) -> ScoreCard:
    """Play the tier's cells into ``out_dir`` and write the score card (see the module's
    docstring); returns it. A folder that holds a benchmark is refused unless ``resume``, and
    a resume with another agent, suite or tier is refused (:class:`OutputError`). A run
    stopped early (Ctrl-C, an agent failing with ``on_agent_error="stop"``) keeps every
    finished match; resuming it gives the same card."""
    out = Path(out_dir)
    for cell in playable(req)[0]:  # every agent spec and setting, before play
        cell_configs(req, cell, out)
    prepare_out_dir(out)
    lock = FolderLock(out, "benchmark folder")
    try:
        lock.acquire()
    except (FolderBusy, FolderUnwritable) as exc:
        raise OutputError(str(exc)) from None
    try:
        if resume:
            saved = read_manifest(out)
            diff = {k: (saved.get(k), v) for k, v in req.manifest().items()
                    if saved.get(k) != v}
            if diff:
                what = "; ".join(f"{k} {v[1]!r} (saved: {v[0]!r})" for k, v in diff.items())
                raise OutputError(f"cannot resume {str(out)!r} with other settings: {what}")
        elif (out / MANIFEST).exists() or (out / "cells").exists():
            raise OutputError(f"output folder {str(out)!r} already holds a benchmark: resume "
                              f"it with --resume {out}, or choose another --out")
        else:
            write_atomically(out / MANIFEST, json.dumps(req.manifest(), indent=1) + "\n")
        return _play(req, out, progress, say)
    finally:
        lock.release()


def _play(req: Request, out: Path, progress: bool, say: Callable[[str], None]) -> ScoreCard:
    cells, skipped = playable(req)
    if skipped:
        say(f"{len(skipped)} of the tier's {len(cells) + len(skipped)} cells are left out: "
            f"{next(iter(skipped.values()))}")
    cards, timing = [], {}
    for i, cell in enumerate(cells, 1):
        mine, theirs = cell_configs(req, cell, out)
        say(f"cell {i}/{len(cells)} {cell.key}: {cell.sequences[req.tier]} deal sequences, "
            f"{mine.num_sequences * cell.players} matches each for the agent and the "
            "reference")
        summary = run_tournament(mine, progress=progress,
                                 resume=holds_tournament(mine.out_dir or ""))
        if req.references is None:
            run_tournament(theirs, progress=progress,
                           resume=holds_tournament(theirs.out_dir or ""))
        else:
            shared_reference(theirs, progress, say)
        a_lines = read_result_lines(mine.out_dir or "")
        r_lines = read_result_lines(theirs.out_dir or "")
        cards.append(cell_card(cell, summary, a_lines, r_lines, req.suite.bootstrap))
        timing[cell.key] = summary.timing.ms_per_move.get("agent")
    head = headline([c.differences for c in cards], req.suite.bootstrap,
                    derive(cells[0].seed, len(cells), 3))
    card = ScoreCard(
        schema=SCHEMA, suite=SuiteRef(name=req.suite.suite, version=req.suite.version,
                                      digest=req.digest,
                                      published=PUBLISHED.get(req.suite_name) == req.digest),
        tier=req.tier, agent=req.agent, command=req.command(), cells=cards,
        headline=interval(head), timing=timing, not_played=skipped).sealed()
    write_atomically(out / CARD, card.to_text())
    write_atomically(out / CARD_MD, markdown(card))
    plot(card, out / CARD_PNG)
    return card
