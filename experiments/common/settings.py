"""Settings dataclasses read from files and command lines: ``--config FILE|NAME`` (a file,
or the name of a training config packaged with ``dragons_egg.experiments``), every value
checked against the field's annotation (:func:`check_settings`), and the tyro command line of
a settings dataclass (:func:`config_cli`), every field a flag."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import functools
import json
import math
import sys
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

if TYPE_CHECKING:
    from dataclasses import Field

# ---------------------------------------------------------------------------------------
# Settings files: a path, or the name of a config packaged with dragons_egg.experiments.

#: The package whose ``configs/*.json`` are the packaged training configs.
CONFIG_PACKAGE = "dragons_egg.experiments"


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
        entries = [e for e in entries
                   if set(migrated(cls, json.loads(e.read_text(encoding="utf-8")))) <= fields]
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

_K = TypeVar("_K")
_T = TypeVar("_T")


def class_cache(fn: Callable[[_K], _T]) -> Callable[[_K], _T]:
    """``functools.cache`` for a function of one class, typed as the function: typeshed's
    cache takes ``Hashable`` arguments, which mypy does not count a class (``type[X]``) as,
    though every class is hashable."""
    return cast(Callable[[_K], _T], functools.cache(fn))


@class_cache
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
    if origin is dict or dataclasses.is_dataclass(tp):
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
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return True  # a settings object in JSON (such as rules), checked when it is built
    return not isinstance(tp, type) or isinstance(value, tp)


#: Above 0 while the command line is parsed: settings made then are checked after the parse
#: (:func:`check_all`), so that a bad one is a one-line error, not tyro's box.
_DEFERRED = [0]


@contextlib.contextmanager
def checks_deferred() -> Iterator[None]:
    """Settings made inside skip their checks (:func:`checks_on`); :func:`check_all` them."""
    _DEFERRED[0] += 1
    try:
        yield
    finally:
        _DEFERRED[0] -= 1


def checks_on() -> bool:
    """Whether settings check themselves when they are made (``__post_init__``)."""
    return not _DEFERRED[0]


def check_all(cfg: Any) -> None:
    """Run the checks of the settings ``cfg``, its groups' first (what ``__post_init__`` runs
    when :func:`checks_on`); a ``ValueError`` names the first bad setting."""
    for name in group_types(type(cfg)):
        getattr(cfg, name).check()
    check = getattr(cfg, "check", None)
    if check is not None:
        check()


class SettingsGroup:
    """The base of a group of settings, a frozen dataclass held in one field of a settings
    dataclass (the PPO settings, the collection's, a plug-in's): nested in JSON (``"ppo":
    {"learning_rate": 0.0003, ...}``), flat on the command line (``--learning-rate``: tyro's
    ``OmitArgPrefixes``) and in errors, in the settings given and in the changes a resume
    records, so a group's field names are unique among the settings of the class that holds
    it. Settings files of the flat form read as the nested one (:func:`nest_groups`). A group
    is checked when it is made (:meth:`check`, from ``__post_init__``)."""

    if TYPE_CHECKING:
        # every group is a dataclass (a subclass decorated with ``@dataclass``)
        __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def __post_init__(self) -> None:
        if checks_on():
            self.check()

    def check(self) -> None:
        """A ``ValueError`` naming the first bad setting of the group (types here; the
        groups add their ranges)."""
        check_fields(self)


def group_types(cls: type) -> dict[str, type[SettingsGroup]]:
    """The fields of the settings dataclass ``cls`` that hold a :class:`SettingsGroup`, with
    its type."""
    return {name: tp for name, tp in field_types(cls).items()
            if isinstance(tp, type) and issubclass(tp, SettingsGroup)}


@class_cache
def leaf_paths(cls: type) -> dict[str, str]:
    """Each setting's name (a field of ``cls``, or of one of its groups) and its path: the
    name itself, or ``group.name`` (``learning_rate`` -> ``ppo.learning_rate``)."""
    groups = group_types(cls)
    out: dict[str, str] = {}
    for name in field_types(cls):
        if name in groups:
            out.update({leaf: f"{name}.{path}" for leaf, path in leaf_paths(groups[name]).items()})
        else:
            out[name] = name
    return out


def nest_groups(cls: type, data: Any) -> Any:
    """``data`` (settings as JSON holds them) with every setting of a group given at the top
    (the flat form of files written before the groups) moved into its group's object."""
    if not isinstance(data, dict):
        return data
    paths = leaf_paths(cls)
    out = dict(data)
    for name in list(data):
        path = paths.get(name, name)
        if "." in path and name not in field_types(cls):
            group, _, leaf = path.partition(".")
            inner = out.get(group, {})
            if isinstance(inner, dict):
                out[group] = {**inner, leaf: out.pop(name)}
    return out


