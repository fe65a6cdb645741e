"""The agent benchmark suite (issue 48): the published suite's definition and digest, the deal
sets' digests, the frozen ppo, the score card's schema, paired comparison of two cards,
determinism, resume after Ctrl-C and the command line's one-line errors. Runs use a tiny suite
of fast agents, read through the same loader as v1."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import interrupter_source

from dragons_egg import agents
from dragons_egg.agents.ppo import SHIPPED, file_sha256
from dragons_egg.experiments.cli.main import main as dragons_egg
from dragons_egg.experiments.evaluation.benchmark import (
    PUBLISHED,
    SCHEMA,
    CardError,
    CardMismatch,
    ScoreCard,
    SuiteError,
    compare_cards,
    load_suite,
    read_card,
    suite_digest,
)
from dragons_egg.experiments.evaluation.benchmark import run as R
from dragons_egg.experiments.evaluation.benchmark import suite as S
from dragons_egg.experiments.evaluation.benchmark.cli import main
from dragons_egg.experiments.evaluation.benchmark.suite import deal_digest
from dragons_egg_env.config import RulesConfig

PROG = "dragons-egg benchmark"


def tiny_suite(path, seed=11, quick=10, rounds=1):
    """A suite file of two cells of fast agents: greedy alone at 2 players, and a mixed table
    (greedy, random) at 3; ``quick`` deal sequences a cell."""
    pops = {"greedy": {"seats": ["greedy"]}, "mixed": {"seats": ["greedy", "random"]}}
    cells = []
    for i, (n, pop) in enumerate([(2, "greedy"), (3, "mixed")]):
        rules = RulesConfig.from_kwargs({"num_players": n, "num_rounds": rounds})
        cells.append({"players": n, "population": pop, "seed": seed + i,
                      "sequences": {"quick": quick, "full": quick + 2},
                      "deal_digest": deal_digest(rules, seed + i, quick + 2)})
    data = {"suite": "tiny", "version": "t1", "num_rounds": rounds, "rules": {},
            "bootstrap": 200, "populations": pops, "cells": cells}
    path.write_text(json.dumps(data))
    return path


def cli(argv, capsys):
    try:
        code = dragons_egg(["benchmark", *argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tiny(tmp_path):
    return tiny_suite(tmp_path / "tiny.json")


def bench(agent, suite, out, capsys, *extra):
    code, stdout, err = cli([agent, "--suite", str(suite), "--out", str(out), "--workers",
                             "1", "--no-progress", *extra], capsys)
    assert code == 0, err
    return read_card(out / "scorecard.json")


# ---------------------------------------------------------------------------------------
# The suite's definition.

def test_v1_loads_and_its_digest_is_the_published_one():
    suite, digest = load_suite("v1")
    data = json.loads((S.SUITES_DIR / "v1.json").read_text())
    assert digest == PUBLISHED["v1"] == suite_digest(data)
    assert (suite.suite, suite.version) == ("dragons-egg-benchmark", "v1")
    assert {c.players for c in suite.cells} == set(range(2, 9))
    assert set(suite.populations) == {"heuristic", "ismcts-200", "ppo", "mixed"}
    assert suite.populations["ismcts-200"].seats == ["ismcts:iterations=200"]
    assert len({c.seed for c in suite.cells}) == len(suite.cells)  # a deal set each
    # the quick tier is a prefix of the full tier's deals
    assert all(0 < c.sequences["full"] and c.sequences["quick"] <= c.sequences["full"]
               for c in suite.cells)
    assert all(c.sequences["quick"] >= 10 for c in suite.tier_cells("quick"))
    # the shipped ppo as frozen in v1
    assert suite.frozen["ppo"].sha256 == file_sha256(SHIPPED)


def test_an_edited_published_suite_is_refused_by_name(tmp_path, monkeypatch):
    data = json.loads((S.SUITES_DIR / "v1.json").read_text())
    data["cells"][0]["sequences"]["quick"] += 1
    (tmp_path / "v1.json").write_text(json.dumps(data))
    monkeypatch.setattr(S, "SUITES_DIR", tmp_path)
    with pytest.raises(SuiteError, match=r"suite 'v1' .* has been changed: its digest is "
                       f"{suite_digest(data)}, the published v1 is {PUBLISHED['v1']}"):
        load_suite("v1")


def test_a_deal_set_whose_digest_differs_is_refused_naming_the_cell(tiny):
    data = json.loads(tiny.read_text())
    data["cells"][1]["seed"] += 1  # other deals than the digest records
    tiny.write_text(json.dumps(data))
    with pytest.raises(SuiteError, match=r"cell p3-mixed's deals \(seed 13\) have the digest "):
        load_suite(str(tiny))


def test_a_shipped_ppo_other_than_the_frozen_one_is_refused_naming_the_digest(tiny):
    data = json.loads(tiny.read_text())
    data["frozen"] = {"ppo": {"file": SHIPPED.name, "sha256": "0" * 64}}
    tiny.write_text(json.dumps(data))
    with pytest.raises(SuiteError, match=f"froze 'ppo' as {SHIPPED.name} with sha256 "
                       f"{'0' * 64}, but the installed .* has {file_sha256(SHIPPED)}"):
        load_suite(str(tiny))


def test_the_frozen_ppo_is_found_by_its_digest_under_a_versioned_name(tiny, tmp_path,
                                                                       monkeypatch):
    """A release that ships a new ppo keeps the v1 file under another name: v1 seats it."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / SHIPPED.name).write_bytes(b"a newer policy")
    shutil.copyfile(SHIPPED, data_dir / "ppo_dragons_egg_v1.npz")
    monkeypatch.setattr(S, "DATA_DIR", data_dir)
    data = json.loads(tiny.read_text())
    data["frozen"] = {"ppo": {"file": SHIPPED.name, "sha256": file_sha256(SHIPPED)}}
    data["populations"]["mixed"]["seats"] = ["greedy", "ppo"]
    tiny.write_text(json.dumps(data))
    suite, _ = load_suite(str(tiny))
    assert suite.reference_lineup(suite.cells[1]) == [
        "greedy", f"ppo:path={data_dir / 'ppo_dragons_egg_v1.npz'}", "greedy"]
    (data_dir / "ppo_dragons_egg_v1.npz").unlink()
    with pytest.raises(SuiteError, match=f"sha256 {file_sha256(SHIPPED)}, but the installed "
                       ".* has .* and no file of"):
        load_suite(str(tiny))


