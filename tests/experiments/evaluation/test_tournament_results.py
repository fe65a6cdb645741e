"""Tournament results (issue 46): a typed result that summary.json holds field for field, no
interval below the small-sample rule, the per-round breakdown, the paired comparison of two
tournaments, compressed per-match lines and rules held as a RulesConfig."""

import dataclasses
import gzip
import json
import shutil
from fractions import Fraction

import numpy as np
import pytest

from dragons_egg.experiments.cli import main as cli
from dragons_egg.experiments.evaluation import tournament as T
from dragons_egg.experiments.evaluation.tournament import (
    MIN_SEQUENCES,
    CompareError,
    Estimate,
    OutputError,
    TournamentConfig,
    TournamentResult,
    compare_tournaments,
    compress_results,
    load_results,
    main,
    run_tournament,
)
from dragons_egg_env.config import ConfigError, RulesConfig


def play(tmp_path, name, **kw):
    """A tiny seeded tournament in ``tmp_path/name``: its folder and result."""
    base = dict(agents=["heuristic", "greedy"], num_players=2, matches=24, seed=5, num_rounds=3,
                bootstrap=200, out_dir=str(tmp_path / name))
    base.update(kw)
    return tmp_path / name, run_tournament(TournamentConfig(**base), progress=False)


def lines(folder):
    return [json.loads(x) for x in (folder / "results.jsonl").read_text().splitlines() if x]


def estimates(result):
    """Every Estimate of a result (agents, differences, per-round breakdown)."""
    out = list(result.differences.values())
    for m in result.agents.values():
        out += [m.mean_place, m.dragon_rate, m.egg_rate, m.mean_score]
    for rows in result.by_round.values():
        out += [e for r in rows for e in (r.reward, r.won, r.as_dragon, r.as_egg_holder)
                if e is not None]
    return out


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    """Two 2-player tournaments on the same deals: heuristic and random against greedy."""
    tmp = tmp_path_factory.mktemp("pair")
    a, ra = play(tmp, "a", agents=["heuristic", "greedy"])
    b, rb = play(tmp, "b", agents=["random", "greedy"])
    return a, ra, b, rb


# ---------------------------------------------------------------------------------------
# The typed result

def test_the_result_is_typed_and_summary_json_reads_back_equal(two):
    a, ra, _, _ = two
    assert isinstance(ra, TournamentResult)
    saved = json.loads((a / "summary.json").read_text())
    assert saved == ra.to_json()
    assert TournamentResult.from_json(saved) == ra
    with pytest.raises(dataclasses.FrozenInstanceError):
        ra.matches = 3
    # the keys of the dict summary still answer (code written before the typed result)
    assert ra["matches"] == ra.matches == 24 and ra["agents"]["greedy"]["mean_score"] is \
        ra.agents["greedy"].mean_score
    assert set(saved) == {"labels", "agents", "differences", "head_to_head", "ratings",
                          "matches", "sequences", "planned", "partial", "forfeits",
                          "by_round", "timing"}


def test_a_result_with_nan_and_none_reads_back_equal():
    e = Estimate(float("nan"), None, None, 0)
    assert Estimate.from_json(json.loads(json.dumps(e.to_json()))) == e
    assert e != Estimate(0.0, None, None, 0)
    empty = TournamentResult.empty(8)
    assert TournamentResult.from_json(empty.to_json()) == empty
    assert empty.to_json() == {"matches": 0, "planned": 8, "partial": True, "forfeits": []}


# ---------------------------------------------------------------------------------------
# The small-sample rule, in the result, summary.json and report.md alike

def test_no_interval_below_the_small_sample_rule(tmp_path):
    folder, r = play(tmp_path, "few", matches=6)  # 3 deal sequences
    assert r.sequences == 3 < MIN_SEQUENCES
    ests = estimates(r)
    assert ests and all(e.low is None and e.high is None and e.sequences <= 3 for e in ests)
    saved = json.loads((folder / "summary.json").read_text())
    cells = [saved["agents"]["heuristic"]["mean_score"],
             saved["differences"]["heuristic - greedy"], saved["by_round"]["greedy"][1]["won"]]
    assert all(c["low"] is None and c["high"] is None and c["mean"] is not None for c in cells)
    report = (folder / "report.md").read_text()
    assert f"{r.agents['greedy'].mean_score.fmt()}" in report
    assert "too few sequences: 3]" in report and "none is given" in report
    # from the rule on, intervals are given
    _, enough = play(tmp_path, "enough", matches=2 * MIN_SEQUENCES)
    shown = [e for e in estimates(enough) if e.sequences >= MIN_SEQUENCES]
    assert shown and all(e.low is not None and e.low - 1e-9 <= e.mean <= e.high + 1e-9
                         for e in shown)


