"""The one evaluation every trainer, the main job and ``evaluate-run`` share
(``experiments/evaluation/versus.py``), and the run-output writer they write it with
(``experiments/common/runs.py``)."""

import math

import pytest

from dragons_egg.experiments.common.runs import RunOutput, read_eval_csv
from dragons_egg.experiments.evaluation import tournament
from dragons_egg.experiments.evaluation.versus import evaluate_agent, format_estimate


def test_one_row_of_figures_with_the_tournaments_small_sample_rule(monkeypatch):
    row = evaluate_agent("greedy", ["random", "heuristic"], players=3, matches=6, seed=4,
                         num_rounds=1)
    assert set(row) == {"mean_score", "score_low", "score_high", "dragon_rate", "egg_rate",
                        "mean_place", "diff_random", "diff_random_low", "diff_random_high",
                        "diff_heuristic", "diff_heuristic_low", "diff_heuristic_high"}
    assert 1 <= row["mean_place"] <= 3 and 0 <= row["dragon_rate"] <= 1
    # 6 matches at 3 seats are 2 deal sequences: too few for an interval
    assert math.isnan(row["score_low"]) and math.isnan(row["diff_random_high"])
    monkeypatch.setattr(tournament.stats, "MIN_SEQUENCES", 2)
    again = evaluate_agent("greedy", ["random", "heuristic"], players=3, matches=6, seed=4,
                           num_rounds=1)
    assert again["score_low"] <= again["mean_score"] <= again["score_high"]
    assert again["mean_score"] == row["mean_score"]  # the same seed, the same matches
    with pytest.raises(ValueError, match="at least one opponent"):
        evaluate_agent("greedy", [], players=3, matches=6, seed=4)


def test_format_estimate_reads_the_mean_scores_own_interval():
    row = {"mean_score": 0.25, "score_low": 0.1, "score_high": 0.4, "diff_x": -0.5,
           "diff_x_low": math.nan, "diff_x_high": math.nan}
    assert format_estimate(row, "mean_score") == "+0.250 [+0.100, +0.400]"
    assert format_estimate(row, "diff_x").startswith("-0.500 [no interval: fewer than")


def test_run_output_writes_the_csv_the_scalars_and_the_curve(tmp_path):
    logged = []
    out = RunOutput(tmp_path, "timesteps", scalar=lambda tag, v, step: logged.append(
        (tag, v, step)))
    out.add_eval({"timesteps": 100, "seconds": 1.0, "mean_score": 0.1, "diff_h": 0.2,
                  "diff_h_low": -0.1, "diff_h_high": 0.5})
    out.add_eval({"timesteps": 200, "seconds": 2.0, "mean_score": 0.3, "diff_h": 0.4,
                  "diff_h_low": math.nan, "diff_h_high": math.nan})
    rows = read_eval_csv(tmp_path / "eval.csv")
    assert [r["timesteps"] for r in rows] == [100, 200] and math.isnan(rows[1]["diff_h_low"])
    assert ("eval/diff_h", 0.4, 200) in logged
    assert not any(tag == "eval/diff_h_low" and step == 200 for tag, _, step in logged)
    assert (tmp_path / "learning_curve.png").stat().st_size > 0
    # a resume at 100 timesteps keeps the first row and sets the second aside
    out.restore(rows[:1], 100)
    assert [r["timesteps"] for r in read_eval_csv(tmp_path / "eval.csv")] == [100]
    assert (tmp_path / "eval-before-resume-100.csv").is_file()