def test_a_suite_that_is_not_a_definition_is_one_line(tiny):
    data = json.loads(tiny.read_text())
    data["cells"][0]["players"] = 9
    tiny.write_text(json.dumps(data))
    with pytest.raises(SuiteError, match=r"not a suite definition: cells\.0\.players"):
        load_suite(str(tiny))


# ---------------------------------------------------------------------------------------
# Score cards.

def test_the_card_holds_every_cell_and_its_schema_round_trips(tiny, tmp_path, capsys):
    card = bench("heuristic", tiny, tmp_path / "h", capsys)
    assert card.schema_ == SCHEMA and card.tier == "quick" and card.agent == "heuristic"
    assert card.suite.digest == load_suite(str(tiny))[1] and not card.suite.published
    assert [c.key for c in card.cells] == ["p2-greedy", "p3-mixed"]
    for c in card.cells:
        assert c.sequences == 10 and c.matches == 10 * c.players
        assert c.mean_score.low <= c.mean_score.mean <= c.mean_score.high
        assert c.mean_score.mean == pytest.approx(np.mean(c.scores))
        assert c.paired_difference.mean == pytest.approx(np.mean(c.differences))
        assert 1 <= c.mean_place.mean <= c.players
        assert card.timing[c.key] > 0
    assert card.headline.mean == pytest.approx(
        np.mean([c.paired_difference.mean for c in card.cells]))
    assert card.headline.low < card.headline.mean < card.headline.high
    assert ScoreCard.model_validate_json(card.to_text()) == card
    md = (tmp_path / "h" / "scorecard.md").read_text()
    assert "| 3 | mixed | 10 |" in md and card.suite.digest in md
    assert (tmp_path / "h" / "scorecard.png").stat().st_size > 1000


@pytest.mark.parametrize("damage,needle", [
    (lambda d: d["cells"][0].update(sequences=11), "damaged: its digest does not match"),
    (lambda d: d["headline"].pop("mean"), r"not a valid score card: headline\.mean"),
    (lambda d: d.update(schema="other/9"), "not a score card of schema"),
    (lambda d: d.update(extra=1), "not a valid score card: extra")])