# ---------------------------------------------------------------------------------------
# Per-round breakdown

def test_round_breakdown_at_two_players_matches_a_hand_count(two):
    a, ra, _, _ = two
    saved = lines(a)
    for label in ("heuristic", "greedy"):
        rows = ra.by_round[label]
        assert [r.round for r in rows] == [1, 2, 3]
        for k, row in enumerate(rows):
            rewards, won, dragon, egg = [], [], [], []
            for m in saved:
                seat = m["seats"].index(label)
                rd = m["rounds"][k]
                rewards.append(rd["rewards"][seat])
                won.append(rd["order"][0] == seat)
                if k:
                    (dragon if m["rounds"][k - 1]["order"][0] == seat else egg).append(
                        rd["order"][0] == seat)
            assert row.rounds == len(rewards) == 24
            assert row.reward.mean == pytest.approx(sum(rewards) / len(rewards), abs=1e-12)
            assert row.won.mean == pytest.approx(sum(won) / len(won), abs=1e-12)
            assert row.reward.sequences == 12 and row.reward.low - 1e-9 <= row.reward.mean \
                <= row.reward.high + 1e-9
            if k == 0:
                assert row.as_dragon is None and row.as_egg_holder is None
                continue
            assert dragon and egg  # these agents win and lose: both splits are counted
            assert len(dragon) + len(egg) == 24
            assert row.as_dragon.mean == pytest.approx(sum(dragon) / len(dragon), abs=1e-12)
            assert row.as_egg_holder.mean == pytest.approx(sum(egg) / len(egg), abs=1e-12)
    summary = json.loads((a / "summary.json").read_text())
    assert summary["by_round"]["greedy"][2]["won"]["mean"] == ra.by_round["greedy"][2].won.mean
    report = (a / "report.md").read_text()
    assert "## By round" in report and "won as the Dragon" in report
    assert f"| `greedy` | 2 | 24 | {ra.by_round['greedy'][1].reward.fmt(sign=True)} |" in report


def test_round_breakdown_at_three_players_is_the_mean_round_reward(tmp_path):
    folder, r = play(tmp_path, "three", agents=["greedy", "random"], num_players=3, matches=6,
                     num_rounds=2)
    saved = lines(folder)
    assert {x for m in saved for rd in m["rounds"] for x in rd["rewards"]} == {-1.0, 0.0, 1.0}
    for label in ("greedy", "random"):
        for k, row in enumerate(r.by_round[label]):
            got = [m["rounds"][k]["rewards"][s] for m in saved
                   for s, a in enumerate(m["seats"]) if a == label]
            assert row.rounds == len(got)
            assert row.reward.mean == pytest.approx(float(np.mean(got)), abs=1e-12)
            assert row.won is None and row.as_dragon is None
    assert "won as the Dragon" not in (folder / "report.md").read_text()


def test_round_rewards_come_from_the_order_when_a_line_has_none(two):
    a, _, _, _ = two
    m = lines(a)[0]
    bare = {**m, "rounds": [{k: v for k, v in rd.items() if k != "rewards"}
                            for rd in m["rounds"]]}
    rules = RulesConfig(num_players=2)
    assert T.round_rewards(bare, rules) == T.round_rewards(m, rules) == \
        [rd["rewards"] for rd in m["rounds"]]


# ---------------------------------------------------------------------------------------
# Comparing two tournaments on the same deals

def hand_margins(folder, me, other):
    per = {}
    for m in lines(folder):
        seq = per.setdefault(m["sequence"], {me: [], other: []})
        for label, score in zip(m["seats"], m["scores"], strict=True):
            seq[label].append(Fraction(score).limit_denominator(100))
    return {s: sum(v[me]) / len(v[me]) - sum(v[other]) / len(v[other]) for s, v in per.items()}


