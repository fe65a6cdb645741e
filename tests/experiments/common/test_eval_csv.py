"""``eval.csv`` is read against a schema (issue 47: "Records checked before work"): a resumed
run reads its folder's ``eval.csv`` with pydantic before anything is built, and a damaged one
(a word where a number belongs, ``nan`` or ``inf``, a count that is not a whole number, junk,
text that is not UTF-8, a header that is not one) is refused in one line naming the file and
the line, with nothing trained and nothing written. Before, such a file was set aside as "could
not be read" and replaced, or, for ``nan``, continued as it was. A last line cut off in its
write (a stop, a full disk) is dropped, as the other readers of appended lines do."""

import shutil

import pytest

from dragons_egg.experiments.common import runs

HEADER = "samples,seconds,diff_random,diff_random_low,diff_random_high\r\n"


def _write(path, text):
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


@pytest.mark.parametrize("body,needle", [
    ("144,1.5,abc,,\r\n", "line 2: diff_random is 'abc': Input should be a valid number"),
    ("144,1.5,nan,,\r\n", "line 2: diff_random is 'nan': Input should be a finite number"),
    ("144,1.5,,,\r\n288,inf,,,\r\n", "line 3: seconds is 'inf': Input should be a finite number"),
    ("144.5,1.5,,,\r\n", "line 2: samples is '144.5': Input should be a valid integer"),
    ("-144,1.5,,,\r\n", "line 2: samples is '-144': Input should be greater than or equal to 0"),
    (",1.5,,,\r\n", "line 2: samples is '': Input should be a valid integer"),
    ("garbage\r\n", "line 2: samples is 'garbage': Input should be a valid integer"),
    ("144,1.5,0.1,x,\r\n", "line 2: diff_random_low is 'x'"),
    (b"144,1.5,,,\r\n\xff\xfe\x00junk\r\n", "line 3: not UTF-8 text"),
    ("144,1.5,\x00,,\r\n", "line 2: diff_random is '\\x00'"),
])
def test_a_damaged_eval_csv_is_refused_by_file_line_and_column(tmp_path, body, needle):
    path = _write(tmp_path / "eval.csv", HEADER.encode() + (body.encode() if isinstance(
        body, str) else body))
    with pytest.raises(runs.DamagedEvalCsv) as exc:
        runs.read_eval_csv(path)
    assert str(exc.value).startswith(f"{path}, line ") and needle in str(exc.value)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("header", ["seconds,diff_random\r\n", "samples,samples\r\n",
                                    "samples,,x\r\n"])
def test_a_header_that_is_not_one_is_refused(tmp_path, header):
    path = _write(tmp_path / "eval.csv", header + "1,2\r\n")
    with pytest.raises(runs.DamagedEvalCsv, match=r"eval\.csv, line 1: .* is not a header of "
                                                  r"evaluations"):
        runs.read_eval_csv(path)


def test_what_the_writers_write_reads_back(tmp_path):
    """Empty cells (an interval left out, a column a row did not have) are NaN, counts ints;
    a NaN of numpy's is written as an empty cell too, never as the text ``nan``."""
    np = pytest.importorskip("numpy")
    path = tmp_path / "eval.csv"
    runs.append_eval_csv(path, {"samples": 144, "seconds": 1.5, "diff_random": float("nan")})
    runs.append_eval_csv(path, {"samples": 288, "seconds": 2.0, "diff_random": 0.25,
                                "diff_greedy": np.float32("nan")})
    assert "nan" not in path.read_text()
    rows = runs.read_eval_csv(path)
    assert [r["samples"] for r in rows] == [144, 288]
    assert all(type(r["samples"]) is int for r in rows)
    assert rows[1]["diff_random"] == 0.25
    assert all(r["diff_greedy"] != r["diff_greedy"] for r in rows)  # NaN


# ---------------------------------------------------------------------------------------
# A resume reads it before any training.

SP = ["--table-sizes", "2", "3", "--envs-per-size", "6", "--rollout-steps", "12", "--hidden",
      "16", "--epochs", "1", "--minibatch", "32", "--num-rounds", "1", "--eval-opponents",
      "random", "--eval-players", "2", "--eval-matches", "4", "--no-progress",
      "--collectors", "0"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A self-play run of 288 samples, evaluated at 144 and 288, its checkpoint at 288."""
    pytest.importorskip("torch")
    pytest.importorskip("numba")
    from dragons_egg.experiments.training import selfplay

    out = tmp_path_factory.mktemp("eval_csv")
    assert selfplay.main(SP + ["--total-samples", "288", "--eval-every", "144",
                               "--checkpoint-every", "144", "--out-dir", str(out),
                               "--run-name", "x"]) == 0
    return out / "x"


def _files(run_dir):
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and not p.name.startswith(".dragons-egg.")}


@pytest.mark.parametrize("damage", ["a word", "nan", "junk", "header"])
def test_a_resume_refuses_a_damaged_eval_csv_before_it_trains(trained, damage, tmp_path,
                                                             capsys):
    from dragons_egg.experiments.training import selfplay

    run = tmp_path / "x"
    shutil.copytree(trained, run)
    path = run / "eval.csv"
    header, first, second = path.read_bytes().decode().split("\r\n")[:3]
    assert second.startswith("288,")
    cells = second.split(",")
    if damage == "a word":
        cells[1] = "abc"
    elif damage == "nan":
        cells[2] = "nan"
    bad = {"a word": [header, first, ",".join(cells)],
           "nan": [header, first, ",".join(cells)],
           "junk": [header, first, second, "}{ not a row at all"],
           "header": ["sample,seconds", first, second]}[damage]
    path.write_text("\r\n".join(bad) + "\r\n", newline="")
    before = _files(run)
    capsys.readouterr()
    code = selfplay.main(["--resume", str(run / "checkpoints" / "latest.pt"),
                          "--total-samples", "432"])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    line = {"a word": 3, "nan": 3, "junk": 4, "header": 1}[damage]
    assert lines[0].startswith(f"error: {path}, line {line}: "), lines[0]
    assert "move it away" in lines[0]
    assert _files(run) == before  # nothing trained, set aside or rewritten
    # mended (here: moved away), the same resume goes on
    path.rename(run / "mine.csv")
    assert selfplay.main(["--resume", str(run / "checkpoints" / "latest.pt"),
                          "--total-samples", "432"]) == 0
    assert [r["samples"] for r in runs.read_eval_csv(path)] == [144, 288, 432]


def test_a_resume_drops_a_last_line_cut_off_in_its_write(trained, tmp_path, capsys):
    """An append cut off (a stop or a full disk in the middle of a row) leaves a last line
    without its newline: the resume drops it, says so, and goes on."""
    from dragons_egg.experiments.training import selfplay

    run = tmp_path / "x"
    shutil.copytree(trained, run)
    path = run / "eval.csv"
    path.write_bytes(path.read_bytes() + b"432,3.")
    capsys.readouterr()
    assert selfplay.main(["--resume", str(run / "checkpoints" / "latest.pt"),
                          "--total-samples", "432"]) == 0
    assert f"{path}: dropping a last line cut off in its write (6 bytes)" in \
        capsys.readouterr().err
    assert [r["samples"] for r in runs.read_eval_csv(path)] == [144, 288, 432]
    assert not list(run.glob("eval-before-resume-*.csv"))
