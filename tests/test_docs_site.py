"""The API reference site's configuration (``mkdocs.yml``, ``make docs``) makes a broken
cross-reference fail the strict build, and renders the docstrings' reStructuredText roles.

A tiny site in ``tmp_path`` with the plugins and options of the real ``mkdocs.yml``: one module
of the package and one small module of its own. (``make docs`` builds the real site.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings_handlers.python")
pytest.importorskip("material")
yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]

ROLES_MODULE = '''"""A module with roles: :func:`helper`, :class:`~roles_demo.Thing`, :func:`missing_name`
and :mod:`numpy`; a literal block follows::

    x = helper()
"""


def helper() -> int:
    """Returns 1 (see :class:`Thing`)."""
    return 1


class Thing:
    """A thing."""
'''


def _site(tmp_path: Path, page: str) -> Path:
    """A site in ``tmp_path`` with the real config's plugins and options; returns its config."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# API\n\n::: dragons_egg_env.actions\n\n::: roles_demo\n",
                                   encoding="utf-8")
    (docs / "page.md").write_text(page, encoding="utf-8")
    src = tmp_path / "src"
    src.mkdir()
    (src / "roles_demo.py").write_text(ROLES_MODULE, encoding="utf-8")
    python = next(p["mkdocstrings"]["handlers"]["python"] for p in config["plugins"]
                  if isinstance(p, dict) and "mkdocstrings" in p)
    python["paths"] = [str(ROOT), str(src)]
    python["options"]["extensions"] = [str(ROOT / "docs" / "griffe_roles.py")]
    config.update(docs_dir=str(docs), site_dir=str(tmp_path / "site"),
                  nav=[{"API": "index.md"}, {"Page": "page.md"}])
    config.pop("exclude_docs", None)
    path = tmp_path / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _build(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config)],
                          capture_output=True, text=True, timeout=300, cwd=config.parent,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_resolved_cross_references_build_and_roles_render(tmp_path):
    page = "# Page\n\n[decode][dragons_egg_env.actions.decode].\n"
    proc = _build(_site(tmp_path, page))
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    # A role names a documented object: a link; one that names nothing documented: plain code.
    assert 'href="#roles_demo.helper"><code>helper</code></a>' in html
    assert 'href="#roles_demo.Thing"><code>Thing</code></a>' in html
    assert "<code>missing_name</code>" in html and ":func:" not in html
    assert "a literal block follows:</p>" in html
    assert 'href="../#dragons_egg_env.actions.decode"' in (
        tmp_path / "site" / "page" / "index.html").read_text(encoding="utf-8")


def test_unresolved_cross_reference_fails_the_strict_build(tmp_path):
    page = "# Page\n\nSee [the step][dragons_egg_env.engine.Nope].\n"
    proc = _build(_site(tmp_path, page))
    assert proc.returncode != 0
    assert "Could not find cross-reference target 'dragons_egg_env.engine.Nope'" in proc.stderr
