"""The training benchmark's model of scaling (``experiments/training/bench.py``): the rate the
measured parts predict on more cores, collectors until the learner saturates, then
data-parallel learners."""

import pytest

from dragons_egg.experiments.training.bench import PLACEMENTS, print_report, scaling_model


def test_the_model_feeds_the_learner_then_adds_learners():
    # a collector brings 60k samples/s, a learner takes 10k on one core, 17k as two workers
    two = scaling_model(60_000, 10_000, 17_000, 2)
    assert two == {"cores": 2, "samples_per_s": 10_000, "collectors": 1, "learners": 1}
    eight = scaling_model(60_000, 10_000, 17_000, 8)
    # 7 learner workers at 85% efficiency take 59.5k; one collector brings 60k
    assert eight["collectors"] == 1 and eight["learners"] == 7
    assert eight["samples_per_s"] == pytest.approx(59_500)
    sixteen = scaling_model(60_000, 10_000, 17_000, 16)
    assert sixteen["collectors"] == 2 and sixteen["learners"] == 14
    assert sixteen["samples_per_s"] == pytest.approx(119_000)
    # near-linear: at least 0.8 x the sum of what the cores would do as learners
    assert sixteen["samples_per_s"] >= 0.8 * 14 * 10_000


def test_the_report_names_the_one_core_row_in_process(capsys):
    assert PLACEMENTS["in_process"] == (0, True, 1)
    rows = [{"placement": "in_process", "learner_threads": 1, "samples_per_s": 10_000.0,
             "learner_wait_s": 0.8, "update_s": 5.0, "collector_busy_s": None, "lag": None},
            {"placement": "ray_2_pipelined", "learner_threads": 2, "samples_per_s": 19_000.0,
             "learner_wait_s": 0.0, "update_s": 3.1, "collector_busy_s": 0.9, "lag": 2.0}]
    print_report({"epochs": 4, "cores": 2, "rows": rows})
    out = capsys.readouterr().out
    assert "ray_2_pipelined" in out and "1.90" in out and "1.00" in out
