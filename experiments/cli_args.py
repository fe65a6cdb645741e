"""Argument types shared by the project's command lines: one parser per kind of value, each
an argparse ``type`` that turns bad input into a one-line usage error (exit status 2); the
settings command line of the trainers (:func:`config_cli`: ``--config FILE|NAME``, where a
bare name is one of the training configs packaged with ``dragons_egg.experiments``, and every
field of a settings dataclass as a flag); and what the trainers share when they resume: the
run folder of a checkpoint, the settings given on the command line, and the changes recorded
in the run's ``config_history.json``."""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import json
import math
import shlex
import shutil
import signal
import sys
import threading
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dragons_egg_env.config import (  # int_range: the one in dragons_egg_env, re-exported
    MAX_PLAYERS,
    MIN_PLAYERS,
    ConfigError,
    RulesConfig,
    int_range,
    parse_bool,
)

#: An argparse type for a table size (R3).
table_size = int_range(MIN_PLAYERS, MAX_PLAYERS)


def positive_float(text: str) -> float:
    """An argparse type: a finite number ``> 0``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def bool_arg(text: str) -> bool:
    """An argparse type: true/false, yes/no, on/off or 1/0."""
    try:
        return parse_bool(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def rule_flag(text: str) -> tuple[str, Any]:
    """An argparse type for ``--rule NAME=VALUE``: the name must be a field of
    :class:`~dragons_egg_env.config.RulesConfig` and the value one it allows (read from the
    field's metadata, as validation and the docs read it)."""
    key, eq, value = text.partition("=")
    if not eq:
        raise argparse.ArgumentTypeError(f"a rule flag is name=value, got {text!r}")
    try:
        return key.strip(), RulesConfig.parse_value(key.strip(), value.strip())
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None



# ---------------------------------------------------------------------------------------
# Settings files: a path, or the name of a config packaged with dragons_egg.experiments.

#: The package whose ``configs/*.json`` are the packaged training configs.
CONFIG_PACKAGE = __name__.rpartition(".")[0] or "dragons_egg.experiments"


def packaged_configs(cls: type | None = None) -> dict[str, Any]:
    """The training configs packaged with :mod:`dragons_egg.experiments` (its package data
    ``configs/*.json``), by name (the file name without ``.json``), read through
    :mod:`importlib.resources`, so from any current directory and any kind of install. With
    ``cls`` (a settings dataclass), only those whose settings are all fields of it: the
    configs of that trainer."""
    from importlib.resources import files

    folder = files(CONFIG_PACKAGE) / "configs"
    if not folder.is_dir():
        return {}
    entries = [e for e in folder.iterdir() if e.name.endswith(".json") and e.is_file()]
    if cls is not None:
        fields = {f.name for f in dataclasses.fields(cls)}
        entries = [e for e in entries if set(json.loads(e.read_text(encoding="utf-8")))
                   <= fields]
    return {e.name[:-len(".json")]: e for e in sorted(entries, key=lambda e: e.name)}


def resolve_config(value: str, cls: type | None = None) -> Any:
    """What ``--config VALUE`` names: an existing file is that file (a :class:`Path`);
    otherwise a bare name (no folder; ``.json`` optional) of a packaged config (of the
    settings dataclass ``cls``, when given: :func:`packaged_configs`) is that config (an
    :mod:`importlib.resources` file); anything else is a ``ValueError`` that lists the
    packaged names."""
    path = Path(value)
    if path.is_file():
        return path
    packaged = packaged_configs(cls)
    name = value[:-len(".json")] if value.endswith(".json") else value
    if name in packaged and path.name == value:
        return packaged[name]
    if path.exists():
        raise ValueError(f"--config {value}: not a file")
    raise ValueError(f"--config {value}: no such file, and not the name of a packaged config "
                     f"(packaged: {', '.join(packaged) or 'none'})")


def _config_label(source: Any) -> str:
    return str(source) if isinstance(source, Path) else f"packaged config {source.name}"


# ---------------------------------------------------------------------------------------
# Settings checked by type: the annotations of the settings dataclass are the schema.

@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """The type of each field of the settings dataclass ``cls``, from its annotations (strings
    under ``from __future__ import annotations``, resolved in the class's module)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


_PLURAL = {int: "integers", float: "finite numbers", str: "strings", bool: "true or false"}


def describe_type(tp: Any) -> str:
    """What a value of the type ``tp`` is, in words (``an integer``, ``one of 'a', 'b'``)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    words = {bool: "true or false", int: "an integer", float: "a finite number",
             str: "a string", type(None): "null (None)", Any: "any value"}
    if tp in words:
        return words[tp]
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe_type(a) for a in args)
    if origin in (list, tuple):
        item = args[0] if args else Any
        return f"a list of {_PLURAL.get(item, describe_type(item))}"
    if origin is dict:
        return "an object (name: value)"
    return getattr(tp, "__name__", str(tp))