def data_paths(cls: type, data: Any) -> set[str]:
    """The paths of the settings that ``data`` (the nested JSON form) names."""
    if not isinstance(data, dict):
        return set()
    groups = group_types(cls)
    out: set[str] = set()
    for name, value in data.items():
        if name in groups and isinstance(value, dict):
            out |= {f"{name}.{p}" for p in data_paths(groups[name], value)}
        else:
            out.add(name)
    return out


def get_path(cfg: Any, path: str) -> Any:
    """The value of the setting at ``path`` (``seed``, ``ppo.learning_rate``)."""
    for part in path.split("."):
        cfg = getattr(cfg, part)
    return cfg


def replace_paths(cfg: Any, values: dict[str, Any]) -> Any:
    """``cfg`` with the settings at the paths of ``values`` replaced (``dataclasses.replace``,
    group by group)."""
    top: dict[str, Any] = {}
    inner: dict[str, dict[str, Any]] = {}
    for path, value in values.items():
        head, dot, rest = path.partition(".")
        if dot:
            inner.setdefault(head, {})[rest] = value
        else:
            top[head] = value
    for head, vals in inner.items():
        top[head] = replace_paths(top.get(head, getattr(cfg, head)), vals)
    return dataclasses.replace(cfg, **top)


def flat_values(cfg: Any) -> dict[str, Any]:
    """Every setting of ``cfg`` by its name (:func:`leaf_paths`), groups flattened."""
    return {leaf: get_path(cfg, path) for leaf, path in leaf_paths(type(cfg)).items()}


def build_settings(cls: type, data: dict[str, Any]) -> Any:
    """An instance of ``cls`` from its checked JSON form (:func:`check_settings`): lists as
    tuples where the annotation is a tuple, a group's object as the group, rules as a
    :class:`~dragons_egg_env.config.RulesConfig`."""
    from dragons_egg_env.config import RulesConfig

    types_ = field_types(cls)
    groups = group_types(cls)
    kwargs: dict[str, Any] = {}
    for k, v in data.items():
        tp = types_[k]
        if k in groups and isinstance(v, dict):
            v = build_settings(groups[k], v)
        elif typing.get_origin(tp) is tuple and isinstance(v, list):
            v = tuple(v)
        elif tp is RulesConfig and isinstance(v, dict):
            v = read_rules(v, k)
        kwargs[k] = v
    return cls(**kwargs)


def check_settings(cls: type, data: Any) -> None:
    """Check a mapping of settings for the dataclass ``cls`` before anything uses it: every
    name a field, every value of the field's type (:func:`fits_type`, from the annotations),
    a group's object (:class:`SettingsGroup`) checked alike. A ``ValueError`` names the first
    problem in one line: the setting, its value and what it may be (ranges are checked when
    the settings are made)."""
    if not isinstance(data, dict):
        raise ValueError(f"settings must be an object of name: value, got "
                         f"{type(data).__name__}")
    types_ = field_types(cls)
    groups = group_types(cls)
    unknown = sorted(set(data) - set(types_))
    if unknown:
        names = list(leaf_paths(cls))
        close = {n: difflib.get_close_matches(n, names, 1) for n in unknown}
        hints = [f"{n} -> {c[0]}" for n, c in close.items() if c]
        raise ValueError(f"unknown setting(s) {', '.join(unknown)}" + (
            f" (did you mean: {', '.join(hints)}?)" if hints else "")
            + "; --help lists the settings")
    for name, value in data.items():
        if name in groups and isinstance(value, groups[name]):
            value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        if name in groups and isinstance(value, dict):
            check_settings(groups[name], value)
        elif not fits_type(types_[name], value):
            raise ValueError(f"{name}: expected {describe_type(types_[name])}, got {value!r}")


