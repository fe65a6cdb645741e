"""Tournaments: duplicate deals, determinism, statistics and outputs."""

import json

import pytest

from dragons_egg.experiments.evaluation.tournament import (
    Entrant,
    TournamentConfig,
    deal_sequence,
    main,
    run_matches,
    run_tournament,
    runner,
    summarize,
)
from dragons_egg.experiments.evaluation.tournament.runner import TIMING_KEYS
from dragons_egg_env import engine as E
from dragons_egg_env.config import RulesConfig

#: Two labels for hand-made results (a config checks its agents as it is built: they must be
#: real ones, whatever the labels).
AB = [Entrant("a", spec="random"), Entrant("b", spec="greedy")]


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
    strip = lambda rs: [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rs]  # noqa
    assert strip(r1) == strip(r2)
    assert strip(r1) != strip(run_matches(small(seed=4), progress=False))


def test_workers_take_matches_in_batches_sized_by_their_pace(monkeypatch):
    """The first batches are one match each (the bar moves, and a stop loses little, however
    slow the agents); fast matches then go out in batches of up to a twentieth of a worker's
    share; a pace of more than CHUNK_SECONDS a match keeps them one at a time. The results
    are those of one worker either way."""
    from dragons_egg.experiments.evaluation.tournament import pool

    sizes = []
    send = pool.WatchedPool.send

    def record(self, w, batch):
        sizes.append(len(batch))
        return send(self, w, batch)

    monkeypatch.setattr(pool.WatchedPool, "send", record)
    tc = small(workers=2, matches=400, num_rounds=1)
    fast = run_matches(tc, progress=False)
    # each worker's first batches are single matches; which worker's batch arrives first is
    # the scheduler's choice, so the order of arrival is not asserted
    assert sizes[0] == 1 and sizes.count(1) >= 4
    assert max(sizes) == 400 // (2 * 20) and sum(sizes) == 400
    sizes.clear()
    monkeypatch.setattr(runner, "CHUNK_SECONDS", 0.0)  # as if every match took longer
    slow = run_matches(tc, progress=False)
    assert sizes == [1] * 400
    strip = lambda rs: [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rs]  # noqa
    assert strip(fast) == strip(slow) == strip(run_matches(small(workers=1, matches=400,
                                                                 num_rounds=1), progress=False))