def fits_type(tp: Any, value: Any) -> bool:
    """Whether ``value`` is a value of the type ``tp``: booleans are not numbers, a float must
    be finite (an int is a float), a list or a tuple is a sequence, a literal is one of its
    values."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return True
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return not isinstance(value, bool) and (
            isinstance(value, int) or isinstance(value, float) and math.isfinite(value))
    if tp is type(None):
        return value is None
    if origin is typing.Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if origin in (typing.Union, types.UnionType):
        return any(fits_type(a, value) for a in args)
    if origin in (list, tuple):
        if not isinstance(value, list | tuple):
            return False
        if origin is tuple and args and args[-1] is not Ellipsis:
            return len(value) == len(args) and all(map(fits_type, args, value))
        return all(fits_type(args[0] if args else Any, v) for v in value)
    if origin is dict:
        key_t, value_t = args or (Any, Any)
        return isinstance(value, dict) and all(
            fits_type(key_t, k) and fits_type(value_t, v) for k, v in value.items())
    return not isinstance(tp, type) or isinstance(value, tp)


def check_settings(cls: type, data: Any) -> None:
    """Check a mapping of settings for the dataclass ``cls`` before anything uses it: every
    name a field, every value of the field's type (:func:`fits_type`, from the annotations). A
    ``ValueError`` names the first problem in one line: the setting, its value and what it
    may be (ranges are the dataclass's ``validate()``'s)."""
    if not isinstance(data, dict):
        raise ValueError(f"settings must be an object of name: value, got "
                         f"{type(data).__name__}")
    types_ = field_types(cls)
    unknown = sorted(set(data) - set(types_))
    if unknown:
        close = {n: difflib.get_close_matches(n, list(types_), 1) for n in unknown}
        hints = [f"{n} -> {c[0]}" for n, c in close.items() if c]
        raise ValueError(f"unknown setting(s) {', '.join(unknown)}" + (
            f" (did you mean: {', '.join(hints)}?)" if hints else "")
            + "; --help lists the settings")
    for name, value in data.items():
        if not fits_type(types_[name], value):
            raise ValueError(f"{name}: expected {describe_type(types_[name])}, got {value!r}")


def check_fields(cfg: Any) -> None:
    """:func:`check_settings` of a settings dataclass's own values (the first step of its
    ``validate()``)."""
    check_settings(type(cfg), {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)})


#: The seeds the trainers take (numpy's legacy generator, which SB3 seeds, takes 32 bits).
SEED_RANGE = (0, 2**32 - 1)


def check_range(cond: bool, name: str, value: Any, allowed: str) -> None:
    """A ``ValueError`` ``"name must be allowed, got value"`` unless ``cond``: the form of the
    trainers' range checks."""
    if not cond:
        raise ValueError(f"{name} must be {allowed}, got {value!r}")


def read_settings(cls: type, source: Any) -> dict[str, Any]:
    """The JSON object of settings in ``source`` (a path, or what :func:`resolve_config`
    returns), checked against the fields of the dataclass ``cls`` (:func:`check_settings`:
    their names and types); a ``ValueError`` naming the file for a missing or malformed file,
    a name that is not a field of ``cls`` or a value of the wrong type."""
    src = Path(source) if isinstance(source, str) else source
    try:
        data = json.loads(src.read_text(encoding="utf-8"))
        check_settings(cls, data)
    except (OSError, ValueError) as exc:
        raise ValueError(f"config file {_config_label(src)}: {exc}") from None
    return data


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def settings_file(cls: type, path: Any, build: Callable[[dict[str, Any]], Any]) -> Any:
    """Read a JSON file of settings for the dataclass ``cls`` and make one with ``build``
    (which turns lists into tuples where ``cls`` wants them). ``path`` is a file, or what
    :func:`resolve_config` returns. A missing or malformed file, or a name that is not a field
    of ``cls``, is a one-line error and exit status 2."""
    try:
        return build(read_settings(cls, path))
    except ValueError as exc:
        _fail(str(exc))


# ---------------------------------------------------------------------------------------
# The settings command line (tyro).

