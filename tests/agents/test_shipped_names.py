"""The agents shipped in the package play by name from any folder (``ppo``, ``ppo-0.1``); a
relative path to a shipped file that does not resolve says which name plays it; and a spec
whose agent needs a missing extra is one line naming the extra."""

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from dragons_egg.agents import (
    AgentSpecError,
    MissingExtraSpecError,
    check_spec_for_table,
    make_agent,
    parse_spec,
    table_limit,
)
from dragons_egg.agents.ppo import PREVIOUS, SHIPPED, SHIPPED_AGENTS, PreviousPPOAgent
from dragons_egg.agents.runner import play_match
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.extras import MissingExtraError

DRAGONS_EGG = Path(sys.executable).parent / "dragons-egg"


def test_ppo_0_1_is_the_previous_shipped_agent():
    assert SHIPPED_AGENTS == {"ppo": SHIPPED, "ppo-0.1": PREVIOUS}
    assert parse_spec("ppo-0.1") == ("ppo-0.1", {})
    assert parse_spec("ppo-0.1:deterministic=false") == ("ppo-0.1", {"deterministic": False})
    assert table_limit("ppo-0.1") == 4
    agent = make_agent("ppo-0.1", seed=1)
    assert isinstance(agent, PreviousPPOAgent) and agent.path == PREVIOUS
    assert agent.format == "sb3" and agent.spec == "ppo-0.1"
    by_path = make_agent(f"ppo:path={PREVIOUS}", seed=1)
    config = RulesConfig(num_players=3, num_rounds=1)
    a = play_match([agent, make_agent("heuristic", seed=2), make_agent("random", seed=3)],
                   config, seed=5)
    b = play_match([by_path, make_agent("heuristic", seed=2), make_agent("random", seed=3)],
                   config, seed=5)
    assert a.scores == b.scores  # the same policy as the file
    with pytest.raises(AgentSpecError, match=r"^ppo-0.1 plays tables of up to 4 players"):
        check_spec_for_table("ppo-0.1", 5)
    with pytest.raises(AgentSpecError, match="unknown option 'path'"):
        parse_spec("ppo-0.1:path=x.zip")  # the name is the file


@pytest.mark.parametrize("relative,name", [("agents/data/ppo_sb3_0.1.zip", "ppo-0.1"),
                                           ("agents/data/ppo_dragons_egg.npz", "ppo")])
def test_a_relative_path_to_a_shipped_file_suggests_its_name(tmp_path, monkeypatch, relative,
                                                             name):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AgentSpecError) as exc:
        parse_spec(f"ppo:path={relative}")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith(f"ppo: checkpoint {relative} does not exist (in {tmp_path})")
    assert msg.endswith(f"play it by name from any folder, as the agent {name}")


def test_a_missing_file_of_another_name_gets_no_suggestion(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AgentSpecError) as exc:
        parse_spec("ppo:path=runs/x/final.zip")
    assert str(exc.value) == f"ppo: checkpoint runs/x/final.zip does not exist (in {tmp_path})"


def test_a_spec_that_needs_a_missing_extra_names_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "sb3_contrib", None)
    for spec in ("ppo-0.1", f"ppo:path={PREVIOUS}"):
        with pytest.raises(MissingExtraSpecError) as exc:
            parse_spec(spec)
        assert isinstance(exc.value, AgentSpecError) and isinstance(exc.value, MissingExtraError)
        assert str(exc.value) == (f"agent {spec} needs the 'train' extra (missing: "
                                  "sb3_contrib): pip install 'dragons-egg[train]'")
        again = pickle.loads(pickle.dumps(exc.value))  # as from a tournament worker
        assert type(again) is MissingExtraSpecError and str(again) == str(exc.value)
    parse_spec("ppo")  # the shipped .npz is played with numpy: no extra
    folder = tmp_path / "main_module"
    folder.mkdir()
    (folder / "class_and_ctor_args.pkl").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingExtraSpecError, match=r"^agent rllib:path=\S+ needs the 'rllib' "
                                                     r"extra \(missing: ray\): pip install "
                                                     r"'dragons-egg\[rllib\]'$"):
        parse_spec(f"rllib:path={folder}")


def test_the_shipped_agents_play_a_tournament_by_name_from_another_folder(tmp_path):
    res = subprocess.run([str(DRAGONS_EGG), "tournament", "ppo", "ppo-0.1", "--matches", "4",
                          "--workers", "1", "--no-progress", "--bootstrap", "100", "--out",
                          "out"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         check=False)
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["labels"] == ["ppo", "ppo-0.1"] and summary["matches"] == 4
