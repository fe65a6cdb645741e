"""The package as a researcher installs it: the wheel in a fresh venv, beside a distribution
and a project folder of the user's own that both have top-level ``agents`` and
``experiments`` packages (docs/architecture.md, "One project namespace").

The wheel is built from the files git tracks (a clean clone's content), installed first
without extras (the AEC env, the rule-based agents, the shipped ``ppo`` policy played with
numpy), then with the ``experiments`` and ``train`` extras. Every command runs from the user's
project folder. The second half runs the same user-project commands under this checkout's
editable install (``make`` installs it in setuptools' strict mode).

The venv takes what it installs from pip's usual sources (torch's CPU build from this machine's
disk), about a minute and a half in all.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                                reason="builds the wheel from the files git tracks")

#: A distribution of someone else's with generic top-level names (pip installs it beside ours).
COLLIDE_FILES = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=68"]\n'
                      'build-backend = "setuptools.build_meta"\n'
                      '[project]\nname = "someone-elses-agents"\nversion = "1.0"\n'
                      '[tool.setuptools]\npackages = ["agents", "experiments"]\n',
    "agents/__init__.py": 'OWNER = "someone-elses-agents"\n',
    "experiments/__init__.py": 'OWNER = "someone-elses-agents"\n',
}

#: The researcher's project: its own agents/ and experiments/ packages and a plug-in agent.
PROJECT_FILES = {
    "agents/__init__.py": 'def make_agent(name):\n    return f"my own {name}"\n',
    "experiments/__init__.py": "",
    "experiments/selfplay.py": 'print("my own selfplay")\n',
    "my_bots.py": (
        "from dragons_egg.agents import Agent, legal_from_mask\n\n\n"
        "class Lowest(Agent):\n"
        "    name = 'lowest'\n\n"
        "    def act(self, observation, action_mask):\n"
        "        return legal_from_mask(action_mask)[0]\n"),
    "use_mine.py": ("from agents import make_agent\n"
                    "import experiments.selfplay\n"
                    "print(make_agent('bot'))\n"),
}


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def _run(cmd: list[str], cwd: Path, timeout: float = 600,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    full_env.update(env or {})
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env)


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args}\nstdout:\n{proc.stdout[-3000:]}\n" \
                                 f"stderr:\n{proc.stderr[-3000:]}"
    return proc.stdout


def _pip(venv: Path, *args: str) -> None:
    _ok(_run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *args],
             cwd=venv, timeout=900))


def readme_env_snippet() -> str:
    """The README's first example (its "Using the environment" section)."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Using the environment"):]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


