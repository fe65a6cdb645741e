"""The self-play trainer under a rule variant (issue 46): ``--rule``, ``--rules FILE|JSON``,
``--num-rounds`` and ``--eval-players`` give one :class:`RulesConfig`; the collector's engines,
the league, the evaluations and the exported and shipped policy files all carry it, and the
``ppo`` agent warns when the policy plays under other rules. Settings written before the
trainer held its rules (``num_rounds``, ``eval_players``) read as ``rules``."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("tyro")

from support import tiny  # noqa: E402

from dragons_egg.agents import make_agent  # noqa: E402
from dragons_egg.agents.netpolicy import load_policy_file  # noqa: E402
from dragons_egg.agents.ppo import RulesMismatchWarning  # noqa: E402
from dragons_egg.experiments.evaluation import versus  # noqa: E402
from dragons_egg.experiments.training import selfplay, ship  # noqa: E402
from dragons_egg.experiments.training.settings import SelfPlayConfig  # noqa: E402
from dragons_egg_env.config import RulesConfig  # noqa: E402

#: A variant of four flags away from the defaults (R10, R26, R31, R27).
VARIANT = {"pass_locks_out": True, "num_rounds": 2, "tribute_asks": 1,
           "reward_scheme": "dragon_egg"}
TINY = ["--table-sizes", "2", "3", "--envs-per-size", "6", "--rollout-steps", "12",
        "--hidden", "16", "--epochs", "1", "--minibatch", "32", "--eval-opponents", "random",
        "--eval-matches", "4", "--eval-every", "144", "--checkpoint-every", "144",
        "--total-samples", "288", "--no-progress", "--collectors", "0",
        "--opponent-share", "0.5", "--league-agents", "heuristic"]


def variant_args() -> list[str]:
    return ["--rule", "pass_locks_out=true", "--num-rounds", "2", "--rule", "tribute_asks=1",
            "--rule", "reward_scheme=dragon_egg", "--eval-players", "3"]


def test_a_run_under_a_variant_trains_evaluates_and_ships_it(tmp_path, monkeypatch):
    seen: list[dict] = []
    real = versus.evaluate_agent

    def recording(me, opponents, **kw):
        seen.append(kw)
        return real(me, opponents, **kw)

    monkeypatch.setattr(versus, "evaluate_agent", recording)
    engines: list[RulesConfig] = []
    real_init = selfplay.Collector.__init__

    def collector_init(self, cfg, seed):
        real_init(self, cfg, seed)
        engines.extend(eng.config for eng in self.engines)

    monkeypatch.setattr(selfplay.Collector, "__init__", collector_init)
    argv = [*TINY, *variant_args(), "--out-dir", str(tmp_path), "--run-name", "v"]
    assert selfplay.main(argv) == 0
    run = tmp_path / "v"
    want = RulesConfig(num_players=3, **VARIANT)
    # the collection: one engine per table size, each under the variant at its size
    assert engines == [dataclasses.replace(want, num_players=n) for n in (2, 3)]
    # the evaluations: at eval_players seats, under the variant's flags and rounds
    assert len(seen) == 2
    for kw in seen:
        assert kw["players"] == 3 and kw["num_rounds"] == 2
        assert kw["rules"] == {"pass_locks_out": True, "tribute_asks": 1,
                               "reward_scheme": "dragon_egg", "opening_ten_of_fire_alone": True,
                               "completion_out_of_turn": True, "dragons_per_play": "one",
                               "egg_in_tribute": False}
    # the settings written, and read back
    saved = json.loads((run / "config.json").read_text())
    assert "num_rounds" not in saved and "eval_players" not in saved
    assert SelfPlayConfig.from_dict(saved).rules == want
    # the exported policy, a league snapshot and the shipped file record the flags
    flags = {k: v for k, v in want.to_dict().items() if k != "num_players"}
    assert load_policy_file(run / "final.npz").rules == flags
    dest = tmp_path / "shipped.npz"
    assert ship.main([str(run / "checkpoints" / "latest.pt"), "--dest", str(dest)]) == 0
    assert load_policy_file(dest).rules == flags
    # the ppo agent: silent under its own rules, one warning naming the flags under others
    agent = make_agent(f"ppo:path={dest}", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.start_match(0, want)
    with pytest.warns(RulesMismatchWarning, match="pass_locks_out: policy True, game False"):
        make_agent(f"ppo:path={dest}", seed=0).start_match(0, RulesConfig(num_players=3))


def test_rules_come_from_a_file_and_single_flags_go_over_it(tmp_path):
    path = tmp_path / "variant.json"
    path.write_text(json.dumps({"pass_locks_out": True, "num_rounds": 2}))
    cmd = selfplay.parse_args(["--rules", str(path), "--rule", "num_rounds=1",
                               "--out-dir", str(tmp_path)])
    assert cmd.cfg.rules == RulesConfig(pass_locks_out=True, num_rounds=1)
    toml = tmp_path / "variant.toml"
    toml.write_text("tribute_asks = 0\n")
    assert selfplay.parse_args(["--rules", str(toml)]).cfg.rules == RulesConfig(tribute_asks=0)
    js = selfplay.parse_args(["--rules", '{"egg_in_tribute": true}']).cfg
    assert js.rules == RulesConfig(egg_in_tribute=True)


@pytest.mark.parametrize("argv, message", [
    (["--rule", "pass_locks_out=maybe"], "pass_locks_out"),
    (["--rule", "no_such_flag=1"], "no_such_flag"),
    (["--rule", "tribute_asks"], "name=value"),
    (["--num-rounds", "0"], "num_rounds"),
    (["--num-rounds", "2", "--rule", "num_rounds=3"], "disagrees"),
    (["--rules", "missing.json"], "missing.json"),
    (["--rules", '{"pass_locks_out": 3}'], "pass_locks_out"),
])
def test_bad_rules_are_one_line_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        selfplay.parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_settings_of_before_the_rules_read_as_rules(tmp_path):
    old = {"num_rounds": 1, "eval_players": 2, "table_sizes": [2, 3]}
    cfg = SelfPlayConfig.from_dict(old)
    assert cfg.rules == RulesConfig(num_players=2, num_rounds=1)
    assert (cfg.num_rounds, cfg.eval_players) == (1, 2)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert selfplay.parse_args(["--config", str(path)]).cfg.rules == cfg.rules
    with pytest.raises(ValueError, match="num_rounds .* disagree"):
        SelfPlayConfig.from_dict({"num_rounds": 1, "rules": {"num_rounds": 2}})


def test_a_resume_keeps_the_rules_but_may_change_the_evaluation_table(tmp_path, capsys):
    cfg = tiny(tmp_path, run_name="r", num_rounds=1, eval_players=2, total_samples=144,
               checkpoint_every=144)
    selfplay.Run(cfg).train()
    ckpt = str(tmp_path / "r" / "checkpoints" / "latest.pt")
    with pytest.raises(SystemExit):
        selfplay.parse_args(["--resume", ckpt, "--rule", "pass_locks_out=true"])
    assert "pass_locks_out (checkpoint False, given True)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        selfplay.parse_args(["--resume", ckpt, "--rules", '{"num_rounds": 3}'])
    assert "num_rounds (checkpoint 1, given 3)" in capsys.readouterr().err
    resumed = selfplay.parse_args(["--resume", ckpt, "--eval-players", "3"]).cfg
    assert resumed.rules == RulesConfig(num_players=3, num_rounds=1)