def test_compare_matches_a_hand_computation(two, tmp_path, capsys):
    a, _, b, _ = two
    c = compare_tournaments(a, b)
    ma, mb = hand_margins(a, "heuristic", "greedy"), hand_margins(b, "random", "greedy")
    d = [ma[s] - mb[s] for s in sorted(ma)]
    (row,) = c.pairs
    assert (row.a_pair, row.b_pair, row.sequences) == ("heuristic - greedy", "random - greedy",
                                                       12)
    assert row.difference.mean == float(sum(d) / len(d))
    assert row.a_margin == float(sum(ma.values()) / 12)
    assert row.b_margin == float(sum(mb.values()) / 12)
    assert row.difference.low - 1e-9 <= row.difference.mean <= row.difference.high + 1e-9
    assert row.difference.low < row.difference.high
    assert compare_tournaments(a, b) == c  # seeded: the same figures
    out = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| `heuristic - greedy` | `random - greedy` | 12 |" in printed
    assert json.loads(out.read_text()) == json.loads(json.dumps(c.to_json()))
    assert cli.main(["tournament", "compare", str(a), str(b)]) == 0
    assert row.difference.fmt(sign=True) in capsys.readouterr().out


def test_compare_under_the_small_sample_rule(tmp_path):
    a, _ = play(tmp_path, "a", matches=6)
    b, _ = play(tmp_path, "b", matches=6, agents=["random", "greedy"])
    (row,) = compare_tournaments(a, b).pairs
    assert row.sequences == 3 and row.difference.low is None and row.difference.high is None


@pytest.mark.parametrize("change,setting", [
    (dict(seed=6), "seed"), (dict(matches=26), "matches"), (dict(num_rounds=2), "num_rounds"),
    (dict(rules={"pass_locks_out": True}), "rules"),
    (dict(agents=["heuristic", "greedy", "greedy"]), "the line-up")])
def test_compare_refuses_tournaments_on_other_deals(two, tmp_path, capsys, change, setting):
    a, _, _, _ = two
    other, _ = play(tmp_path, "other", **{**dict(matches=24), **change})
    with pytest.raises(CompareError, match=f"differ in {setting} "):
        compare_tournaments(a, other)
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(a), str(other)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err
    assert len([x for x in err.splitlines() if ": error: " in x]) == 1 and setting in err


def test_a_default_rule_given_explicitly_is_the_same_rules(two, tmp_path):
    a, _, _, _ = two
    same, _ = play(tmp_path, "same", rules={"pass_locks_out": False})
    assert json.loads((same / "config.json").read_text())["rules"] == \
        {"pass_locks_out": False}  # saved as given
    assert compare_tournaments(a, same).pairs[0].difference.mean == 0


# ---------------------------------------------------------------------------------------
# Compressed per-match lines

def test_compress_is_deterministic_and_every_reader_reads_the_gz(two, tmp_path):
    a, ra, b, _ = two
    x, y = tmp_path / "x", tmp_path / "y"
    shutil.copytree(a, x)
    shutil.copytree(a, y)
    before = (x / "results.jsonl").read_bytes()
    tc = TournamentConfig.from_json(json.loads((x / "config.json").read_text()))
    plain_results, _ = load_results(tc, x)
    packed = compress_results(x)
    assert packed == x / "results.jsonl.gz" and not (x / "results.jsonl").exists()
    assert gzip.decompress(packed.read_bytes()) == before
    assert compress_results(y).read_bytes() == packed.read_bytes()  # same lines, same bytes
    assert load_results(tc, x) == (plain_results, None)
    assert T.read_result_lines(x) == plain_results
    assert compare_tournaments(x, b) == dataclasses.replace(compare_tournaments(a, b),
                                                            a=str(x))
    with pytest.raises(OutputError, match="compressed already"):
        compress_results(x)
    shutil.copy(a / "results.jsonl", x / "results.jsonl")  # both: which one is right?
    with pytest.raises(OutputError, match="holds both results.jsonl and results.jsonl.gz"):
        load_results(tc, x)
    with pytest.raises(CompareError, match="holds both"):
        compare_tournaments(x, b)


