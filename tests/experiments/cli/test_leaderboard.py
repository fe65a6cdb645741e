"""The leaderboard page is generated from the committed records (issue 48, item 3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from dragons_egg.experiments.cli import leaderboard as L  # noqa: E402
from dragons_egg.experiments.evaluation.benchmark.card import (  # noqa: E402
    CellCard,
    Interval,
    ScoreCard,
    SuiteRef,
)


def test_the_committed_page_is_what_the_records_make():
    assert L.stale_files() == [], "run python -m dragons_egg.experiments.cli.leaderboard"


def _estimate(mean: float) -> dict:
    return {"mean": mean, "low": mean - 0.1, "high": mean + 0.1, "sequences": 100}


def _exploit(root: Path, agent: str, players: int, mean: float) -> Path:
    folder = root / "results" / "exploit" / f"{agent}-{players}p"
    folder.mkdir(parents=True)
    record = {"schema": 1, "agent": agent, "players": players,
              "budget": {"asked": 4_000_000, "trained": 4_012_345},
              "exploitability": _estimate(mean),
              "control": {"opponent": "heuristic", "difference": _estimate(-1.0)},
              "curve": [], "timings": {}}
    (folder / "exploit.json").write_text(json.dumps(record))
    (folder / "curve.png").write_bytes(b"png of " + agent.encode())
    return folder


def _card(root: Path, agent: str, headline: float) -> Path:
    folder = root / "results" / "benchmark" / f"{agent}-quick"
    folder.mkdir(parents=True)
    i = Interval(mean=headline, low=headline - 0.05, high=headline + 0.05, sequences=50)
    cell = CellCard(key="2p-heuristic", players=2, population="heuristic", seed=1,
                    sequences=50, matches=100, forfeits=0, mean_score=i, mean_place=i,
                    paired_difference=i, scores=[0.0], differences=[0.0])
    card = ScoreCard(schema="dragons-egg-benchmark-card/1",
                     suite=SuiteRef(name="v1", version="1", digest="ab" * 32, published=True),
                     tier="quick", agent=agent, command=f"dragons-egg benchmark {agent}",
                     cells=[cell], headline=i, timing={"2p-heuristic": 0.001}).sealed()
    (folder / "scorecard.json").write_text(card.to_text())
    return folder


def test_the_page_lists_every_record_sorted_with_its_plots(tmp_path):
    (tmp_path / "docs").mkdir()
    _exploit(tmp_path, "ppo", 4, 0.5)
    _exploit(tmp_path, "heuristic", 2, 1.9)
    _exploit(tmp_path, "greedy", 2, 2.5)
    _card(tmp_path, "random", -2.0)
    _card(tmp_path, "heuristic", 0.25)
    assert L.stale_files(tmp_path)  # no page yet
    written = L.write(tmp_path)
    assert L.stale_files(tmp_path) == []
    page = (tmp_path / "docs" / "leaderboard.md").read_text()
    rows = [ln for ln in page.splitlines() if ln.startswith("| `")]
    assert [r.split("|")[1].strip() for r in rows] == [
        "`heuristic`", "`random`", "`greedy`", "`heuristic`", "`ppo`"]
    assert "+0.250 [+0.200, +0.300]" in rows[0] and "4,012,345" in rows[2]
    assert "| `ppo` | 4 |" in page and "`heuristic` -1.000 [-1.100, -0.900]" in rows[4]
    copies = sorted(p.name for p in (tmp_path / "docs" / "leaderboard").iterdir())
    assert copies == ["exploit-greedy-2p-curve.png", "exploit-heuristic-2p-curve.png",
                      "exploit-ppo-4p-curve.png"]
    assert tmp_path / "docs" / "leaderboard.md" in written
    assert "](leaderboard/exploit-ppo-4p-curve.png)" in page
    # a record that changes, or goes, makes the page stale; a stray copy is found too
    (tmp_path / "results" / "exploit" / "ppo-4p" / "curve.png").write_bytes(b"new")
    assert L.stale_files(tmp_path) == [tmp_path / "docs/leaderboard/exploit-ppo-4p-curve.png"]
    shutil.rmtree(tmp_path / "results" / "exploit" / "ppo-4p")
    stale = L.stale_files(tmp_path)
    assert tmp_path / "docs" / "leaderboard.md" in stale
    assert tmp_path / "docs/leaderboard/exploit-ppo-4p-curve.png" in stale


def test_a_damaged_record_is_refused_by_name(tmp_path):
    folder = _exploit(tmp_path, "ppo", 2, 0.1)
    (folder / "exploit.json").write_text(json.dumps({"schema": 1, "agent": "ppo"}))
    with pytest.raises(L.LeaderboardError, match=r"ppo-2p/exploit.json: not an exploit record"):
        L.render(tmp_path)
    card = _card(tmp_path, "greedy", 0.0)
    (folder / "exploit.json").unlink()
    text = (card / "scorecard.json").read_text().replace('"tier": "quick"', '"tier": "fast"')
    (card / "scorecard.json").write_text(text)
    with pytest.raises(L.LeaderboardError, match="scorecard.json"):
        L.render(tmp_path)


def _referee(root: Path, agent: str, players: int, diff: float, *, partial: bool = False,
             referee: str = "openspiel-ismcts:iterations=50") -> Path:
    folder = root / "results" / "referee" / f"{agent}-{players}p"
    folder.mkdir(parents=True)
    seat = {"mean_place": _estimate(2.0), "mean_score": _estimate(-diff / 2), "matches": 300}
    summary = {"labels": [referee, agent],
               "agents": {referee: seat, agent: {**seat, "mean_score": _estimate(diff / 2)}},
               "differences": {f"{agent} - {referee}": _estimate(diff),
                               f"{referee} - {agent}": _estimate(-diff)},
               "matches": 300, "sequences": 300 // players, "partial": partial,
               "timing": {"ms_per_move": {referee: 210.0, agent: 0.5}}}
    config = {"agents": [referee] + [agent] * (players - 1), "num_players": players,
              "matches": 300, "seed": 50500 + players}
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_the_referee_tournaments_are_listed_by_agent_and_size(tmp_path):
    (tmp_path / "docs").mkdir()
    assert "No referee tournament is committed yet." in L.render(tmp_path)[0]
    _referee(tmp_path, "ppo", 6, 0.4)
    _referee(tmp_path, "ppo", 2, 1.5)
    _referee(tmp_path, "ismcts:iterations=50", 4, -0.25)
    (tmp_path / "results" / "referee" / "differences.png").write_bytes(b"png")
    L.write(tmp_path)
    page = (tmp_path / "docs" / "leaderboard.md").read_text()
    section = page[page.index("## Outside referee"):]
    rows = [ln.split(" | ") for ln in section.splitlines() if ln.startswith("| `")]
    assert [(r[0], r[1]) for r in rows] == [("| `ismcts:iterations=50`", "4"),
                                            ("| `ppo`", "2"), ("| `ppo`", "6")]
    assert rows[0][4] == "-0.250 [-0.350, -0.150]" and rows[1][4] == "+1.500 [+1.400, +1.600]"
    assert rows[1][5] == "2.000 [1.900, 2.100]" and rows[1][6] == "210.0, 0.5"
    assert rows[2][7] == "`results/referee/ppo-6p` |"
    assert "](leaderboard/referee-differences.png)" in section
    assert (tmp_path / "docs" / "leaderboard" / "referee-differences.png").read_bytes() == b"png"
    assert L.stale_files(tmp_path) == []


@pytest.mark.parametrize("damage, message", [
    ("partial", r"ppo-2p/summary.json: a partial tournament \(300 matches\)"),
    ("lineup", r"ppo-2p/summary.json: a referee tournament seats one openspiel-\* agent"),
    ("config", r"ppo-2p/config.json: not a tournament's config.json"),
    ("summary", r"ppo-2p/summary.json: not a tournament's summary.json"),
])
def test_a_referee_record_that_is_not_one_is_refused_by_name(tmp_path, damage, message):
    folder = _referee(tmp_path, "ppo", 2, 1.0, partial=damage == "partial",
                      referee="heuristic" if damage == "lineup" else
                      "openspiel-ismcts:iterations=50")
    if damage == "config":
        (folder / "config.json").write_text('{"agents": ["ppo"]}')
    if damage == "summary":
        (folder / "summary.json").write_text("{not json")
    with pytest.raises(L.LeaderboardError, match=message):
        L.render(tmp_path)
