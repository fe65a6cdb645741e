"""The optional extras of the ``dragons-egg`` distribution, checked before any work.

A plain ``pip install dragons-egg`` brings the game, its environments, the agents that need
only numpy and the commands built on them; everything else comes with an extra
(``pip install 'dragons-egg[train]'``). :data:`EXTRAS` says which modules each extra brings (by
import name, as ``pyproject.toml``'s ``[project.optional-dependencies]`` lists them by
distribution name; a test keeps the two in step). Modules are looked up with
:func:`importlib.util.find_spec`, never imported, so a check costs microseconds and loads no
framework.

- :func:`require` (library code) raises :class:`MissingExtraError`, an ``ImportError`` whose
  message is one line: what needs the extra, the extra, the missing modules and the ``pip``
  command, e.g. ``dragons-egg tournament needs the 'experiments' extra (missing: openskill):
  pip install 'dragons-egg[experiments]'``;
- :func:`require_cli` (command lines) prints that line to stderr and exits with status 2, so a
  command stops before it does any work instead of failing after it;
- :func:`require_imports` raises it before a module imports an extra's modules, counting the
  dependencies those bring that the code imports too (:data:`BROUGHT`: numba's llvmlite), as
  :mod:`dragons_egg_env.vector` does before it imports numba;
- :func:`explain` turns a ``ModuleNotFoundError`` of an extra's module into that error (for a
  module whose own imports need an extra, such as :mod:`dragons_egg_env.vector`).

Standard library only: importing this module loads no numpy, torch or other framework.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable

#: Each extra's own modules (import names), without those of the extras it includes.
OWN: dict[str, tuple[str, ...]] = {
    # The batched engine (dragons_egg_env.vector, vector_env) compiles its kernels with numba.
    "vector": ("numba",),
    # Images of the table (render_mode="rgb_array", dragons-egg gif).
    "render": ("PIL",),
    # Tournaments and reports: ratings, progress bars, plots.
    "experiments": ("openskill", "tqdm", "matplotlib", "filelock"),
    # Training (self-play, SB3, shipping; tyro reads the trainers' settings) and SB3 agents.
    "train": ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "rich", "tyro"),
    # Ray RLlib: dragons_egg.experiments.training.rllib, train_rllib and the rllib agent.
    "rllib": ("ray", "torch"),
    # OpenSpiel: dragons_egg_env.openspiel (the game python_dragons_egg), openspiel-ismcts.
    "openspiel": ("pyspiel",),
    # The benchmark's peers (each skipped when missing) and the batched engine.
    "bench": ("rlcard", "pyspiel", "pygame", "jax", "pgx"),
    # The API reference site (make docs).
    "docs": ("mkdocs", "material", "mkdocstrings"),
    # The browser app (dragons-egg serve; the Runs page renders report.md with markdown).
    "web": ("starlette", "uvicorn", "markdown"),
    # The test suite and its linters; the web pages' tests (Starlette's TestClient needs
    # httpx; Playwright drives the system's headless Chromium).
    "test": ("pytest", "hypothesis", "xdist", "nbmake", "ipykernel", "ruff", "importlinter",
             "mypy", "build", "httpx", "playwright"),
    "all": (),
}

#: The extras each extra includes (``dragons-egg[vector,experiments]`` in its requirements).
INCLUDES: dict[str, tuple[str, ...]] = {
    "train": ("vector", "experiments"),
    "rllib": ("experiments",),
    "bench": ("vector",),
    "test": ("web", "openspiel"),
    "all": ("vector", "render", "experiments", "train", "rllib", "web"),
}

#: Modules that an extra's distributions bring as their own dependencies and that the
#: project's code imports directly: numba's llvmlite (the batched engine's kernels build LLVM
#: IR with it). pyproject.toml does not list them (numba requires llvmlite), so they are not in
#: :data:`OWN`; :func:`require_imports` and :func:`explain` count them as the extra's.
BROUGHT: dict[str, tuple[str, ...]] = {
    "vector": ("llvmlite",),
}

#: The torch to install before an extra that brings torch: its CPU build (an unpinned torch
#: pulls a CUDA build of several GB). The Makefile installs the same (a test checks).
TORCH_FIRST = "pip install torch==2.13.0"

DISTRIBUTION = "dragons-egg"


def _walk(extra: str, seen: list[str]) -> None:
    if extra not in OWN:
        raise ValueError(f"unknown extra {extra!r}; extras: {', '.join(OWN)}")
    if extra in seen:
        return
    seen.append(extra)
    for inner in INCLUDES.get(extra, ()):
        _walk(inner, seen)


def modules(extra: str) -> tuple[str, ...]:
    """Every module an extra brings, those of the extras it includes too (in order, once)."""
    seen: list[str] = []
    _walk(extra, seen)
    return tuple(dict.fromkeys(m for e in seen for m in OWN[e]))


def import_modules(extra: str) -> tuple[str, ...]:
    """What code that imports an extra's modules needs: :func:`modules` and, for the extra and
    those it includes, the dependencies listed in :data:`BROUGHT` (``vector``: numba, then
    llvmlite)."""
    seen: list[str] = []
    _walk(extra, seen)
    return tuple(dict.fromkeys([*modules(extra), *(m for e in seen for m in BROUGHT.get(e, ()))]))


#: Every extra and the modules it brings, included extras expanded.
EXTRAS: dict[str, tuple[str, ...]] = {extra: modules(extra) for extra in OWN}


def is_installed(module: str) -> bool:
    """Whether the top-level module ``module`` can be imported (found, not imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-removed installation
        return False


def missing(extras: str | Iterable[str], only: Iterable[str] | None = None) -> list[str]:
    """The modules of ``extras`` (one name or several) that are not installed; with ``only``,
    just those of ``only`` (a command that needs part of an extra)."""
    names = [extras] if isinstance(extras, str) else list(extras)
    wanted = list(dict.fromkeys(m for e in names for m in modules(e)))
    if only is not None:
        keep = set(only)
        unknown = keep - set(wanted)
        if unknown:
            raise ValueError(f"{', '.join(sorted(unknown))} not in the extras "
                             f"{', '.join(names)}")
        wanted = [m for m in wanted if m in keep]
    return [m for m in wanted if not is_installed(m)]


def install_command(extras: Iterable[str], missing_modules: Iterable[str] = ()) -> str:
    """The ``pip`` command that installs ``extras`` (torch's CPU build first where torch is
    among ``missing_modules``)."""
    spec = f"pip install '{DISTRIBUTION}[{','.join(extras)}]'"
    return f"{TORCH_FIRST} && {spec}" if "torch" in set(missing_modules) else spec


def message(what: str, extras: Iterable[str], missing_modules: Iterable[str]) -> str:
    """The one-line message: ``what`` needs the extras, the missing modules, the command."""
    names = list(extras)
    mods = list(missing_modules)
    quoted = " and ".join(f"'{e}'" for e in names)
    noun = "extra" if len(names) == 1 else "extras"
    return (f"{what} needs the {quoted} {noun} (missing: {', '.join(mods)}): "
            f"{install_command(names, mods)}")


class MissingExtraError(ImportError):
    """An optional extra that something needs is not installed. ``str()`` is one line naming
    what needs it, the extra, the missing modules and the ``pip`` command; the attributes
    ``what``, ``extras`` (``extra``: the first) and ``missing`` hold the parts."""

    def __init__(self, what: str, extras: str | Iterable[str], missing: Iterable[str]) -> None:
        self.what = what
        self.extras = (extras,) if isinstance(extras, str) else tuple(extras)
        self.missing = tuple(missing)
        super().__init__(message(what, self.extras, self.missing),
                         name=self.missing[0] if self.missing else None)

    @property
    def extra(self) -> str:
        return self.extras[0]

    def __reduce__(self) -> tuple[type[MissingExtraError], tuple[str, tuple[str, ...],
                                                                  tuple[str, ...]]]:
        # pickles (an error raised in a worker process) with its three parts
        return type(self), (self.what, self.extras, self.missing)


def missing_error(what: str, *extras: str, only: Iterable[str] | None = None
                  ) -> MissingExtraError | None:
    """The :class:`MissingExtraError` :func:`require` would raise, or ``None``."""
    gone = missing(extras, only)
    if not gone:
        return None
    needed = [e for e in extras if any(m in gone for m in modules(e))]
    return MissingExtraError(what, needed, gone)


def require(what: str, *extras: str, only: Iterable[str] | None = None) -> None:
    """Raise :class:`MissingExtraError` unless every module of ``extras`` (of ``only``, when
    given) is installed. ``what`` names what needs them (``"dragons_egg_env.vector"``)."""
    err = missing_error(what, *extras, only=only)
    if err is not None:
        raise err


def require_imports(what: str, extra: str) -> None:
    """Raise :class:`MissingExtraError` naming ``extra`` unless every module of
    :func:`import_modules` is installed (found, not imported). A module that imports an
    extra's modules calls it before the first of those imports, so that a missing dependency
    of the extra's (numba without its llvmlite) is reported as the extra, not as a bare
    ``No module named 'llvmlite'``: ``require_imports("dragons_egg_env.vector", "vector")``."""
    gone = [m for m in import_modules(extra) if not is_installed(m)]
    if gone:
        raise MissingExtraError(what, extra, gone)


def exit_missing(exc: MissingExtraError) -> None:
    """Print ``exc`` as one line to stderr and exit with status 2 (for command lines)."""
    print(str(exc), file=sys.stderr)
    raise SystemExit(2)


def require_cli(what: str, *extras: str, only: Iterable[str] | None = None) -> None:
    """For command lines: unless every module of ``extras`` is installed, print the one-line
    message of :func:`require` to stderr and exit with status 2. Call it before any work (an
    argparse command right after parsing, so ``--help`` still works)."""
    err = missing_error(what, *extras, only=only)
    if err is not None:
        exit_missing(err)


def explain(exc: ImportError, what: str, *extras: str) -> ImportError:
    """The error to raise for ``exc``: a :class:`MissingExtraError` when ``exc`` is a missing
    module of ``extras`` (``raise explain(exc, "dragons_egg_env.vector", "vector") from
    None``), else ``exc`` itself."""
    top = (getattr(exc, "name", None) or "").partition(".")[0]
    if top and any(top in import_modules(e) for e in extras):
        gone = [m for e in extras for m in import_modules(e) if not is_installed(m)]
        if gone:
            needed = [e for e in extras if any(m in gone for m in import_modules(e))]
            return MissingExtraError(what, needed, list(dict.fromkeys(gone)))
    return exc


__all__ = ["EXTRAS", "OWN", "INCLUDES", "BROUGHT", "TORCH_FIRST", "MissingExtraError",
           "modules", "import_modules", "is_installed", "missing", "install_command", "message",
           "missing_error", "require", "require_imports", "require_cli", "exit_missing",
           "explain"]