def flags_given(args: Iterable[str], cls: type) -> set[str]:
    """The fields of the dataclass ``cls`` that the command-line words ``args`` set: a field
    ``name`` is set by ``--name``, ``--name=VALUE``, ``--no-name`` (a bool) and their forms
    with underscores, as tyro reads them (tyro takes no abbreviations, so the words are the
    whole story: a value the user spells out equal to the default still counts as given)."""
    names = {f.name for f in dataclasses.fields(cls)}
    given: set[str] = set()
    for word in args:
        if word == "--":
            break
        if not word.startswith("--"):
            continue
        name = word[2:].split("=", 1)[0].replace("-", "_")
        if name in names:
            given.add(name)
        elif name.startswith("no_") and name[3:] in names:
            given.add(name[3:])
    return given


def module_prog(cls: type) -> str | None:
    """``python -m MODULE`` for the module that defines ``cls`` (also when it runs as
    ``__main__`` under ``python -m``), or ``None`` when that is not known."""
    module = cls.__module__
    if module == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        module = getattr(spec, "name", None)
    return f"python -m {module}" if module else None


@dataclass
class ParsedSettings:
    """What :func:`parse_config_cli` read."""

    #: The settings: the defaults of the dataclass, or those of ``--config``, then the flags.
    settings: Any
    #: The value of the extra option (``--resume``, ``--data``), or ``None``.
    extra: str | None
    #: The fields set explicitly: by a flag, or named in the ``--config`` file.
    given: frozenset[str]
    #: The ``--config`` value, or ``None``.
    config: str | None
    #: The on/off options (``switches``, such as ``--overwrite``) given.
    switches: frozenset[str] = frozenset()


def _config_help(cls: type) -> str:
    names = ", ".join(packaged_configs(cls))
    return ("JSON file of settings" + (
        f", or the name of a config packaged with dragons_egg.experiments ({names})"
        if names else "") + "; the flags override it")


def _wrapper(cls: type, extra: str, extra_help: str, extra_metavar: str,
             switches: Sequence[tuple[str, str]] = ()) -> type:
    """A dataclass of ``--config``, the extra option, the on/off ``switches`` (name, help)
    and every field of ``cls`` (no prefix), so that tyro's ``--help`` lists them all."""
    from typing import Annotated

    import tyro

    return dataclasses.make_dataclass(f"{cls.__name__}Command", [
        ("settings", Annotated[cls, tyro.conf.arg(name="")]),
        ("config", Annotated[str | None,
                             tyro.conf.arg(help=_config_help(cls), metavar="FILE|NAME")], None),
        (extra.lstrip("-").replace("-", "_"),
         Annotated[str | None, tyro.conf.arg(help=extra_help, metavar=extra_metavar)], None),
        *((name.lstrip("-").replace("-", "_"),
           Annotated[bool, tyro.conf.FlagCreatePairsOff, tyro.conf.arg(help=text)], False)
          for name, text in switches),
    ])


def parse_config_cli(cls: type, argv: Sequence[str] | None,
                     build: Callable[[dict[str, Any]], Any], extra: str, description: str, *,
                     prog: str | None = None, extra_help: str = "",
                     extra_metavar: str = "PATH",
                     switches: Sequence[tuple[str, str]] = ()) -> ParsedSettings:
    """Read the command line of the settings dataclass ``cls``: ``--config FILE|NAME``
    (:func:`resolve_config`, read by :func:`read_settings` and made with ``build``) gives the
    defaults, every field is a flag (tyro, with no prefix), and the option ``extra`` (such as
    ``--resume``) is returned beside the settings, with the fields given explicitly and the
    on/off options of ``switches`` (``(name, help)``, such as ``--overwrite``) given.
    ``--help`` shows ``prog`` (default :func:`module_prog`) and lists ``--config``, ``extra``
    and the switches with the fields. Nothing is validated here (see :func:`validated`). A bad
    ``--config`` is a one-line error and exit status 2."""
    import tyro

    args = sys.argv[1:] if argv is None else list(argv)
    prog = prog or module_prog(cls)
    dest = extra.lstrip("-").replace("-", "_")
    pre = argparse.ArgumentParser(prog=prog, add_help=False, allow_abbrev=False)
    pre.add_argument("--config", default=None)
    pre.add_argument(extra, dest=dest, default=None)
    for name, _ in switches:
        pre.add_argument(name, action="store_true")
    known, rest = pre.parse_known_args(args)
    data: dict[str, Any] = {}
    default = cls()
    if known.config is not None:
        try:
            data = read_settings(cls, resolve_config(known.config, cls))
            default = build(data)
        except (ValueError, TypeError) as exc:
            _fail(str(exc))
    command = _wrapper(cls, extra, extra_help, extra_metavar, switches)
    out = tyro.cli(command, args=rest, default=command(default), prog=prog,
                   description=description)
    on = frozenset(n for n, _ in switches if getattr(known, n.lstrip("-").replace("-", "_")))
    return ParsedSettings(out.settings, getattr(known, dest),
                          frozenset(flags_given(rest, cls) | set(data)), known.config, on)


