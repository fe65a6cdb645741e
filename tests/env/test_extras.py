"""The table of optional extras (``dragons_egg_env.extras``): it agrees with pyproject.toml,
its errors are one line naming the extra, and the batched engine names the ``vector`` extra
when numba is missing."""

import importlib.metadata
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from extras_blocker import blocking_env

from dragons_egg_env import extras
from dragons_egg_env.extras import EXTRAS, INCLUDES, OWN, MissingExtraError

ROOT = Path(__file__).resolve().parents[2]

#: Distributions whose import name is not their name with '-' read as '_'.
DIST_TO_IMPORT = {"pillow": "PIL", "open-spiel": "pyspiel", "mkdocs-material": "material",
                  "pytest-xdist": "xdist", "import-linter": "importlinter"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements() -> list[tuple[str, str, str | None]]:
    """Every requirement of pyproject.toml's extras: (extra, distribution, import name), or
    (extra, included extra, None) for ``dragons-egg[...]``."""
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    out = []
    for extra, reqs in data["project"]["optional-dependencies"].items():
        for req in reqs:
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?", req)
            name = canonical(m.group(1))
            if name == "dragons-egg":
                out += [(extra, e.strip(), None) for e in m.group(2).split(",")]
            else:
                out.append((extra, name, DIST_TO_IMPORT.get(name, name.replace("-", "_"))))
    return out


def test_the_table_agrees_with_pyproject():
    reqs = requirements()
    assert set(OWN) == {extra for extra, _, _ in reqs}
    for extra in OWN:
        assert set(OWN[extra]) == {mod for e, _, mod in reqs if e == extra and mod}, extra
        assert set(INCLUDES.get(extra, ())) == {d for e, d, mod in reqs
                                                if e == extra and mod is None}, extra
    # included extras are expanded, each module once
    assert set(EXTRAS["train"]) == set(OWN["train"]) | set(OWN["vector"]) | set(
        OWN["experiments"])
    assert set(EXTRAS["all"]) == set().union(*(EXTRAS[e] for e in INCLUDES["all"]))
    for mods in EXTRAS.values():
        assert len(mods) == len(set(mods))


def test_import_names_are_those_the_installed_distributions_provide():
    """Where a distribution of an extra is installed, the table's import name for it is one
    that distribution provides (catches a wrong entry in DIST_TO_IMPORT or in the table)."""
    provides = importlib.metadata.packages_distributions()
    checked = set()
    for _, dist, module in requirements():
        if module is None:
            continue
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        assert dist in {canonical(d) for d in provides.get(module, ())}, (dist, module)
        assert extras.is_installed(module), module
        checked.add(module)
    assert len(checked) >= 12  # this environment has every extra the project's code uses


def test_missing_modules_are_found_without_importing_them(monkeypatch):
    monkeypatch.setitem(sys.modules, "openskill", None)
    assert extras.missing("experiments") == ["openskill"]
    assert extras.missing("train") == ["openskill"]  # train includes experiments
    assert extras.missing("train", only=("torch", "tyro")) == []
    assert extras.missing("render") == []
    with pytest.raises(ValueError, match="unknown extra 'nope'"):
        extras.missing("nope")
    with pytest.raises(ValueError, match="ray not in the extras"):
        extras.missing("experiments", only=("ray",))


def test_require_raises_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openskill", None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError) as exc:
        extras.require("dragons-egg tournament", "experiments")
    assert str(exc.value) == ("dragons-egg tournament needs the 'experiments' extra (missing: "
                              "openskill, matplotlib): pip install 'dragons-egg[experiments]'")
    assert isinstance(exc.value, ImportError) and exc.value.name == "openskill"
    assert exc.value.extra == "experiments" and exc.value.missing == ("openskill", "matplotlib")
    again = pickle.loads(pickle.dumps(exc.value))  # it crosses process boundaries
    assert type(again) is MissingExtraError and str(again) == str(exc.value)
    extras.require("x", "experiments", only=("tqdm",))  # installed: no error
    extras.require("x", "render", "vector")


def test_several_extras_and_torch_first(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "PIL", None)
    err = extras.missing_error("it", "render", "rllib", "vector")
    assert str(err) == ("it needs the 'render' and 'rllib' extras (missing: PIL, torch): "
                        f"{extras.TORCH_FIRST} && pip install 'dragons-egg[render,rllib]'")
    assert extras.missing_error("it", "vector") is None


def test_require_cli_prints_one_line_and_exits_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "numba", None)
    with pytest.raises(SystemExit) as exc:
        extras.require_cli("dragons-egg bench --vector", "vector")
    assert exc.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("dragons-egg bench --vector needs the 'vector' extra (missing: numba): "
                   "pip install 'dragons-egg[vector]'\n")
    extras.require_cli("fine", "render")  # installed: returns
    assert capsys.readouterr() == ("", "")


