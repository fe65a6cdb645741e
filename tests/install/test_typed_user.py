"""A user's code type-checks against the installed package as it runs: the README's env loop
and a file that inspects ``env.unwrapped`` and saves and replays a match
(``tests/install/typed_user/``) pass ``mypy --strict``, with no ``Any`` in their expressions
(``--disallow-any-expr``), and run.

mypy runs from an empty folder with an empty config (not the project's ``[tool.mypy]``), so it
reads ``dragons_egg_env`` as a user's mypy does: the installed package (``py.typed``), with
PettingZoo, which ships no ``py.typed``, as untyped; once more with PettingZoo's sources
followed (``--follow-untyped-imports``, as the project's own check reads them and as a
PettingZoo that ships types would be read).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER = Path(__file__).resolve().parent / "typed_user"
FILES = [USER / "readme_loop.py", USER / "inspect_and_replay.py"]
#: The README loop's one expression that numpy's own stubs type as ``Any``: an integer index
#: into an array (``ndarray.__getitem__`` with an int returns ``Any`` in numpy's stubs).
NUMPY_ANY = "mask.nonzero()[0][0]"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "MYPYPATH", "MYPY_CONFIG_FILE_DIR")}


def _mypy(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (the test extra installs it)")
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n")  # a user's empty config, not the project's [tool.mypy]
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir",
         str(tmp_path / ".mypy_cache"), "--strict", "--show-error-codes", *flags,
         *map(str, FILES)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, env=_env())


def _errors(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in proc.stdout.splitlines() if ": error:" in line]


def _numpy_any_line() -> int:
    lines = FILES[0].read_text().splitlines()
    return next(k for k, line in enumerate(lines, 1) if NUMPY_ANY in line)


def test_the_readme_loop_file_is_the_readmes_loop():
    """The lines between the markers of readme_loop.py are a code block of the README, as
    written there (when the README's loop changes, copy it into readme_loop.py)."""
    text = FILES[0].read_text()
    block = text.split("# --- README ---\n", 1)[1].split("# --- end README ---\n", 1)[0]
    assert "env.last()" in block and NUMPY_ANY in block
    assert f"```python\n{block}```" in (ROOT / "README.md").read_text(), \
        "README.md has no such code block: its env loop changed; update readme_loop.py"


def test_user_files_pass_mypy_strict(tmp_path):
    proc = _mypy(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _errors(proc) == []


@pytest.mark.parametrize("follow", [False, True], ids=["pettingzoo-untyped", "pettingzoo-read"])
def test_user_files_see_no_any(tmp_path, follow):
    """``--disallow-any-expr``: ``env.last()``, ``obs["action_mask"]``, ``env.unwrapped``, its
    ``scores``, the replay calls: every expression has a type without ``Any``, the one
    expression numpy's stubs leave ``Any`` aside (the README indexes an array with an int)."""
    proc = _mypy(tmp_path, "--disallow-any-expr", *(["--follow-untyped-imports"] if follow else []))
    expected = [f"{FILES[0]}:{_numpy_any_line()}: error: Expression has type \"Any\"  [misc]"]
    assert _errors(proc) == expected, proc.stdout + proc.stderr
    assert proc.returncode == 1  # that one error


def test_user_files_run(tmp_path):
    """The two files run as they are: the README loop plays a match to its end; the other
    plays one, saves its replay in ``tmp_path`` and checks and replays it."""
    out = subprocess.run([sys.executable, str(FILES[0])], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300, env=_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()  # the description of an action
    path = tmp_path / "match.json"
    out = subprocess.run([sys.executable, str(FILES[1]), str(path)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, env=_env())
    assert out.returncode == 0, out.stderr
    from dragons_egg_env.replay import check_replay, load_replay

    data = load_replay(path)
    check = check_replay(path)
    assert check.finished and check.complete
    assert out.stdout.startswith(f"{check.steps} moves;") and check.steps == len(data["actions"])
    assert data["config"]["num_players"] == 3 and data["seed"] == 1
    assert data["scores"] != ["0", "0", "0"]  # a match whose scores say something