def validated(cfg: Any) -> Any:
    """``cfg`` after ``cfg.validate()``; a setting it refuses is a one-line error and exit
    status 2."""
    try:
        cfg.validate()
    except ValueError as exc:
        _fail(str(exc))
    return cfg


def config_cli(cls: type, argv: Sequence[str] | None, build: Callable[[dict[str, Any]], Any],
               extra: str, description: str, *, prog: str | None = None,
               extra_help: str = "", extra_metavar: str = "PATH") -> tuple[Any, str | None]:
    """A command line for the settings dataclass ``cls`` (:func:`parse_config_cli`), its
    settings validated (:func:`validated`), and the value of the option ``extra``."""
    parsed = parse_config_cli(cls, argv, build, extra, description, prog=prog,
                              extra_help=extra_help, extra_metavar=extra_metavar)
    return validated(parsed.settings), parsed.extra


# ---------------------------------------------------------------------------------------
# Resuming a run: its folder, its settings, the changes.

def checkpoint_run_dir(checkpoint: str | Path) -> Path:
    """The run folder a checkpoint belongs to (absolute): the folder above it when it lies in
    a ``checkpoints/`` folder, else the folder that holds it; it must hold the run's
    ``config.json`` (a ``ValueError`` otherwise)."""
    folder = checkpoint_folder(checkpoint)
    if not (folder / "config.json").is_file():
        raise ValueError(f"checkpoint {checkpoint} is not in a run folder (no config.json in "
                         f"{folder}); give --out-dir and --run-name for the folder to continue "
                         "in")
    return folder


def _plain(value: Any) -> Any:
    """``value`` as JSON has it (tuples as lists)."""
    return json.loads(json.dumps(value))


def config_changes(old: Any, new: Any) -> dict[str, list[Any]]:
    """The settings that differ between two settings dataclasses, ``{name: [old, new]}``
    (JSON values)."""
    a, b = _plain(dataclasses.asdict(old)), _plain(dataclasses.asdict(new))
    return {k: [a.get(k), v] for k, v in b.items() if a.get(k) != v}


def resumed_settings(saved: Any, parsed: Any, given: Iterable[str], checkpoint: str | Path,
                     frozen: dict[str, str]) -> Any:
    """The settings a resumed run continues with: the checkpoint's ``saved`` ones, with those
    ``given`` explicitly taken from ``parsed``. A name in ``frozen`` (with the reason) may not
    change: a ``ValueError`` names its flag. Unless ``out_dir`` or ``run_name`` is given, the
    run continues in the checkpoint's run folder (:func:`checkpoint_run_dir`)."""
    given = set(given)
    for name, why in frozen.items():
        if name in given and _plain(getattr(parsed, name)) != _plain(getattr(saved, name)):
            raise ValueError(f"--{name.replace('_', '-')} cannot change on resume ({why}): the "
                             f"checkpoint has {getattr(saved, name)!r}")
    cfg = dataclasses.replace(saved, **{k: getattr(parsed, k) for k in sorted(given)})
    if not given & {"out_dir", "run_name"}:
        folder = checkpoint_run_dir(checkpoint)
        if cfg.run_dir.resolve() != folder:
            out_dir = (cfg.out_dir if Path(cfg.out_dir).resolve() == folder.parent
                       else str(folder.parent))
            cfg = dataclasses.replace(cfg, out_dir=out_dir, run_name=folder.name)
    return cfg


def resume_entry(samples: int, checkpoint: str | Path, changes: dict[str, list[Any]],
                 unit: str = "samples") -> dict[str, Any]:
    """An entry of a run's config history: resumed at ``samples`` from ``checkpoint`` with
    these ``changes`` (``{name: [old, new]}``); also printed, one line per change."""
    import time

    print(f"resuming {checkpoint} at {samples:,} {unit}" + (
        "; settings changed:" if changes else " with its saved settings"), file=sys.stderr)
    for name, (old, new) in changes.items():
        print(f"  {name}: {old!r} -> {new!r}", file=sys.stderr)
    return {"event": "resume", unit: samples, "checkpoint": str(checkpoint),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "changes": changes}


