"""The agent shipped inside the package, and the main job."""

import json

import pytest

from agents import make_agent
from agents.ppo import SHIPPED
from agents.runner import play_match
from dragons_egg_env.config import RulesConfig

PROVENANCE = SHIPPED.with_suffix(".json")


def test_shipped_checkpoint_is_small_and_documented():
    assert SHIPPED.is_file(), "the shipped checkpoint is missing"
    assert SHIPPED.stat().st_size < 5 * 2**20
    meta = json.loads(PROVENANCE.read_text())
    assert meta["command"].startswith("python -m experiments.train_ppo --config "
                                      "experiments/configs/shipped.json")
    assert meta["num_timesteps"] > 0
    assert meta["config"]["table_sizes"] == [4]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_shipped_agent_loads_and_plays_only_legal_moves(n):
    config = RulesConfig(num_players=n, num_rounds=3)
    for seed in range(3):
        agents = [make_agent("ppo", seed=seed)] + \
            [make_agent("heuristic", seed=k) for k in range(1, n)]
        rec = play_match(agents, config, seed=seed)  # raw_env raises on an illegal move
        assert len(rec.rounds) == 3


def test_main_job_smoke(tmp_path):
    from experiments.main_job import main

    out = tmp_path / "main"
    assert main(["--timesteps", "256", "--matches", "10", "--workers", "1",
                 "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert "## Training" in report and "## Tournament" in report
    assert "`ppo`" in report and "ppo:path=" in report
    for name in ("learning_curve.png", "tournament/ratings.png", "tournament/results.jsonl"):
        assert (out / name).stat().st_size > 0
