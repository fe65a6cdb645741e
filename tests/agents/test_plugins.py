"""Agents of one's own: the worked example of docs/agents.md, ``MODULE:CLASS`` specs, the
``dragons_egg.agents`` entry-point group, ``register`` and worker processes under ``spawn``."""

import multiprocessing as mp
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dragons_egg import agents
from dragons_egg.agents import (
    AgentSpecError,
    available,
    make_agent,
    parse_spec,
    register,
    registrations,
    restore_registrations,
)
from dragons_egg.agents.heuristic import HeuristicAgent
from dragons_egg.agents.runner import play_match
from dragons_egg_env.config import RulesConfig

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "agents.md"
SCRIPT = Path(sys.executable).with_name("dragons-egg")


def doc_example() -> str:
    """The code block of docs/agents.md that starts with ``# my_bots.py``."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    (code,) = [b for b in blocks if b.startswith("# my_bots.py\n")]
    return code


@pytest.fixture
def isolated(monkeypatch):
    """Undo what resolving plug-ins changes in this process: sys.path (the current
    directory is appended), imported modules, registrations and loaded factories."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(agents, "_REGISTRY", dict(agents._REGISTRY))
    monkeypatch.setattr(agents, "_LOADED", {})
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("my_bots", "broken_bots", "ep_bots")):
            del sys.modules[name]


@pytest.fixture
def my_bots(tmp_path, isolated):
    """The documented example written as ``my_bots.py`` in an empty directory."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "my_bots.py").write_text(doc_example())
    return folder


def _play(specs, n=3, seed=4):
    bots = [make_agent(spec, seed=k) for k, spec in enumerate(specs)]
    rec = play_match(bots, RulesConfig(num_players=n, num_rounds=2), seed=seed,
                     keep_replay=True)
    return rec.scores, rec.replay["actions"], [b.label for b in bots]


def test_the_documented_example_plays_from_the_current_directory(my_bots, monkeypatch):
    monkeypatch.chdir(my_bots)
    assert str(my_bots) not in sys.path
    assert parse_spec("my_bots:Shedder") == ("my_bots:Shedder", {})
    assert parse_spec("my_bots:Shedder:order=strong") == ("my_bots:Shedder", {"order": "strong"})
    # raw_env raises on an illegal move, so finishing the matches is the check
    for n in (2, 4, 6):
        scores, _, labels = _play(["my_bots:Shedder:order=strong", "heuristic"]
                                  + ["my_bots:Shedder"] * (n - 2), n=n)
        assert labels[0] == "my_bots:Shedder:order=strong" and len(scores) == n
    bot = make_agent("my_bots:Shedder", seed=3)
    assert type(bot).__name__ == "Shedder" and bot.order == "weak" and bot.seed == 3


@pytest.mark.parametrize("spec,needle", [
    ("my_bots:Shedder:order=sideways", "my_bots:Shedder: order must be weak or strong, got "
                                       "'sideways'"),
    ("my_bots:Shedder:speed=3", "my_bots:Shedder: unknown option 'speed'; options: order"),
    ("my_bots:Shedder:order", "option 'order' must be key=value"),
    ("my_bots:Nobody", "my_bots:Nobody: module my_bots has no 'Nobody'"),
    ("no_such_module_x:Bot", "no module named 'no_such_module_x'"),
    ("my_bots.py:Shedder", "names an importable module, not a file"),
    ("my_bots:PASS", "is not an agent class or factory"),
    ("collections:OrderedDict", "is not an agent: a class used as an agent must subclass "
                                "dragons_egg.agents.Agent"),
    ("broken_bots:Bot", "importing broken_bots failed: ZeroDivisionError"),
])
def test_bad_plugin_specs_are_one_line_errors(my_bots, monkeypatch, spec, needle):
    monkeypatch.chdir(my_bots)
    (my_bots / "broken_bots.py").write_text("1 / 0\n")
    with pytest.raises(AgentSpecError) as exc:
        parse_spec(spec)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_registered_names_keep_their_meaning(isolated):
    """``ismcts:iterations=200`` is ISMCTS with options, never a module named ismcts."""
    assert parse_spec("ismcts:iterations=200") == ("ismcts", {"iterations": 200})
    with pytest.raises(AgentSpecError, match="ismcts: option 'iterations' must be key=value"):
        parse_spec("ismcts:iterations")


def test_register_gives_a_short_name(my_bots, monkeypatch):
    monkeypatch.syspath_prepend(str(my_bots))
    from my_bots import Shedder

    register("shedder", Shedder)
    assert "shedder" in available() and registrations() == {"shedder": Shedder}
    assert _play(["shedder:order=strong", "heuristic"], n=2)[0] == \
        _play(["my_bots:Shedder:order=strong", "heuristic"], n=2)[0]
    with pytest.raises(ValueError, match="bad agent name"):
        register("a:b", Shedder)


def _write_distribution(site: Path, entry_points: str, module: str = "ep_bots") -> None:
    """An installed distribution, as pip leaves it: a module and its dist-info."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(doc_example())
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


