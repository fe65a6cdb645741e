"""An install without the ``vector`` extra, or with it broken (numba without its llvmlite):
``import dragons_egg_env.vector`` (and ``vector_env``) raises the documented
``MissingExtraError`` naming the extra and its pip command, before it imports numba or
llvmlite, instead of failing inside the kernels with ``No module named 'llvmlite'``.

Cheap: no venv is built. A fresh interpreter gets a ``sitecustomize.py`` (first on
``PYTHONPATH``) that puts a finder first on ``sys.meta_path`` which refuses the blocked
top-level modules and their submodules, as an installation without them would: ``import``
raises ``ModuleNotFoundError`` and ``importlib.util.find_spec`` finds nothing.
(``tests/env/test_extras.py`` blocks numba the other way, with ``sys.modules[name] = None``.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FINDER = '''\
import sys


class _NotInstalled:
    """Refuses the modules named in DRAGONS_EGG_BLOCK (comma-separated) and their submodules."""

    blocked = tuple(n for n in __import__("os").environ["DRAGONS_EGG_BLOCK"].split(",") if n)

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
'''

PROBE = '''\
import json, sys
try:
    import {module}
except ImportError as exc:
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in ("numba", "llvmlite"))
    print(json.dumps({{"type": type(exc).__name__, "message": str(exc),
                      "extras": list(getattr(exc, "extras", ())),
                      "missing": list(getattr(exc, "missing", ())), "loaded": loaded}}))
else:
    print(json.dumps({{"type": None}}))
'''


def _probe(tmp_path: Path, module: str, blocked: tuple[str, ...]) -> dict[str, object]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(FINDER)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = str(site)
    env["DRAGONS_EGG_BLOCK"] = ",".join(blocked)
    proc = subprocess.run([sys.executable, "-c", PROBE.format(module=module)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("module", ["dragons_egg_env.vector", "dragons_egg_env.vector_env"])
@pytest.mark.parametrize("blocked", [("llvmlite",), ("numba",), ("numba", "llvmlite")],
                         ids=["no-llvmlite", "no-numba", "neither"])
def test_the_batched_engine_names_the_vector_extra(tmp_path, module, blocked):
    out = _probe(tmp_path, module, blocked)
    assert out["type"] == "MissingExtraError", out
    assert out["extras"] == ["vector"]
    assert out["missing"] == list(blocked)  # numba first, then llvmlite
    assert out["message"] == (f"dragons_egg_env.vector (the batched engine) needs the 'vector' "
                              f"extra (missing: {', '.join(blocked)}): "
                              f"pip install 'dragons-egg[vector]'")
    # The check came first: no part of numba or llvmlite was imported.
    assert out["loaded"] == []


def test_the_finder_blocks_only_what_it_is_told(tmp_path):
    """Not vacuous: with nothing blocked the batched engine imports (numba and llvmlite
    load), and a blocked llvmlite is refused to a plain import too."""
    assert _probe(tmp_path, "dragons_egg_env.vector", ())["type"] is None
    out = _probe(tmp_path, "llvmlite", ("llvmlite",))
    assert out["type"] == "ModuleNotFoundError" and out["message"] == "No module named 'llvmlite'"