def migrated(cls: type, data: Any) -> Any:
    """``data`` in today's form for the settings dataclass ``cls``: its classmethod
    ``migrate`` applied, where it has one (settings renamed or moved since a file was
    written); a ``ValueError`` where it cannot be."""
    migrate = getattr(cls, "migrate", None)
    if migrate is not None and isinstance(data, dict):
        data = migrate(data)
    return nest_groups(cls, data)


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


def require(cond: bool, message: str) -> None:
    """A ``ValueError`` with ``message`` unless ``cond``: the trainers' checks that are not a
    range (:func:`check_range`)."""
    if not cond:
        raise ValueError(message)


def read_json_or_toml(source: Any) -> Any:
    """The data of a settings file: TOML where the name ends in ``.toml``, JSON otherwise
    (``source``: a path, or what :func:`resolve_config` returns); an ``OSError`` or a
    ``ValueError`` where it cannot be read."""
    text = source.read_text(encoding="utf-8")
    if source.name.endswith(".toml"):
        import tomllib

        return tomllib.loads(text)
    return json.loads(text)


def read_settings(cls: type, source: Any) -> dict[str, Any]:
    """The JSON object of settings in ``source`` (a path, or what :func:`resolve_config`
    returns), checked against the fields of the dataclass ``cls`` (:func:`check_settings`:
    their names and types); a ``ValueError`` naming the file for a missing or malformed file,
    a name that is not a field of ``cls`` or a value of the wrong type."""
    src = Path(source) if isinstance(source, str) else source
    try:
        data = read_json_or_toml(src)
        data = migrated(cls, data)
        check_settings(cls, data)  # a ValueError unless it is an object of settings
    except (OSError, ValueError) as exc:
        raise ValueError(f"config file {_config_label(src)}: {exc}") from None
    settings: dict[str, Any] = data
    return settings


def fail(message: str) -> typing.NoReturn:
    """Print ``error: message`` and exit with status 2 (bad input on a command line)."""
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
        fail(str(exc))


# ---------------------------------------------------------------------------------------
# The settings command line (tyro).

def flags_given(args: Iterable[str], cls: type) -> set[str]:
    """The fields of the dataclass ``cls`` that the command-line words ``args`` set: a field
    ``name`` is set by ``--name``, ``--name=VALUE``, ``--no-name`` (a bool) and their forms
    with underscores, as tyro reads them (tyro takes no abbreviations, so the words are the
    whole story: a value the user spells out equal to the default still counts as given)."""
    names = leaf_paths(cls)
    given: set[str] = set()
    for word in args:
        if word == "--":
            break
        if not word.startswith("--"):
            continue
        name = word[2:].split("=", 1)[0].replace("-", "_")
        if name in names:
            given.add(names[name])
        elif name.startswith("no_") and name[3:] in names:
            given.add(names[name[3:]])
    return given


def module_prog(cls: type | Callable[..., object]) -> str | None:
    """``python -m MODULE`` for the module that defines ``cls`` (a class or a function; also
    when it runs as ``__main__`` under ``python -m``), or ``None`` when that is not known."""
    module: str | None = cls.__module__
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
    #: The further value options (``options``) by name (such as ``--resume``), ``None`` where
    #: not given.
    options: dict[str, str | None] = dataclasses.field(default_factory=dict)
    #: The values of the repeatable options (``repeated``, such as ``--allow-code``) by name,
    #: in the order given (empty where not given).
    repeated: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    #: The fields set by a flag on the command line itself (``given`` less those only the
    #: ``--config`` file names).
    typed: frozenset[str] = frozenset()
    #: Where the ``--config`` settings were read from (the file, or ``packaged config
    #: NAME``), or ``None``.
    config_source: str | None = None


def _config_help(cls: type) -> str:
    names = ", ".join(packaged_configs(cls))
    return ("JSON (or TOML) file of settings" + (
        f", or the name of a config packaged with dragons_egg.experiments ({names})"
        if names else "") + "; the flags override it")