def test_a_damaged_card_is_refused(tiny, tmp_path, capsys, damage, needle):
    bench("greedy", tiny, tmp_path / "g", capsys)
    path = tmp_path / "g" / "scorecard.json"
    data = json.loads(path.read_text())
    damage(data)
    path.write_text(json.dumps(data))
    with pytest.raises(CardError, match=needle):
        read_card(path)
    code, _, err = cli(["compare", str(path), str(path)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 2 and needle.split(":")[0][:8] in err


def test_the_agent_as_its_own_population_has_no_paired_difference(tiny, tmp_path, capsys):
    """greedy is deterministic: seated where the population's greedy sat, on the same deals
    and seeds, it plays the reference's match move for move."""
    card = bench("greedy", tiny, tmp_path / "g", capsys)
    assert card.cells[0].differences == [0.0] * 10
    assert card.cells[0].paired_difference.mean == 0.0


# ---------------------------------------------------------------------------------------
# Paired comparison.

def test_compare_gives_paired_differences_of_two_cards(tiny, tmp_path, capsys):
    h = bench("heuristic", tiny, tmp_path / "h", capsys)
    r = bench("random", tiny, tmp_path / "r", capsys)
    result = compare_cards(h, r)
    for c, x, y in zip(result.cells, h.cells, r.cells, strict=True):
        d = np.array(x.scores) - np.array(y.scores)
        assert c.difference.mean == pytest.approx(d.mean())
        assert c.difference.low <= c.difference.mean <= c.difference.high
    assert result.headline.mean == pytest.approx(np.mean([c.difference.mean
                                                          for c in result.cells]))
    same = compare_cards(h, h)
    assert all(c.difference.mean == 0 and c.difference.low == 0 for c in same.cells)
    code, out, err = cli(["compare", str(tmp_path / "h" / "scorecard.json"),
                          str(tmp_path / "r"), "--json", str(tmp_path / "c.json")], capsys)
    assert code == 0, err
    assert "| p2-greedy |" in out and "Headline" in out
    assert json.loads((tmp_path / "c.json").read_text()) == json.loads(
        json.dumps(result.to_json()))


def test_an_agent_that_cannot_play_a_size_is_scored_on_the_cells_it_plays(tiny, tmp_path,
                                                                         capsys):
    """A 2-seat policy on the tiny suite (cells at 2 and 3 players): its card holds the
    2-player cell, names the 3-player one as not played and why, and its headline is the
    played cell's; compared with a full card, the comparison pairs the common cell and names
    the other as left out."""
    from support import small_policy

    pol = small_policy(tmp_path / "two.npz", max_players=2)
    spec = f"net:path={pol}"
    card = bench(spec, tiny, tmp_path / "two", capsys)
    assert [c.key for c in card.cells] == ["p2-greedy"]
    assert list(card.not_played) == ["p3-mixed"]
    assert "plays tables of up to 2 players" in card.not_played["p3-mixed"]
    assert card.headline.mean == pytest.approx(card.cells[0].paired_difference.mean)
    assert read_card(tmp_path / "two" / "scorecard.json") == card
    md = (tmp_path / "two" / "scorecard.md").read_text()
    assert "Not played" in md and "`p3-mixed`" in md
    full = bench("greedy", tiny, tmp_path / "g", capsys)
    assert "not_played" not in json.loads((tmp_path / "g" / "scorecard.json").read_text())
    result = compare_cards(card, full)
    assert [c.key for c in result.cells] == ["p2-greedy"]
    assert result.left_out == ("p3-mixed",) and "Left out" in result.table()


def test_compare_refuses_cards_of_other_suites_or_tiers(tmp_path, capsys):
    a = tiny_suite(tmp_path / "a.json", seed=11, quick=10)
    b = tiny_suite(tmp_path / "b.json", seed=21, quick=10)
    ca = bench("greedy", a, tmp_path / "ga", capsys)
    cb = bench("greedy", b, tmp_path / "gb", capsys)
    with pytest.raises(CardMismatch, match="different suites"):
        compare_cards(ca, cb)
    full = bench("greedy", a, tmp_path / "gf", capsys, "--tier", "full")
    with pytest.raises(CardMismatch, match=r"different tiers \(quick against full\)"):
        compare_cards(ca, full)
    code, _, err = cli(["compare", str(tmp_path / "ga"), str(tmp_path / "gb")], capsys)
    assert code == 2 and "different suites" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------
# Determinism and resume.

BOTS = '''
import os

from dragons_egg.agents.heuristic import HeuristicAgent


''' + interrupter_source("BENCH_STOP_AT")


@pytest.fixture
def bots(tmp_path, monkeypatch):
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "bench_bots.py").write_text(BOTS)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(agents, "_LOADED", {})
    yield folder
    sys.modules.pop("bench_bots", None)


def test_two_runs_and_a_resumed_run_give_the_same_card(bots, tiny, tmp_path, capsys,
                                                       monkeypatch):
    spec = "bench_bots:Interrupter"
    one = bench(spec, tiny, tmp_path / "one", capsys, "--allow-code", spec)
    two = bench(spec, tiny, tmp_path / "two", capsys, "--allow-code", spec)
    assert one.untimed() == two.untimed()
    assert one.digest != "" and (tmp_path / "one" / "scorecard.md").exists()

    cut = tmp_path / "cut"
    sys.modules["bench_bots"].Interrupter.matches = 0
    monkeypatch.setenv("BENCH_STOP_AT", "25")  # in the second cell's agent tournament
    code, _, err = cli([spec, "--suite", str(tiny), "--out", str(cut), "--workers", "1",
                        "--no-progress", "--allow-code", spec], capsys)
    assert code == 130 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"{PROG}: interrupted; the finished matches are saved in {cut}; resume with: "
        f"{PROG} --resume {cut} --allow-code {spec}")
    assert not (cut / "scorecard.json").exists()
    monkeypatch.delenv("BENCH_STOP_AT")
    # the folder names a MODULE:CLASS agent: a resume needs the consent again
    code, _, err = cli(["--resume", str(cut), "--no-progress"], capsys)
    assert code == 2 and f"--allow-code '{spec}'" in err
    # a rerun into the folder is refused
    code, _, err = cli([spec, "--suite", str(tiny), "--out", str(cut), "--allow-code", spec],
                       capsys)
    assert code == 2 and "already holds a benchmark" in err
    code, _, err = cli(["--resume", str(cut), "--workers", "2", "--no-progress",
                        "--allow-code", spec], capsys)
    assert code == 0, err
    resumed = read_card(cut / "scorecard.json")
    assert resumed.untimed() == one.untimed()


