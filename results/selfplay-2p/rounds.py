"""Where a tournament's margin comes from, round by round: the agent's rounds won (2 players) or
its seats' mean round reward (more), per round of the match.

    python results/selfplay-2p/rounds.py AGENT_PREFIX TOURNAMENT_DIR [TOURNAMENT_DIR ...]

AGENT_PREFIX picks the agent's seats by the start of their spec (``ppo`` picks
``ppo:path=...``). Round 1 has no tribute; rounds 2 and 3 open with it (R30..R34). At 2 players
the rounds after the first are also split by who won the round before: its winner is that
round's Dragon, who asks (R31), its loser the Egg holder, who pays. Two folders played on the
same seed have the same deal sequences, so their rows pair; the script prints, for the later
folders, their figures over the matches the first one also played.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np


def matches(folder: Path) -> dict[tuple[int, int], dict]:
    """The tournament's matches by (deal sequence, seat rotation)."""
    with open(folder / "results.jsonl") as f:
        rows = [json.loads(line) for line in f]
    return {(r["sequence"], r["rotation"]): r for r in rows}


def seats(match: dict, prefix: str) -> list[int]:
    """The seats the agent plays."""
    found = [i for i, spec in enumerate(match["seats"]) if spec.startswith(prefix)]
    if not found:
        raise SystemExit(f"no seat of match {match['sequence']} is played by {prefix!r}: "
                         f"{match['seats']}")
    return found


def report(name: str, rows: list[dict], prefix: str) -> None:
    n = len(rows[0]["seats"])
    cells: dict[str, list[float]] = defaultdict(list)
    for m in rows:
        mine = seats(m, prefix)
        won_before = None
        for k, rnd in enumerate(m["rounds"]):
            if n == 2:
                won = float(rnd["order"][0] == mine[0])
                cells[f"round {k + 1}"].append(won)
                if won_before is not None:
                    role = "Dragon" if won_before else "Egg holder"
                    cells[f"round {k + 1}, {prefix} the {role}"].append(won)
                won_before = won
            else:
                cells[f"round {k + 1}"].append(float(np.mean([rnd["rewards"][i] for i in mine])))
    what = "share of rounds won" if n == 2 else "mean round reward of its seats"
    print(f"{name}: {len(rows)} matches, {n} players; {prefix}'s {what} "
          "[95% normal interval]")
    for key in sorted(cells):
        v = np.asarray(cells[key])
        half = 1.96 * v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan")
        print(f"  {key:<40} {v.mean():+.3f} [{v.mean() - half:+.3f}, {v.mean() + half:+.3f}]"
              f"  ({len(v)})")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    prefix, folders = argv[0], [Path(a) for a in argv[1:]]
    first = matches(folders[0])
    report(str(folders[0]), list(first.values()), prefix)
    for folder in folders[1:]:
        other = matches(folder)
        shared = [k for k in other if k in first]
        report(f"{folder}", [other[k] for k in shared], prefix)
        report(f"{folders[0]}, the same {len(shared)} matches", [first[k] for k in shared],
               prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
