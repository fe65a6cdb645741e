"""The folder ``dragons-egg serve --root`` serves, and what it holds: replays, tournaments and
training runs.

Every path the browser names is relative to the root and is resolved by
:func:`resolve_under`, which refuses an absolute path, a ``..`` part and anything that
resolves (through symlinks) outside the root, with an :class:`OutsideRoot` error. The listing
(:func:`scan_root`) follows no symlinked folder and lists no symlinked file that leads out.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from dragons_egg.experiments.evaluation.tournament.output import (
    OutputError,
    read_result_lines,
    results_file,
)

#: Folders the listing never enters (virtual environments, caches, version control).
SKIPPED = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache",
           ".pytest_cache", ".hypothesis", "site-packages"}
#: The most files the listing looks at (a root with more is listed in part, and says so).
MAX_FILES = 20000
_REPLAY_MARK = b'"dragons-egg-replay"'
_DRIVE = re.compile(r"^[A-Za-z]:")


class OutsideRoot(ValueError):
    """A path that is not inside the served folder (absolute, with ``..``, or leading out
    through a symlink)."""


def resolve_under(root: Path, rel: str) -> Path:
    """The file or folder ``rel`` (a path relative to ``root``, with ``/``) resolved, checked
    to lie inside ``root``; :class:`OutsideRoot` otherwise."""
    if not isinstance(rel, str) or not rel.strip():
        raise OutsideRoot("no path given")
    if rel.startswith(("/", "\\")) or _DRIVE.match(rel) or os.path.isabs(rel):
        raise OutsideRoot(f"{rel!r} is an absolute path: name a path inside the served folder")
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    if ".." in parts:
        raise OutsideRoot(f"{rel!r} climbs out with '..': name a path inside the served "
                          "folder")
    base = root.resolve()
    target = (base / rel).resolve()
    if target != base and base not in target.parents:
        raise OutsideRoot(f"{rel!r} leads outside the served folder (a symlink)")
    return target


def relative(root: Path, path: Path) -> str:
    """``path`` (inside ``root``) as the ``/`` path the pages use."""
    return path.resolve().relative_to(root.resolve()).as_posix()


def looks_like_replay(path: Path) -> bool:
    """Whether a ``.json`` / ``.json.gz`` file starts like a replay (its ``format`` field
    among the first bytes); only the beginning is read."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                head = f.read(256)
        else:
            with open(path, "rb") as f:
                head = f.read(256)
    except (OSError, EOFError, zlib.error):
        return path.name.endswith(".gz")  # a damaged one is listed: opening it says why
    return _REPLAY_MARK in head


@dataclass
class Listing:
    """What :func:`scan_root` found, as paths relative to the root."""

    replays: list[str] = field(default_factory=list)
    tournaments: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    truncated: bool = False


def _inside(base: Path, path: Path) -> bool:
    try:
        target = path.resolve()
    except OSError:
        return False
    return target == base or base in target.parents


def scan_root(root: Path) -> Listing:
    """The replays (outside tournament folders), tournament folders (``config.json`` with
    results) and training runs (``eval.csv``) under ``root``, sorted."""
    base = root.resolve()
    out = Listing()
    seen = 0
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.startswith("."))
        here = Path(folder)
        names = set(files)
        rel = here.relative_to(base).as_posix()
        if "config.json" in names and ({"results.jsonl", "results.jsonl.gz"} & names):
            out.tournaments.append(rel)
        if "eval.csv" in names:
            out.runs.append(rel)
        in_tournament = here.name == "replays" and (here.parent / "config.json").is_file()
        for name in sorted(files):
            seen += 1
            if seen > MAX_FILES:
                out.truncated = True
                return out
            if in_tournament or not (name.endswith(".json") or name.endswith(".json.gz")):
                continue
            if name in ("config.json", "summary.json", "config_history.json"):
                continue
            path = here / name
            if _inside(base, path) and looks_like_replay(path):
                out.replays.append(relative(base, path))
    return out


def tournament_matches(folder: Path) -> list[dict[str, Any]]:
    """A tournament folder's matches, in match order: sequence, rotation, seats, scores and
    the replay's path in the folder (``None`` when the match kept none)."""
    if results_file(folder) is None:
        raise OutputError(f"{folder.name} holds no results")
    rows = []
    for r in read_result_lines(folder):
        forfeit = r.get("forfeit") or {}
        replay = r.get("replay") if isinstance(r.get("replay"), str) else (
            forfeit.get("replay") if isinstance(forfeit.get("replay"), str) else None)
        rows.append({"sequence": r["sequence"], "rotation": r["rotation"],
                     "seats": r["seats"], "scores": r["scores"], "replay": replay,
                     "forfeit": bool(forfeit)})
    rows.sort(key=lambda x: (x["sequence"], x["rotation"]))
    return rows


def read_json(path: Path) -> Any:
    """A JSON file's data (``None`` when it cannot be read)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


__all__ = ["OutsideRoot", "resolve_under", "relative", "looks_like_replay", "Listing",
           "scan_root", "tournament_matches", "read_json", "SKIPPED", "MAX_FILES"]