# ---------------------------------------------------------------------------------------
# The command line.

@pytest.mark.parametrize("argv,needle", [
    (["nosuch"], "unknown agent"),
    (["heuristic", "--tier", "medium"], "unknown tier 'medium': the tiers are quick, full"),
    (["heuristic", "--suite", "v9"], "unknown suite 'v9': the published suites are v1"),
    (["greedy:depth=3"], "depth"),
    (["nomodule_xyz:Bot"], "--allow-code 'nomodule_xyz:Bot'"),
    ([], "give the agent spec to score, or --resume DIR"),
    (["--resume", "/nonexistent/bm"], "holds no benchmark")])
def test_mistakes_are_one_line_with_status_2(argv, needle, tmp_path, capsys, tiny):
    suite = [] if "--suite" in argv or "--resume" in argv or not argv else ["--suite",
                                                                           str(tiny)]
    code, _, err = cli([*argv, *suite, "--out", str(tmp_path / "o")] if "--resume" not in argv
                       else argv, capsys)
    assert code == 2, err
    last = err.strip().splitlines()[-1]  # the usage, then the error in one line
    assert last.startswith(f"{PROG}: error: ") and needle in last and "Traceback" not in err
    assert not (tmp_path / "o" / "benchmark.json").exists()


def test_the_benchmark_and_the_speed_benchmark_are_told_apart(capsys):
    with pytest.raises(SystemExit):
        main(["--help"], prog=PROG)
    out = capsys.readouterr().out
    assert "Not the speed benchmark (dragons-egg bench)" in out
    with pytest.raises(SystemExit):
        dragons_egg(["--help"])
    out = capsys.readouterr().out
    assert "benchmark" in out and "bench" in out


def test_v1_file_is_installed_as_package_data():
    """The suite files install with the package (setuptools' package-data)."""
    text = (Path(__file__).parents[3] / "pyproject.toml").read_text()
    assert '"dragons_egg.experiments.evaluation.benchmark" = ["suites/*.json"]' in text
    assert '"dragons_egg.experiments.evaluation.benchmark",' in text


# ---------------------------------------------------------------------------------------
# Shared reference tournaments (--references).