def test_entry_points_name_agents_of_installed_packages(tmp_path, isolated, monkeypatch):
    site = tmp_path / "site"
    _write_distribution(site, "[dragons_egg.agents]\nshedder = ep_bots:Shedder\n"
                              "ghost = ep_bots_missing:Ghost\n")
    monkeypatch.syspath_prepend(str(site))
    assert {"shedder", "ghost"} <= set(available())
    assert "ep_bots" not in sys.modules  # listed, not imported
    assert parse_spec("shedder:order=strong") == ("shedder", {"order": "strong"})
    assert "ep_bots" in sys.modules
    scores, _, labels = _play(["shedder:order=strong", "random", "heuristic"])
    assert labels[0] == "shedder:order=strong"
    with pytest.raises(AgentSpecError, match=r"agent 'ghost' \(entry point "
                                             r"'ep_bots_missing:Ghost' of ep_bots\) cannot be "
                                             r"loaded: ModuleNotFoundError"):
        parse_spec("ghost")
    # a built-in or registered name is not shadowed by an entry point of the same name
    register("shedder", HeuristicAgent)
    assert isinstance(make_agent("shedder", seed=0), HeuristicAgent)


def _match_in_worker(specs, regs=None):
    """Run in a spawned process: resolve the specs there and play a match."""
    if regs:
        restore_registrations(regs)
    return _play(specs)


def _spawn(fn, *args, initializer=None, initargs=()):
    ctx = mp.get_context("spawn")
    with ctx.Pool(1, initializer=initializer, initargs=initargs) as pool:
        return pool.apply(fn, args)


def test_module_class_specs_resolve_in_spawned_workers(my_bots, monkeypatch):
    monkeypatch.chdir(my_bots)
    specs = ["my_bots:Shedder:order=strong", "heuristic", "my_bots:Shedder"]
    here = _play(specs)  # resolving here appends the current directory to sys.path
    assert _spawn(_match_in_worker, specs) == here


def test_entry_points_and_registrations_reach_spawned_workers(my_bots, tmp_path, monkeypatch):
    site = tmp_path / "site"
    _write_distribution(site, "[dragons_egg.agents]\nep-shedder = ep_bots:Shedder\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(my_bots))
    from my_bots import Shedder

    register("mine", Shedder)
    specs = ["ep-shedder", "mine:order=strong", "random"]
    here = _play(specs)
    # a registration made in the parent only is unknown to a fresh process ...
    with pytest.raises(AgentSpecError, match="unknown agent 'mine'"):
        _spawn(_match_in_worker, specs)
    # ... until the worker restores the parent's registrations
    assert _spawn(_match_in_worker, specs, registrations()) == here
    assert _spawn(_match_in_worker, specs, initializer=restore_registrations,
                  initargs=(registrations(),)) == here


def test_the_console_script_finds_a_module_in_the_current_directory(my_bots):
    """``dragons-egg`` (a console script: the current directory is not on sys.path) plays
    the documented example from the directory that holds it."""
    save = my_bots / "m.json"
    res = subprocess.run([str(SCRIPT), "play", "--players", "3", "--rounds", "1", "--bots",
                          "my_bots:Shedder:order=strong", "heuristic", "--save", str(save)],
                         input="1\n" * 200, capture_output=True, text=True, cwd=my_bots,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "player_1=my_bots:Shedder:order=strong" in res.stdout and save.exists()
    res = subprocess.run([str(SCRIPT), "play", "--bots", "my_bots:Shedder:order=up"],
                         capture_output=True, text=True, cwd=my_bots, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.splitlines()[-1] == ("dragons-egg play: error: my_bots:Shedder: order "
                                           "must be weak or strong, got 'up'")


def test_module_class_specs_in_the_python_tournament_api_under_spawn(my_bots, monkeypatch):
    """The tournament resolves ``MODULE:CLASS`` in its spawned workers (as on macOS)."""
    from dragons_egg.experiments.evaluation.tournament import TournamentConfig, run_matches
    from dragons_egg.experiments.evaluation.tournament.runner import TIMING_KEYS

    monkeypatch.chdir(my_bots)
    tc = TournamentConfig(agents=["my_bots:Shedder:order=strong", "heuristic", "random"],
                          num_players=3, matches=6, num_rounds=1, seed=3, bootstrap=100)
    one = run_matches(tc, progress=False)
    tc.workers = 2
    two = run_matches(tc, progress=False, start_method="spawn")
    strip = [[{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rs]
             for rs in (one, two)]
    assert strip[0] == strip[1]
    assert {s for r in one for s in r["seats"]} == {"my_bots:Shedder:order=strong", "heuristic",
                                                     "random"}


def test_module_class_specs_in_the_tournament_command(my_bots):
    res = subprocess.run([str(SCRIPT), "tournament", "my_bots:Shedder", "heuristic",
                          "--players", "2", "--matches", "4", "--rounds", "1", "--workers", "2",
                          "--bootstrap", "100", "--no-progress", "--out", str(my_bots / "t")],
                         capture_output=True, text=True, cwd=my_bots, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "`my_bots:Shedder`" in (my_bots / "t" / "report.md").read_text()
