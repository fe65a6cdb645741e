"""The package layers (docs/architecture.md): the rules engine loads no framework, the env
package registers its environments where they are defined, and the import contracts hold."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("pettingzoo", "gymnasium", "numpy", "torch", "ray", "agents", "experiments")


def _fresh(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize("module", ["dragons_egg_env", "dragons_egg_env.engine",
                                    "dragons_egg_env.cards", "dragons_egg_env.config",
                                    "dragons_egg_env.actions"])
def test_rules_layer_imports_no_framework(module):
    out = _fresh(f"import {module}, sys; "
                 f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))")
    assert out == "[]", f"import {module} loaded {out}"


def test_lazy_attributes_load_on_use():
    out = _fresh("import dragons_egg_env as d, sys; a = 'numpy' in sys.modules; "
                 "d.dragons_egg_v0.env; print(a, 'pettingzoo' in sys.modules)")
    assert out == "False True"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        import dragons_egg_env

        dragons_egg_env.nope  # noqa: B018


def test_gymnasium_module_form_in_a_fresh_interpreter():
    out = _fresh(
        "import gymnasium\n"
        "from agents import AgentSpec\n"
        "env = gymnasium.make('dragons_egg_env.wrappers:dragons_egg/SingleAgent-v0',\n"
        "                     opponents=[AgentSpec('random')], table_sizes=(3,))\n"
        "obs, info = env.reset(seed=0)\n"
        "print(info['num_players'])\n")
    assert out == "3"


def test_pettingzoo_registry_after_importing_the_env_module():
    out = _fresh(
        "import pettingzoo\n"
        "from dragons_egg_env import dragons_egg_v0  # registers dragons_egg_v0\n"
        "e = pettingzoo.make('aec', 'dragons_egg_v0', num_players=5)\n"
        "e.reset(seed=0)\n"
        "print(len(e.agents))\n")
    assert out == "5"


def test_env_package_imports_no_upper_layer():
    """No module of dragons_egg_env names agents or experiments in an import (the
    import-linter contract checks the same in `make test`)."""
    for path in sorted((ROOT / "dragons_egg_env").glob("*.py")):
        for line in path.read_text().splitlines():
            words = line.strip().split()
            if words[:1] in (["import"], ["from"]) and len(words) > 1:
                assert words[1].split(".")[0] not in ("agents", "experiments"), \
                    f"{path.name}: {line.strip()}"


def test_import_contracts_hold():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("import-linter is not installed (the test extra installs it)")
    proc = subprocess.run([exe], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout
