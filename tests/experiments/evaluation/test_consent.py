"""Consent that a file cannot grant (issue 47, 1): a received tournament folder whose
``config.json`` names a spec that runs code does not run it on ``--resume`` unless the user
allows that spec on the command line. Before, ``dragons-egg tournament --resume DIR`` ran the
payload of a ``config.json`` naming ``ppo:path=evil.zip,trust=1`` (or a ``MODULE:CLASS``)."""

from __future__ import annotations

import json
import sys

import pytest

from dragons_egg import agents
from dragons_egg.agents.consent import CONSENT_FLAG, ConsentError, check_consent, runs_code
from dragons_egg.experiments.evaluation.tournament import TournamentConfig, run_tournament
from dragons_egg.experiments.evaluation.tournament.cli import main

PAYLOAD = '''
from pathlib import Path
Path("PAYLOAD_RAN").write_text("it ran")
from dragons_egg.agents.heuristic import HeuristicAgent as Bot
'''


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working folder holding a module whose import writes ``PAYLOAD_RAN``."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "evil_bots.py").write_text(PAYLOAD)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(agents, "_LOADED", {})
    yield folder
    sys.modules.pop("evil_bots", None)


def cli(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def received_folder(out, agents_=("evil_bots:Bot", "random")):
    """A finished tournament's folder whose config.json was changed to name ``agents_``."""
    tc = TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=4,
                          num_rounds=1, bootstrap=100, out_dir=str(out))
    run_tournament(tc, progress=False)
    cfg = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**cfg, "agents": list(agents_)}))
    (out / "results.jsonl").write_text("")  # every match still to play
    return out


@pytest.mark.parametrize("spec", ["evil_bots:Bot", "ppo:path=evil.zip,trust=1",
                                  "rllib:path=evil_checkpoint"])
def test_a_folder_naming_code_is_refused_on_resume_without_consent(work, capsys, spec):
    out = received_folder(work / "t", (spec, "random"))
    code, err = cli(["--resume", str(out), "--workers", "1", "--no-progress"], capsys)
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert f"the config.json of {out} names the agent {spec!r}" in line
    assert f"{CONSENT_FLAG} '{spec}'" in line and "a file cannot give that consent" in line
    assert not (work / "PAYLOAD_RAN").exists()


def test_the_users_consent_on_the_command_line_lets_it_run(work, capsys):
    out = received_folder(work / "t")
    code, err = cli(["--resume", str(out), "--workers", "1", "--no-progress",
                     CONSENT_FLAG, "evil_bots:Bot"], capsys)
    assert code == 0, err
    assert (work / "PAYLOAD_RAN").exists()


def test_giving_the_agents_again_is_consent_too(work, capsys):
    out = received_folder(work / "t")
    code, err = cli(["evil_bots:Bot", "random", "--resume", str(out), "--workers", "1",
                     "--no-progress"], capsys)
    assert code == 0, err


def test_which_specs_run_code():
    assert runs_code("ppo:path=x.zip,trust=1") and runs_code("ppo:path=x.zip,trust=true")
    assert runs_code("rllib:path=ckpt") and runs_code("some_module:SomeClass")
    for safe in ("ppo", "ppo:path=x.npz", "ppo:path=x.zip,trust=0", "heuristic", "net:path=a",
                 "ismcts:iterations=10"):
        assert runs_code(safe) is None, safe
    with pytest.raises(ConsentError, match="names the agent 'm:C'"):
        check_consent(["heuristic", "m:C"], "here")
    check_consent(["m:C"], "here", allowed=["m:C"])


def test_a_tribute_analysis_folder_naming_code_is_refused_on_resume(work, capsys):
    from dragons_egg.experiments.evaluation import tribute as ta

    out = work / "ta"
    assert ta.main(["--play", "heuristic", "--tribute", "greedy", "--deals", "2", "--players",
                    "3", "--out", str(out), "--no-progress"]) == 0
    saved = json.loads((out / ta.SETTINGS).read_text())
    (out / ta.SETTINGS).write_text(json.dumps({**saved, "tribute": "evil_bots:Bot"}))
    (out / ta.SUMMARY).unlink()
    (out / ta.PARTS).write_text("")
    with pytest.raises(SystemExit) as exc:
        ta.main(["--resume", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert f"the {ta.SETTINGS} of {out} names the agent 'evil_bots:Bot'" in err
    assert not (work / "PAYLOAD_RAN").exists()
    assert ta.main(["--resume", str(out), "--no-progress", CONSENT_FLAG, "evil_bots:Bot"]) == 0
    assert (work / "PAYLOAD_RAN").exists()
