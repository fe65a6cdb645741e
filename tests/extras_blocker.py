"""Run a command in a fresh interpreter as if some optional modules were not installed.

A ``sitecustomize.py`` in a temporary folder put first on ``PYTHONPATH`` sets
``sys.modules[name] = None`` for every blocked top-level module, before anything else runs:
``import name`` then raises ``ModuleNotFoundError`` and ``importlib.util.find_spec(name)``
returns ``None``, exactly as for a module that is not installed. Worker processes inherit it
(fork) or run it again (spawn, through the inherited ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

#: The interpreter and console scripts of the environment the tests run in.
BIN = Path(sys.executable).parent
#: Every module an extra brings that the project's own code uses (a core-only install).
OPTIONAL = ("numba", "PIL", "openskill", "tqdm", "matplotlib", "torch", "stable_baselines3",
            "sb3_contrib", "tensorboard", "rich", "tyro", "ray")


def blocking_env(folder: Path, blocked: Iterable[str]) -> dict[str, str]:
    """The environment of a process in which the modules ``blocked`` cannot be imported."""
    folder.mkdir(parents=True, exist_ok=True)
    names = sorted(set(blocked))
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        f"for _name in {names!r}:\n"
        "    sys.modules[_name] = None  # as if not installed\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH")) if p)
    env.pop("PYTHONSTARTUP", None)
    env["MPLBACKEND"] = "Agg"
    return env


def command(argv: Sequence[str]) -> list[str]:
    """``argv`` with its program resolved: ``dragons-egg``/``dragons-egg-bench`` are the
    console scripts of this environment, ``-m`` runs this interpreter."""
    head, *rest = argv
    if head == "-m":
        return [sys.executable, "-m", *rest]
    return [str(BIN / head), *rest]


def run_blocked(argv: Sequence[str], blocked: Iterable[str], cwd: Path, *, site: Path,
                stdin: str = "", timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (see :func:`command`) in ``cwd`` with the modules ``blocked`` missing."""
    return subprocess.run(command(argv), cwd=cwd, env=blocking_env(site, blocked), input=stdin,
                          capture_output=True, text=True, timeout=timeout, check=False)