def _wrapper(cls: type, extra: str, extra_help: str, extra_metavar: str,
             switches: Sequence[tuple[str, str]] = (),
             options: Sequence[tuple[str, str, str]] = ()) -> type:
    """A dataclass of ``--config``, the extra option, the further value ``options`` (name,
    help, metavar; the repeatable ones too), the on/off ``switches`` (name, help) and every
    field of ``cls`` (no prefix), so that tyro's ``--help`` lists them all."""
    from typing import Annotated

    import tyro

    return dataclasses.make_dataclass(f"{cls.__name__}Command", [
        ("settings", Annotated[cls, tyro.conf.arg(name="")]),
        ("config", Annotated[str | None,
                             tyro.conf.arg(help=_config_help(cls), metavar="FILE|NAME")], None),
        (extra.lstrip("-").replace("-", "_"),
         Annotated[str | None, tyro.conf.arg(help=extra_help, metavar=extra_metavar)], None),
        *((name.lstrip("-").replace("-", "_"),
           Annotated[str | None, tyro.conf.arg(help=text, metavar=metavar)], None)
          for name, text, metavar in options),
        *((name.lstrip("-").replace("-", "_"),
           Annotated[bool, tyro.conf.FlagCreatePairsOff, tyro.conf.arg(help=text)], False)
          for name, text in switches),
    ])