class Install:
    """The built wheel, the fresh venv and the user's project folder."""

    def __init__(self, base: Path):
        self.base = base
        self.wheel = self._build_wheel()
        self.venv = base / "venv"
        _ok(_run([sys.executable, "-m", "venv", str(self.venv)], cwd=base))
        self.project = _write(base / "project", PROJECT_FILES)
        collide = _write(base / "collide", COLLIDE_FILES)
        _ok(_run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                  "--no-build-isolation", "-w", str(base / "dist"), str(collide)], cwd=base))
        self.collide_wheel = next((base / "dist").glob("someone_elses_agents-*.whl"))
        _pip(self.venv, str(self.wheel), str(self.collide_wheel))

    def _build_wheel(self) -> Path:
        src = self.base / "src"
        listed = _ok(_run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                          cwd=ROOT)).split("\0")
        for name in listed:
            if not name or name.startswith(("results/", "notebooks/")) or \
                    not (ROOT / name).is_file():
                continue
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
        dist = self.base / "dist"
        _ok(_run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                  "--no-build-isolation", "-w", str(dist), str(src)], cwd=self.base))
        return next(dist.glob("dragons_egg-*.whl"))

    def python(self, code: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return _run([str(self.venv / "bin" / "python"), "-c", code], cwd=self.project,
                    timeout=timeout)

    def command(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        exe = self.venv / "bin" / args[0]
        if not exe.exists():
            exe = self.venv / "bin" / "python"
            return _run([str(exe), *args], cwd=self.project, timeout=timeout)
        return _run([str(exe), *args[1:]], cwd=self.project, timeout=timeout)


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Install:
    return Install(tmp_path_factory.mktemp("install"))


def test_the_wheel_installs_only_the_projects_import_names(install):
    with zipfile.ZipFile(install.wheel) as whl:
        names = whl.namelist()
        info = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        top_level = set(whl.read(info).decode().split())
    assert top_level == {"dragons_egg", "dragons_egg_env"}
    roots = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert roots == {"dragons_egg", "dragons_egg_env"}
    for marker in ("dragons_egg_env/py.typed", "dragons_egg/agents/py.typed",
                   "dragons_egg/experiments/py.typed"):
        assert marker in names
    assert "dragons_egg/agents/data/ppo_dragons_egg.npz" in names
    assert "dragons_egg/experiments/configs/selfplay-shipped.json" in names
    assert not any(n.startswith(("dragons_egg/__init__", "tests/", "results/")) for n in names)
    # every module of the three folders is in the wheel under its installed name
    installed_as = {"dragons_egg_env": "dragons_egg_env", "agents": "dragons_egg/agents",
                    "experiments": "dragons_egg/experiments"}
    for folder, name in installed_as.items():
        for path in (ROOT / folder).rglob("*.py"):
            if "__pycache__" not in path.parts:
                assert f"{name}/{path.relative_to(ROOT / folder).as_posix()}" in names, path


def test_someone_elses_agents_and_ours_install_side_by_side(install):
    proc = _run([str(install.venv / "bin" / "python"), "-c",
                 "import agents, experiments, dragons_egg.agents as ours\n"
                 "import dragons_egg.experiments.evaluation.tournament\n"
                 "print(agents.OWNER, experiments.OWNER, ours.make_agent('heuristic').name)"],
                cwd=install.venv)
    assert _ok(proc).split() == ["someone-elses-agents", "someone-elses-agents", "heuristic"]


def test_the_users_own_packages_keep_their_names(install):
    assert _ok(install.command("python", "use_mine.py")).split("\n")[:2] == \
        ["my own selfplay", "my own bot"]


def test_the_readme_env_snippet_runs_on_the_plain_install(install):
    _ok(install.python(readme_env_snippet()))


def test_pettingzoo_api_test_passes_on_the_plain_install(install):
    out = _ok(install.python(
        "from pettingzoo.test import api_test\n"
        "from dragons_egg_env import dragons_egg_v0\n"
        "api_test(dragons_egg_v0.env(num_players=4), num_cycles=200)\n"
        "print('api ok')\n"))
    assert "api ok" in out


def test_rule_based_and_shipped_agents_play_on_the_plain_install(install):
    out = _ok(install.python(
        "from dragons_egg.agents import make_agent\n"
        "from dragons_egg.agents.runner import play_match\n"
        "from dragons_egg_env import RulesConfig\n"
        "bots = [make_agent(s, seed=i) for i, s in enumerate(['ppo', 'heuristic', 'ismcts:"
        "iterations=20', 'my_bots:Lowest'])]\n"
        "print(play_match(bots, RulesConfig(num_players=4, num_rounds=1), seed=3).scores)\n"))
    assert out.strip().startswith("[")


def test_a_command_lacking_an_extra_stops_at_once_with_one_line(install):
    out = install.project / "t-plain"
    proc = install.command("dragons-egg", "tournament", "random", "greedy", "--matches", "4",
                           "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "'experiments' extra" in proc.stderr and "pip install" in proc.stderr
    assert not out.exists()
    proc = install.command("-m", "dragons_egg.experiments.training.selfplay", "--help")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "'train' extra" in proc.stderr


@pytest.fixture(scope="module")
def with_experiments(install: Install) -> Install:
    _pip(install.venv, f"{install.wheel}[experiments]")
    return install


def test_a_tournament_with_a_plug_in_and_the_shipped_agent(with_experiments):
    out = with_experiments.project / "t"
    _ok(with_experiments.command(
        "dragons-egg", "tournament", "my_bots:Lowest", "ppo", "heuristic", "random",
        "--players", "4", "--matches", "40", "--rounds", "1", "--workers", "1",
        "--out", str(out)))
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 40
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["agents"]) == {"my_bots:Lowest", "ppo", "heuristic", "random"}


@pytest.fixture(scope="module")
def with_openspiel(install: Install) -> Install:
    _pip(install.venv, f"{install.wheel}[openspiel]")
    return install


def test_the_openspiel_extra_registers_the_game(with_openspiel):
    out = _ok(with_openspiel.command(
        "-c", "import pyspiel, dragons_egg_env.openspiel; "
              "g = pyspiel.load_game('python_dragons_egg', {'players': 5}); "
              "print(g.num_players(), g.get_type().short_name)"))
    assert out.split() == ["5", "python_dragons_egg"]


@pytest.fixture(scope="module")
def with_train(with_experiments: Install) -> Install:
    # torch's CPU build first: an unpinned torch would pull a CUDA build of several GB
    _pip(with_experiments.venv, "torch==2.13.0")
    _pip(with_experiments.venv, f"{with_experiments.wheel}[train]", "mypy>=1.11")
    return with_experiments


def test_the_trainer_help_lists_its_settings(with_train):
    out = _ok(with_train.command("-m", "dragons_egg.experiments.training.selfplay", "--help"))
    assert "--config" in out and "--resume" in out and "--total-samples" in out


def test_type_checkers_see_the_installed_types(with_train):
    user = with_train.project / "typed_use.py"
    user.write_text("from dragons_egg_env import dragons_egg_v0\n"
                    "from dragons_egg.agents import make_agent\n"
                    "env = dragons_egg_v0.env(num_players=4)\n"
                    "reveal_type(env)\n"
                    "reveal_type(make_agent)\n")
    proc = with_train.command("-m", "mypy", "--strict", "--no-incremental", str(user))
    # reveal_type makes mypy report notes; an error would say what is missing
    assert "error" not in proc.stdout.replace("Success", ""), proc.stdout
    assert "py.typed" not in proc.stdout
    assert "Any" not in proc.stdout, proc.stdout


# --- the same user project under this checkout's editable install ----------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(tmp_path_factory.mktemp("editable-project"), PROJECT_FILES)


def test_editable_install_exposes_only_the_projects_names(project):
    out = _ok(_run([sys.executable, "-c",
                    "import importlib.util as u\n"
                    "print([n for n in ('agents', 'experiments', 'tests') if u.find_spec(n)])"],
                   cwd=project.parent))
    assert out.strip() == "[]"


def test_editable_install_runs_the_users_project(project):
    assert _ok(_run([sys.executable, "use_mine.py"], cwd=project)).split("\n")[:2] == \
        ["my own selfplay", "my own bot"]
    _ok(_run([sys.executable, "-c", readme_env_snippet()], cwd=project))
    out = project / "t"
    _ok(_run([str(BIN / "dragons-egg"), "tournament", "my_bots:Lowest", "ppo", "heuristic",
              "random", "--players", "4", "--matches", "40", "--rounds", "1", "--workers", "1",
              "--out", str(out)], cwd=project))
    assert len((out / "results.jsonl").read_text().splitlines()) == 40
    help_text = _ok(_run([sys.executable, "-m", "dragons_egg.experiments.training.selfplay", "--help"],
                         cwd=project))
    assert "--config" in help_text