def test_statistics_on_known_results():
    tc = small(agents=AB, num_players=2, matches=20)
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
    (["heuristic", "--matches", "0"], "expected 1..1000000, got 0"),
])
def test_bad_tournament_arguments(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


# ---------------------------------------------------------------------------------------
# Command-line mistakes: one line, exit status 2, no traceback.

def _usage_error(argv, capsys, entry=main):
    with pytest.raises(SystemExit) as exc:
        entry(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ": error: " in ln]
    assert len(lines) == 1, err
    return err, lines[0]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_missing_checkpoint_is_one_line(workers, tmp_path, capsys):
    _, line = _usage_error(["ppo:path=/nope.zip", "random", "--matches", "4", "--rounds", "1",
                            "--workers", workers, "--out", str(tmp_path / "t")], capsys)
    assert "/nope.zip" in line


def test_agent_failing_to_build_in_a_worker_is_one_line(tmp_path, capsys):
    _, line = _usage_error(["ismcts:iterations=-5", "random", "--matches", "4", "--rounds", "1",
                            "--workers", "2", "--no-progress", "--out", str(tmp_path / "t")],
                           capsys)
    assert "iterations" in line


@pytest.mark.parametrize("out,needle", [("/dev/null/x", "'/dev/null' is not a folder"),
                                        ("{tmp}/file", "is an existing file, not a folder")])
def test_bad_output_folder_is_reported_before_playing(out, needle, tmp_path, capsys,
                                                      monkeypatch):
    import dragons_egg.experiments.evaluation.tournament as T

    def no_play(*a, **k):  # the folder must be checked before any match
        raise AssertionError("matches were played")

    (tmp_path / "file").write_text("not a folder")
    out = out.format(tmp=tmp_path)
    monkeypatch.setattr(T.output, "run_matches", no_play)
    _, line = _usage_error(["random", "greedy", "--matches", "4", "--out", out], capsys)
    assert needle in line and out in line


def test_errors_after_parsing_print_the_subcommand_usage(capsys):
    from dragons_egg.experiments.cli import main as cli

    err, line = _usage_error(["tournament", "random", "--out", "/dev/null/x"], capsys,
                             entry=cli.main)
    assert "usage: dragons-egg tournament" in err
    assert line.startswith("dragons-egg tournament: error:")


# ---------------------------------------------------------------------------------------
# Few matches, exact scores.

def test_pairs_that_never_met_and_too_few_sequences(tmp_path, capsys):
    out = tmp_path / "t"
    assert main(["random", "greedy", "heuristic", "--players", "2", "--matches", "4",
                 "--rounds", "1", "--workers", "1", "--no-progress", "--bootstrap", "100",
                 "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert "random - heuristic" not in summary["differences"]
    assert "heuristic - random" not in summary["differences"]
    # below the small-sample rule a figure has its mean and no interval, in summary.json too
    estimates = list(summary["differences"].values()) + [
        m[k] for m in summary["agents"].values()
        for k in ("mean_place", "dragon_rate", "egg_rate", "mean_score")]
    assert estimates
    for est in estimates:
        assert set(est) == {"mean", "low", "high", "sequences"} and est["sequences"] < 10
        assert est["low"] is None and est["high"] is None and est["mean"] is not None
    report = (out / "report.md").read_text()
    assert "nan" not in report
    assert "| `random` - `heuristic` | never met" in report
    assert "| yes |" not in report and "| no |" not in report
    assert "too few sequences (1 < 10)" in report


def test_intervals_from_ten_sequences_are_shown():
    s = run_tournament(small(matches=40, num_rounds=1), progress=False)  # 10 sequences
    d = s["differences"]["heuristic - random"]
    assert d.sequences == 10 and d.enough and "[" in d.fmt() and "too few" not in d.fmt()


def test_report_says_how_many_seats_each_agent_fills(tmp_path):
    from dragons_egg.experiments.evaluation.tournament import markdown_report

    tc = small(agents=["heuristic", "greedy", "random"], matches=4, num_rounds=1)
    report = markdown_report(tc, summarize(tc, run_matches(tc, progress=False)), [])
    assert "3 agents for 4 seats" in report
    assert "`heuristic` 2, `greedy` 1, `random` 1" in report
    tc4 = small(agents=["heuristic", "greedy", "random", "ismcts:iterations=5"], matches=4,
                num_rounds=1)
    assert "seats each fills" not in markdown_report(tc4, summarize(tc4, run_matches(
        tc4, progress=False)), [])


@pytest.mark.parametrize("n", [3, 4, 5, 7])
def test_scores_are_exact_multiples_of_one_over_n_minus_one(n, tmp_path):
    tc = small(agents=["greedy", "random"], num_players=n, matches=2 * n, num_rounds=3,
               out_dir=str(tmp_path / "t"))
    run_tournament(tc, progress=False)
    results = [json.loads(x) for x in (tmp_path / "t" / "results.jsonl").read_text().split("\n")
               if x]
    for r in results:
        for x in r["scores"] + [v for rd in r["rounds"] for v in rd["rewards"]]:
            assert x == round(x * (n - 1)) / (n - 1), x  # the nearest float to k/(n-1)
    summary = json.loads((tmp_path / "t" / "summary.json").read_text())
    total = sum(m["mean_score"]["mean"] * m["matches"] for m in summary["agents"].values())
    assert abs(total) < 1e-9  # R27 rewards of a round sum to zero


def test_statistics_are_exact_for_exact_scores():
    # Three seats of 1/3 each: 1/3 + 1/3 + 1/3 is 1.0000000000000002 in float sums.
    tc = small(agents=AB, num_players=4, matches=40)
    results = []
    for seq in range(10):
        for rot in range(4):
            seats = ["a", "b", "a", "b"] if rot % 2 == 0 else ["b", "a", "b", "a"]
            scores = [1 / 3 if s == "a" else -1 / 3 for s in seats]
            results.append({"sequence": seq, "rotation": rot, "seats": seats, "scores": scores,
                            "rounds": [{"order": [0, 1, 2, 3], "deadlock": False}]})
    s = summarize(tc, results)
    assert s["agents"]["a"]["mean_score"].mean == 1 / 3
    assert s["differences"]["a - b"].mean == 2 / 3
    assert s["differences"]["b - a"].mean == -2 / 3


def test_a_spec_that_cannot_play_the_table_is_one_line(capsys):
    from dragons_egg.agents.ppo import PREVIOUS

    _, line = _usage_error([f"ppo:path={PREVIOUS}", "random", "--players", "5", "--out",
                            "/tmp/unused"], capsys)
    assert "up to 4 players" in line

