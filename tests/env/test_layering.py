"""The package layers (docs/architecture.md): the rules engine loads no framework, the env
package registers its environments where they are defined, and the import contracts hold."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("pettingzoo", "gymnasium", "numpy", "torch", "ray", "dragons_egg.agents",
              "dragons_egg.experiments")


def _fresh(code: str, cwd: Path = ROOT) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=cwd, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize("module", ["dragons_egg_env", "dragons_egg_env.engine",
                                    "dragons_egg_env.states", "dragons_egg_env.cards",
                                    "dragons_egg_env.config", "dragons_egg_env.actions",
                                    "dragons_egg_env.replay_format"])
def test_rules_layer_imports_no_framework(module):
    out = _fresh(f"import {module}, sys; "
                 f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))")
    assert out == "[]", f"import {module} loaded {out}"


def test_the_batched_engine_loads_neither_pettingzoo_nor_gymnasium():
    """``dragons_egg_env.vector`` (numba, numpy) writes replays through ``replay_format``, not
    the AEC env; its Gymnasium adapter, ``vector_env``, may load both (and does: the probe
    sees them)."""
    probe = "print(sorted(m for m in ('pettingzoo', 'gymnasium') if m in sys.modules))"
    assert _fresh(f"import sys, dragons_egg_env.vector\n{probe}") == "[]"
    assert "'gymnasium'" in _fresh(f"import sys, dragons_egg_env.vector_env\n{probe}")


def test_the_vector_adapter_names_are_read_from_vector_env():
    """``vector`` no longer re-exports ``vector_env``'s classes (that import made a circle):
    asking it for one says where it lives."""
    import dragons_egg_env.vector as V
    import dragons_egg_env.vector_env as VE

    for name in ("SingleAgentVectorEnv", "MatchAwarePolicy"):
        assert getattr(VE, name).__module__ == VE.__name__
        with pytest.raises(AttributeError, match=rf"import it from dragons_egg_env\.vector_env "
                                                 rf"\(from dragons_egg_env\.vector_env import "
                                                 rf"{name}\)"):
            getattr(V, name)


def test_lazy_attributes_load_on_use():
    out = _fresh("import dragons_egg_env as d, sys; a = 'numpy' in sys.modules; "
                 "d.dragons_egg_v0.env; print(a, 'pettingzoo' in sys.modules)")
    assert out == "False True"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        import dragons_egg_env

        dragons_egg_env.nope  # noqa: B018


#: Where the registry forms are documented: the README, docs/ and the docstrings of the modules
#: that register the environments.
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             ROOT / "dragons_egg_env" / "dragons_egg_v0.py", ROOT / "dragons_egg_env" / "wrappers.py"]
MAKE_FORM = re.compile(r"`+((?:gymnasium|pettingzoo)\.make\((?:[^`()]|\([^`()]*\))*\))`+")


def documented_make_forms() -> list[str]:
    """Every ``gymnasium.make(...)`` / ``pettingzoo.make(...)`` in a code span of the docs,
    with its line breaks collapsed."""
    forms = set()
    for path in DOC_FILES:
        for match in MAKE_FORM.finditer(path.read_text()):
            forms.add(re.sub(r"\s*\n\s*", " ", match.group(1)))
    return sorted(forms)


def test_the_documented_registry_forms_are_the_known_ones():
    assert documented_make_forms() == [
        'gymnasium.make("dragons_egg_env.wrappers:dragons_egg/SingleAgent-v0", opponents=[...])',
        'pettingzoo.make("aec", "dragons_egg_v0")',
        'pettingzoo.make("aec", "dragons_egg_v0", num_players=5)',
    ]


@pytest.mark.parametrize("form", documented_make_forms())
def test_documented_registry_form_works_in_a_fresh_interpreter(form, tmp_path):
    """Each form as the docs write it, after a plain install: run from an empty folder (so the
    installed package is imported, not the checkout) in a fresh interpreter. Gymnasium's
    ``module:`` form must import the module itself; PettingZoo's ``make`` has none, so the docs
    import ``dragons_egg_env.dragons_egg_v0`` first, and so does this."""
    call = form.replace("opponents=[...]", "opponents=[AgentSpec('random')]")
    if form.startswith("gymnasium"):
        setup = ("import sys, gymnasium\n"
                 "from dragons_egg.agents import AgentSpec\n"
                 "assert 'dragons_egg_env.wrappers' not in sys.modules\n")
        check = "obs, info = env.reset(seed=0)\nprint(info['num_players'])\n"
        expected = "4"
    else:
        setup = ("import pettingzoo\n"
                 "from dragons_egg_env import dragons_egg_v0  # registers dragons_egg_v0\n")
        check = "env.reset(seed=0)\nprint(len(env.agents))\n"
        expected = "5" if "num_players=5" in form else "4"
    out = _fresh(f"{setup}env = {call}\n{check}", cwd=tmp_path)
    assert out == expected


def test_env_package_imports_no_upper_layer():
    """No module of dragons_egg_env names agents or experiments in an import (the
    import-linter contract checks the same in `make test`)."""
    for path in sorted((ROOT / "dragons_egg_env").glob("*.py")):
        for line in path.read_text().splitlines():
            words = line.strip().split()
            if words[:1] in (["import"], ["from"]) and len(words) > 1:
                assert words[1].split(".")[0] != "dragons_egg", \
                    f"{path.name}: {line.strip()}"


def test_import_contracts_hold():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("import-linter is not installed (the test extra installs it)")
    proc = subprocess.run([exe], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout
