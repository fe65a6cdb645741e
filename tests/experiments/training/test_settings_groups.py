"""The self-play trainer's settings in groups (issue 46): the core holds the run's settings,
the budget, the rules and the PPO, collection and league groups; the research methods are
plug-ins whose settings live in their own modules. Groups are frozen and checked when made,
flat on the command line, nested in JSON; settings of the flat form of before (config files,
``config.json``, checkpoints) read as the nested one."""

from __future__ import annotations

import dataclasses
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("tyro")

from support import tiny  # noqa: E402

from dragons_egg.experiments.common.settings import SettingsGroup, flat_values  # noqa: E402
from dragons_egg.experiments.training import (  # noqa: E402
    counterfactual,
    search_targets,
    selfplay,
    tribute_table,
)
from dragons_egg.experiments.training.checkpoint import state_digest  # noqa: E402
from dragons_egg.experiments.training.settings import (  # noqa: E402
    PPOSettings,
    SelfPlayConfig,
)


def test_the_core_holds_at_most_25_settings_and_the_plugins_live_in_their_modules():
    fields = {f.name: f.type for f in dataclasses.fields(SelfPlayConfig)}
    assert len(fields) <= 25, sorted(fields)
    hints = {name: getattr(SelfPlayConfig(), name) for name in fields}
    groups = {name: type(v) for name, v in hints.items() if isinstance(v, SettingsGroup)}
    assert {n: g.__module__.rsplit(".", 1)[1] for n, g in groups.items()} == {
        "ppo": "settings", "collection": "settings", "league": "settings",
        "tribute_cf": "counterfactual", "egg_cf": "counterfactual", "table": "tribute_table",
        "search": "search_targets", "critic": "oracle", "belief": "oracle",
        "exploiters": "exploiters"}
    assert groups["tribute_cf"] is counterfactual.TributeCounterfactualSettings
    assert groups["table"] is tribute_table.TributeTableSettings
    assert groups["search"] is search_targets.SearchTargetSettings
    # every setting keeps one flat name, none shared between groups
    names = list(flat_values(SelfPlayConfig()))
    assert len(names) == len(set(names)) and "tribute_cf_coef" in names
    assert SelfPlayConfig().plugins() == {}  # every plug-in is off by default


def test_groups_are_frozen_and_checked_when_made():
    cfg = SelfPlayConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.seed = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.ppo.learning_rate = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="clip_range must be > 0, got -1"):
        PPOSettings(clip_range=-1)
    with pytest.raises(ValueError, match="tribute_cf_replay .* needs tribute_cf_update"):
        counterfactual.TributeCounterfactualSettings(tribute_counterfactual=0.5,
                                                     tribute_cf_replay=10)
    with pytest.raises(ValueError, match="tribute_table learns from counterfactual"):
        SelfPlayConfig.from_dict({"tribute_table": True})
    with pytest.raises(ValueError, match="eval_players must be in 2..3"):
        SelfPlayConfig.from_dict({"max_players": 3, "table_sizes": [2, 3]})


def test_flat_flags_and_flat_files_fill_the_groups(tmp_path):
    cmd = selfplay.parse_args(["--learning-rate", "1e-3", "--tribute-counterfactual", "0.3",
                               "--tribute-table", "--table-sizes", "2", "3", "--max-players",
                               "3", "--eval-players", "3"])
    cfg = cmd.cfg
    assert cfg.ppo.learning_rate == 1e-3 and cfg.collection.table_sizes == (2, 3)
    assert cfg.tribute_cf.tribute_counterfactual == 0.3 and cfg.table.tribute_table
    assert set(cfg.plugins()) == {"tribute_cf", "table"}
    # the flat form of a settings file (as written before the groups) reads the same
    flat = {"learning_rate": 1e-3, "tribute_counterfactual": 0.3, "tribute_table": True,
            "table_sizes": [2, 3], "max_players": 3, "eval_players": 3}
    path = tmp_path / "flat.json"
    path.write_text(json.dumps(flat))
    assert selfplay.parse_args(["--config", str(path)]).cfg == cfg
    assert SelfPlayConfig.from_dict(flat) == cfg
    # and the nested form is what a run writes and reads back
    nested = json.loads(json.dumps(dataclasses.asdict(cfg)))
    assert nested["ppo"]["learning_rate"] == 1e-3 and "learning_rate" not in nested
    assert SelfPlayConfig.from_dict(nested) == cfg
    with pytest.raises(ValueError, match="unknown setting.*learning_rat .*learning_rate"):
        SelfPlayConfig.from_dict({"ppo": {"learning_rat": 1.0}})


def test_a_checkpoint_of_the_flat_form_resumes(tmp_path):
    """A checkpoint written before the groups (its settings flat, as every committed run's)
    resumes, its settings read into the groups; a frozen setting still cannot change."""
    import torch

    run = selfplay.Run(tiny(tmp_path, run_name="old", total_samples=144,
                            tribute_counterfactual=0.5))
    run.train()
    ckpt = tmp_path / "old" / "checkpoints" / "latest.pt"
    state = torch.load(ckpt, weights_only=True)
    state["config"] = {**{k: v for k, v in state["config"].items() if k not in (
        "ppo", "collection", "league", "tribute_cf", "egg_cf", "table", "search", "rules")},
        **json.loads(json.dumps(flat_values(run.cfg), default=dataclasses.asdict)),
        "num_rounds": run.cfg.num_rounds, "eval_players": run.cfg.eval_players}
    del state["config"]["rules"]
    del state["plugins"]
    state["digest"] = state_digest({k: v for k, v in state.items() if k != "digest"})
    torch.save(state, ckpt)
    resumed = selfplay.parse_args(["--resume", str(ckpt), "--total-samples", "288"]).cfg
    assert resumed == dataclasses.replace(run.cfg, total_samples=288)
    again = selfplay.Run(resumed, resume=str(ckpt))
    again.train()
    assert again.samples == 288
    with pytest.raises(SystemExit):
        selfplay.parse_args(["--resume", str(ckpt), "--hidden", "8"])


def test_the_plugins_on_are_recorded_in_checkpoints_and_policy_files(tmp_path):
    import torch

    from dragons_egg.agents.netpolicy import load_policy_file

    run = selfplay.Run(tiny(tmp_path, run_name="p", total_samples=144,
                            tribute_counterfactual=0.5, tribute_cf_coef=2.0))
    final = run.train()
    state = torch.load(run.dir / "checkpoints" / "latest.pt", weights_only=True)
    assert set(state["plugins"]) == {"tribute_cf"}
    assert state["plugins"]["tribute_cf"]["tribute_cf_coef"] == 2.0
    prov = load_policy_file(final).meta["provenance"]
    assert prov["plugins"] == state["plugins"]
