"""The main job's report: the samples really trained, what the fresh agent reached, and the
agents' short labels."""

import json

import pytest

from dragons_egg.experiments.cli.main_job import main


def test_report_gives_trained_samples_and_labels_the_agents(tmp_path):
    out = tmp_path / "main"
    assert main(["--samples", "1", "--matches", "6", "--workers", "1",
                 "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    final = json.loads((out / "fresh" / "summary.json").read_text())
    samples = final["samples"]
    assert samples > 1  # the trainer updates after whole rollouts
    assert f"{samples:,} learner samples (1 asked;" in report
    assert "**What the fresh agent reached:**" in report
    assert f"| {samples:,} |" in report  # the evaluation row of the final policy
    for label in ("fresh", "ppo", "ppo-0.1", "heuristic"):
        assert f"| `{label}` |" in report
    assert "`ppo` - `fresh`" in report
    assert "| `ppo:path=" not in report and "`ppo:path=" in report  # named once, in the text
    summary = json.loads((out / "tournament" / "summary.json").read_text())
    assert {"fresh", "ppo-0.1", "ppo"} <= set(summary["labels"])
    for name in ("learning_curve.png", "tournament/ratings.png", "tournament/results.jsonl",
                 "fresh/final.npz", "fresh/eval.csv"):
        assert (out / name).stat().st_size > 0


def test_unwritable_output_folder_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--out", "/dev/null/x"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "'/dev/null' is not a folder" in err


def test_a_rerun_never_writes_over_an_earlier_main_job(tmp_path, capsys):
    """Without --out, the next free runs/main-N; an --out that holds a job is refused (its
    files untouched) unless --overwrite."""
    from dragons_egg.experiments.cli import main_job

    base = tmp_path / "runs" / "main"
    assert main_job.fresh_out(base) == base  # nothing there yet
    (base / "tournament").mkdir(parents=True)
    assert main_job.fresh_out(base) == tmp_path / "runs" / "main-2"
    (tmp_path / "runs" / "main-2").mkdir()  # an empty folder holds no job
    assert main_job.fresh_out(base) == tmp_path / "runs" / "main-2"
    (tmp_path / "runs" / "main-2" / "report.md").write_text("earlier")
    assert main_job.fresh_out(base) == tmp_path / "runs" / "main-3"
    with pytest.raises(SystemExit) as exc:
        main(["--out", str(tmp_path / "runs" / "main-2"), "--samples", "1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "holds an earlier main job's results" in err and "--overwrite" in err
    assert (tmp_path / "runs" / "main-2" / "report.md").read_text() == "earlier"


def test_ctrl_c_is_one_line_naming_the_folder(tmp_path, capsys, monkeypatch):
    """Ctrl-C (or SIGTERM) during the job: status 130 and one line saying where its files are
    and how to run it again, not a traceback."""
    from dragons_egg.experiments.cli import main_job

    def stopped(samples, seed, out):
        (out / "fresh").mkdir(parents=True)
        raise KeyboardInterrupt

    monkeypatch.setattr(main_job, "train_fresh", stopped)
    out = tmp_path / "main"
    assert main(["--out", str(out), "--samples", "1"]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith(
        f"interrupted; what was done is in {out}; run it again with --out {out} --overwrite, "
        "or in a new folder")
