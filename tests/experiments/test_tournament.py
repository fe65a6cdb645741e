"""Tournaments: duplicate deals, determinism, statistics and outputs."""

import json

import pytest

from dragons_egg_env import engine as E
from dragons_egg_env.config import RulesConfig
from experiments.tournament import (
    TournamentConfig,
    deal_sequence,
    main,
    run_matches,
    run_tournament,
    summarize,
)


def small(**kw):
    base = dict(agents=["heuristic", "random"], num_players=4, matches=8, seed=3, num_rounds=2,
                bootstrap=200)
    base.update(kw)
    return TournamentConfig(**base)


def test_duplicate_format_rotates_every_agent_through_every_seat():
    tc = small(agents=["heuristic", "greedy", "random"], matches=8)
    results = run_matches(tc, progress=False)
    assert len(results) == 8  # 2 sequences x 4 rotations
    for seq in (0, 1):
        rows = [r for r in results if r["sequence"] == seq]
        lineups = [tuple(r["seats"]) for r in rows]
        assert len(set(lineups)) == 4
        for seat in range(4):  # each lineup entry visits each seat once
            assert sorted(r["seats"][seat] for r in rows) == sorted(tc.lineup(seq))


def test_more_agents_than_seats_take_turns_sitting_out():
    tc = small(agents=["heuristic", "greedy", "random"], num_players=2, matches=12)
    results = run_matches(tc, progress=False)
    tables = [frozenset(r["seats"]) for r in results]
    assert {frozenset({"heuristic", "greedy"}), frozenset({"greedy", "random"}),
            frozenset({"random", "heuristic"})} == set(tables)
    s = summarize(tc, results)
    assert s["agents"]["greedy"]["matches"] == 8
    assert "heuristic - random" in s["differences"]


def test_deal_sequences_are_fixed_by_the_seed():
    cfg = RulesConfig(num_players=5, num_rounds=3)
    a, b = deal_sequence(cfg, 11), deal_sequence(cfg, 11)
    assert a == b and a != deal_sequence(cfg, 12)
    for hands in a:
        E.check_deal(hands, 5)


def test_same_seed_same_results_any_worker_count():
    r1 = run_matches(small(workers=1), progress=False)
    r2 = run_matches(small(workers=2), progress=False)
    strip = lambda rs: [{k: v for k, v in r.items() if k != "seconds"} for r in rs]  # noqa
    assert strip(r1) == strip(r2)
    assert strip(r1) != strip(run_matches(small(seed=4), progress=False))


def test_statistics_on_known_results():
    tc = small(agents=["a", "b"], num_players=2, matches=20)
    # Agent a always finishes first, and scores +1 a round.
    results = []
    for seq in range(10):
        for rot in range(2):
            seats = ["a", "b"] if rot == 0 else ["b", "a"]
            order = [seats.index("a"), seats.index("b")]
            scores = [2.0 if s == "a" else -2.0 for s in seats]
            results.append({"sequence": seq, "rotation": rot, "seats": seats, "scores": scores,
                            "rounds": [{"order": order, "deadlock": False}] * 2})
    s = summarize(tc, results)
    a, b = s["agents"]["a"], s["agents"]["b"]
    assert (a["mean_place"].mean, a["mean_place"].low, a["mean_place"].high) == (1, 1, 1)
    assert a["dragon_rate"].mean == 1 and b["egg_rate"].mean == 1
    assert s["differences"]["a - b"].mean == 4.0
    assert s["head_to_head"][0][1] == 1.0 and s["head_to_head"][1][0] == 0.0
    assert s["ratings"]["a"]["mu"] > s["ratings"]["b"]["mu"]
    assert a["place_hist"] == [40, 0]


def test_heuristic_beats_random_with_an_interval_excluding_zero():
    s = run_tournament(small(matches=80, num_rounds=1), progress=False)
    d = s["differences"]["heuristic - random"]
    assert d.low > 0, d


def test_outputs_and_cli(tmp_path, capsys):
    out = tmp_path / "t"
    assert main(["heuristic", "greedy", "--matches", "4", "--rounds", "1", "--workers", "1",
                 "--out", str(out), "--no-progress", "--bootstrap", "100"]) == 0
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["seats"]
    report = (out / "report.md").read_text()
    assert "heuristic" in report and "![ratings](ratings.png)" in report
    for name in ("ratings.png", "head_to_head.png", "places.png", "summary.json", "config.json"):
        assert (out / name).stat().st_size > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["matches"] == 4


@pytest.mark.parametrize("argv,needle", [
    (["heuristic", "--players", "1"], "expected 2..8"),
    (["nobody"], "unknown agent 'nobody'"),
    (["heuristic", "--rule", "pass_locks_out"], "a rule flag is name=value"),
    (["heuristic", "--rule", "colour=red"], "unknown rule flag"),
    (["a", "b", "c"] + ["--players", "2"], "unknown agent"),
    (["heuristic", "--matches", "0"], "expected >= 1"),
])
def test_bad_tournament_arguments(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err