def test_a_shared_reference_is_played_once_and_gives_the_same_cards(tiny, tmp_path, capsys):
    refs = tmp_path / "refs"
    alone = bench("heuristic", tiny, tmp_path / "alone", capsys)
    first = bench("heuristic", tiny, tmp_path / "h", capsys, "--references", str(refs))
    assert first.untimed() == alone.untimed()
    assert not (tmp_path / "h" / "cells" / "p2-greedy" / "reference").exists()
    played = sorted(refs.glob("*/*/results.jsonl"))
    assert [p.parent.name for p in played] == ["p2-greedy", "p3-mixed"]
    assert played[0].parent.parent.name.startswith("tiny-") and \
        played[0].parent.parent.name.endswith("-quick")
    before = {p: p.read_bytes() for p in played}
    # another agent reads them: not replayed, not rewritten, its card as if played alone
    other = bench("random", tiny, tmp_path / "r", capsys, "--references", str(refs))
    assert other.untimed() == bench("random", tiny, tmp_path / "r-alone", capsys).untimed()
    assert {p: p.read_bytes() for p in played} == before
    assert {p.name for p in (tmp_path / "r" / "cells" / "p3-mixed").iterdir()} == {"agent"}


def test_an_unfinished_shared_reference_is_resumed(tiny, tmp_path, capsys):
    refs = tmp_path / "refs"
    full = bench("greedy", tiny, tmp_path / "g", capsys, "--references", str(refs))
    lines = next(refs.glob("*/p3-mixed/results.jsonl"))
    kept = lines.read_text().splitlines(keepends=True)
    lines.write_text("".join(kept[:7]))
    again = bench("greedy", tiny, tmp_path / "g2", capsys, "--references", str(refs))
    assert again.untimed() == full.untimed()
    assert len(lines.read_text().splitlines()) == len(kept)
    sittings = [json.loads(x)["sitting"] for x in lines.read_text().splitlines()]
    assert sittings[:7] == [1] * 7 and set(sittings[7:]) == {2}


#: A process that holds a folder's writer lock until a file appears (argv: folder, file).
HOLD = """
import sys, time
from pathlib import Path
from dragons_egg.experiments.common.locks import FolderLock
lock = FolderLock(sys.argv[1], "reference tournament folder").acquire()
print("held", flush=True)
while not Path(sys.argv[2]).exists():
    time.sleep(0.02)
lock.release()
"""


def test_a_benchmark_waits_for_a_reference_another_process_is_playing(tiny, tmp_path, capsys,
                                                                 monkeypatch):
    refs = tmp_path / "refs"
    first = bench("greedy", tiny, tmp_path / "g", capsys, "--references", str(refs))
    folder = next(refs.glob("*/p2-greedy"))
    lines = folder / "results.jsonl"
    kept = lines.read_text().splitlines(keepends=True)
    lines.write_text("".join(kept[:7]))  # as another process had left it, cut short
    release = tmp_path / "release"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), str(release)],
                              stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        waits = []

        def hand_over(seconds):  # the first wait: the other process lets go and ends
            waits.append(seconds)
            release.touch()
            holder.wait(timeout=60)

        monkeypatch.setattr(R, "_sleep", hand_over)
        code, out, err = cli(["greedy", "--suite", str(tiny), "--out", str(tmp_path / "g2"),
                              "--workers", "1", "--no-progress", "--references", str(refs)],
                             capsys)
    finally:
        release.touch()
        holder.wait(timeout=60)
    assert code == 0, err
    assert waits == [R.REFERENCE_POLL]  # it waited once, for that folder alone
    assert (f"waiting for another process to finish the reference tournament in "
            f"{str(folder)!r} (pid {holder.pid} on ") in err
    # then it played what the other left: its 7 matches kept, the rest in a second sitting
    assert read_card(tmp_path / "g2" / "scorecard.json").untimed() == first.untimed()
    now = lines.read_text().splitlines(keepends=True)
    assert now[:7] == kept[:7] and len(now) == len(kept)
    assert {json.loads(x)["sitting"] for x in now[7:]} == {2}


def test_a_shared_reference_of_other_settings_is_refused_by_name(tiny, tmp_path, capsys):
    refs = tmp_path / "refs"
    bench("greedy", tiny, tmp_path / "g", capsys, "--references", str(refs))
    config = next(refs.glob("*/p2-greedy/config.json"))
    data = json.loads(config.read_text())
    data["seed"] += 1
    config.write_text(json.dumps(data))
    code, _, err = cli(["random", "--suite", str(tiny), "--out", str(tmp_path / "r"),
                        "--workers", "1", "--no-progress", "--references", str(refs)], capsys)
    assert code == 2 and "Traceback" not in err
    assert f"the reference tournament in '{config.parent}' is not this cell's: seed" in err
