"""Hooks on a training run (issue 46): both trainers call a ``TrainerCallback`` at the start,
after each rollout and update, at each evaluation (whose row it may add to) and checkpoint,
and at the end; the search-targets plug-in registers on the self-play trainer this way."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from support import tiny  # noqa: E402

from dragons_egg.experiments.training.callbacks import (  # noqa: E402
    CallbackList,
    TrainerCallback,
)
from dragons_egg.experiments.training.search_targets import (  # noqa: E402
    SearchTargetSettings,
    SearchTargetsPlugin,
)
from dragons_egg.experiments.training.selfplay import Run  # noqa: E402


class Recorder(TrainerCallback):
    """Records every hook, and adds one figure to each evaluation."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def on_run_start(self, run: Any) -> None:
        self.calls.append(("start", None))

    def on_rollout_end(self, run: Any, info: dict[str, Any]) -> None:
        self.calls.append(("rollout", dict(info)))

    def on_update_end(self, run: Any, stats: dict[str, Any]) -> None:
        self.calls.append(("update", dict(stats)))

    def on_eval_end(self, run: Any, row: dict[str, Any]) -> None:
        row["my_figure"] = 0.5
        self.calls.append(("eval", dict(row)))

    def on_checkpoint(self, run: Any, path: Path) -> None:
        assert path.is_file()
        self.calls.append(("checkpoint", path))

    def on_run_end(self, run: Any, final: Path) -> None:
        self.calls.append(("end", final))


def kinds(rec: Recorder) -> list[str]:
    return [k for k, _ in rec.calls]


def test_the_self_play_trainer_calls_every_hook_in_order(tmp_path):
    rec = Recorder()
    run = Run(tiny(tmp_path, total_samples=432, eval_every=288, checkpoint_every=144,
                   eval_opponents=("random",), eval_players=2, eval_matches=4, num_rounds=1),
              callbacks=[rec])
    final = run.train()
    k = kinds(rec)
    assert k[0] == "start" and k[-1] == "end" and rec.calls[-1][1] == final
    # three rollouts of 144 samples, each followed by its update
    body = [x for x in k if x in ("rollout", "update")]
    assert body == ["rollout", "update"] * 3
    updates = [s for kind, s in rec.calls if kind == "update"]
    assert [u["samples"] for u in updates] == [144, 144, 144]
    # evaluations at 288 and at the end, each row written with the figure the hook added
    evals = [r for kind, r in rec.calls if kind == "eval"]
    assert [r["samples"] for r in evals] == [288, 432]
    with open(run.dir / "eval.csv") as f:
        rows = list(csv.DictReader(f))
    assert [float(r["my_figure"]) for r in rows] == [0.5, 0.5]
    assert all(h["my_figure"] == 0.5 for h in run.history)
    assert sum(x == "checkpoint" for x in k) >= 3  # every 144 samples, and the final one


def test_the_sb3_trainer_calls_every_hook(tmp_path):
    from dragons_egg.experiments.training.train_ppo import TrainConfig, train

    rec = Recorder()
    cfg = TrainConfig.from_dict({
        "total_timesteps": 256, "n_steps": 128, "n_envs": 1, "batch_size": 64, "n_epochs": 1,
        "num_rounds": 1, "eval_matches": 4, "eval_every": 128, "snapshot_every": 0,
        "checkpoint_every": 128, "net_arch": [16], "progress": False,
        "out_dir": str(tmp_path), "run_name": "sb3"})
    final = train(cfg, callbacks=[rec])
    k = kinds(rec)
    assert k[0] == "start" and k[-1] == "end" and rec.calls[-1][1] == final
    body = [x for x in k if x in ("rollout", "update")]
    assert body == ["rollout", "update"] * 2
    evals = [r for kind, r in rec.calls if kind == "eval"]
    assert [r["timesteps"] for r in evals] == [128, 256]
    history = json.loads(final.with_suffix(".json").read_text())["history"]
    assert [h["my_figure"] for h in history] == [0.5, 0.5]
    assert "checkpoint" in k


def test_the_search_targets_plugin_registers_through_the_hooks(tmp_path):
    settings = SearchTargetSettings(search_targets=str(tmp_path / "t"))
    (plugin,) = tiny(tmp_path, search_targets=str(tmp_path / "t")).plugin_callbacks()
    assert isinstance(plugin, SearchTargetsPlugin) and plugin.settings == settings
    assert tiny(tmp_path).plugin_callbacks() == []
    with pytest.raises(TypeError, match="a callback is a TrainerCallback"):
        CallbackList([object()])  # type: ignore[list-item]
