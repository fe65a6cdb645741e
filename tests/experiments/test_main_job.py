"""The main job's report: the steps really trained and the fresh agent's short label."""

import json

import pytest

from experiments.main_job import main


def test_report_gives_trained_steps_and_labels_the_fresh_agent(tmp_path):
    out = tmp_path / "main"
    assert main(["--timesteps", "300", "--matches", "4", "--workers", "1",
                 "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    final = out / "fresh" / "checkpoints" / "final.json"
    steps = json.loads(final.read_text())["num_timesteps"]
    assert steps != 300  # SB3 trains in whole rollouts
    assert f"Training: {steps} steps (300 asked;" in report
    assert "| `fresh` |" in report and "`ppo` - `fresh`" in report
    assert "| `ppo:path=" not in report and "`ppo:path=" in report  # named once, in the text
    summary = json.loads((out / "tournament" / "summary.json").read_text())
    assert "fresh" in summary["labels"]


def test_unwritable_output_folder_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--out", "/dev/null/x"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "'/dev/null' is not a folder" in err