def start_entry(unit: str = "samples") -> dict[str, Any]:
    """The first entry of a run's config history: the run started."""
    import time

    return {"event": "start", unit: 0, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}


def write_run_config(run_dir: Path, cfg: Any, history: list[dict[str, Any]]) -> None:
    """``config.json`` (the settings, exactly the fields of the dataclass, so that ``--config``
    reads it back) and ``config_history.json`` (when the run started and each resume, with
    the settings it changed) in the run folder."""
    (run_dir / "config.json").write_text(json.dumps(dataclasses.asdict(cfg), indent=1))
    (run_dir / "config_history.json").write_text(json.dumps(history, indent=1) + "\n")


# ---------------------------------------------------------------------------------------
# A run folder holds one run: never two mixed, never one overwritten unless told.

def switch_given(argv: Sequence[str] | None, name: str) -> bool:
    """Whether the on/off option ``name`` (such as ``--overwrite``) is among the command-line
    words ``argv`` (``sys.argv[1:]`` for ``None``) before a ``--``."""
    args = sys.argv[1:] if argv is None else list(argv)
    return name in args[:args.index("--") if "--" in args else len(args)]


def run_files(run_dir: Path, patterns: Iterable[str]) -> list[Path]:
    """What a run left in ``run_dir``: the entries matching ``patterns`` (globs, such as
    ``config.json``, ``checkpoints``, ``eval-before-resume-*.csv``), a folder only when it is
    not empty."""
    found: list[Path] = []
    if not run_dir.is_dir():
        return found
    for pattern in patterns:
        for p in sorted(run_dir.glob(pattern)):
            if p not in found and not (p.is_dir() and not any(p.iterdir())):
                found.append(p)
    return found


def _listing(paths: Sequence[Path]) -> str:
    def one(p: Path) -> str:
        if not p.is_dir():
            return p.name
        n = sum(1 for q in p.rglob("*") if not q.is_dir())
        return f"{p.name}/ ({n} file{'s' * (n != 1)})"
    return ", ".join(one(p) for p in paths)


def checkpoint_folder(checkpoint: str | Path) -> Path:
    """The folder a checkpoint's run would be in (absolute): the one above its
    ``checkpoints/`` folder, or the one that holds it."""
    path = Path(checkpoint).resolve()
    return path.parent.parent if path.parent.name == "checkpoints" else path.parent


def claim_run_dir(run_dir: Path, patterns: Iterable[str], *,
                  latest: Callable[[Path], Path | None], resume: str | Path | None = None,
                  overwrite: bool = False, resume_flags: str = "") -> None:
    """Make sure a run may write in ``run_dir`` without mixing with another: a folder with
    files of a run (:func:`run_files` of ``patterns``) is a ``ValueError`` that names both
    ways on, ``--resume`` with its latest checkpoint (``latest(run_dir)``) or a new
    ``--run-name``, unless ``resume`` continues that very run (the checkpoint lies in it) or
    ``overwrite`` is given: then the old run's files are said and removed, first, and nothing
    else in the folder is touched. ``overwrite`` cannot remove the run ``resume`` continues.
    ``resume_flags`` follow ``--resume CHECKPOINT`` in the message (what the trainer's resume
    needs besides, such as ``--trust-checkpoint``)."""
    found = run_files(run_dir, patterns)
    if resume is not None and checkpoint_folder(resume) == run_dir.resolve():
        if overwrite:
            raise ValueError(f"--overwrite would delete the run that --resume {resume} "
                             f"continues ({run_dir}): leave --overwrite out")
        return
    if not found:
        return
    if overwrite:
        print(f"--overwrite: removing the run in {run_dir}: {_listing(found)}",
              file=sys.stderr, flush=True)
        for p in found:
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()
        return
    if resume is not None:
        raise ValueError(f"{run_dir} already holds another run ({_listing(found)}): "
                         f"continuing {resume} there would mix the two; give a new --run-name "
                         "(or --overwrite to delete that run first)")
    ckpt = latest(run_dir)
    if ckpt is None:
        raise ValueError(f"{run_dir} already holds a run, with no checkpoint to resume "
                         f"({_listing(found)}): give a new --run-name, or --overwrite to "
                         "delete it first")
    raise ValueError(f"{run_dir} already holds a run ({_listing(found)}): continue it with "
                     f"--resume {shlex.quote(str(ckpt))}{resume_flags}, or start another "
                     "with a new --run-name (--overwrite deletes it first)")