def test_explain_converts_only_an_extras_missing_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)
    try:
        import numba  # noqa: F401
    except ModuleNotFoundError as exc:
        err = extras.explain(exc, "the batched engine", "vector")
    assert isinstance(err, MissingExtraError) and err.extra == "vector"
    other = ModuleNotFoundError("No module named 'nothing_here'", name="nothing_here")
    assert extras.explain(other, "it", "vector") is other
    # a module of the extra that is installed after all: the original error stands
    installed = ModuleNotFoundError("No module named 'tqdm.x'", name="tqdm.x")
    assert extras.explain(installed, "it", "experiments") is installed


def test_an_extras_own_dependencies_count_as_the_extra(monkeypatch):
    """numba's llvmlite, which the kernels import themselves, is not in pyproject.toml (numba
    requires it) but is checked as part of the vector extra (``BROUGHT``): a missing llvmlite
    names the extra, by ``require_imports`` and by ``explain``."""
    assert extras.import_modules("vector") == ("numba", "llvmlite")
    assert extras.import_modules("bench")[-1] == "llvmlite"  # bench includes vector
    assert "llvmlite" not in EXTRAS["vector"]  # the table stays pyproject's
    extras.require_imports("x", "vector")  # installed here: no error
    monkeypatch.setitem(sys.modules, "llvmlite", None)
    with pytest.raises(MissingExtraError) as exc:
        extras.require_imports("the batched engine", "vector")
    assert str(exc.value) == ("the batched engine needs the 'vector' extra (missing: llvmlite): "
                              "pip install 'dragons-egg[vector]'")
    assert extras.missing_error("it", "vector") is None  # numba itself is there
    gone = ModuleNotFoundError("No module named 'llvmlite'", name="llvmlite")
    err = extras.explain(gone, "it", "vector")
    assert isinstance(err, MissingExtraError) and err.missing == ("llvmlite",)


def test_the_module_loads_the_standard_library_only():
    code = ("import sys\nimport dragons_egg_env.extras as x\n"
            "x.missing('all')\n"
            "heavy = {'numpy', 'gymnasium', 'pettingzoo', 'torch', 'ray', 'numba', 'openskill',"
            " 'matplotlib', 'tqdm', 'PIL', 'tyro', 'stable_baselines3'}\n"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("module", ["dragons_egg_env.vector", "dragons_egg_env.vector_env"])
def test_the_batched_engine_names_the_vector_extra(tmp_path, module):
    code = (f"try:\n    import {module}\n"
            "except ImportError as exc:\n"
            "    print(type(exc).__name__, exc.extras, exc.missing)\n    print(exc)\n")
    res = subprocess.run([sys.executable, "-c", code], env=blocking_env(tmp_path, ["numba"]),
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    kind, message = res.stdout.strip().splitlines()
    assert kind == "MissingExtraError ('vector',) ('numba',)"
    assert message == ("dragons_egg_env.vector (the batched engine) needs the 'vector' extra "
                       "(missing: numba): pip install 'dragons-egg[vector]'")


def test_the_makefile_installs_the_torch_the_message_names():
    makefile = (ROOT / "Makefile").read_text()
    pin = extras.TORCH_FIRST.removeprefix("pip install ")
    assert re.search(rf"pip install (--quiet )?{re.escape(pin)}\s*$", makefile, re.M), pin
