"""Plug-in agents in tournaments: factories and policies with labels, in worker processes
under every start method."""

import json
import sys
import types

import numpy as np
import pytest

from dragons_egg.agents import AgentSpec, AgentSpecError
from dragons_egg.agents.heuristic import HeuristicAgent
from dragons_egg.experiments.evaluation.tournament import (
    Entrant,
    TournamentConfig,
    run_matches,
    run_tournament,
)
from dragons_egg.experiments.evaluation.tournament.runner import TIMING_KEYS


def make_heuristic(seed):
    """A module-level factory: picklable, so it works with any number of workers."""
    return HeuristicAgent(seed=seed)


def first_legal(observation, mask):
    """A module-level policy (observation, mask) -> action."""
    return int(np.flatnonzero(mask)[0])


class Fixed:
    """A picklable policy object."""

    def __init__(self, index):
        self.index = index

    def __call__(self, observation, mask):
        legal = np.flatnonzero(mask)
        return int(legal[min(self.index, len(legal) - 1)])


def config(agents, **kw):
    base = dict(num_players=4, matches=12, seed=5, num_rounds=2, bootstrap=100)
    base.update(kw)
    return TournamentConfig(agents=agents, **base)


def strip(results):
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in results]


PLUGINS = [Entrant("mine", factory=make_heuristic), Entrant("first", policy=first_legal),
           Entrant("fixed-2", policy=Fixed(2)), "random"]


def test_a_factory_gets_the_seed_a_spec_would_get():
    by_spec = run_matches(config(["heuristic", "random"]), progress=False)
    by_factory = run_matches(config([Entrant("mine", factory=make_heuristic), "random"]),
                             progress=False)
    renamed = [{**r, "seats": ["heuristic" if s == "mine" else s for s in r["seats"]]}
               for r in strip(by_factory)]
    assert renamed == strip(by_spec)
    by_make = run_matches(config([Entrant("h", factory=AgentSpec("heuristic")), "random"]),
                          progress=False)
    assert [r["scores"] for r in by_make] == [r["scores"] for r in by_spec]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_give_the_results_of_one_process(method):
    one = run_matches(config(PLUGINS, workers=1), progress=False)
    two = run_matches(config(PLUGINS, workers=2), progress=False, start_method=method)
    assert strip(one) == strip(two)
    assert {s for r in one for s in r["seats"]} == {"mine", "first", "fixed-2", "random"}


def test_labels_name_plugins_everywhere(tmp_path):
    out = tmp_path / "t"
    s = run_tournament(config([Entrant("fresh", spec="greedy"), Entrant("first",
                                                                        policy=first_legal)],
                              matches=4, num_rounds=1, out_dir=str(out)), progress=False)
    assert s["labels"] == ["fresh", "first"] and "fresh - first" in s["differences"]
    assert "| `fresh` |" in (out / "report.md").read_text()
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["agents"] == [{"label": "fresh", "spec": "greedy"},
                             {"label": "first", "policy": f"{__name__}.first_legal"}]


def test_a_lambda_needs_one_worker():
    lam = Entrant("lam", policy=lambda obs, mask: int(np.flatnonzero(mask)[0]))
    assert len(run_matches(config([lam, "random"], matches=4, num_rounds=1), progress=False)) == 4
    with pytest.raises(TypeError, match=r"'lam'.*cannot be pickled.*workers=2.*module level"):
        run_matches(config([lam, "random"], workers=2), progress=False)

    def nested(seed):
        return HeuristicAgent(seed=seed)

    with pytest.raises(TypeError, match="cannot be pickled"):
        config([Entrant("nested", factory=nested)], workers=2).validate()


def test_spawn_refuses_objects_of_an_interactive_main(monkeypatch):
    fake = types.ModuleType("__main__")  # a REPL or notebook: no __file__

    def policy(observation, mask):
        return int(np.flatnonzero(mask)[0])

    policy.__module__, policy.__qualname__ = "__main__", "policy"
    fake.policy = policy
    monkeypatch.setitem(sys.modules, "__main__", fake)
    tc = config([Entrant("repl", policy=policy), "random"], workers=2)
    with pytest.raises(TypeError, match="interactive session.*'spawn'"):
        run_matches(tc, progress=False, start_method="spawn")


@pytest.mark.parametrize("agents,error,needle", [
    ([make_heuristic], TypeError, "Entrant('name', factory=f)"),
    ([HeuristicAgent(seed=1)], TypeError, "spec string or an Entrant"),
    ([Entrant("x", spec="heuristic"), Entrant("x", spec="greedy")], ValueError,
     "names two different agents"),
    ([Entrant("x", spec="nobody")], AgentSpecError, "unknown agent 'nobody'"),
])
def test_bad_agents_are_clear_errors(agents, error, needle):
    with pytest.raises(error) as exc:
        config(agents).validate()
    assert needle in str(exc.value)


def test_entrant_needs_exactly_one_agent():
    with pytest.raises(ValueError, match="exactly one of spec, factory or policy"):
        Entrant("x")
    with pytest.raises(ValueError, match="exactly one"):
        Entrant("x", spec="random", policy=first_legal)
    with pytest.raises(ValueError, match="label"):
        Entrant("", spec="random")


def test_a_factory_must_return_an_agent():
    tc = config([Entrant("bad", factory=Fixed), "random"], matches=4, num_rounds=1)
    with pytest.raises(TypeError, match="lacks start_match, act, end_round.*policy="):
        run_matches(tc, progress=False)


class Cautious(HeuristicAgent):
    """A module-level agent class, registered by name in a test."""


@pytest.fixture
def registry(monkeypatch):
    from dragons_egg import agents

    monkeypatch.setattr(agents, "_REGISTRY", dict(agents._REGISTRY))  # undone after the test
    return agents


def test_registered_agents_reach_spawned_workers(registry):
    registry.register("cautious_t", Cautious)
    one = run_matches(config(["cautious_t", "random"], matches=8, num_rounds=1), progress=False)
    two = run_matches(config(["cautious_t", "random"], matches=8, num_rounds=1, workers=2),
                      progress=False, start_method="spawn")
    assert strip(one) == strip(two)


def test_a_registered_lambda_needs_one_worker(registry):
    registry.register("lam_t", lambda seed=None: HeuristicAgent(seed=seed))
    with pytest.raises(TypeError, match=r"'lam_t'.*dragons_egg.agents.register.*cannot be pickled"):
        config(["lam_t", "random"], workers=2).validate()


def test_a_checkpoint_is_checked_against_the_table_size():
    from dragons_egg.agents.ppo import PREVIOUS

    with pytest.raises(AgentSpecError, match="up to 4 players"):
        config([f"ppo:path={PREVIOUS}", "random"], num_players=5).validate()
    config(["ppo", "random"], num_players=8).validate()  # the shipped agent plays any table