def test_resume_of_a_compressed_folder_decompresses_it(two, tmp_path):
    a, ra, _, _ = two
    x = tmp_path / "x"
    shutil.copytree(a, x)
    compress_results(x)
    tc = TournamentConfig.from_json({**json.loads((x / "config.json").read_text()),
                                     "out_dir": str(x)})
    again = run_tournament(tc, progress=False, resume=True)
    assert (x / "results.jsonl").exists() and not (x / "results.jsonl.gz").exists()
    strip = dataclasses.replace(again, timing=ra.timing)  # a second sitting, no new match
    assert strip == ra


def test_resume_of_a_partial_gz_plays_the_missing_matches(two, tmp_path):
    a, ra, _, _ = two
    x = tmp_path / "x"
    shutil.copytree(a, x)
    kept = (x / "results.jsonl").read_bytes().splitlines(keepends=True)[:10]
    (x / "results.jsonl.gz").write_bytes(gzip.compress(b"".join(kept), mtime=0))
    (x / "results.jsonl").unlink()
    tc = TournamentConfig.from_json({**json.loads((x / "config.json").read_text()),
                                     "out_dir": str(x)})
    again = run_tournament(tc, progress=False, resume=True)
    assert again.matches == 24 and again.differences == ra.differences
    assert again.by_round == ra.by_round


def test_compress_refuses_an_unfinished_folder(two, tmp_path, capsys):
    a, _, _, _ = two
    x = tmp_path / "x"
    shutil.copytree(a, x)
    text = (x / "results.jsonl").read_text().splitlines(keepends=True)
    (x / "results.jsonl").write_text("".join(text[:-1]))
    with pytest.raises(OutputError, match="holds 23 of its 24 matches"):
        compress_results(x)
    (x / "results.jsonl").write_text("".join(text) + '{"sequence": 1')
    with pytest.raises(OutputError, match="unfinished line"):
        compress_results(x)
    (x / "results.jsonl").write_text("".join(text))
    summary = json.loads((x / "summary.json").read_text())
    (x / "summary.json").write_text(json.dumps({**summary, "partial": True}))
    with pytest.raises(SystemExit) as exc:
        main(["compress", str(x)])
    assert exc.value.code == 2 and "summary.json is missing or partial" in \
        capsys.readouterr().err
    (x / "summary.json").write_text(json.dumps(summary))
    assert cli.main(["tournament", "compress", str(x)]) == 0
    assert (x / "results.jsonl.gz").exists() and "results.jsonl.gz" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------
# Rules held as a RulesConfig, checked once

def test_rules_are_a_rules_config_built_once(monkeypatch, tmp_path):
    tc = TournamentConfig(agents=["greedy", "random"], num_players=3, num_rounds=2,
                          rules={"pass_locks_out": True})
    assert isinstance(tc.rules, RulesConfig) and tc.rules_config() is tc.rules
    assert (tc.rules.num_players, tc.rules.num_rounds, tc.rules.pass_locks_out) == (3, 2, True)
    assert tc.to_json()["rules"] == {"pass_locks_out": True}
    assert TournamentConfig.from_json(tc.to_json()) == tc
    given = TournamentConfig(agents=["greedy"], num_players=3, num_rounds=2,
                             rules=RulesConfig(num_players=3, num_rounds=2,
                                               reward_scheme="dragon_egg"))
    assert given.to_json()["rules"] == {"reward_scheme": "dragon_egg"}
    with pytest.raises(ValueError, match="rules has num_players=2 but the tournament "
                                         "num_players=4"):
        TournamentConfig(agents=["greedy"], rules=RulesConfig(num_players=2))
    with pytest.raises(ConfigError, match="unknown rule flag"):
        TournamentConfig(agents=["greedy"], rules={"colour": "red"})
    with pytest.raises(ConfigError, match="set num_players directly"):
        TournamentConfig(agents=["greedy"], rules={"num_players": 2})
    # checked once, as it is built: playing does not check it again
    calls = []
    monkeypatch.setattr(TournamentConfig, "validate", lambda self: calls.append(1))
    tc = TournamentConfig(agents=["greedy", "random"], num_players=2, matches=2,
                          num_rounds=1, bootstrap=100, out_dir=str(tmp_path / "t"))
    run_tournament(tc, progress=False)
    assert calls == [1]