#: The help of ``--overwrite``, the same in both trainers.
OVERWRITE_HELP = ("start the run even where the run folder holds one: its files (config, "
                  "checkpoints, evaluations, policies, logs) are removed first, and said; "
                  "without it such a folder is an error that names --resume and --run-name")


# ---------------------------------------------------------------------------------------
# Ctrl-C: the trainer saves a checkpoint and says how to resume.

class HeldInterrupts:
    """Ctrl-C (SIGINT) held off while a step that must not be cut runs (an update: weights
    half changed, samples not counted): :meth:`start` holds, :meth:`stop` lets go, raising
    the ``KeyboardInterrupt`` that came meanwhile, where the trainer's state is whole again.
    The first Ctrl-C while held says so; a second one stops at once, and :attr:`torn` says the
    state is then not fit to save. Only in the main thread (signals are delivered there);
    elsewhere, or where SIGINT is ignored, it does nothing."""

    def __init__(self, what: str = "this update") -> None:
        self.what = what
        #: A second Ctrl-C cut the held step: the state is not whole.
        self.torn = False
        self._pending = False
        self._old: Any = None

    def start(self) -> None:
        if self._old is not None or threading.current_thread() is not threading.main_thread():
            return
        old = signal.getsignal(signal.SIGINT)
        if old is signal.SIG_IGN:
            return
        self._old = old if old is not None else signal.default_int_handler
        self._pending = False
        signal.signal(signal.SIGINT, self._handler)

    def _handler(self, signum: int, frame: Any) -> None:
        if self._pending:
            self.torn = True
            self.release()
            raise KeyboardInterrupt
        self._pending = True
        print(f"Ctrl-C: saving a checkpoint after {self.what} (Ctrl-C again stops at once, "
              "without saving)", file=sys.stderr, flush=True)

    def release(self) -> None:
        """Let go without raising (a held Ctrl-C is forgotten)."""
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
            self._old = None

    def stop(self) -> None:
        """Let go; a Ctrl-C that came while held is raised here."""
        pending, self._pending = self._pending, False
        self.release()
        if pending:
            raise KeyboardInterrupt

    def __enter__(self) -> HeldInterrupts:
        self.start()
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is None:
            self.stop()
        else:
            self._pending = False
            self.release()


class RunInterrupted(KeyboardInterrupt):
    """A trainer stopped by Ctrl-C, after saving ``checkpoint`` at ``count`` ``unit``
    (samples, timesteps); ``checkpoint`` is ``None`` when nothing could be saved (a second
    Ctrl-C cut an update), and ``last`` is then the run's latest checkpoint, if any. A
    ``KeyboardInterrupt``, so that code that stops on one still does."""

    def __init__(self, checkpoint: Path | None, count: int, unit: str,
                 last: Path | None = None) -> None:
        super().__init__(f"interrupted at {count:,} {unit}")
        self.checkpoint, self.count, self.unit, self.last = checkpoint, count, unit, last

    def line(self, prog: str, resume_flags: str = "") -> str:
        """One line: where it saved and the command that resumes the run (``prog --resume
        CHECKPOINT`` and ``resume_flags``)."""
        if self.checkpoint is not None:
            return (f"interrupted at {self.count:,} {self.unit}: saved {self.checkpoint}; "
                    f"resume with: {prog} --resume {shlex.quote(str(self.checkpoint))}"
                    f"{resume_flags}")
        if self.last is None:
            return "interrupted during an update: nothing saved, and the run has no checkpoint"
        return (f"interrupted during an update: nothing saved since the last checkpoint; resume "
                f"with: {prog} --resume {shlex.quote(str(self.last))}{resume_flags}")


def interrupted_exit(exc: KeyboardInterrupt, prog: str, resume_flags: str = "") -> int:
    """Say in one line how a trainer stopped on Ctrl-C (:class:`RunInterrupted`, or an
    interrupt before a checkpoint could be saved) and return the exit status 130 (128 +
    SIGINT)."""
    print(exc.line(prog, resume_flags) if isinstance(exc, RunInterrupted)
          else "interrupted before a checkpoint could be saved: nothing saved", file=sys.stderr,
          flush=True)
    return 130
