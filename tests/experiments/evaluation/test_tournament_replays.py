"""``dragons-egg tournament --save-replays`` (issue 51): every match's replay is kept,
compressed, in ``replays/``, written before its result line; each verifies and gives its
line's scores; a resume plays only the missing matches and ends with the same files as an
uninterrupted run; the setting is part of the saved config (a resume cannot mix)."""

import gzip
import json
from fractions import Fraction
from pathlib import Path

import pytest
from support import json_lines as lines
from support import tournament_cli as cli

from dragons_egg.experiments.evaluation import tournament as T
from dragons_egg.experiments.evaluation.tournament import TournamentConfig, run_tournament
from dragons_egg_env.replay import ReplayError, check_replay, load_replay

BASE = ["heuristic", "random", "--players", "2", "--matches", "6", "--rounds", "2", "--seed",
        "3", "--bootstrap", "100", "--workers", "1", "--no-progress"]




def test_every_match_keeps_a_compressed_replay_that_verifies_and_matches_its_line(
        tmp_path, capsys):
    out = tmp_path / "t"
    code, _, err = cli(BASE + ["--save-replays", "--out", str(out)], capsys)
    assert code == 0, err
    results = lines(out / "results.jsonl")
    assert len(results) == 6
    for r in results:
        rel = f"replays/seq{r['sequence']}-rot{r['rotation']}.json.gz"
        assert r["replay"] == rel
        raw = (out / rel).read_bytes()
        assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"  # gzip, no time in it
        check = check_replay(out / rel)
        assert check.finished and check.complete
        data = load_replay(out / rel)
        assert [float(Fraction(x)) for x in data["scores"]] == pytest.approx(r["scores"])
    assert json.loads((out / "config.json").read_text())["save_replays"] is True


def test_without_the_flag_no_replay_is_kept_and_config_json_is_as_before(tmp_path, capsys):
    out = tmp_path / "t"
    assert cli(BASE + ["--out", str(out)], capsys)[0] == 0
    assert not (out / "replays").exists()
    assert all("replay" not in r for r in lines(out / "results.jsonl"))
    assert "save_replays" not in json.loads((out / "config.json").read_text())


def test_a_resume_plays_the_missing_matches_and_gives_the_same_replays(tmp_path, capsys,
                                                                       monkeypatch):
    full, cut = tmp_path / "full", tmp_path / "cut"
    assert cli(BASE + ["--save-replays", "--out", str(full)], capsys)[0] == 0
    # a run stopped after 2 lines, and after writing the 3rd match's replay but not its line
    cut.mkdir()
    (cut / "config.json").write_text((full / "config.json").read_text())
    text = (full / "results.jsonl").read_text().splitlines(keepends=True)
    (cut / "results.jsonl").write_text("".join(text[:2]))
    (cut / "replays").mkdir()
    for r in lines(full / "results.jsonl")[:3]:
        name = Path(r["replay"]).name
        (cut / "replays" / name).write_bytes((full / "replays" / name).read_bytes())
    played = []
    real = T.play_task
    monkeypatch.setattr(T.runner, "play_task",
                        lambda *a, **k: played.append(a[1:3]) or real(*a, **k))
    code, _, err = cli(["--resume", str(cut), "--workers", "1", "--no-progress"], capsys)
    assert code == 0, err
    assert len(played) == 4
    names = sorted(p.name for p in (full / "replays").iterdir())
    assert sorted(p.name for p in (cut / "replays").iterdir()) == names  # no duplicate
    for name in names:
        assert (cut / "replays" / name).read_bytes() == (full / "replays" / name).read_bytes()
    assert [r["replay"] for r in lines(cut / "results.jsonl")] == \
        [r["replay"] for r in lines(full / "results.jsonl")]


def test_a_resume_cannot_switch_save_replays_on(tmp_path, capsys):
    out = tmp_path / "t"
    assert cli(BASE + ["--out", str(out)], capsys)[0] == 0
    code, _, err = cli(["--resume", str(out), "--save-replays"], capsys)
    assert code == 2 and "--save-replays True (saved: False)" in err
    tc = TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=6,
                          num_rounds=2, seed=3, bootstrap=100, out_dir=str(out),
                          save_replays=True)
    with pytest.raises(T.OutputError, match=r"save_replays true \(saved: false\)"):
        run_tournament(tc, progress=False, resume=True)


def test_overwrite_removes_the_old_replays(tmp_path, capsys):
    out = tmp_path / "t"
    assert cli(BASE + ["--save-replays", "--out", str(out)], capsys)[0] == 0
    assert cli(BASE + ["--out", str(out), "--overwrite"], capsys)[0] == 0
    assert list((out / "replays").glob("*.gz")) == []


def test_load_replay_reads_gzip_and_names_a_damaged_one(tmp_path, capsys):
    out = tmp_path / "t"
    assert cli(BASE + ["--save-replays", "--out", str(out)], capsys)[0] == 0
    path = out / "replays" / "seq0-rot0.json.gz"
    data = json.loads(gzip.decompress(path.read_bytes()))
    assert dict(load_replay(path)) == data
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ReplayError, match="bad.json.gz: is a damaged gzip file"):
        load_replay(bad)