def json_object(words: list[str]) -> dict[str, Any]:
    """The JSON object of a dict-typed setting's one command-line word (such as ``--rules
    '{"tribute_asks": 1}'``); a ``ValueError`` that tyro prints as the flag's usage error."""
    try:
        value = json.loads(words[0])
    except json.JSONDecodeError:
        raise ValueError(f"expects a JSON object, got {words[0]!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"expects a JSON object, got {words[0]!r}")
    return value


def read_rules(data: Any, source: str = "rules") -> Any:
    """The :class:`~dragons_egg_env.config.RulesConfig` of a JSON object of rule flags
    (``data``; a flag it does not name has its default); a ``ValueError`` naming ``source``
    and the problem (an unknown flag, a value it does not allow)."""
    from dragons_egg_env.config import RulesConfig

    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected an object of rule flags, got {data!r}")
    try:
        return RulesConfig.from_kwargs(data)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None


def rules_word(words: list[str]) -> Any:
    """The rules of ``--rules FILE|JSON``: a JSON object of rule flags, or a JSON (or TOML)
    file of one (:func:`read_rules`); a ``ValueError`` that tyro prints as the flag's usage
    error."""
    word = words[0]
    if word.lstrip().startswith(("{", "[")):
        return read_rules(json_object([word]), "--rules")
    path = Path(word)
    try:
        data = read_json_or_toml(path)
    except (OSError, ValueError) as exc:
        raise ValueError(f"--rules {word}: not a readable JSON or TOML file of rule flags "
                         f"({exc})") from None
    return read_rules(data, f"--rules {word}")


@functools.cache
def _registry() -> Any:
    """tyro's rules for the settings dataclasses: a ``dict`` field is one JSON word."""
    from tyro.constructors import ConstructorRegistry, PrimitiveConstructorSpec

    from dragons_egg_env.config import RulesConfig

    registry = ConstructorRegistry()

    @registry.primitive_rule
    def _rules_rule(info: Any) -> Any:
        if info.type is not RulesConfig:
            return None
        return PrimitiveConstructorSpec(nargs=1, metavar="FILE|JSON", instance_from_str=rules_word,
                                        is_instance=lambda x: isinstance(x, RulesConfig),
                                        str_from_instance=lambda r: [json.dumps(r.to_dict())])

    @registry.primitive_rule
    def _dict_rule(info: Any) -> Any:
        if info.type_origin is not dict:
            return None
        return PrimitiveConstructorSpec(nargs=1, metavar="JSON", instance_from_str=json_object,
                                        is_instance=lambda x: isinstance(x, dict),
                                        str_from_instance=lambda d: [json.dumps(d)])

    return registry


def parse_config_cli(cls: type, argv: Sequence[str] | None,
                     build: Callable[[dict[str, Any]], Any], extra: str, description: str, *,
                     prog: str | None = None, extra_help: str = "",
                     extra_metavar: str = "PATH",
                     switches: Sequence[tuple[str, str]] = (),
                     options: Sequence[tuple[str, str, str]] = (),
                     repeated: Sequence[tuple[str, str, str]] = (),
                     check: bool = True) -> ParsedSettings:
    """Read the command line of the settings dataclass ``cls``: ``--config FILE|NAME``
    (:func:`resolve_config`, read by :func:`read_settings` and made with ``build``) gives the
    defaults, every field is a flag (tyro, with no prefix), and the option ``extra`` (such as
    ``--resume``) is returned beside the settings, with the fields given explicitly and the
    on/off options of ``switches`` (``(name, help)``, such as ``--overwrite``) given, and the
    values of the further ``options`` (``(name, help, metavar)``) and of the ``repeated``
    ones (the same, each given again for more: ``--allow-code SPEC``).
    ``--help`` shows ``prog`` (default :func:`module_prog`) and lists ``--config``, ``extra``
    and the switches with the fields. The settings are checked as they are made
    (:func:`check_all`, after the parse; not with ``check=False``, for a caller that changes
    them further and checks them then); what they need around them is :func:`validated`'s. A
    bad ``--config`` or setting is a one-line error and exit status 2."""
    import tyro

    args = sys.argv[1:] if argv is None else list(argv)
    prog = prog or module_prog(cls)
    dest = extra.lstrip("-").replace("-", "_")
    pre = argparse.ArgumentParser(prog=prog, add_help=False, allow_abbrev=False)
    pre.add_argument("--config", default=None)
    pre.add_argument(extra, dest=dest, default=None)
    for name, _ in switches:
        pre.add_argument(name, action="store_true")
    for name, _, _ in options:
        pre.add_argument(name, default=None)
    for name, _, _ in repeated:
        pre.add_argument(name, action="append", default=[])
    known, rest = pre.parse_known_args(args)
    data: dict[str, Any] = {}
    default = cls()
    source = None
    if known.config is not None:
        try:
            resolved = resolve_config(known.config, cls)
            source = _config_label(resolved)
            data = read_settings(cls, resolved)
            default = build(data)
        except (ValueError, TypeError) as exc:
            fail(str(exc))
    command = _wrapper(cls, extra, extra_help, extra_metavar, switches,
                       [*options, *repeated])
    with checks_deferred():  # OmitArgPrefixes: a group's settings are flat flags (SettingsGroup)
        out = tyro.cli(command, args=rest, default=command(default), prog=prog,
                       registry=_registry(), description=description,
                       config=(tyro.conf.OmitArgPrefixes,))
    if check:
        try:
            check_all(out.settings)
        except ValueError as exc:  # a setting out of range: one line, naming it
            fail(str(exc))
    on = frozenset(n for n, _ in switches if getattr(known, n.lstrip("-").replace("-", "_")))
    values = {n: getattr(known, n.lstrip("-").replace("-", "_")) for n, _, _ in options}
    lists = {n: list(getattr(known, n.lstrip("-").replace("-", "_"))) for n, _, _ in repeated}
    typed = frozenset(flags_given(rest, cls))
    return ParsedSettings(out.settings, getattr(known, dest),
                          frozenset(typed | data_paths(cls, data)),
                          known.config, on,
                          values, lists, typed, source)


def validated(cfg: Any) -> Any:
    """``cfg`` after ``cfg.validate()``; a setting it refuses is a one-line error and exit
    status 2."""
    try:
        cfg.validate()
    except ValueError as exc:
        fail(str(exc))
    return cfg


def config_cli(cls: type, argv: Sequence[str] | None, build: Callable[[dict[str, Any]], Any],
               extra: str, description: str, *, prog: str | None = None,
               extra_help: str = "", extra_metavar: str = "PATH") -> tuple[Any, str | None]:
    """A command line for the settings dataclass ``cls`` (:func:`parse_config_cli`), its
    settings validated (:func:`validated`), and the value of the option ``extra``."""
    parsed = parse_config_cli(cls, argv, build, extra, description, prog=prog,
                              extra_help=extra_help, extra_metavar=extra_metavar)
    return validated(parsed.settings), parsed.extra


