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
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dragons_egg_env.config import MAX_PLAYERS, MIN_PLAYERS, ConfigError, RulesConfig, parse_bool


def int_range(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer ``>= lo`` (and ``<= hi`` when given)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(
                f"expected {lo}..{hi}, got {value}" if hi is not None
                else f"expected >= {lo}, got {value}")
        return value
    return parse


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


def read_settings(cls: type, source: Any) -> dict[str, Any]:
    """The JSON object of settings in ``source`` (a path, or what :func:`resolve_config`
    returns), checked against the fields of the dataclass ``cls``; a ``ValueError`` naming the
    file for a missing or malformed file, or a name that is not a field of ``cls``."""
    src = Path(source) if isinstance(source, str) else source
    try:
        data = json.loads(src.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"config file {_config_label(src)}: {exc}") from None
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known) if isinstance(data, dict) else ["(not an object)"]
    if unknown:
        raise ValueError(f"config file {_config_label(src)}: unknown setting(s) "
                         f"{', '.join(unknown)}")
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


def _config_help(cls: type) -> str:
    names = ", ".join(packaged_configs(cls))
    return ("JSON file of settings" + (
        f", or the name of a config packaged with dragons_egg.experiments ({names})"
        if names else "") + "; the flags override it")


def _wrapper(cls: type, extra: str, extra_help: str, extra_metavar: str) -> type:
    """A dataclass of ``--config``, the extra option and every field of ``cls`` (no
    prefix), so that tyro's ``--help`` lists them all."""
    from typing import Annotated

    import tyro

    return dataclasses.make_dataclass(f"{cls.__name__}Command", [
        ("settings", Annotated[cls, tyro.conf.arg(name="")]),
        ("config", Annotated[str | None,
                             tyro.conf.arg(help=_config_help(cls), metavar="FILE|NAME")], None),
        (extra.lstrip("-").replace("-", "_"),
         Annotated[str | None, tyro.conf.arg(help=extra_help, metavar=extra_metavar)], None),
    ])


def parse_config_cli(cls: type, argv: Sequence[str] | None,
                     build: Callable[[dict[str, Any]], Any], extra: str, description: str, *,
                     prog: str | None = None, extra_help: str = "",
                     extra_metavar: str = "PATH") -> ParsedSettings:
    """Read the command line of the settings dataclass ``cls``: ``--config FILE|NAME``
    (:func:`resolve_config`, read by :func:`read_settings` and made with ``build``) gives the
    defaults, every field is a flag (tyro, with no prefix), and the option ``extra`` (such as
    ``--resume``) is returned beside the settings, with the fields given explicitly. ``--help``
    shows ``prog`` (default :func:`module_prog`) and lists ``--config`` and ``extra`` with the
    fields. Nothing is validated here (see :func:`validated`). A bad ``--config`` is a
    one-line error and exit status 2."""
    import tyro

    args = sys.argv[1:] if argv is None else list(argv)
    prog = prog or module_prog(cls)
    dest = extra.lstrip("-").replace("-", "_")
    pre = argparse.ArgumentParser(prog=prog, add_help=False, allow_abbrev=False)
    pre.add_argument("--config", default=None)
    pre.add_argument(extra, dest=dest, default=None)
    known, rest = pre.parse_known_args(args)
    data: dict[str, Any] = {}
    default = cls()
    if known.config is not None:
        try:
            data = read_settings(cls, resolve_config(known.config, cls))
            default = build(data)
        except (ValueError, TypeError) as exc:
            _fail(str(exc))
    command = _wrapper(cls, extra, extra_help, extra_metavar)
    out = tyro.cli(command, args=rest, default=command(default), prog=prog,
                   description=description)
    return ParsedSettings(out.settings, getattr(known, dest),
                          frozenset(flags_given(rest, cls) | set(data)), known.config)


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
    path = Path(checkpoint).resolve()
    folder = path.parent.parent if path.parent.name == "checkpoints" else path.parent
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
