"""Smoke test of the benchmark script (figures are never asserted: machines are noisy)."""

import json
import os

import pytest

from dragons_egg.experiments import bench


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


@pytest.fixture
def jax_env(monkeypatch):
    """``--vector`` sets XLA_FLAGS and JAX_PLATFORMS in this process; restore them after."""
    for name in ("XLA_FLAGS", "JAX_PLATFORMS"):
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)


def test_bench_vector_writes_json(tmp_path, capsys, monkeypatch, jax_env):
    pytest.importorskip("numba")
    stub = {"cold": {"import_s": 1.0, "reset_s": 2.0, "random_steps_s": 3.0,
                     "first_call_s": 5.0},
            "cached": {"import_s": 0.1, "reset_s": 0.2, "random_steps_s": 0.3,
                       "first_call_s": 0.5}}
    monkeypatch.setattr(bench.vector, "compile_times", lambda *a: stub)  # the real one: below
    out = tmp_path / "v.json"
    assert bench.main(["--vector", "--seconds", "0.2", "--batch", "64", "--players", "3",
                       "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["batch"] == 64 and doc["players"] == 3
    for key in ("vector_steps_per_s", "vector_record_steps_per_s", "raw_env_steps_per_s"):
        assert doc[key] > 0
    assert doc["vector_over_raw_env"] > 0
    if doc["pgx_leduc_steps_per_s"] is None:  # jax/pgx not installed
        assert doc["pgx_leduc_skipped"].startswith("not installed")
        assert doc["vector_over_pgx_leduc"] is None
    else:
        assert doc["pgx_leduc_steps_per_s"] > 0 and doc["pgx_compile_s"] > 0
        assert doc["vector_over_pgx_leduc"] > 0
    for mem in (doc["memory_per_match"], doc["memory_per_match_record"]):
        assert set(mem) == {"engine", "observation", "outputs", "history"}
        assert all(v > 0 for v in mem.values())
    assert doc["compile"] == stub
    text = capsys.readouterr().out
    assert "vector / raw_env()" in text and "memory per match" in text


def test_bench_vector_without_compile_time(tmp_path, jax_env):
    pytest.importorskip("numba")
    out = tmp_path / "v.json"
    assert bench.main(["--vector", "--seconds", "0.1", "--batch", "8", "--no-compile-time",
                       "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["compile"] is None and doc["vector_steps_per_s"] > 0


def test_first_call_subprocess():
    """The compile-time probe in a fresh process (the default numba cache, usually warm;
    ``compile_times`` runs it with an empty one, which takes tens of seconds)."""
    pytest.importorskip("numba")
    t = bench.first_call(8, 4, 0, None)
    assert set(t) == {"import_s", "reset_s", "random_steps_s", "first_call_s"}
    assert all(v > 0 for v in t.values())
    assert t["first_call_s"] == pytest.approx(t["reset_s"] + t["random_steps_s"])


@pytest.mark.parametrize("argv", [["--vector", "--batch", "0"], ["--batch", "x"]])
def test_bench_vector_bad_arguments(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main(argv)
    assert exc.value.code == 2
