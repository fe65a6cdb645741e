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


def test_json_is_written_as_each_part_finishes_and_never_over_an_earlier_one(
        tmp_path, monkeypatch, capsys):
    """--json is checked before anything is measured (an existing file is refused unless
    --overwrite) and holds every finished placement at once, "partial" until the end."""
    import json

    from dragons_egg.experiments.training import bench

    path = tmp_path / "figures" / "bench.json"  # its folder is made
    seen = []

    def placement(name, seconds, epochs, out):
        if seen:  # the first placement is on disk before the second is measured
            assert json.loads(path.read_text())["rows"][0]["placement"] == seen[0]
            assert json.loads(path.read_text())["partial"] is True
        seen.append(name)
        return {"placement": name, "learner_threads": 1, "samples_per_s": 1000.0 * len(seen),
                "updates": 1, "learner_wait_s": 0.1, "update_s": 1.0,
                "collector_busy_s": None, "lag": None}

    rate = {"samples_per_s": 5000.0}
    monkeypatch.setattr(bench, "bench_placement", placement)
    monkeypatch.setattr(bench, "collector_rate", lambda *a: rate)
    monkeypatch.setattr(bench, "_rollout", lambda *a: tmp_path / "rollout.npz")
    monkeypatch.setattr(bench, "learner_rate", lambda *a: rate)
    monkeypatch.setattr(bench, "ddp_learner_rate", lambda *a: rate)
    argv = ["--placements", "in_process,in_process_2threads", "--no-sb3", "--json", str(path)]
    assert bench.main(argv) == 0
    final = json.loads(path.read_text())
    assert final["partial"] is False and [r["placement"] for r in final["rows"]] == seen
    assert "parts" in final and not list(path.parent.glob("*.tmp"))
    for extra, needle in (([], "exists (an earlier bench's figures)"),
                          (["--json", str(tmp_path)], "is a folder")):
        with pytest.raises(SystemExit) as exc:
            bench.main([*argv, *extra])
        assert exc.value.code == 2 and needle in capsys.readouterr().err
    assert json.loads(path.read_text()) == final  # refused, not touched
    seen.clear()
    assert bench.main([*argv, "--overwrite"]) == 0
    assert json.loads(path.read_text())["partial"] is False


def test_the_sb3_row_measures_the_learner_train_ppo_builds(tmp_path, monkeypatch):
    """The MaskablePPO row times ``train_ppo``'s own learner (its entropy coefficient, GAE
    lambda and clip range included), not a second hand-built one, and writes nothing."""
    from dragons_egg.experiments.training import train_ppo
    from dragons_egg.experiments.training.bench import bench_train_ppo

    built, original = [], train_ppo.make_model

    def make_model(*args, **kwargs):
        built.append(original(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(train_ppo, "make_model", make_model)
    fig = bench_train_ppo(0.05, 1, tmp_path)
    cfg = train_ppo.TrainConfig()
    (model,) = built
    assert (model.ent_coef, model.gae_lambda, model.n_epochs) == (
        cfg.ent_coef, cfg.gae_lambda, cfg.n_epochs)
    assert fig["samples"] > 0 and fig["samples_per_s"] > 0
    assert list(tmp_path.iterdir()) == []
