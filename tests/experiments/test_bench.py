"""Smoke test of the benchmark script (figures are never asserted: machines are noisy)."""

import json

import pytest

from experiments import bench


def test_bench_runs_and_writes_json(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert bench.main(["--seconds", "0.5", "--players", "3", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    for key in ("engine", "de_raw", "de_env", "floor"):
        assert doc["results"][key]["steps_per_s"] > 0
    names = [r["name"] for r in doc["ratios"]]
    assert "engine / OpenSpiel dou_dizhu" in names
    text = capsys.readouterr().out
    assert "target ratio" in text


@pytest.mark.parametrize("argv", [["--seconds", "-1"], ["--players", "9"], ["--bogus"]])
def test_bench_bad_arguments(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main(argv)
    assert exc.value.code == 2
