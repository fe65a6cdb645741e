"""The README is a front page (issue 46): at most :data:`MAX_LINES` lines, its "agent A against
agent B" example runs as written, and its relative links name files of the checkout.

The rest of the documentation is the docs site (``docs/``); its links are checked by the
strict build (``make docs``), and the README's env loop by ``tests/install/test_typed_user.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The most lines the README may have.
MAX_LINES = 250
#: The heading of the README's section whose Python block is the example run here.
VERSUS_HEADING = "## Agent A against agent B in Python"


def section(heading: str) -> str:
    """The README's text from ``heading`` to the next ``## `` heading."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def versus_snippet() -> str:
    """The first Python block of the README's "agent A against agent B" section."""
    return re.search(r"```python\n(.*?)```", section(VERSUS_HEADING), flags=re.S).group(1)


def test_the_readme_is_a_front_page_of_at_most_250_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, (
        f"README.md has {len(lines)} lines, more than {MAX_LINES}: move the detail to a page "
        "of docs/ and link to it")


def test_the_versus_example_is_short():
    assert len(versus_snippet().splitlines()) <= 15


def test_the_readme_versus_example_runs_as_written(tmp_path):
    """The README's example, as a user's file run from a folder outside the checkout: one
    match (each seat's score), then a seeded 200-match tournament of heuristic against greedy
    (a paired difference with its interval, which puts the heuristic ahead)."""
    pytest.importorskip("openskill")  # the `experiments` extra, as the example says
    script = tmp_path / "versus.py"
    script.write_text(versus_snippet(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores, difference = proc.stdout.strip().splitlines()
    assert len([float(s) for s in scores.strip("[]").split(",")]) == 2  # a score per seat
    m = re.fullmatch(r"([+-]\d+\.\d{3}) \[([+-]\d+\.\d{3}), ([+-]\d+\.\d{3})\]", difference)
    assert m, difference
    mean, low, high = (float(g) for g in m.groups())
    assert 0 < low <= mean <= high


def test_the_readme_links_name_files_of_the_checkout():
    """Every relative link and image of the README names a file (or folder) in the
    checkout; an anchor after it is not checked."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets
    for target in targets:
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = ROOT / target.split("#", 1)[0]
        assert path.exists(), f"README.md links to {target}, which does not exist"
